-- A trigger gone at once: its hash, its executions and its place in the list. Its queued fire job finds
-- no trigger and does nothing.
-- KEYS[1] the trigger (HASH), KEYS[2] its executions (HASH), KEYS[3] their ids (ZSET), KEYS[4] the tenant's
-- triggers (ZSET); ARGV[1] the id
-- Returns 1 when it existed, 0 when not
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
return existed
