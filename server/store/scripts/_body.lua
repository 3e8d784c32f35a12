-- Prepended to the scripts that read or write an interaction's blobs: its stored config (`cfg`), this
-- turn's input steps (`in`) and its output (`out`). They live apart from its hash, in one string
-- `<hash key>:b` of three netstrings (store/keys.py `body`), so that the hash holds only short values and
-- Redis keeps it in its compact encoding (a listpack: one blob longer than 64 bytes made the whole hash a
-- hashtable, about 650 bytes more a record, bench 7). A record of an earlier version holds them in its
-- hash (fields cfg, in, out) and has no body: both are read, and written where they are.
local BODY_SUFFIX = ':b'
local BLOB_FIELDS = {'cfg', 'in', 'out'}

-- "5:hello3:abc" -> {'hello', 'abc'}
local function split_netstrings(body)
  local parts, at = {}, 1
  while at <= #body do
    local colon = string.find(body, ':', at, true)
    local length = tonumber(string.sub(body, at, colon - 1))
    parts[#parts + 1] = string.sub(body, colon + 1, colon + length)
    at = colon + length + 1
  end
  return parts
end

-- {cfg, in, out} of the record whose hash is `key` (false for each it has not)
local function blobs_of(key)
  local body = redis.call('GET', key .. BODY_SUFFIX)
  if not body then return redis.call('HMGET', key, 'cfg', 'in', 'out') end
  local parts = split_netstrings(body)
  return {parts[1] or false, parts[2] or false, parts[3] or false}
end

-- Sets blob `which` (1 cfg, 2 in, 3 out) of the record whose hash is `key`, which exists.
local function set_blob(key, which, value)
  local body = redis.call('GET', key .. BODY_SUFFIX)
  if not body then
    redis.call('HSET', key, BLOB_FIELDS[which], value)
    return
  end
  local parts = split_netstrings(body)
  parts[which] = value
  local packed = {}
  for i = 1, math.max(#parts, which) do
    local part = parts[i] or ''
    packed[i] = #part .. ':' .. part
  end
  redis.call('SET', key .. BODY_SUFFIX, table.concat(packed), 'KEEPTTL')
end
