-- A delete-by-filter job's progress (store/deletions.py): fields set, `deleted` added to (two workers may
-- share the job), and the hash kept a day after this change, in one step.
-- KEYS[1] the progress hash; ARGV[1] ms to keep it, ARGV[2] how many more were deleted ('0': none),
-- ARGV[3..] fields and values
if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
if ARGV[2] ~= '0' then redis.call('HINCRBY', KEYS[1], 'deleted', ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
