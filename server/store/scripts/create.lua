-- Check the chain a new interaction continues, keep it alive, and store the interaction.
-- A chain's head must outlive its newest turn. Rather than touching every ancestor on every turn, each
-- interaction notes in `cexp` the earliest expiry among its ancestors; only when that comes within half a
-- TTL are all of them walked and given a new one. So a turn costs O(1) here unless the caller needs the
-- chain's steps (`walk`), which it does when it has not cached them.
-- KEYS[1] the interaction's hash, KEYS[2] the running set
-- ARGV[1] tenant key prefix, ARGV[2] previous interaction id or '', ARGV[3] ttl ms, ARGV[4] max depth,
-- ARGV[5] now ms, ARGV[6] chain: 'walk' (check it, return its steps), 'check', or 'skip' (checked before)
-- ARGV[7] the chain's earliest expiry, from an earlier check ('' if none), ARGV[8] lease deadline ms if
-- the caller runs it now ('' otherwise), ARGV[9] running-set member, ARGV[10] the hash's fields and
-- values as netstrings ("5:status11:in_progress..."): one argument rather than two dozen, since the client
-- spends more on each argument than the server (absent: check the chain only, store nothing)
-- Returns {'ok', {in_1, out_1, ...} newest first, chain expiry or ''} or {error, id}.
local prefix, prev, ttl, now, mode = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[5]), ARGV[6]
local chain = {}
local chain_expiry = ARGV[7]
if prev ~= '' and mode ~= 'skip' then
  local p = redis.call('HMGET', prefix .. prev, 'status', 'cexp')
  if not p[1] then return {'missing', prev} end
  if p[1] == 'queued' or p[1] == 'in_progress' then return {'unfinished', prev} end
  -- the parent's own expiry as Redis has it (whoever set it), its ancestors' as noted
  local earliest = now + redis.call('PTTL', prefix .. prev)
  if p[2] and tonumber(p[2]) < earliest then earliest = tonumber(p[2]) end
  local refresh = earliest < now + ttl / 2
  if refresh or mode == 'walk' then
    local walked = walk(prefix, prev, tonumber(ARGV[4]), mode == 'walk', refresh and (now + ttl) or 0)
    if walked[1] ~= 'ok' then return walked end
    chain = walked[2]
    if refresh then earliest = now + ttl end
  end
  chain_expiry = string.format('%d', earliest)
end
if #ARGV >= 10 then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists', ''} end
  local packed, fields, at = ARGV[10], {}, 1
  while at <= #packed do
    local colon = string.find(packed, ':', at, true)
    local length = tonumber(string.sub(packed, at, colon - 1))
    fields[#fields + 1] = string.sub(packed, colon + 1, colon + length)
    at = colon + length + 1
  end
  redis.call('HSET', KEYS[1], unpack(fields))
  if chain_expiry ~= '' then redis.call('HSET', KEYS[1], 'cexp', chain_expiry) end
  redis.call('PEXPIREAT', KEYS[1], now + ttl)
  if ARGV[8] ~= '' then redis.call('ZADD', KEYS[2], ARGV[8], ARGV[9]) end
end
return {'ok', chain, chain_expiry}
