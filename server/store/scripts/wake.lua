-- A job was queued: one token for one idle worker (server/worker_host.py takes it with a blocking pop), so
-- a job wakes one worker rather than all of them. Tokens a worker never took are capped.
-- KEYS[1] the queue's token list; ARGV[1] most tokens kept
redis.call('LPUSH', KEYS[1], '1')
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
return 1
