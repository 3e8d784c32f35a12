-- Prepended to the scripts that end an interaction (finish) or store one already ended (create): queue
-- the job of its end, which every subscriber of that end hears (worker_jobs.interaction_ended: its webhook
-- deliveries, and the trigger execution that made it), in the same step as the status change, so that no
-- crash can keep one without the other. The job is arq's, built by the caller (store/jobs.py), and queued
-- as wake.lua queues one; it is queued only when someone subscribes: the tenant has an enabled webhook, or
-- the interaction names a subscriber of its own (`heard`: the request had a webhook_config, its hash field
-- `wh`, or a trigger's execution made it, `trg`). An interaction nobody hears of costs one SCARD.
-- `n` is the table of the caller's arguments for it: gate (the tenant's enabled-webhooks set), job_key,
-- queue, wake (the token list), job (its id; '' when the caller has none), blob, now (ms), ttl (ms of the
-- job key), cap (most tokens kept). With no job_key, the queue is on another Redis (store/queue_side.py):
-- the job is only found due, and the caller queues it.
-- Returns whether the job is due.
local function queue_event_job(n, heard)
  if n.job == '' then return false end
  if not heard and redis.call('SCARD', n.gate) == 0 then return false end
  if not n.job_key or redis.call('EXISTS', n.job_key) == 1 then return true end
  redis.call('PSETEX', n.job_key, n.ttl, n.blob)
  redis.call('ZADD', n.queue, n.now, n.job)
  -- its tenant is its id's second part (keys.event_job_id)
  queue_turn(n.wake, string.match(n.job, '^[^/]*/([^/]*)'), n.job, n.cap)
  return true
end
