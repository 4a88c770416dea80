-- A versioned compare-and-set of one session's hash: the write half of a decision made
-- in Python by streak.policy_step or streak.result_step (so the policy rules are
-- stated once). Written only if the hash is still at the version the decision read;
-- otherwise nothing is written and the current hash comes back, for an immediate retry.
--
-- KEYS[1]  the session's key (lb:v1:{session})
-- ARGV[1]  the version the decision read (0: no hash)
-- ARGV[2]  the idle TTL in milliseconds, or '' to keep the current expiry (a result)
-- ARGV[3..] the new hash as field, value pairs (without 'v')
-- Returns {1, new version} when written, else {0, {field, value, ...}}.
local key = KEYS[1]
local version = tonumber(redis.call('HGET', key, 'v')) or 0
if version ~= tonumber(ARGV[1]) then
  return {0, redis.call('HGETALL', key)}
end
local ttl = ARGV[2]
if ttl == '' then
  ttl = redis.call('PTTL', key)
end
redis.call('DEL', key)
redis.call('HSET', key, 'v', version + 1, unpack(ARGV, 3))
if tonumber(ttl) > 0 then
  redis.call('PEXPIRE', key, ttl)
end
return {1, version + 1}
