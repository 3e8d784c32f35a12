-- A worker takes a queued job, in one round trip where arq makes five (WATCH, EXISTS, ZSCORE, MULTI/
-- PSETEX/EXEC, then a GET of the job): a job in progress already, gone from the queue or deferred to later
-- is not taken; one whose data expired leaves the queue (the reaper queues its run again).
-- KEYS[1] queue, KEYS[2] job key, KEYS[3] the job's in-progress key
-- ARGV[1] job id, ARGV[2] now (ms), ARGV[3] in-progress expiry (ms)
-- Returns the job (arq's serialized form); a job deferred to later, its due time (ms, an integer), for the
-- worker to wake then (server/runner/due_jobs.py); false when it was not taken otherwise
if redis.call('EXISTS', KEYS[3]) == 1 then return false end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return false end
if tonumber(score) > tonumber(ARGV[2]) then return tonumber(score) end
local job = redis.call('GET', KEYS[2])
if not job then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return false
end
redis.call('PSETEX', KEYS[3], ARGV[3], '1')
return job
