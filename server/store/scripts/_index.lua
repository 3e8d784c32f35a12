-- Prepended to the scripts that store, keep alive or delete interactions: the tenant's search indexes.
-- Each is a ZSET `<prefix>idx:<tag>` of interaction ids scored by their creation (ms); an interaction's
-- tags are in its hash field `ix`, space-separated (store/search_tags.py makes them: `all`, `root` for a
-- first turn, `m:<model>`, `a:<agent>`, `l:<key>=<value>` per label, `c:<first turn's id>` for a later turn
-- of a conversation).
-- Beside them, the ZSET `<prefix>expiries` holds "<id> <tags>" scored by when the interaction expires: a
-- write takes the (at most two) due ones out of their indexes, so an expired interaction's id does not
-- stay behind in an index that keeps being written to. Every script that moves an interaction's expiry
-- moves its score there and its indexes' own expiry, so an index nobody writes to any more expires with
-- its last member.
local function index_key(prefix, tag)
  return prefix .. 'idx:' .. tag
end

local function expiries_key(prefix)
  return prefix .. 'expiries'
end

local function remove_from_indexes(prefix, id, tags)
  if not tags then return end
  for tag in string.gmatch(tags, '%S+') do redis.call('ZREM', index_key(prefix, tag), id) end
  redis.call('ZREM', expiries_key(prefix), id .. ' ' .. tags)
end

-- An interaction whose expiry moved to `at`. GT: an index's expiry never shortens (clocks differ).
local function keep_indexes(prefix, id, tags, at)
  if not tags then return end
  for tag in string.gmatch(tags, '%S+') do redis.call('PEXPIREAT', index_key(prefix, tag), at, 'GT') end
  redis.call('ZADD', expiries_key(prefix), 'XX', at, id .. ' ' .. tags)
  redis.call('PEXPIREAT', expiries_key(prefix), at, 'GT')
end

local function remove_expired(prefix, now)
  local expiries = expiries_key(prefix)
  for _, due in ipairs(redis.call('ZRANGEBYSCORE', expiries, '-inf', now, 'LIMIT', 0, 2)) do
    local id, tags = string.match(due, '^(%S+) (.*)$')
    local left = redis.call('PTTL', prefix .. id)
    if left == -2 then
      remove_from_indexes(prefix, id, tags)
    elseif left == -1 then
      -- kept for good (by hand): it stays in its indexes
      redis.call('ZREM', expiries, due)
    else
      -- kept alive by a script that did not say so (an earlier version's): due later
      redis.call('ZADD', expiries, now + left, due)
    end
  end
end

-- Interactions created in the same ms are scored in the order they were created, a 1/1024 of a ms apart
-- (a binary fraction: exact in a double for ms below 2^43, the year 2248), so that a list shows them newest
-- first rather than by their random ids. The score is drawn from the index `all` (every interaction is in
-- it) and is the same in each of the interaction's indexes, so a page token's id finds its place in any
-- of them. An index's members are this tenant's, written by these scripts one at a time, so the highest
-- score of the ms is the one created last. Past 1023 in one ms (never seen) the rest share the last score
-- and come in id order, as records of earlier versions do (scored by the ms alone: search.lua reads both).
local ORDER_STEP = 1 / 1024

local function creation_score(key, now)
  local last = redis.call('ZREVRANGEBYSCORE', key, '(' .. (now + 1), now, 'WITHSCORES', 'LIMIT', 0, 1)[2]
  if not last then return now end
  local score = tonumber(last) + ORDER_STEP
  if score >= now + 1 then return tonumber(last) end
  return score
end

-- A new interaction, created at `now`, expiring at `expires`; `at` is beyond it (an index outlives it).
local function add_to_indexes(prefix, id, tags, now, expires, at)
  local score = creation_score(index_key(prefix, 'all'), now)
  for tag in string.gmatch(tags, '%S+') do
    local key = index_key(prefix, tag)
    redis.call('ZADD', key, score, id)
    redis.call('PEXPIREAT', key, at)
  end
  redis.call('ZADD', expiries_key(prefix), expires, id .. ' ' .. tags)
  redis.call('PEXPIREAT', expiries_key(prefix), at)
  remove_expired(prefix, now)
end
