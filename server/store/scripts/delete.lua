-- Delete interactions of one tenant: each one's hash, body (_body.lua), event log and cancel list, its
-- place in the running set and in its search indexes (_index.lua). One still running is told to stop at
-- once (its run then finds nothing to save). A delete of a purge (server/search/deleting.py) counts what it
-- removed in the purge's progress in the same step, so that a purge's job killed at any point, and run
-- again, counts each interaction once.
-- KEYS[1] a key of the tenant (on a Cluster, where the script runs), KEYS[2] the running set when it is on
-- this Redis (store/queue_side.py: apart, the caller forgets the runs and tells them to stop)
-- ARGV[1] tenant key prefix, ARGV[2] the tenant (running-set members are "tenant/id"), ARGV[3] cancel
-- channel ('' apart), ARGV[4] the unfinished statuses (lifecycle.UNFINISHED),
-- ARGV[5] and ARGV[6] the suffixes of an interaction's event log and cancel list (store/keys.py),
-- ARGV[7] a purge's progress hash ('' for none: a key of the tenant's, as the interactions' are),
-- ARGV[8] ms to keep it, ARGV[9] its fields to set as netstrings (its `deleted` is added to),
-- ARGV[10..] interaction ids
-- Returns {how many of them existed, the ids of those that were unfinished...}.
local prefix, tenant, running = ARGV[1], ARGV[2], KEYS[2]
local deleted = {0}
for i = 10, #ARGV do
  local id = ARGV[i]
  local key = prefix .. id
  local f = redis.call('HMGET', key, 'status', 'ix', 'sc')
  if f[1] then
    deleted[1] = deleted[1] + 1
    local expiry = redis.call('PEXPIRETIME', key)
    if expiry > 0 then count_stored(prefix, expiry, -1) end
    remove_from_indexes(prefix, id, f[2], f[3])
    if one_of(ARGV[4], f[1]) then
      deleted[#deleted + 1] = id
      if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], tenant .. '/' .. id) end
    end
  end
  redis.call('DEL', key, key .. BODY_SUFFIX, key .. ARGV[5], key .. ARGV[6])
  if running then redis.call('ZREM', running, tenant .. '/' .. id) end
end
if ARGV[7] ~= '' then
  local fields = split_netstrings(ARGV[9])
  if #fields > 0 then redis.call('HSET', ARGV[7], unpack(fields)) end
  redis.call('HINCRBY', ARGV[7], 'deleted', deleted[1])
  redis.call('PEXPIRE', ARGV[7], ARGV[8])
end
return deleted
