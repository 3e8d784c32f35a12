-- The batched write of every run of a process: each run's events go to its log and its lease is renewed.
-- Also the heartbeat (a run with no events). Each run gets back its status, so a cancel is noticed on the
-- next flush even if its pub/sub message was lost; a run whose interaction is not in a writable status
-- (lifecycle.WRITABLE), or whose fence moved on, writes nothing.
-- KEYS: per run, its hash and its event log; then the running set when it is on this Redis
-- (store/queue_side.py; apart, the caller renews the leases of the runs that wrote)
-- ARGV[1] lease deadline ms, ARGV[2] ttl ms of a running interaction's log (its record's; finish.lua
-- shortens it), ARGV[3] the writable statuses, then per run: fence, member, n, then n times seq, frame
-- Returns per run 'ok' | 'fenced' | the status that stopped the write
local results = {}
local a = 4
local runs = math.floor(#KEYS / 2)
local running = KEYS[2 * runs + 1]
for i = 1, runs do
  local hash, log = KEYS[2 * i - 1], KEYS[2 * i]
  local fence, member, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  a = a + 3
  local f = redis.call('HMGET', hash, 'fence', 'status')
  if f[1] ~= fence then
    results[i] = 'fenced'
  elseif not one_of(ARGV[3], f[2]) then
    results[i] = f[2] or 'missing'
  else
    if n > 0 then
      local seq
      for j = 0, n - 1 do
        seq = ARGV[a + 2 * j]
        -- pcall: a duplicate id must not abort the other runs' writes
        redis.pcall('XADD', log, '0-' .. seq, 'e', ARGV[a + 2 * j + 1])
      end
      redis.call('HSET', hash, 'seq', seq)
      redis.call('PEXPIRE', log, ARGV[2])
    end
    if running then redis.call('ZADD', running, 'XX', ARGV[1], member) end
    results[i] = 'ok'
  end
  a = a + 2 * n
end
return results
