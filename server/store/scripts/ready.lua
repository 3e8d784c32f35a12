-- A worker's read of the whole queue (runner/job_loop.py read_queue): the jobs due by now that no worker
-- has in progress, the earliest first, up to ARGV[3] of them, looked for among at most ARGV[4] queued
-- jobs. A read of the first hundred alone (arq's) finds none when a hundred runs are in progress, and a
-- job left with no turn behind them (its worker died holding it, or it failed) would wait for them all.
-- KEYS[1] the queue; ARGV[1] now (ms), ARGV[2] arq's in-progress key prefix (the queue's Redis is never
-- a Cluster: store/queue_side.py), ARGV[3] most jobs found, ARGV[4] most jobs looked at
local found, seen, page = {}, 0, 100
local want, most = tonumber(ARGV[3]), tonumber(ARGV[4])
while #found < want and seen < most do
  local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', seen, page)
  for _, job in ipairs(jobs) do
    if #found < want and redis.call('EXISTS', ARGV[2] .. job) == 0 then found[#found + 1] = job end
  end
  seen = seen + page
  if #jobs < page then break end
end
return found
