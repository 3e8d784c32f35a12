-- The one compare-and-set that ends a run: status (an ending event's moves), output and the terminal
-- events in one step, so a reader that sees the terminal event can trust the record, and cancel and
-- completion have one winner.
-- A status its subscribers hear of (ARGV[14]) also queues the job of its end (_notify.lua); a status that
-- ends it adds what it used to its tenant's usage of the day (_usage.lua).
-- KEYS[1] hash, KEYS[2] event log, KEYS[3] cancel acknowledgement list, KEYS[4] the tenant's enabled
-- webhooks, KEYS[5] the tenant's usage of the day, then the shared keys when they are on this Redis
-- (store/queue_side.py): KEYS[6] the running set, KEYS[7..9] the end job's key, the queue, the token list
-- ARGV[1] fence of the runner, or '' for an administrative settle (a cancel or reaper without a live run):
--         it takes a new fence so a late runner is refused, and numbers the events itself
-- ARGV[2] the event's moves, ARGV[3] the status whose end a cancel waits for (its ack list is pushed),
-- ARGV[4] output blob, ARGV[5] updated timestamp, ARGV[6] log ttl ms, ARGV[7] running-set member,
-- ARGV[8] ack ttl ms, ARGV[9] the end job's id, ARGV[10] the job, ARGV[11] now ms,
-- ARGV[12] its key's ttl ms, ARGV[13] most wake tokens kept, ARGV[14] the statuses subscribers hear of,
-- ARGV[15] what the run used (_usage.lua's amounts), ARGV[16] the usage's ttl ms (every event this script
-- is given ends the interaction: store/runs.py), ARGV[17..] runner: seq, frame, ... ; administrative:
-- frame, ... (SSE frames whose JSON has no event_id yet)
-- Returns {'ok', last seq, new status, '1' if its end job is due else '', its tags} | {'missing'} |
-- {'fenced', current} | {'status', current}
local f = redis.call('HMGET', KEYS[1], 'fence', 'status', 'seq', 'log', 'wh', 'ix', 'trg')
if not f[2] then return {'missing'} end
if ARGV[1] ~= '' and f[1] ~= ARGV[1] then return {'fenced', f[2]} end
local target = move_of(ARGV[2], f[2])
if not target then return {'status', f[2]} end
local seq = tonumber(f[3] or '0')
local logged = f[4] == '1'
if ARGV[1] == '' then
  redis.call('HINCRBY', KEYS[1], 'fence', 1)
  for i = 17, #ARGV do
    seq = seq + 1
    if logged then
      local event = string.sub(ARGV[i], 1, -4) .. ',"event_id":"evt_' .. seq .. '"}\n\n'
      redis.pcall('XADD', KEYS[2], '0-' .. seq, 'e', event)
    end
  end
else
  for i = 17, #ARGV, 2 do
    seq = tonumber(ARGV[i])
    -- pcall: an append whose reply was lost may have written some of these already
    if logged then redis.pcall('XADD', KEYS[2], '0-' .. ARGV[i], 'e', ARGV[i + 1]) end
  end
end
redis.call('HSET', KEYS[1], 'status', target, 'updated', ARGV[5], 'seq', seq)
set_blob(KEYS[1], 3, ARGV[4])
if KEYS[6] then redis.call('ZREM', KEYS[6], ARGV[7]) end
if logged then redis.call('PEXPIRE', KEYS[2], ARGV[6]) end
if f[2] == ARGV[3] then
  redis.call('RPUSH', KEYS[3], '1')
  redis.call('PEXPIRE', KEYS[3], ARGV[8])
end
count_usage(KEYS[5], f[6], target, ARGV[15], ARGV[16], ARGV[11])
local due = false
if one_of(ARGV[14], target) then
  due = queue_event_job({gate = KEYS[4], job_key = KEYS[7], queue = KEYS[8], wake = KEYS[9], job = ARGV[9],
    blob = ARGV[10], now = ARGV[11], ttl = ARGV[12], cap = ARGV[13]}, f[5] == '1' or f[7] ~= false)
end
return {'ok', tostring(seq), target, due and '1' or '', f[6] or ''}
