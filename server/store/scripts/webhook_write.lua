-- A webhook rewritten by its owner (update, rotate), compare-and-set on the resource as the caller read
-- it: every write changes its update time, so two writers that read the same record cannot both write.
-- The enabled set follows the state: enabling adds the id and clears the failure count (a webhook
-- disabled for its failures starts afresh), disabling removes it.
-- KEYS[1] the hash, KEYS[2] the tenant's enabled webhooks (SET)
-- ARGV[1] the id, ARGV[2] the resource as read, ARGV[3] the new resource, ARGV[4] the new state
-- ('' for unchanged), ARGV[5] the new secrets (JSON)
-- Returns 1 when written, 0 when the webhook is gone, -1 when it changed since it was read
local seen = redis.call('HGET', KEYS[1], 'res')
if not seen then return 0 end
if seen ~= ARGV[2] then return -1 end
redis.call('HSET', KEYS[1], 'res', ARGV[3], 'secrets', ARGV[5])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'state', ARGV[4])
  if ARGV[4] == 'enabled' then
    redis.call('SADD', KEYS[2], ARGV[1])
    redis.call('HSET', KEYS[1], 'fails', 0)
  else
    redis.call('SREM', KEYS[2], ARGV[1])
  end
end
return 1
