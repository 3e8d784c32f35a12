-- Cancel: queued|in_progress -> cancelled, and tell every process to stop the run at once.
-- The run (or, without one, the caller) then settles the output with finish.lua.
-- KEYS[1] hash; ARGV[1] cancel channel, ARGV[2] member, ARGV[3] updated timestamp
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'missing'} end
if status ~= 'queued' and status ~= 'in_progress' then return {'status', status} end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updated', ARGV[3])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return {'ok', status}
