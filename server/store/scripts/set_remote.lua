-- Record the id of the remote run that runs this interaction's turn (upstream.base.RemoteStarted), before
-- the run reads on: a re-run after a lost worker follows that run instead of starting another. Written
-- only under the run's fence and while the interaction can still be written (lifecycle.WRITABLE).
-- KEYS[1] hash; ARGV[1] fence, ARGV[2] the writable statuses, ARGV[3] the remote id
-- Returns 'ok' | 'fenced' | the status that stopped the write ('missing' when it is gone)
local f = redis.call('HMGET', KEYS[1], 'fence', 'status')
if not f[2] then return 'missing' end
if f[1] ~= ARGV[1] then return 'fenced' end
if not one_of(ARGV[2], f[2]) then return f[2] end
redis.call('HSET', KEYS[1], 'rid', ARGV[3])
return 'ok'
