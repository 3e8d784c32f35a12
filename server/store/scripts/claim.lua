-- A runner takes an interaction (CLAIM's moves): counts the attempt, takes a new fence token (so the
-- writes of any earlier runner are refused from now on) and a lease in the running set.
-- A job names the fence it was queued under; a job re-delivered after the run was handed to a newer job
-- is stale and does nothing.
-- KEYS[1] hash, KEYS[2] the running set when it is on this Redis (store/queue_side.py)
-- ARGV[1] lease deadline ms, ARGV[2] member, ARGV[3] max attempts, ARGV[4] fence the job was queued under,
-- ARGV[5] CLAIM's moves
-- Returns {'ok', fence, seq} | {'missing'} | {'status', current} | {'stale', fence} | {'exhausted', attempts}
local f = redis.call('HMGET', KEYS[1], 'status', 'seq', 'fence')
if not f[1] then return {'missing'} end
local target = move_of(ARGV[5], f[1])
if not target then return {'status', f[1]} end
if (f[3] or '0') ~= ARGV[4] then return {'stale', f[3] or '0'} end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
if attempts > tonumber(ARGV[3]) then return {'exhausted', tostring(attempts - 1)} end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
redis.call('HSET', KEYS[1], 'status', target)
if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
return {'ok', tostring(fence), f[2] or '0'}
