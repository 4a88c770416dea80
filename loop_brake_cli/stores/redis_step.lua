-- The seed's streak rule (streak.step) on one session's hash, in one atomic step, for
-- one call or several calls of that session in their order (filter --store sends the
-- calls of a session it has already read in one go: the store's answers are those of
-- the calls sent one at a time). Guarded by tests/test_store_redis.py, which draws call
-- sequences and requires the slots and duplicates streak.step gives, and by
-- tests/test_store_batch.py (several calls at once = one at a time). Never sees an
-- argument: only digests.
--
-- KEYS[1]  the session's key (lb:v1:{session})
-- ARGV[1]  the idle TTL in milliseconds    ARGV[2]  the time stamp (seconds)
-- then per call, four: its 32-byte digest, its tool name, its call id as canonical
-- JSON, the id's comparison key ('' = no id).
-- Returns {healed, then per call: count, duplicate (0/1), version, digest, tool}: the
-- session's slot after that call (a duplicate's is the stored slot, unchanged; digest and
-- tool are '' when they are the call's own). healed is '' or what the key held that is
-- not a streak: a type ('string', 'list', ...) or 'hash' (a hash whose slot is unreadable
-- or impossible); it was overwritten as a fresh streak.
local key = KEYS[1]
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
local count = tonumber(old[2])
local live = count ~= nil and count >= 1 and count == math.floor(count)
  and count < 2^53 and old[1] and string.len(old[1]) == 32 and old[4]
  and tonumber(old[6]) ~= nil
if kind == 'hash' and not live then
  healed = 'hash'
end
local digest, id_key, tool = old[1], old[3], old[4]
local last = nil -- the ARGV index of the last counted call: the hash written
local out = {healed}
for at = 3, #ARGV, 4 do
  local call_key = ARGV[at + 3]
  if live and call_key ~= '' and id_key == call_key then
    out[#out + 1] = count
    out[#out + 1] = 1
    out[#out + 1] = version
    out[#out + 1] = digest
    out[#out + 1] = tool
  else
    if live and digest == ARGV[at] then
      count = count + 1
    else
      count = 1
    end
    version = version + 1
    live = true
    digest, tool, id_key, last = ARGV[at], ARGV[at + 1], call_key, at
    if id_key == '' then
      id_key = false
    end
    out[#out + 1] = count
    out[#out + 1] = 0
    out[#out + 1] = version
    out[#out + 1] = ''
    out[#out + 1] = ''
  end
end
if last then
  redis.call('DEL', key)
  if not id_key then
    redis.call('HSET', key, 'd', digest, 'c', count, 't', tool, 'u', ARGV[2], 'v', version)
  else
    redis.call('HSET', key, 'd', digest, 'c', count, 't', tool, 'u', ARGV[2], 'v', version,
      'i', ARGV[last + 2], 'k', id_key)
  end
  redis.call('PEXPIRE', key, ARGV[1])
end
return out
