-- A call ended (its result or answer was seen): forget the session's call id when it is
-- that call's (streak.call_ended), so a later call with the same id is counted. One
-- atomic step; the version is bumped so a compare-and-set decision that read the hash
-- before the end (redis_cas.lua) is made again on it. Count, stamp and expiry stay.
--
-- KEYS[1]  the session's key (lb:v1:{session})
-- ARGV[1]  the id's comparison key (rows.call_id_key)
-- Returns 1 when the id was forgotten, else 0.
local key = KEYS[1]
if redis.call('TYPE', key)['ok'] ~= 'hash' then
  return 0  -- not ours: the next counted call heals it (redis_step.lua)
end
if redis.call('HGET', key, 'k') ~= ARGV[1] then
  return 0
end
local version = tonumber(redis.call('HGET', key, 'v'))
if not version or version < 0 or version ~= math.floor(version) or version >= 2^53 then
  version = 0  -- as redis_step.lua reads it: garbage cannot make this fail
end
redis.call('HDEL', key, 'i', 'k')
redis.call('HSET', key, 'v', version + 1)
return 1
