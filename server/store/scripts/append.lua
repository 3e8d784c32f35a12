-- A runner's batched write: events to the log, and the lease renewed. Also its heartbeat (no events).
-- Returns the status, so a cancel is noticed on every flush even if its pub/sub message was lost.
-- KEYS[1] hash, KEYS[2] event log, KEYS[3] running set
-- ARGV[1] fence, ARGV[2] lease deadline ms, ARGV[3] member, ARGV[4] log ttl ms, ARGV[5..] seq, json, ...
local f = redis.call('HMGET', KEYS[1], 'fence', 'status')
if f[1] ~= ARGV[1] then return {'fenced', f[2] or ''} end
if f[2] ~= 'in_progress' then return {'status', f[2]} end
if #ARGV >= 5 then
  local seq
  for i = 5, #ARGV, 2 do
    seq = ARGV[i]
    redis.call('XADD', KEYS[2], '0-' .. seq, 'e', ARGV[i + 1])
  end
  redis.call('HSET', KEYS[1], 'seq', seq)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], ARGV[3])
return {'ok', f[2]}
