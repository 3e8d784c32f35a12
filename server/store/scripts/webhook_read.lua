-- Several webhooks' hashes in one round trip (a page of the list, the enabled ones).
-- KEYS: the hashes. Returns, for each, its fields and values as HGETALL gives them (empty: gone)
local found = {}
for i = 1, #KEYS do found[i] = redis.call('HGETALL', KEYS[i]) end
return found
