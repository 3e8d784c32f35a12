-- An execution's interaction was created: the execution names it, and the trigger's next one continues it.
-- KEYS[1] the trigger (HASH), KEYS[2] its executions (HASH)
-- ARGV[1] the execution's id, ARGV[2] the interaction's id
-- Returns 1 when recorded, 0 when the execution is gone or ended already
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return 0 end
local execution = cjson.decode(raw)
if execution.status ~= 'in_progress' then return 0 end
if execution.ix ~= ARGV[2] then
  execution.ix = ARGV[2]
  redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(execution))
end
if redis.call('HGET', KEYS[1], 'running') == ARGV[1] then redis.call('HSET', KEYS[1], 'prev', ARGV[2]) end
return 1
