-- One interaction's record: the hash fields ARGV[1..], then its blobs cfg, in and out (_body.lua), in one
-- round trip whichever version stored it.
-- KEYS[1] hash
-- Returns the values (false for each missing; all false when there is no such interaction).
local values = redis.call('HMGET', KEYS[1], unpack(ARGV))
local blobs = blobs_of(KEYS[1])
for i = 1, 3 do values[#ARGV + i] = blobs[i] end
return values
