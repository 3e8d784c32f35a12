-- Shared by create.lua and chain.lua (prepended when the scripts are loaded).
-- Follows `prev` from `id` back to the head of the chain, newest first, and returns
-- {'ok', {in_1, out_1, in_2, out_2, ...}}, or {'missing', id} / {'too_deep', id}.
-- With ttl_ms > 0 every interaction on the way is given that TTL again, so a live chain keeps its head.
-- The keys walked are not declared in KEYS: they share the tenant's hash tag, so they live in one slot.
local function walk(prefix, id, max_depth, ttl_ms)
  local blobs = {}
  local depth = 0
  while id and id ~= '' do
    depth = depth + 1
    if depth > max_depth then return {'too_deep', id} end
    local key = prefix .. id
    local f = redis.call('HMGET', key, 'status', 'prev', 'in', 'out')
    if not f[1] then return {'missing', id} end
    if ttl_ms > 0 then redis.call('PEXPIRE', key, ttl_ms) end
    blobs[#blobs + 1] = f[3] or ''
    blobs[#blobs + 1] = f[4] or ''
    id = f[2]
  end
  return {'ok', blobs}
end
