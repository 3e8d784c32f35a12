-- Cancel: the CANCEL moves of the lifecycle table (to `cancelling`), and tell every process to stop the
-- run at once. The run (or, without one, the caller) then saves the output with finish.lua.
-- KEYS[1] hash; ARGV[1] cancel channel ('' when it is on another Redis: the caller publishes),
-- ARGV[2] member, ARGV[3] updated timestamp, ARGV[4] CANCEL's moves
-- Returns {'ok', prior status} | {'missing'} | {'status', current status}
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'missing'} end
local target = move_of(ARGV[4], status)
if not target then return {'status', status} end
redis.call('HSET', KEYS[1], 'status', target, 'updated', ARGV[3])
if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return {'ok', status}
