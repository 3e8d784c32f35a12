-- Prepended to the scripts by which a worker takes a queued job (take.lua, take_turn.lua), in one round
-- trip where arq makes five (WATCH, EXISTS, ZSCORE, MULTI/PSETEX/EXEC, then a GET of the job): a job in
-- progress already, gone from the queue or deferred to later is not taken; one whose data expired leaves
-- the queue (the reaper queues its run again).
-- Returns the job (arq's serialized form); a job deferred to later, its due time (ms, a number), for the
-- worker to wake then (server/runner/due_jobs.py); false when it was not taken otherwise.
local function take_job(queue, job_key, progress_key, job, now, mark_ms)
  if redis.call('EXISTS', progress_key) == 1 then return false end
  local score = redis.call('ZSCORE', queue, job)
  if not score then return false end
  if tonumber(score) > tonumber(now) then return tonumber(score) end
  local data = redis.call('GET', job_key)
  if not data then
    redis.call('ZREM', queue, job)
    return false
  end
  redis.call('PSETEX', progress_key, mark_ms, '1')
  return data
end
