-- Prepended to the scripts that store, keep alive or delete interactions (create, with _walk.lua; delete):
-- a tenant's stored interactions counted by the UTC day each expires (keys.stored_interactions: day number
-- -> count, named from the tenant's key prefix as keys.py names it), what its stored_interactions limit
-- reads (limits.lua). An interaction stored before this count existed is not in it: taking it out of its
-- day (a delete, a later turn keeping it alive longer) takes nothing from a day that holds none.
local STORED_DAY_MS = 86400000

local function stored_day(expiry_ms)
  return string.format('%d', math.floor(tonumber(expiry_ms) / STORED_DAY_MS))
end

-- `n` interactions expiring at `expiry_ms` (ms) in or out (n < 0) of the count
local function count_stored(prefix, expiry_ms, n)
  local key = prefix .. 'stored'
  local day = stored_day(expiry_ms)
  if n < 0 then
    local held = tonumber(redis.call('HGET', key, day) or '0')
    if held + n <= 0 then
      if held > 0 then redis.call('HDEL', key, day) end
      return
    end
  end
  redis.call('HINCRBY', key, day, n)
  -- it expires with the last of the interactions it counts
  if n > 0 and redis.call('PEXPIRETIME', key) < tonumber(expiry_ms) then
    redis.call('PEXPIREAT', key, expiry_ms)
  end
end

-- The interaction at `key` is kept alive until `to_ms`: its count moves to that day.
local function restore_stored(prefix, key, to_ms)
  local from = redis.call('PEXPIRETIME', key)
  if from > 0 and stored_day(from) ~= stored_day(to_ms) then
    count_stored(prefix, from, -1)
    count_stored(prefix, to_ms, 1)
  end
end
