-- One page of a tenant's interactions, newest first (or oldest first), that have every tag asked for and
-- one of the statuses asked for. It reads the smallest of the tags' indexes (_index.lua), from where the
-- last page stopped, and looks at no more than a budget of ids, so a page costs what it reads, never what
-- the tenant holds: a sparse filter may return a short page (even an empty one) with a place to go on from.
-- Ids of interactions that expired are removed from the index read as they are met.
-- KEYS[1] a key of the tenant (on a Cluster, where the script runs)
-- ARGV[1] tenant key prefix, ARGV[2] the tags, space-separated (at least one), ARGV[3] the statuses
-- ('' for any), ARGV[4] the highest creation ms to read ('+inf' for none), ARGV[5] the lowest ('-inf',
-- or '(' .. ms), ARGV[6] the id the last page stopped at, whose creation ms is where this page starts:
-- ARGV[4] newest first, ARGV[5] oldest first ('' for none: the page starts at that ms itself; 'id' in
-- place of the ms: at the id's own score, wherever it is), ARGV[7] the most interactions to return,
-- ARGV[8] the most ids to look at, ARGV[9] 'asc' for oldest first ('desc' newest first), ARGV[10] '1' to
-- return each one's input steps, ARGV[11..] the hash fields to return of each
-- Returns {{id, status, field values..., cfg, in (false unless asked for), out, id, ...}, where the next
-- page starts: 'score id', '' at the end}.
-- Scores are creation ms, those of one ms a fraction apart in creation order (_index.lua), records of
-- earlier versions the ms alone (those of one ms then in id order). The bounds are whole ms, so a bound
-- reads to the end of its ms, and a page goes on from its last id's own score.
local prefix, statuses = ARGV[1], ARGV[3]
local limit, budget = tonumber(ARGV[7]), tonumber(ARGV[8])
local ascending = ARGV[9] == 'asc'
local with_input = ARGV[10] == '1'
local fields = {}
for i = 11, #ARGV do fields[#fields + 1] = ARGV[i] end

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
-- `from` is where the page starts (the highest ms newest first, the lowest oldest first), `to` its end
local from, to, after = ARGV[4], ARGV[5], ARGV[6]
if ascending then
  from, to = ARGV[5], ARGV[4]
  if to ~= '+inf' then to = '(' .. (tonumber(to) + 1) end
elseif string.sub(to, 1, 1) == '(' then
  to = tostring(tonumber(string.sub(to, 2)) + 1)
end
if from == 'id' then
  local at = redis.call('ZSCORE', index_key(prefix, 'all'), after)
  if not at then return {{}, ''} end
  from = tostring(math.floor(tonumber(at)))
end
if from ~= (ascending and '-inf' or '+inf') then
  -- its score is the same in each of its indexes (_index.lua), and it is in `all` if not in this one
  local at = after ~= '' and (redis.call('ZSCORE', key, after)
    or redis.call('ZSCORE', index_key(prefix, 'all'), after))
  if at and math.floor(tonumber(at)) == tonumber(from) then
    from = at
  elseif ascending then
    -- the whole ms, from its start (the id the last page stopped at is gone: its ms is read again)
    after = ''
  else
    -- the whole ms, from its end
    from, after = '(' .. (tonumber(from) + 1), ''
  end
end
local range = ascending and 'ZRANGEBYSCORE' or 'ZREVRANGEBYSCORE'
local offset, chunk = 0, 64
while true do
  local batch = redis.call(range, key, from, to, 'WITHSCORES', 'LIMIT', offset, chunk)
  local moved = false
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    -- ids of the same score come in id order (descending newest first): those up to `after` were on
    -- earlier pages
    local seen = after ~= '' and tonumber(score) == tonumber(from)
      and ((ascending and id <= after) or (not ascending and id >= after))
    if not seen then
      moved = true
      looked = looked + 1
      from, after, offset = score, id, 0
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
        local blobs = blobs_of(prefix .. id)
        found[#found + 1], found[#found + 2], found[#found + 3] = blobs[1], with_input and blobs[2], blobs[3]
      end
      if count >= limit or looked >= budget then return {found, from .. ' ' .. after} end
    end
  end
  -- a short batch was the end of the range
  if #batch < chunk * 2 then return {found, ''} end
  -- a whole batch of one score seen on earlier pages: read on past it
  if not moved then offset = offset + chunk end
end
