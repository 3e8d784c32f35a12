-- The steps of the chain ending at ARGV[2] (newest first), see _walk.lua.
-- ARGV[1] tenant key prefix, ARGV[2] interaction id, ARGV[3] max chain depth
return walk(ARGV[1], ARGV[2], tonumber(ARGV[3]), 0)
