-- What one delivery attempt of a webhook event came to, in one step: the attempt joins the webhook's last
-- deliveries; a delivered event marks its target done (a retry queued before a late success then sends
-- nothing) and clears the webhook's count of failed events; an event that failed every retry adds to it,
-- and at the limit disables an enabled webhook. A `webhook_config` target has no webhook: only the mark.
-- KEYS[1] the webhook's hash, KEYS[2] its deliveries list, KEYS[3] the tenant's enabled webhooks,
-- KEYS[4] the event's delivered mark for this target
-- ARGV[1] 'retry' (this attempt failed, another is queued), 'delivered' or 'failed' (no more attempts),
-- ARGV[2] the attempt as JSON, ARGV[3] attempts kept, ARGV[4] failed events that disable a webhook,
-- ARGV[5] the webhook id, ARGV[6] the mark's ttl ms
-- Returns the webhook's state afterwards ('' when there is no webhook)
if ARGV[1] == 'delivered' then redis.call('SET', KEYS[4], '1', 'PX', ARGV[6]) end
if redis.call('EXISTS', KEYS[1]) == 0 then return '' end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
local state = redis.call('HGET', KEYS[1], 'state')
if ARGV[1] == 'delivered' then
  redis.call('HSET', KEYS[1], 'fails', 0)
elseif ARGV[1] == 'failed' then
  local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
  if fails >= tonumber(ARGV[4]) and state == 'enabled' then
    state = 'disabled_due_to_failed_deliveries'
    redis.call('HSET', KEYS[1], 'state', state)
    redis.call('SREM', KEYS[3], ARGV[5])
  end
end
return state
