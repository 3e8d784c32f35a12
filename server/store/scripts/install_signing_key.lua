-- A new RS256 signing key becomes the current one, compare-and-set on the current one, so that processes
-- creating the first key or rotating at once agree on one key: the loser generated a key for nothing and
-- uses the winner's. The replaced key stays published until its retirement time; keys past theirs are
-- dropped here (readers skip them meanwhile).
-- KEYS[1] the signing keys' hash: `current` -> kid, `key:<kid>` -> record, `retire:<kid>` -> ms
-- ARGV[1] the kid the caller saw current ('' for none), ARGV[2] the new kid, ARGV[3] its record,
-- ARGV[4] when the replaced key stops being published (ms), ARGV[5] now (ms)
-- Returns the kid current afterwards: ARGV[2] if installed, else the one another process installed
local current = redis.call('HGET', KEYS[1], 'current')
if (current or '') ~= ARGV[1] then return current end
redis.call('HSET', KEYS[1], 'key:' .. ARGV[2], ARGV[3], 'current', ARGV[2])
if current then redis.call('HSET', KEYS[1], 'retire:' .. current, ARGV[4]) end
local fields = redis.call('HGETALL', KEYS[1])
local now = tonumber(ARGV[5])
for i = 1, #fields, 2 do
  local field = fields[i]
  if string.sub(field, 1, 7) == 'retire:' and tonumber(fields[i + 1]) <= now then
    redis.call('HDEL', KEYS[1], field, 'key:' .. string.sub(field, 8))
  end
end
return ARGV[2]
