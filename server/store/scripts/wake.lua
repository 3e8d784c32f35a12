-- A job is queued and one idle worker woken, in one round trip: arq's enqueue (its job, the queue's
-- sorted set; nothing when the job or its result exists already, as arq does) and its turn among its
-- tenant's (_turns.lua), whose token one idle worker takes with a blocking pop (server/worker_host.py).
-- A job queued for later is also put in the queue's deferred set (KEYS[5]), by its due time: a worker
-- gives it its turn again once it is due (due.lua); the turn given now tells the worker that takes it
-- when that is (take_turn.lua answers a deferred job's due time).
-- KEYS[1] job key, KEYS[2] result key, KEYS[3] queue, KEYS[4] the queue's token list, KEYS[5] (a job for
-- later only) the queue's deferred set
-- ARGV[1] job id, ARGV[2] the job (arq's serialized form), ARGV[3] score (ms), ARGV[4] job key expiry (ms),
-- ARGV[5] most tokens kept, ARGV[6] its tenant, ARGV[7] (a job for later only) the channel every worker's
-- timer hears its time on
-- Returns 1 if queued, 0 if the job existed already
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then return 0 end
redis.call('PSETEX', KEYS[1], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
if KEYS[5] then
  redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
  if ARGV[7] then redis.call('PUBLISH', ARGV[7], ARGV[3] .. ' ' .. ARGV[1]) end
end
queue_turn(KEYS[4], ARGV[6], ARGV[1], ARGV[5])
return 1
