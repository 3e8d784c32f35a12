-- Prepended to create.lua when it is loaded (after _body.lua and _stored.lua).
-- Follows `prev` from `id` back to the head of the chain, newest first. With `with_blobs` it returns
-- every interaction's `in` and `out` ({'ok', {in_1, out_1, in_2, out_2, ...}}); with `expire_at` > 0 it
-- gives every one, and its search indexes (_index.lua), that expiry.
-- Errors: {'missing', id} / {'too_deep', id}.
-- The keys walked are not declared in KEYS: they share the tenant's hash tag, so they live in one slot.
local function walk(prefix, id, max_depth, with_blobs, expire_at)
  local blobs = {}
  local depth = 0
  while id and id ~= '' do
    depth = depth + 1
    if depth > max_depth then return {'too_deep', id} end
    local key = prefix .. id
    local f = redis.call('HMGET', key, 'status', 'prev', 'ix', 'sc')
    if not f[1] then return {'missing', id} end
    if expire_at > 0 then
      restore_stored(prefix, key, expire_at)
      redis.call('PEXPIREAT', key, expire_at)
      redis.call('PEXPIREAT', key .. BODY_SUFFIX, expire_at)
      keep_indexes(prefix, id, f[3], f[4], expire_at)
    end
    if with_blobs then
      local own = blobs_of(key)
      blobs[#blobs + 1] = own[2] or ''
      blobs[#blobs + 1] = own[3] or ''
    end
    id = f[2]
  end
  return {'ok', blobs}
end
