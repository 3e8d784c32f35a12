-- A worker takes the next tenant's next job (_turns.lua), in one round trip as take.lua takes a named one:
-- the ring's first tenant, its oldest waiting job, and the tenant back last in the ring if it has more. A
-- job that cannot be taken (a worker's read of the whole queue took it, it is gone, or it was queued again
-- and is listed twice) is passed over, ARGV[3] at most, and the next tenant's looked at; one deferred to
-- later answers its due time (_take.lua). Each job looked at takes a token with it, all but the one the
-- caller's BLPOP took (ARGV[2]), so that the tokens stay no more than the jobs that wait and a worker they
-- wake finds one; the newest go (RPOP), as a token of the version before, which names its job, is oldest.
-- KEYS[1] queue, KEYS[2] the queue's token list, KEYS[3] the ring, KEYS[4] the queue's deferred set
-- ARGV[1] now (ms), ARGV[2] '1' when the caller took a token for this take, ARGV[3] most jobs looked at,
-- ARGV[4] arq's job key prefix, ARGV[5] its in-progress key prefix, ARGV[6] a run's in-progress expiry (ms),
-- ARGV[7..] pairs: the id prefix of a kind of job (store/jobs.py KINDS), its in-progress expiry (ms)
-- Returns {job, its data (or its due time, a number), 1 while a tenant waits still (else 0)}; {'', '', 0|1}
-- when no job was taken
local marks = {}
for i = 7, #ARGV, 2 do marks[ARGV[i]] = ARGV[i + 1] end
local function mark_of(job)
  local prefix = string.match(job, '^[^/]*/')
  return (prefix and marks[prefix]) or ARGV[6]
end
local spare = ARGV[2] == '1'
for _ = 1, tonumber(ARGV[3]) do
  local tenant = redis.call('LPOP', KEYS[3])
  if not tenant then break end
  local waiting = KEYS[2] .. ':t:' .. tenant
  local job = redis.call('LPOP', waiting)
  if redis.call('EXISTS', waiting) == 1 then redis.call('RPUSH', KEYS[3], tenant) end
  if job then
    if spare then spare = false else redis.call('RPOP', KEYS[2]) end
    local taken = take_job(KEYS[1], KEYS[4], ARGV[4] .. job, ARGV[5] .. job, job, ARGV[1], mark_of(job))
    if taken then return {job, taken, redis.call('EXISTS', KEYS[3])} end
  end
end
return {'', '', redis.call('EXISTS', KEYS[3])}
