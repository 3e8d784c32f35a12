-- Replace this turn's input steps of an interaction that still exists (a delete may have come first:
-- a plain write would bring back a record with no status and no expiry).
-- KEYS[1] hash; ARGV[1] the input steps blob
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
set_blob(KEYS[1], 2, ARGV[1])
return 1
