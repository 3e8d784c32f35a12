-- One page of a tenant's interactions, newest first (or oldest first), that have every tag asked for and
-- one of the statuses asked for. It reads the smallest of the tags' indexes (_index.lua), from where the
-- last page stopped, segment after segment, and looks at no more than a budget of ids, so a page costs
-- what it reads, never what the tenant holds: a sparse filter may return a short page (even an empty one)
-- with a place to go on from. Ids of interactions that expired are removed from the index read as they
-- are met.
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

-- the smallest index drives: fewest buckets, then the smallest head
local tags, driver, smallest = {}, nil, nil
for tag in string.gmatch(ARGV[2], '%S+') do
  tags[#tags + 1] = tag
  local size = {redis.call('ZCARD', directory_key(prefix, tag)), redis.call('ZCARD', index_key(prefix, tag))}
  if smallest == nil or size[1] < smallest[1] or (size[1] == smallest[1] and size[2] < smallest[2]) then
    driver, smallest = tag, size
  end
end
if smallest[1] == 0 and smallest[2] == 0 then return {{}, ''} end
local directory = directory_key(prefix, driver)

local function matches(f)
  if statuses ~= '' and not one_of(statuses, f[1]) then return false end
  local own = ' ' .. (f[2] or '') .. ' '
  for _, tag in ipairs(tags) do
    if tag ~= driver and not string.find(own, ' ' .. tag .. ' ', 1, true) then return false end
  end
  return true
end

-- an interaction's score (its hash's `sc`; an earlier version's record: its place in the index of `tag`)
local function score_of(id, tag)
  local sc = redis.call('HGET', prefix .. id, 'sc')
  if sc then return sc end
  local key = segment_of(prefix, tag, id, false)
  return key and redis.call('ZSCORE', key, id)
end

local function value(bound)
  if bound == '+inf' then return math.huge end
  if bound == '-inf' then return -math.huge end
  return tonumber((string.gsub(bound, '^%(', '')))
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
  local at = score_of(after, 'all')
  if not at then return {{}, ''} end
  from = tostring(math.floor(tonumber(at)))
end
if from ~= (ascending and '-inf' or '+inf') then
  -- its score is the same in each of its indexes (_index.lua)
  local at = after ~= '' and score_of(after, driver)
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

-- The segments to read, in the page's order, from the one that holds `from`: newest first the head, then
-- the buckets down from it; oldest first the buckets up from it, then the head. Each is {key, bucket
-- number (nil for the head), the lowest score it can hold}.
local head = {index_key(prefix, driver), nil, nil}
-- (the lowest score as Redis wrote it: Lua's own numbers print 14 digits, a score needs 17)
local function bucket(n, first)
  return {bucket_key(prefix, driver, n), n, first}
end
local function first_segment()
  if not ascending then return head end
  local n = redis.call('ZREVRANGEBYSCORE', directory, from, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if not n[1] then n = redis.call('ZRANGE', directory, 0, 0, 'WITHSCORES') end
  if not n[1] then return head end
  return bucket(n[1], n[2])
end
local function next_segment(segment)
  if ascending then
    if not segment[2] then return nil end
    local n = redis.call('ZRANGEBYSCORE', directory, '(' .. segment[3], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if not n[1] then return head end
    if tonumber(n[2]) > value(to) then return nil end
    return bucket(n[1], n[2])
  end
  local below = segment[2] and ('(' .. segment[3]) or from
  if segment[3] and tonumber(segment[3]) <= value(to) then return nil end
  local n = redis.call('ZREVRANGEBYSCORE', directory, below, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if not n[1] then return nil end
  return bucket(n[1], n[2])
end

local range = ascending and 'ZRANGEBYSCORE' or 'ZREVRANGEBYSCORE'
local segment = first_segment()
local offset, chunk = 0, 64
while segment do
  local key = segment[1]
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
        leave(prefix, driver, key, segment[2], id)
      elseif matches(f) then
        count = count + 1
        found[#found + 1] = id
        found[#found + 1] = f[1]
        for _, field_value in ipairs(redis.call('HMGET', prefix .. id, unpack(fields))) do
          found[#found + 1] = field_value
        end
        local blobs = blobs_of(prefix .. id)
        found[#found + 1], found[#found + 2], found[#found + 3] = blobs[1], with_input and blobs[2], blobs[3]
      end
      if count >= limit or looked >= budget then return {found, from .. ' ' .. after} end
    end
  end
  if #batch < chunk * 2 then
    -- a short batch was the end of this segment's range: the next segment, or the end
    if segment[2] and redis.call('EXISTS', key) == 0 then redis.call('ZREM', directory, segment[2]) end
    segment, offset = next_segment(segment), 0
  elseif not moved then
    -- a whole batch of one score seen on earlier pages: read on past it
    offset = offset + chunk
  end
end
return {found, ''}
