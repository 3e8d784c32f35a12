-- A new trigger, unless the tenant has `limit` already: the check and the write in one step, so that
-- creates racing for the last place cannot both get it. Its first fire job is queued before this runs
-- (server/triggers/resource.py): a job for a time the trigger does not say is next does nothing.
-- KEYS[1] the tenant's triggers (ZSET by creation ms), KEYS[2] the trigger (HASH)
-- ARGV[1] the id, ARGV[2] creation (ms), ARGV[3] its config (JSON), ARGV[4] display name ('' none),
-- ARGV[5] next run (ms), ARGV[6] the limit
-- Returns 1 when created, 0 when the tenant is at its limit
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[6]) then return 0 end
redis.call('HSET', KEYS[2], 'res', ARGV[3], 'status', 'active', 'next', ARGV[5], 'update', ARGV[2],
  'fails', 0)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'name', ARGV[4]) end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
