-- A job is queued and one idle worker woken, in one round trip: arq's enqueue (its job, the queue's
-- sorted set; nothing when the job or its result exists already, as arq does) and a token naming the
-- job, which one idle worker takes with a blocking pop (server/worker_host.py). The token carries the
-- job id so that the worker takes that job at once instead of reading the queue first. Tokens no worker
-- took are capped, the oldest dropped (a worker reads the queue when a slot frees, which finds those).
-- A job queued for later is also put in the queue's deferred set (KEYS[5]), by its due time: a worker
-- pushes its token again once it is due (due.lua); the token pushed now tells the worker that takes it
-- when that is (take.lua answers a deferred job's due time).
-- KEYS[1] job key, KEYS[2] result key, KEYS[3] queue, KEYS[4] the queue's token list, KEYS[5] (a job for
-- later only) the queue's deferred set
-- ARGV[1] job id, ARGV[2] the job (arq's serialized form), ARGV[3] score (ms), ARGV[4] job key expiry (ms),
-- ARGV[5] most tokens kept, ARGV[6] (a job for later only) the channel every worker's timer hears its time on
-- Returns 1 if queued, 0 if the job existed already
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then return 0 end
redis.call('PSETEX', KEYS[1], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
if KEYS[5] then
  redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
  if ARGV[6] then redis.call('PUBLISH', ARGV[6], ARGV[3] .. ' ' .. ARGV[1]) end
end
if redis.call('RPUSH', KEYS[4], ARGV[1]) > tonumber(ARGV[5]) then
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[5]), -1)
end
return 1
