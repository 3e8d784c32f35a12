-- A run gets another attempt in a new job: its fence moves on (the old runner's late writes are refused)
-- and its lease is pushed to ARGV[1], by when a new runner must have claimed it. A run handed back by a
-- worker shutting down gets its attempt refunded (ARGV[4] = '1'); a lost one does not.
-- KEYS[1] hash, KEYS[2] running set
-- ARGV[1] deadline ms, ARGV[2] member, ARGV[3] fence seen by the caller, ARGV[4] refund '1' or '0'
local f = redis.call('HMGET', KEYS[1], 'status', 'fence')
if f[1] ~= 'in_progress' or f[2] ~= ARGV[3] then return {'changed', f[1] or ''} end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
if ARGV[4] == '1' then redis.call('HINCRBY', KEYS[1], 'attempts', -1) end
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return {'ok', tostring(fence)}
