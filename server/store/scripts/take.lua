-- A worker takes the job a token of the version before named (it takes the others in turn: take_turn.lua),
-- or one it read in the queue itself (_take.lua).
-- KEYS[1] queue, KEYS[2] job key, KEYS[3] the job's in-progress key, KEYS[4] the queue's deferred set
-- ARGV[1] job id, ARGV[2] now (ms), ARGV[3] in-progress expiry (ms)
return take_job(KEYS[1], KEYS[4], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
