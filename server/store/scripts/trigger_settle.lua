-- An execution ends (its interaction ended, or ran past the trigger's timeout, or could not be created):
-- once, from in_progress only. A failure counts toward the trigger's max_consecutive_failures, and the one
-- that reaches it moves the trigger to `error` (it fires no more until resumed); a success resets the count.
-- Settled by its interaction's end (ARGV[7]), it also records that interaction as trigger_started.lua
-- does, which may not have run yet: an interaction can end before its fire records it.
-- KEYS[1] the trigger (HASH), KEYS[2] its executions (HASH)
-- ARGV[1] the execution's id, ARGV[2] its end status, ARGV[3] its error ('' none), ARGV[4] now (ms),
-- ARGV[5] '1' if it failed, ARGV[6] the trigger's failure limit (0: none), ARGV[7] the interaction whose
-- end settles it ('' when none does)
-- Returns 1 when settled, 0 when it was not in progress (settled already, or gone) or has another interaction
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then
  -- gone (dropped as the oldest of many): the trigger must not wait for it for ever
  if redis.call('HGET', KEYS[1], 'running') == ARGV[1] then redis.call('HDEL', KEYS[1], 'running') end
  return 0
end
local execution = cjson.decode(raw)
if execution.status ~= 'in_progress' then return 0 end
local running = redis.call('HGET', KEYS[1], 'running') == ARGV[1]
if ARGV[7] ~= '' then
  if execution.ix and execution.ix ~= ARGV[7] then return 0 end
  execution.ix = ARGV[7]
  if running then redis.call('HSET', KEYS[1], 'prev', ARGV[7]) end
end
execution.status = ARGV[2]
execution['end'] = tonumber(ARGV[4])
if ARGV[3] ~= '' then execution.error = ARGV[3] end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(execution))
if redis.call('EXISTS', KEYS[1]) == 0 then return 1 end
if running then redis.call('HDEL', KEYS[1], 'running') end
if ARGV[5] == '1' then
  local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
  local limit = tonumber(ARGV[6])
  if limit > 0 and fails >= limit and redis.call('HGET', KEYS[1], 'status') == 'active' then
    redis.call('HSET', KEYS[1], 'status', 'error', 'update', ARGV[4])
  end
else
  redis.call('HSET', KEYS[1], 'fails', 0)
end
return 1
