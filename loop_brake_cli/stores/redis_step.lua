-- The seed's streak rule (streak.step) on one session's hash, in one atomic step.
-- Guarded by tests/test_store_redis.py, which draws call sequences and requires the
-- slots and duplicates streak.step gives. Never sees an argument: only digests.
--
-- KEYS[1]  the session's key (lb:v1:{session})
-- ARGV[1]  the call's 32-byte digest       ARGV[2]  the tool name
-- ARGV[3]  the call id as canonical JSON   ARGV[4]  the id's comparison key ('' = no id)
-- ARGV[5]  the time stamp (seconds)        ARGV[6]  the idle TTL in milliseconds
-- Returns {digest, count, tool, duplicate (0/1), version, healed} of the session's slot
-- after the call (a duplicate returns the stored slot, unchanged). healed is '' or what
-- the key held that is not a streak: a type ('string', 'list', ...) or 'hash' (a hash
-- whose slot is unreadable or impossible); it was overwritten as a fresh streak.
local key = KEYS[1]
local digest, tool, id_json, id_key = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local healed = ''
local kind = redis.call('TYPE', key)['ok']
if kind ~= 'hash' and kind ~= 'none' then
  redis.call('DEL', key)
  healed = kind
end
local old = redis.call('HMGET', key, 'd', 'c', 'k', 't', 'v', 'u')
local version = tonumber(old[5])
if not version or version < 0 or version ~= math.floor(version) or version >= 2^53 then
  version = 0
end
local prev_count = tonumber(old[2])
local live = prev_count ~= nil and prev_count >= 1 and prev_count == math.floor(prev_count)
  and prev_count < 2^53 and old[1] and string.len(old[1]) == 32 and old[4]
  and tonumber(old[6]) ~= nil
if kind == 'hash' and not live then
  healed = 'hash'
end
if live and id_key ~= '' and old[3] == id_key then
  return {old[1], prev_count, old[4], 1, version, ''}
end
local count = 1
if live and old[1] == digest then
  count = prev_count + 1
end
version = version + 1
redis.call('DEL', key)
if id_key == '' then
  redis.call('HSET', key, 'd', digest, 'c', count, 't', tool, 'u', ARGV[5], 'v', version)
else
  redis.call('HSET', key, 'd', digest, 'c', count, 't', tool, 'u', ARGV[5], 'v', version,
    'i', id_json, 'k', id_key)
end
redis.call('PEXPIRE', key, ARGV[6])
return {digest, count, tool, 0, version, healed}
