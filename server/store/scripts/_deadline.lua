-- Prepended first to every script: ARGV[1] is the time (ms of Redis's own clock) after which the caller no
-- longer waits for the answer (store/deadlines.py), or '' for a script that changes nothing a caller was
-- told about. It is taken off ARGV, so the script after it sees its own arguments from ARGV[1].
-- A script Redis runs later than that (it sat in a socket while Redis was frozen, or behind a stalled
-- network) writes nothing and answers LATE: the caller has answered 503 already, and a 503 must mean that
-- nothing was applied.
local deadline = table.remove(ARGV, 1)
if deadline ~= '' then
  local clock = redis.call('TIME')
  if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) > tonumber(deadline) then
    return redis.error_reply('LATE the write arrived after its deadline; nothing was written')
  end
end
