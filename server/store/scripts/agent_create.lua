-- A new agent, unless its id is taken or the tenant has `limit` already: the checks and the write in one
-- step, so that creates racing for one id, or for the last place, cannot both get it.
-- KEYS[1] the tenant's agents (ZSET by creation ms), KEYS[2] the agent (STRING)
-- ARGV[1] the id, ARGV[2] creation (ms), ARGV[3] the agent (JSON), ARGV[4] the limit
-- Returns 1 when created, 0 when the tenant is at its limit, -1 when the id is taken
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
