-- One scheduled time of a trigger, decided once: run (an execution in progress), or skipped (a time missed
-- while nothing ran, or one that came while its last execution still ran); and its next time set. A fire
-- job run again (its worker died) finds `next` moved on and changes nothing: each time makes one execution,
-- whose id the time names. A run now (`manual`) checks no time and moves none.
-- KEYS[1] the trigger (HASH), KEYS[2] its executions (HASH), KEYS[3] their ids (ZSET by scheduled ms)
-- ARGV[1] now (ms), ARGV[2] 'scheduled' or 'manual', ARGV[3] the scheduled time (ms), ARGV[4] its
-- execution's id, ARGV[5] '1' to run it, '0' to skip it (missed), ARGV[6] the next time (ms; scheduled),
-- ARGV[7] executions kept, ARGV[8] why a missed time is skipped, ARGV[9..] earlier missed times (ms), each
-- skipped under the id 'x<ms>'
-- Returns {what, execution (JSON) or ''}: what is 'gone', 'stale' (`next` is not this time), 'inactive'
-- (paused or error: nothing recorded), 'skipped' or 'fired'
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone', ''} end
local scheduled = ARGV[2] == 'scheduled'
if scheduled then
  if redis.call('HGET', KEYS[1], 'next') ~= ARGV[3] then return {'stale', ''} end
  if redis.call('HGET', KEYS[1], 'status') ~= 'active' then return {'inactive', ''} end
end
local function record(id, at, status, err)
  if redis.call('HEXISTS', KEYS[2], id) == 1 then return nil end
  local execution = {id = id, scheduled = tonumber(at), status = status}
  if err ~= '' then execution.error = err end
  if status == 'in_progress' then
    execution.start = tonumber(ARGV[1])
    execution.prev = redis.call('HGET', KEYS[1], 'prev') or nil
  end
  local encoded = cjson.encode(execution)
  redis.call('HSET', KEYS[2], id, encoded)
  redis.call('ZADD', KEYS[3], at, id)
  return encoded
end
for i = 9, #ARGV do record('x' .. ARGV[i], ARGV[i], 'skipped', ARGV[8]) end
local what, encoded = 'skipped', nil
local running = redis.call('HGET', KEYS[1], 'running')
if ARGV[5] ~= '1' then
  encoded = record(ARGV[4], ARGV[3], 'skipped', ARGV[8])
elseif running then
  encoded = record(ARGV[4], ARGV[3], 'skipped', 'the execution ' .. running .. ' was still in progress')
else
  what = 'fired'
  encoded = record(ARGV[4], ARGV[3], 'in_progress', '')
  redis.call('HSET', KEYS[1], 'running', ARGV[4], 'last_run', ARGV[1])
end
if scheduled then redis.call('HSET', KEYS[1], 'next', ARGV[6]) end
-- the oldest executions beyond those kept
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[7])
if over > 0 then
  local old = redis.call('ZRANGE', KEYS[3], 0, over - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, over - 1)
  redis.call('HDEL', KEYS[2], unpack(old))
end
return {what, encoded or ''}
