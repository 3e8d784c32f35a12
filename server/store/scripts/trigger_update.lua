-- A trigger's display name and status changed, as PATCH asks. A resume (to active) sets the next run,
-- whose fire job was queued before this runs, and clears the failure count.
-- KEYS[1] the trigger (HASH)
-- ARGV[1] now (ms), ARGV[2] '1' to set the name, ARGV[3] the name ('' none), ARGV[4] the new status ('' to
-- keep it), ARGV[5] the next run (ms) when resumed
-- Returns 1 when changed, 0 when there is no such trigger
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] == '1' then
  if ARGV[3] == '' then redis.call('HDEL', KEYS[1], 'name') else redis.call('HSET', KEYS[1], 'name', ARGV[3]) end
end
local current = redis.call('HGET', KEYS[1], 'status')
if ARGV[4] == 'paused' and current ~= 'paused' then
  redis.call('HSET', KEYS[1], 'status', 'paused', 'last_pause', ARGV[1])
elseif ARGV[4] == 'active' and current ~= 'active' then
  redis.call('HSET', KEYS[1], 'status', 'active', 'last_resume', ARGV[1], 'next', ARGV[5], 'fails', 0)
end
redis.call('HSET', KEYS[1], 'update', ARGV[1])
return 1
