-- Prepended to the scripts that store, keep alive, list or delete interactions: the tenant's search indexes.
-- An index per tag (store/search_tags.py: `all`, `root` for a first turn, `m:<model>`, `a:<agent>`,
-- `l:<key>=<value>` per label, `c:<first turn's id>` for a later turn of a conversation) lists the
-- interactions that have it by their creation score; an interaction's tags are in its hash field `ix`.
--
-- Segments. An index is its head, the ZSET `<prefix>idx:<tag>` that new members join, and the buckets
-- older members were moved to, `<prefix>idx:<tag>#<n>`, listed in its directory `<prefix>idx:<tag>#` (a
-- ZSET of bucket numbers scored by the lowest score each bucket holds). A head that holds `bucket` members
-- becomes the next bucket (one RENAME) when one more comes: so every segment stays small enough for
-- Redis's compact encoding (a listpack: ~45 bytes a member, where one ZSET of thousands took ~140), and an
-- index that never grows that large is one key, as it always was. Scores rise with every create in a
-- tenant (`creation_score`), so a bucket holds the scores from its own to the next one's, and the head
-- those past the last bucket's. An interaction's score is in its hash (`sc`), which finds its bucket.
--
-- Expiry. A segment expires with the last of its members (each add or keep-alive moves its expiry, never
-- back), a directory with its last bucket. A member that expires before its segment (its neighbours were
-- kept alive by a later turn of theirs) is swept: one add in SWEEP_EVERY to an index that has buckets looks
-- at SWEEP members old enough to have expired, from a cursor per index (`<prefix>idx:#sweep`), so a long-lived
-- member never keeps dead ones in memory for good. A search drops the dead ids it meets as well.
--
-- Earlier versions. Their records have no `sc` and their indexes were one ZSET each: such a head, once it
-- holds more than `bucket`, becomes bucket 0, where their members are found by id; a smaller one is given
-- its members' scores as it becomes a bucket. Their `<prefix>expiries` ("<id> <tags>" by expiry) is still
-- read by every write, which takes the due ones out of their heads, until it is empty.
local SWEEP, SWEEP_EVERY = 8, 4
-- the bucket an earlier version's large index becomes, whose members may have no `sc`
local UNSCORED = '0'

-- `key` expires at `at` or later: GT never gives a key with no expiry one (Redis counts it as infinite).
local function expire_at_least(key, at)
  if redis.call('PEXPIREAT', key, at, 'GT') == 0 and redis.call('PTTL', key) == -1 then
    redis.call('PEXPIREAT', key, at)
  end
end

local function index_key(prefix, tag)
  return prefix .. 'idx:' .. tag
end

local function directory_key(prefix, tag)
  return prefix .. 'idx:' .. tag .. '#'
end

local function bucket_key(prefix, tag, n)
  return prefix .. 'idx:' .. tag .. '#' .. n
end

local function expiries_key(prefix)
  return prefix .. 'expiries'
end

local function sweep_key(prefix)
  return prefix .. 'idx:#sweep'
end

