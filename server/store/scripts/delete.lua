-- Delete interactions of one tenant: each one's hash, event log and cancel list, its place in the
-- running set and in its search indexes (_index.lua). One still running is told to stop at once (its run
-- then finds nothing to save).
-- KEYS[1] the running set; ARGV[1] tenant key prefix, ARGV[2] the tenant (running-set members are
-- "tenant/id"), ARGV[3] cancel channel, ARGV[4] the unfinished statuses (lifecycle.UNFINISHED),
-- ARGV[5] and ARGV[6] the suffixes of an interaction's event log and cancel list (store/keys.py),
-- ARGV[7..] interaction ids
-- Returns how many of them existed.
local prefix, tenant = ARGV[1], ARGV[2]
local deleted = 0
for i = 7, #ARGV do
  local id = ARGV[i]
  local key = prefix .. id
  local f = redis.call('HMGET', key, 'status', 'ix')
  if f[1] then
    deleted = deleted + 1
    remove_from_indexes(prefix, id, f[2])
    if one_of(ARGV[4], f[1]) then redis.call('PUBLISH', ARGV[3], tenant .. '/' .. id) end
  end
  redis.call('DEL', key, key .. ARGV[5], key .. ARGV[6])
  redis.call('ZREM', KEYS[1], tenant .. '/' .. id)
end
return deleted
