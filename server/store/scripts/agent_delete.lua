-- An agent gone at once: its record and its place in the list, so that no reader sees half of it.
-- KEYS[1] the agent (STRING), KEYS[2] the tenant's agents (ZSET); ARGV[1] the id
-- Returns 1 when it existed, 0 when not
local existed = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return existed
