-- Runs whose lease ran out. Each is pushed back by ARGV[2] ms before it is returned, so a reaper that dies
-- while handling it leaves it to be found again rather than lost.
-- KEYS[1] running set; ARGV[1] now ms, ARGV[2] retry ms, ARGV[3] limit
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local later = tonumber(ARGV[1]) + tonumber(ARGV[2])
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], later, member) end
return due
