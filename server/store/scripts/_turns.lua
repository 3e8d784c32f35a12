-- Prepended to the scripts that queue a job or queue it again: its turn. The job goes last in its tenant's
-- list of waiting jobs, the tenant last in the ring of tenants with jobs waiting if it was not there (each
-- tenant is in the ring while its list holds a job, once), and a token goes to the token list, which one
-- idle worker takes (BLPOP) to take the ring's next job (take_turn.lua): the tenants' jobs are taken in
-- turn, so one tenant's backlog holds another's job back by one turn, not by the backlog. The tokens no
-- worker took are capped, the oldest dropped: a worker that takes a job hears whether more wait and takes
-- them without a token. The ring and the lists are named from the token list's key (keys.ring,
-- keys.waiting): the queue's Redis is never a Cluster (store/queue_side.py).
local WAKE_TOKEN = '*'
local function queue_turn(wake, tenant, job, cap)
  if redis.call('RPUSH', wake .. ':t:' .. tenant, job) == 1 then
    redis.call('RPUSH', wake .. ':ring', tenant)
  end
  if redis.call('RPUSH', wake, WAKE_TOKEN) > tonumber(cap) then
    redis.call('LTRIM', wake, -tonumber(cap), -1)
  end
end