-- The segment key of `id` (score `sc`, false for an earlier version's record) in the index of `tag`, and
-- its bucket number (nil for the head); nil when it is in none (gone, or an earlier record's in a bucket
-- that gave no scores: it stays there until a sweep or a search meets it, or the bucket expires).
local function segment_of(prefix, tag, id, sc)
  local head = index_key(prefix, tag)
  if redis.call('ZSCORE', head, id) then return head, nil end
  local directory = directory_key(prefix, tag)
  local n = UNSCORED
  if sc then
    n = redis.call('ZREVRANGEBYSCORE', directory, sc, '-inf', 'LIMIT', 0, 1)[1]
    if not n then return nil end
  end
  local bucket = bucket_key(prefix, tag, n)
  if redis.call('ZSCORE', bucket, id) then return bucket, n end
  return nil
end

-- `id` leaves the segment `key` (bucket `n`, nil for the head); an emptied bucket leaves its directory.
local function leave(prefix, tag, key, n, id)
  redis.call('ZREM', key, id)
  if n and redis.call('EXISTS', key) == 0 then redis.call('ZREM', directory_key(prefix, tag), n) end
end

local function remove_from_indexes(prefix, id, tags, sc)
  if not tags then return end
  for tag in string.gmatch(tags, '%S+') do
    local key, n = segment_of(prefix, tag, id, sc)
    if key then leave(prefix, tag, key, n, id) end
  end
  redis.call('ZREM', expiries_key(prefix), id .. ' ' .. tags)
end

-- An interaction whose expiry moved to `at`. GT: a segment's expiry never shortens (clocks differ).
local function keep_indexes(prefix, id, tags, sc, at)
  if not tags then return end
  for tag in string.gmatch(tags, '%S+') do
    local key, n = segment_of(prefix, tag, id, sc)
    if key then redis.call('PEXPIREAT', key, at, 'GT') end
    if n then redis.call('PEXPIREAT', directory_key(prefix, tag), at, 'GT') end
  end
  -- an earlier version's record: its place among the expiries
  if not sc and redis.call('ZADD', expiries_key(prefix), 'XX', 'CH', at, id .. ' ' .. tags) == 1 then
    redis.call('PEXPIREAT', expiries_key(prefix), at, 'GT')
  end
end

-- Earlier versions' expiries: the (at most two) due ones leave their heads.
local function remove_expired(prefix, now)
  local expiries = expiries_key(prefix)
  for _, due in ipairs(redis.call('ZRANGEBYSCORE', expiries, '-inf', now, 'LIMIT', 0, 2)) do
    local id, tags = string.match(due, '^(%S+) (.*)$')
    local left = redis.call('PTTL', prefix .. id)
    if left == -2 then
      remove_from_indexes(prefix, id, tags, false)
    elseif left == -1 then
      -- kept for good (by hand): it stays in its indexes
      redis.call('ZREM', expiries, due)
    else
      -- kept alive by a script that did not say so: due later
      redis.call('ZADD', expiries, now + left, due)
    end
  end
end

-- The highest score in the index of `tag` (its head's, or its newest bucket's when its head is empty).
local function highest(prefix, tag)
  local top = redis.call('ZREVRANGE', index_key(prefix, tag), 0, 0, 'WITHSCORES')[2]
  if top then return tonumber(top) end
  local n = redis.call('ZREVRANGE', directory_key(prefix, tag), 0, 0)[1]
  if not n then return nil end
  top = redis.call('ZREVRANGE', bucket_key(prefix, tag, n), 0, 0, 'WITHSCORES')[2]
  return top and tonumber(top)
end

-- A new interaction's score: its creation ms, or a 1/1024 of a ms past the tenant's last one (a binary
-- fraction: exact in a double for ms below 2^43, the year 2248), so that scores rise with every create:
-- interactions of one ms are listed in the order they were created rather than by their random ids, and
-- an index's buckets never overlap. Read from the index `all` (every interaction is in it). Records of
-- earlier versions may share a ms's score (search.lua reads them in id order).
local ORDER_STEP = 1 / 1024

local function creation_score(prefix, now)
  local last = highest(prefix, 'all')
  if last and last + ORDER_STEP > now then return last + ORDER_STEP end
  return now
end

-- The head of `tag` becomes bucket n (the next number; 0 for an earlier version's large index), listed
-- in the directory by its lowest score. The members of a small head without a score are given theirs.
local function rotate(prefix, tag, head, size, bucket, at)
  local directory = directory_key(prefix, tag)
  local last = redis.call('ZREVRANGE', directory, 0, 0)[1]
  local n
  if last then
    n = tostring(tonumber(last) + 1)
  elseif size > bucket then
    n = UNSCORED
  else
    n = '1'
    local members = redis.call('ZRANGE', head, 0, -1, 'WITHSCORES')
    for i = 1, #members, 2 do
      local record = prefix .. members[i]
      local f = redis.call('HMGET', record, 'status', 'sc')
      if f[1] and not f[2] then redis.call('HSET', record, 'sc', members[i + 1]) end
    end
  end
  local lowest = redis.call('ZRANGE', head, 0, 0, 'WITHSCORES')[2]
  redis.call('RENAME', head, bucket_key(prefix, tag, n))
  redis.call('ZADD', directory, lowest, n)
  expire_at_least(directory, at)
end

-- A few members of the index of `tag` old enough to have expired (created a `ttl` or more ago) are looked
-- at, from where the last look stopped, through its buckets and then its head, and from its first bucket
-- again after that: those whose records are gone leave it.
local function sweep(prefix, tag, now, ttl, keep)
  local cursors, directory = sweep_key(prefix), directory_key(prefix, tag)
  local n, after
  local at = redis.call('HGET', cursors, tag)
  if at then n, after = string.match(at, '^(%S+) (%S+)$') end
  local own = n and n ~= 'h' and redis.call('ZSCORE', directory, n)
  if not n or (n ~= 'h' and not own) then
    -- no cursor yet, or its bucket is gone: from the first bucket
    local first = redis.call('ZRANGE', directory, 0, 0, 'WITHSCORES')
    n, own, after = first[1] or 'h', first[2], '-inf'
  end
  local key = n == 'h' and index_key(prefix, tag) or bucket_key(prefix, tag, n)
  local bucket = n ~= 'h' and n or nil
  local low = after == '-inf' and after or '(' .. after
  local members = redis.call('ZRANGEBYSCORE', key, low, now - ttl, 'WITHSCORES', 'LIMIT', 0, SWEEP)
  for i = 1, #members, 2 do
    if redis.call('EXISTS', prefix .. members[i]) == 0 then leave(prefix, tag, key, bucket, members[i]) end
    after = members[i + 1]
  end
  if #members == SWEEP * 2 then
    redis.call('HSET', cursors, tag, n .. ' ' .. after)
  elseif bucket then
    -- its old members all looked at (or it expired: it leaves the directory): on to the next segment
    if redis.call('EXISTS', key) == 0 then redis.call('ZREM', directory, bucket) end
    local later = redis.call('ZRANGEBYSCORE', directory, '(' .. own, '+inf', 'LIMIT', 0, 1)[1]
    redis.call('HSET', cursors, tag, (later or 'h') .. ' -inf')
  else
    -- past the head: from the first bucket next time
    redis.call('HDEL', cursors, tag)
  end
  -- the cursors last as long as the indexes they walk
  expire_at_least(cursors, keep)
end

-- A new interaction of `score` (creation_score, kept in its hash as `sc`), created at `now` and kept `ttl`
-- ms; `at` is beyond its expiry (an index outlives it). `bucket`: the most members of a segment.
local function add_to_indexes(prefix, id, tags, score, now, ttl, at, bucket)
  for tag in string.gmatch(tags, '%S+') do
    local head = index_key(prefix, tag)
    local size = redis.call('ZCARD', head)
    if size >= bucket then rotate(prefix, tag, head, size, bucket, at) end
    redis.call('ZADD', head, score, id)
    expire_at_least(head, at)
    -- a directory outlives its buckets (nothing when there is none: rotate gave it its first expiry)
    local listed = redis.call('PEXPIREAT', directory_key(prefix, tag), at, 'GT') == 1
    -- one add in SWEEP_EVERY (by the head's size after it) sweeps SWEEP members: fewer commands a create
    local held = size >= bucket and 1 or size + 1
    if held % SWEEP_EVERY == 0 and (listed or redis.call('EXISTS', directory_key(prefix, tag)) == 1) then
      sweep(prefix, tag, now, ttl, at)
    end
  end
  remove_expired(prefix, now)
end
