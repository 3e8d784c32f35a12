-- A webhook gone at once: its hash, its deliveries and both memberships, so that no reader sees half of it.
-- KEYS[1] the hash, KEYS[2] its deliveries (LIST), KEYS[3] the tenant's webhooks (ZSET),
-- KEYS[4] its enabled ones (SET); ARGV[1] the id
-- Returns 1 when it existed, 0 when not
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
return existed
