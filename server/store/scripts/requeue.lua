-- A run gets another attempt in a new job (REQUEUE's moves): its fence moves on (the old runner's late
-- writes are refused) and its lease is pushed to ARGV[1], by when a new runner must have claimed it. A
-- run handed back by a worker shutting down gets its attempt refunded (ARGV[4] = '1'); a lost one does not.
-- KEYS[1] hash, KEYS[2] the running set when it is on this Redis (store/queue_side.py)
-- ARGV[1] deadline ms, ARGV[2] member, ARGV[3] fence seen by the caller, ARGV[4] refund '1' or '0',
-- ARGV[5] REQUEUE's moves
-- Returns {'ok', new fence} | {'missing'} | {'status', current} | {'fenced', current}
local f = redis.call('HMGET', KEYS[1], 'status', 'fence')
if not f[1] then return {'missing'} end
local target = move_of(ARGV[5], f[1])
if not target then return {'status', f[1]} end
if f[2] ~= ARGV[3] then return {'fenced', f[1]} end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
if ARGV[4] == '1' then redis.call('HINCRBY', KEYS[1], 'attempts', -1) end
redis.call('HSET', KEYS[1], 'status', target)
if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
return {'ok', tostring(fence)}
