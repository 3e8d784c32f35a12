-- The reaper queues again the job of a run no worker claimed by its pickup deadline (reaper.py). Unlike
-- wake.lua it acts on a job that exists: a worker's take (take_turn.lua) can land while its reply is lost
-- (a failover, a timeout), and that worker never claims the run, while the job's mark in progress would
-- keep every other worker from it for a day. The mark goes, the job is in the queue and has its turn
-- again (_turns.lua). A worker that did take it late and claims it after all is no harm: of two claims
-- under one fence the second is refused as stale (claim.lua).
-- KEYS[1] job key, KEYS[2] the job's in-progress key, KEYS[3] queue, KEYS[4] the queue's token list
-- ARGV[1] job id, ARGV[2] the job (arq's serialized form, written when the job is gone), ARGV[3] now (ms),
-- ARGV[4] job key expiry (ms), ARGV[5] most tokens kept, ARGV[6] its tenant
redis.call('DEL', KEYS[2])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('PSETEX', KEYS[1], ARGV[4], ARGV[2]) end
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
queue_turn(KEYS[4], ARGV[6], ARGV[1], ARGV[5])
return 1
