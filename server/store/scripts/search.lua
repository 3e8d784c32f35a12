-- One page of a tenant's interactions, newest first, that have every tag asked for and one of the
-- statuses asked for. It reads the smallest of the tags' indexes (_index.lua), from where the last page
-- stopped, and looks at no more than a budget of ids, so a page costs what it reads, never what the tenant
-- holds: a sparse filter may return a short page (even an empty one) with a place to go on from. Ids of
-- interactions that expired are removed from the index read as they are met.
-- KEYS[1] a key of the tenant (on a Cluster, where the script runs)
-- ARGV[1] tenant key prefix, ARGV[2] the tags, space-separated (at least one), ARGV[3] the statuses
-- ('' for any), ARGV[4] the highest creation ms to read ('+inf' for none), ARGV[5] the lowest ('-inf',
-- or '(' .. ms), ARGV[6] the id the last page stopped at, whose creation ms is ARGV[4] ('' for none: the
-- page starts at ARGV[4] itself), ARGV[7] the most interactions to return, ARGV[8] the most ids to look at,
-- ARGV[9..] the hash fields to return of each
-- Returns {{id, status, field values..., id, ...}, where the next page starts: 'score id', '' at the end}.
-- Scores are creation ms, those of one ms a fraction apart in creation order (_index.lua), records of
-- earlier versions the ms alone (those of one ms then in descending id order). The bounds are whole ms,
-- so the highest reads to the end of its ms, and a page goes on from its last id's own score.
local prefix, statuses = ARGV[1], ARGV[3]
local limit, budget = tonumber(ARGV[7]), tonumber(ARGV[8])
local fields = {}
for i = 9, #ARGV do fields[#fields + 1] = ARGV[i] end

local tags, driver, smallest = {}, nil, nil
for tag in string.gmatch(ARGV[2], '%S+') do
  tags[#tags + 1] = tag
  local size = redis.call('ZCARD', index_key(prefix, tag))
  if smallest == nil or size < smallest then driver, smallest = tag, size end
end
if smallest == 0 then return {{}, ''} end
local key = index_key(prefix, driver)

local function matches(f)
  if statuses ~= '' and not one_of(statuses, f[1]) then return false end
  local own = ' ' .. (f[2] or '') .. ' '
  for _, tag in ipairs(tags) do
    if tag ~= driver and not string.find(own, ' ' .. tag .. ' ', 1, true) then return false end
  end
  return true
end

local found, count, looked = {}, 0, 0
local top, after, low = ARGV[4], ARGV[6], ARGV[5]
if string.sub(low, 1, 1) == '(' then low = tostring(tonumber(string.sub(low, 2)) + 1) end
if top ~= '+inf' then
  -- its score is the same in each of its indexes (_index.lua), and it is in `all` if not in this one
  local at = after ~= '' and (redis.call('ZSCORE', key, after)
    or redis.call('ZSCORE', index_key(prefix, 'all'), after))
  if at and math.floor(tonumber(at)) == tonumber(top) then
    top = at
  else
    -- the whole ms (the id the last page stopped at is gone: its ms is read again from its top)
    top, after = '(' .. (tonumber(top) + 1), ''
  end
end
local offset, chunk = 0, 64
while true do
  local batch = redis.call('ZREVRANGEBYSCORE', key, top, low, 'WITHSCORES', 'LIMIT', offset, chunk)
  local moved = false
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    -- ids of the same ms come in descending order: those not below `after` were on earlier pages
    if after == '' or tonumber(score) ~= tonumber(top) or id < after then
      moved = true
      looked = looked + 1
      top, after, offset = score, id, 0
      -- the status and tags first: the blobs only of a match
      local f = redis.call('HMGET', prefix .. id, 'status', 'ix')
      if not f[1] then
        redis.call('ZREM', key, id)
      elseif matches(f) then
        count = count + 1
        found[#found + 1] = id
        found[#found + 1] = f[1]
        for _, value in ipairs(redis.call('HMGET', prefix .. id, unpack(fields))) do
          found[#found + 1] = value
        end
      end
      if count >= limit or looked >= budget then return {found, top .. ' ' .. after} end
    end
  end
  -- a short batch was the end of the range
  if #batch < chunk * 2 then return {found, ''} end
  -- a whole batch of one ms seen on earlier pages: read on past it
  if not moved then offset = offset + chunk end
end
