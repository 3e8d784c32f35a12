-- Prepended to the scripts that store, keep alive or delete interactions: the tenant's search indexes.
-- Each is a ZSET `<prefix>idx:<tag>` of interaction ids scored by their creation (ms); an interaction's
-- tags are in its hash field `ix`, space-separated (store/search_tags.py makes them: `all`, `root` for a
-- first turn, `m:<model>`, `a:<agent>`, `l:<key>=<value>` per label, `c:<root id>` for its conversation).
-- An index must outlive its members: every script that moves a member's expiry moves its indexes' too, to
-- the same time, which only ever grows. An expired interaction leaves its id behind: readers skip and
-- remove such ids, and each write samples two ids of each index it adds to and removes the dead ones, so
-- an index in use holds a bounded share of them (and an index nobody writes expires with its last member).
local function index_key(prefix, tag)
  return prefix .. 'idx:' .. tag
end

-- GT: never shorten (processes' clocks differ; another may have set a later time already)
local function keep_indexes(prefix, tags, at)
  if not tags then return end
  for tag in string.gmatch(tags, '%S+') do redis.call('PEXPIREAT', index_key(prefix, tag), at, 'GT') end
end

local function sweep(prefix, key)
  for _, id in ipairs(redis.call('ZRANDMEMBER', key, 2)) do
    if redis.call('EXISTS', prefix .. id) == 0 then redis.call('ZREM', key, id) end
  end
end

local function add_to_indexes(prefix, tags, id, score, at)
  for tag in string.gmatch(tags, '%S+') do
    local key = index_key(prefix, tag)
    if redis.call('ZADD', key, score, id) == 1 and redis.call('ZCARD', key) == 1 then
      redis.call('PEXPIREAT', key, at)
    else
      redis.call('PEXPIREAT', key, at, 'GT')
    end
    sweep(prefix, key)
  end
end

local function remove_from_indexes(prefix, tags, id)
  if not tags then return end
  for tag in string.gmatch(tags, '%S+') do redis.call('ZREM', index_key(prefix, tag), id) end
end
