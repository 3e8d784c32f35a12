-- Prepended to the scripts that settle an interaction (finish, create) and to usage_add: what it used goes
-- to its tenant's usage of the day (keys.usage) in the same step as the status that ends it, so a settle
-- that is refused (a cancel or a takeover won) counts nothing, and one that lands counts once.
-- `key` the day's hash ('' counts nothing); `tags` the interaction's search tags (space-separated): it is
-- counted under `all`, its model's (m:), its agent's (a:) and its labels' (l:), the groups a usage report
-- reads; `status` how it ended; `amounts` "in out cached thought total calls" (store/usage.py); `ttl` ms;
-- `now` ms, the minute its tokens are counted in for the tenant's tokens-per-minute limit (limits.lua).
local USAGE_AMOUNTS = {'in', 'out', 'cached', 'thought', 'total', 'calls'}
local MINUTE_MS = 60000

-- The tenant's tokens by minute (keys.minute_tokens, named from the usage key's tenant prefix as keys.py
-- names it): the minute and the one before it are kept, all a sliding window of a minute reads.
local function count_minute(key, total, now)
  local minutes = string.match(key, '^(.*:)usage:') .. 'tpm'
  local minute = math.floor(now / MINUTE_MS)
  redis.call('HINCRBY', minutes, string.format('%d', minute), total)
  if redis.call('HLEN', minutes) > 2 then
    for _, field in ipairs(redis.call('HKEYS', minutes)) do
      if tonumber(field) < minute - 1 then redis.call('HDEL', minutes, field) end
    end
  end
  redis.call('PEXPIRE', minutes, 2 * MINUTE_MS)
end

local function count_usage(key, tags, status, amounts, ttl, now)
  if key == '' then return end
  local numbers = {}
  for n in string.gmatch(amounts, '%d+') do numbers[#numbers + 1] = tonumber(n) end
  -- a record of an earlier version may have no tags: it is counted in the tenant's total only
  for tag in string.gmatch((tags and tags ~= '') and tags or 'all', '%S+') do
    if tag == 'all' or string.find(tag, '^[mal]:') then
      redis.call('HINCRBY', key, tag .. '|s:' .. status, 1)
      for i, name in ipairs(USAGE_AMOUNTS) do
        local n = numbers[i]
        if n and n > 0 then redis.call('HINCRBY', key, tag .. '|' .. name, n) end
      end
    end
  end
  redis.call('PEXPIRE', key, ttl)
  if numbers[5] and numbers[5] > 0 then count_minute(key, numbers[5], tonumber(now)) end
end
