-- A new webhook, unless the tenant has `limit` already: the count and the write in one step, so that
-- creates racing for the last place cannot both get it.
-- KEYS[1] the tenant's webhooks (ZSET by creation ms), KEYS[2] its enabled ones (SET), KEYS[3] the hash
-- ARGV[1] the id, ARGV[2] creation (ms), ARGV[3] the resource (JSON), ARGV[4] the state,
-- ARGV[5] the secrets (JSON), ARGV[6] the limit
-- Returns 1 when created, 0 when the tenant is at its limit
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[6]) then return 0 end
redis.call('HSET', KEYS[3], 'res', ARGV[3], 'state', ARGV[4], 'secrets', ARGV[5], 'fails', 0)
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if ARGV[4] == 'enabled' then redis.call('SADD', KEYS[2], ARGV[1]) end
return 1
