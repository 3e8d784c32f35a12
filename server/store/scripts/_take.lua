-- Prepended to the scripts by which a worker takes a queued job (take.lua, take_turn.lua), in one round
-- trip where arq makes five (WATCH, EXISTS, ZSCORE, MULTI/PSETEX/EXEC, then a GET of the job): a job in
-- progress already, gone from the queue or queued for later is not taken; one whose data expired leaves
-- the queue (the reaper queues its run again). A job for later is one in the deferred set (wake.lua): one
-- for now whose score is past `now` was queued after the caller read its clock, or by a process whose
-- clock runs ahead, and is taken. A job for later taken too early has its next turn due at its time
-- (due.lua), not a retry's later.
-- Returns the job (arq's serialized form); a job for later, its due time (ms, a number), for the worker to
-- wake then (server/runner/due_jobs.py); false when it was not taken otherwise.
local function take_job(queue, deferred, job_key, progress_key, job, now, mark_ms)
  if redis.call('EXISTS', progress_key) == 1 then return false end
  local score = redis.call('ZSCORE', queue, job)
  if not score then return false end
  if tonumber(score) > tonumber(now) and redis.call('ZSCORE', deferred, job) then
    redis.call('ZADD', deferred, score, job)
    return tonumber(score)
  end
  local data = redis.call('GET', job_key)
  if not data then
    redis.call('ZREM', queue, job)
    return false
  end
  redis.call('PSETEX', progress_key, mark_ms, '1')
  return data
end
