-- The jobs queued for later whose time has come get their turn each (_turns.lua), whose token wakes one
-- idle worker to take it (runner/job_loop.py), however busy the queue: run by any worker, at the earliest
-- due time it knows of, and now and then in case (server/runner/due_jobs.py). Each is then due again
-- `ARGV[2]` ms later (a job whose id starts with one of ARGV[6]'s prefixes, a trigger's, ARGV[7] ms later),
-- so a turn lost (its worker died before taking the job) is given again, and so is the turn of a job whose
-- worker died holding it, once its mark in progress ran out; a job gone from the queue (run and finished)
-- leaves the set, and one in progress gets no turn.
-- KEYS[1] the queue's deferred set, KEYS[2] queue, KEYS[3] the queue's token list
-- ARGV[1] now (ms), ARGV[2] again after (ms), ARGV[3] most jobs at once, ARGV[4] most tokens kept,
-- ARGV[5] arq's in-progress key prefix (the queue's Redis is never a Cluster: store/queue_side.py),
-- ARGV[6] the prefixes (space-separated) of the jobs due again sooner, ARGV[7] how soon (ms),
-- ARGV[8..] the id prefixes of the kinds of job whose ids name their tenant second (store/jobs.py KINDS)
-- Returns the job due first of those left and its due time (ms), or false when no job is queued for later
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if not first[2] then return false end
-- the common case, nothing due yet: one command
if tonumber(first[2]) > tonumber(ARGV[1]) then return {first[1], tonumber(first[2])} end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local again = tonumber(ARGV[1]) + tonumber(ARGV[2])
local sooner = tonumber(ARGV[1]) + tonumber(ARGV[7] or ARGV[2])
local quick = {}
for prefix in string.gmatch(ARGV[6] or '', '%S+') do quick[#quick + 1] = prefix end
local function again_of(job)
  for _, prefix in ipairs(quick) do
    if string.sub(job, 1, #prefix) == prefix then return sooner end
  end
  return again
end
local prefixed = {}
for i = 8, #ARGV do prefixed[ARGV[i]] = true end
-- a job's tenant, as store/jobs.py tenant_of reads it: its id's first part, or its second after a prefix
local function tenant_of(job)
  local prefix, rest = string.match(job, '^([^/]*/)(.*)$')
  if prefix and prefixed[prefix] then return string.match(rest, '^[^/]*') end
  return string.match(job, '^[^/]*')
end
for _, job in ipairs(due) do
  if not redis.call('ZSCORE', KEYS[2], job) then
    redis.call('ZREM', KEYS[1], job)
  else
    redis.call('ZADD', KEYS[1], again_of(job), job)
    if redis.call('EXISTS', ARGV[5] .. job) == 0 then
      queue_turn(KEYS[3], tenant_of(job), job, ARGV[4])
    end
  end
end
first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then return {first[1], tonumber(first[2])} end
return false
