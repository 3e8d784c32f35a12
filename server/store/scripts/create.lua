-- Store a new interaction, after checking and extending its chain; return the chain's steps.
-- KEYS[1] the new interaction's hash, KEYS[2] the running set
-- ARGV[1] tenant key prefix, ARGV[2] previous interaction id or '', ARGV[3] ttl ms, ARGV[4] max chain depth,
-- ARGV[5] lease deadline ms if the caller runs it now ('' otherwise), ARGV[6] running-set member,
-- ARGV[7..] field, value, ... of the hash
local prev = ARGV[2]
local chain = {}
if prev ~= '' then
  local status = redis.call('HGET', ARGV[1] .. prev, 'status')
  if not status then return {'missing', prev} end
  if status == 'queued' or status == 'in_progress' then return {'unfinished', prev} end
  local walked = walk(ARGV[1], prev, tonumber(ARGV[4]), tonumber(ARGV[3]))
  if walked[1] ~= 'ok' then return walked end
  chain = walked[2]
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists', ''} end
redis.call('HSET', KEYS[1], unpack(ARGV, 7))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[2], ARGV[5], ARGV[6]) end
return {'ok', chain}
