-- A turn for a run's job still queued past its pickup deadline (store/jobs.py wake_for), whose token may
-- have gone with a worker that died before taking it, or that an older version queued (_turns.lua). If it
-- is listed still, it is now listed twice: take_turn.lua passes over the one found after it is taken.
-- KEYS[1] the queue's token list
-- ARGV[1] job id, ARGV[2] its tenant, ARGV[3] most tokens kept
queue_turn(KEYS[1], ARGV[2], ARGV[1], ARGV[3])
return 1
