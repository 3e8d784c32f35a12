-- Check the chain a new interaction continues, keep it alive, and store the interaction.
-- A chain must outlive its newest turn, which expires at now + ttl. Its parent is extended at every turn
-- (one key); its older ancestors, whose earliest expiry each interaction notes in `cexp`, only when that
-- comes before the new turn's, and then all of them, to half a TTL beyond it: so the O(depth) walk happens
-- at most once per half TTL of a conversation, unless the caller needs the chain's steps (`walk`).
-- An interaction stored already ended queues the job of its end (_notify.lua) when the caller gives one, and
-- adds what it used to its tenant's usage of the day (_usage.lua).
-- KEYS[1] the interaction's hash, KEYS[2] the tenant's enabled webhooks, KEYS[3] the tenant's usage of the
-- day, then the shared keys when they are on this Redis (store/queue_side.py): KEYS[4] the running set,
-- KEYS[5..7] the end job's key, the queue, the token list
-- ARGV[1] tenant key prefix, ARGV[2] previous interaction id or '', ARGV[3] ttl ms, ARGV[4] max depth,
-- ARGV[5] now ms, ARGV[6] chain: 'walk' (check it, return its steps), 'check', or 'skip' (checked before)
-- ARGV[7] the chain's earliest expiry, from an earlier check ('' if none), ARGV[8] lease deadline ms, if
-- the run is to be watched from now ('' otherwise), ARGV[9] running-set member, ARGV[10] the hash's
-- fields and values as netstrings ("6:status11:in_progress..."): one argument rather than two dozen, since
-- the client spends more on each argument than the server ('': check the chain only, store nothing),
-- ARGV[11] the unfinished statuses (lifecycle.UNFINISHED): a chain cannot continue from those,
-- ARGV[12] the end job's id ('' for none), ARGV[13] the job, ARGV[14] its key's ttl ms,
-- ARGV[15] most wake tokens kept, ARGV[16] '1' when its end has a subscriber of its own (a webhook_config,
-- a trigger's execution: new_records.subscribed),
-- ARGV[17] its search tags but the conversation's (_index.lua), ARGV[18] the conversation's first
-- interaction, from an earlier check ('' if none), ARGV[19] the key of the request's Idempotency-Key ('' for
-- none), ARGV[20] what it records ("<id> <body digest>"), ARGV[21] its ttl ms, ARGV[22] its body (its
-- blobs as netstrings, _body.lua), ARGV[23] the most members of a search index's segment (_index.lua),
-- ARGV[24] for one stored ended, what it used (_usage.lua's amounts; '' for one that has not ended),
-- ARGV[25] the usage's ttl ms, ARGV[26] the status it ended with
-- A key is recorded with the interaction it made, in this one step; a key whose interaction still exists
-- answers {'repeat', what it recorded} and stores nothing; one whose interaction is gone (deleted) is this
-- request's now.
-- The new interaction notes its conversation (`root`, the chain's first interaction) and its tags (`ix`),
-- and joins their indexes with its score (`sc`); the parent's indexes are kept as long as the parent.
-- Returns {'ok', {in_1, out_1, ...} newest first, chain expiry or '', depth, root, '1' if its end job
-- is due else ''} or {error, id} or {'repeat', what the key recorded}.
local prefix, prev, ttl, now, mode = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[5]), ARGV[6]
local max_depth = tonumber(ARGV[4])
local chain = {}
local chain_expiry = ARGV[7]
local depth = 1
local root = ARGV[18]
local due = false
if ARGV[19] ~= '' and ARGV[10] ~= '' then
  local known = redis.call('GET', ARGV[19])
  if known and redis.call('EXISTS', prefix .. string.match(known, '^%S+')) == 1 then
    return {'repeat', known}
  end
end
if prev ~= '' and mode ~= 'skip' then
  local parent = prefix .. prev
  local p = redis.call('HMGET', parent, 'status', 'cexp', 'depth', 'root', 'ix', 'sc')
  if not p[1] then return {'missing', prev} end
  if one_of(ARGV[11], p[1]) then return {'unfinished', prev} end
  depth = (tonumber(p[3]) or 1) + 1
  if depth > max_depth then return {'too_deep', prev} end
  local horizon = now + ttl
  local extended = now + ttl + math.floor(ttl / 2)
  restore_stored(prefix, parent, extended)
  redis.call('PEXPIREAT', parent, extended)
  redis.call('PEXPIREAT', parent .. BODY_SUFFIX, extended)
  keep_indexes(prefix, prev, p[5], p[6], extended)
  root = p[4] or prev
  local earliest = tonumber(p[2])
  local refresh = earliest ~= nil and earliest < horizon
  if refresh or mode == 'walk' then
    local walked = walk(prefix, prev, max_depth, mode == 'walk', refresh and extended or 0)
    if walked[1] ~= 'ok' then return walked end
    chain = walked[2]
  end
  if earliest == nil or refresh or earliest > extended then earliest = extended end
  chain_expiry = string.format('%d', earliest)
end
if ARGV[10] ~= '' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists', ''} end
  local fields = split_netstrings(ARGV[10])
  local id = string.sub(KEYS[1], #prefix + 1)
  local tags = ARGV[17]
  if prev == '' then
    -- a first turn is its own conversation's: no `root` stored (readers take its id)
    root = id
  else
    -- a conversation's index holds its later turns (the first is its name): most have none
    if root == '' then root = prev end
    tags = tags .. ' c:' .. root
    fields[#fields + 1], fields[#fields + 2] = 'root', root
  end
  local score = creation_score(prefix, now)
  fields[#fields + 1], fields[#fields + 2], fields[#fields + 3], fields[#fields + 4] = 'ix', tags, 'sc', score
  -- depth 1 is not stored either (readers take 1)
  if mode ~= 'skip' and depth > 1 then fields[#fields + 1], fields[#fields + 2] = 'depth', depth end
  redis.call('HSET', KEYS[1], unpack(fields))
  if chain_expiry ~= '' then redis.call('HSET', KEYS[1], 'cexp', chain_expiry) end
  redis.call('PEXPIREAT', KEYS[1], now + ttl)
  count_stored(prefix, now + ttl, 1)
  redis.call('SET', KEYS[1] .. BODY_SUFFIX, ARGV[22], 'PXAT', now + ttl)
  if ARGV[19] ~= '' then redis.call('SET', ARGV[19], ARGV[20], 'PX', ARGV[21]) end
  add_to_indexes(prefix, id, tags, score, now, ttl, now + ttl + math.floor(ttl / 2), tonumber(ARGV[23]))
  if ARGV[8] ~= '' and KEYS[4] then redis.call('ZADD', KEYS[4], ARGV[8], ARGV[9]) end
  if ARGV[24] ~= '' then count_usage(KEYS[3], tags, ARGV[26], ARGV[24], ARGV[25], now) end
  due = queue_event_job({gate = KEYS[2], job_key = KEYS[5], queue = KEYS[6], wake = KEYS[7], job = ARGV[12],
    blob = ARGV[13], now = ARGV[5], ttl = ARGV[14], cap = ARGV[15]}, ARGV[16] == '1')
end
return {'ok', chain, chain_expiry, depth, root, due and '1' or ''}
