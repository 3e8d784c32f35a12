-- A tenant's limits (server/limits/), checked and its request counted in one step: the tokens of its day
-- and of its last minute, its stored interactions, its background runs at once, its requests per minute.
-- The first limit reached refuses the request, which then counts toward none of them. A limit of 0 is none.
-- KEYS[1] its usage of the day (keys.usage: `all|total`); its other keys are named from that key's tenant
-- prefix, as keys.py names them (one slot: they share the tenant's hash tag): its request rate (hash,
-- `req`: the generic cell rate algorithm's theoretical arrival time, ms), its tokens by minute (hash:
-- minute number -> tokens, added to by _usage.lua), its background runs (zset: id -> ms when admitted),
-- its stored interactions by the day they expire (_stored.lua)
-- ARGV[1] "now rpm tpm tpd runs stored admit": now (ms), requests per minute, tokens per minute, tokens per
-- day, background runs at once, stored interactions (0 too for a request that stores nothing), and 1 to
-- admit a request (count it) or 0 only to read what tokens are left (a run starting): one argument, as the
-- client spends more on each than Redis does; ARGV[2] the id of the background interaction to admit ('' for
-- none), ARGV[3] the unfinished statuses
-- Returns {'ok', tokens left before a token limit (-1: no token limit)}, or {'over', the limit's name,
-- ms until a request would be admitted, the limit}
local MINUTE = 60000
local DAY = 86400000
-- a background run admitted this long ago whose interaction is not stored is a create that failed after
-- its admission (one that is still storing it is younger)
local UNSTORED_MS = 60000
local numbers = {}
for n in string.gmatch(ARGV[1], '%d+') do numbers[#numbers + 1] = tonumber(n) end
local now, rpm, tpm, tpd, runs, stored = unpack(numbers, 1, 6)
local admit = numbers[7] == 1
local prefix = string.match(KEYS[1], '^(.*:)usage:')
local RATE, MINUTES, RUNS, STORED = prefix .. 'rate', prefix .. 'tpm', prefix .. 'bg', prefix .. 'stored'
local left = -1

local function least(a, b)
  if a < 0 then return b end
  return math.min(a, b)
end

-- the day's tokens (a fixed UTC day, the usage totals' own)
if tpd > 0 then
  local used = tonumber(redis.call('HGET', KEYS[1], 'all|total') or '0')
  if admit and used >= tpd then return {'over', 'tokens_per_day', DAY - now % DAY, tpd} end
  left = least(left, math.max(tpd - used, 0))
end

-- the last minute's tokens: a sliding window, this minute's count and the last one's weighted by the
-- part of it still inside the window
if tpm > 0 then
  local minute = math.floor(now / MINUTE)
  local counts = redis.call('HMGET', MINUTES, tostring(minute), tostring(minute - 1))
  local current, previous = tonumber(counts[1] or '0'), tonumber(counts[2] or '0')
  local into = (now % MINUTE) / MINUTE
  local used = current + previous * (1 - into)
  if admit and used >= tpm then
    local wait
    if current >= tpm then
      -- next minute, this one's count weighs (1 - into') and must fall below the limit
      wait = (MINUTE - now % MINUTE) + (1 - tpm / current) * MINUTE
    else
      wait = ((1 - (tpm - current) / previous) - into) * MINUTE
    end
    return {'over', 'tokens_per_minute', math.floor(wait) + 1, tpm}
  end
  left = least(left, math.max(math.floor(tpm - used), 0))
end

-- stored interactions: those expiring today or later (the days passed are dropped as they are met); over
-- the limit, until the end of the day whose expiries bring the count below it (or some are deleted)
local function stored_wait()
  local today = math.floor(now / DAY)
  local counts = redis.call('HGETALL', STORED)
  local total, days = 0, {}
  for i = 1, #counts, 2 do
    local day, n = tonumber(counts[i]), tonumber(counts[i + 1])
    if day < today then
      redis.call('HDEL', STORED, counts[i])
    else
      total = total + n
      days[#days + 1] = {day, n}
    end
  end
  if total < stored then return nil end
  table.sort(days, function(a, b) return a[1] < b[1] end)
  for _, each in ipairs(days) do
    total = total - each[2]
    if total < stored then return (each[1] + 1) * DAY - now end
  end
  return DAY
end

if admit and stored > 0 then
  local wait = stored_wait()
  if wait then return {'over', 'stored_interactions', wait, stored} end
end

-- background runs at once: the admitted ids, those ended (or never stored) dropped when at the limit
if admit and runs > 0 and ARGV[2] ~= '' then
  if redis.call('ZCARD', RUNS) >= runs then
    local members = redis.call('ZRANGE', RUNS, 0, -1, 'WITHSCORES')
    for i = 1, #members, 2 do
      local status = redis.call('HGET', prefix .. members[i], 'status')
      local stale = not status and now - tonumber(members[i + 1]) > UNSTORED_MS
      if stale or (status and not one_of(ARGV[3], status)) then redis.call('ZREM', RUNS, members[i]) end
    end
  end
  if redis.call('ZCARD', RUNS) >= runs then return {'over', 'background_runs', 1000, runs} end
end

-- requests per minute: GCRA, a burst of the whole minute's allowance, then one every 60000 / rpm ms
local arrival = nil
if admit and rpm > 0 then
  local interval = MINUTE / rpm
  arrival = math.max(tonumber(redis.call('HGET', RATE, 'req') or '0'), now) + interval
  if arrival - now > MINUTE then return {'over', 'requests_per_minute', math.ceil(arrival - now - MINUTE), rpm} end
end

if arrival then
  redis.call('HSET', RATE, 'req', string.format('%.3f', arrival))
  redis.call('PEXPIRE', RATE, math.ceil(arrival - now) + 1000)
end
if admit and runs > 0 and ARGV[2] ~= '' then
  redis.call('ZADD', RUNS, now, ARGV[2])
  redis.call('PEXPIRE', RUNS, DAY)
end
return {'ok', left}
