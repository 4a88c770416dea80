-- A versioned compare-and-set of one session's hash: the write half of a decision made
-- in Python by streak.policy_step or streak.result_step (so the policy rules are
-- stated once). Written only if the hash is still at the version the decision read;
-- otherwise nothing is written and the current hash comes back, for an immediate retry.
-- The version is compared as the bytes read, so a garbage one cannot make every try a
-- conflict; a key of another type reads as no hash ('') and is overwritten.
--
-- KEYS[1]  the session's key (lb:v1:{session})
-- ARGV[1]  the version field the decision read, as read ('': no hash, or no field)
-- ARGV[2]  the idle TTL in milliseconds, or '' to keep the current expiry (a result)
-- ARGV[3..] the new hash as field, value pairs (without 'v')
-- Returns {1, new version, the type overwritten ('' for a hash or none)} when written,
-- else {0, {field, value, ...}}.
local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
local current = false
if kind == 'hash' then
  current = redis.call('HGET', key, 'v')
end
if (current or '') ~= ARGV[1] then
  if kind ~= 'hash' then
    return {0, {}}
  end
  return {0, redis.call('HGETALL', key)}
end
local version = tonumber(current)
if not version or version < 0 or version ~= math.floor(version) or version >= 2^53 then
  version = 0
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
if kind == 'hash' or kind == 'none' then
  kind = ''
end
return {1, version + 1, kind}
