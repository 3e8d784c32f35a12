-- What a call that stores nothing used (store=false, generateContent, Chat Completions): counted as a
-- settle counts a stored interaction's (_usage.lua), since no settle step of its own exists.
-- KEYS[1] the tenant's usage of the day; ARGV[1] its tags, ARGV[2] how it ended, ARGV[3] its amounts,
-- ARGV[4] ttl ms, ARGV[5] now ms
count_usage(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return 'ok'
