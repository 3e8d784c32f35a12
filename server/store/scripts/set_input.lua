-- Replace this turn's input steps of an interaction that still exists (a delete may have come first:
-- a plain HSET would bring back a hash with no status and no expiry).
-- KEYS[1] hash; ARGV[1] the input steps blob
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSET', KEYS[1], 'in', ARGV[1])
