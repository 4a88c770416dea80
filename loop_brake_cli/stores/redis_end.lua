-- A call ended (its result or answer was seen): forget the session's call id when it is
-- that call's (streak.call_ended), so a later call with the same id is counted. One
-- atomic step; the version is bumped so a compare-and-set decision that read the hash
-- before the end (redis_cas.lua) is made again on it. Count, stamp and expiry stay.
--
-- KEYS[1]  the session's key (lb:v1:{session})
-- ARGV[1]  the id's comparison key (rows.call_id_key)
-- Returns 1 when the id was forgotten, else 0.
local key = KEYS[1]
if redis.call('HGET', key, 'k') ~= ARGV[1] then
  return 0
end
redis.call('HDEL', key, 'i', 'k')
redis.call('HINCRBY', key, 'v', 1)
return 1
