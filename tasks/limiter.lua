-- Sliding-log rate limiter; see Limiter in limiter.go.
-- KEYS[1] account call log (ZSET, score = call time in µs)
-- KEYS[2] recipient call log (ZSET)
-- KEYS[3] waiting flags of the account (HASH priority rank -> µs until which one waits)
-- ARGV: member (the call's unique log entry), priority rank, n account windows, (window µs, limit)*, n recipient windows, (window µs, limit)*[, now µs]
-- Returns {1, 0, 0} when admitted, {0, wait µs, index of the refusing window} when not
-- (index -1: a more urgent message of the account is waiting). The time is Redis's own
-- unless the last argument gives one (a test's clock).
local member = ARGV[1]
local rank = tonumber(ARGV[2])
local now
local given = ARGV[5 + 2 * tonumber(ARGV[3]) + 2 * tonumber(ARGV[4 + 2 * tonumber(ARGV[3])])]
if given then
  now = tonumber(given)
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function check(key, first, n, offset)
  local wait, which, longest = 0, -1, 0
  for i = 0, n - 1 do
    local w = tonumber(ARGV[first + 2 * i])
    local limit = tonumber(ARGV[first + 2 * i + 1])
    if w > longest then longest = w end
    local count = redis.call('ZCOUNT', key, '(' .. (now - w), '+inf')
    if count >= limit then
      -- The call that must leave the window first is the (count-limit+1)-th oldest in it.
      local e = redis.call('ZRANGEBYSCORE', key, '(' .. (now - w), '+inf', 'WITHSCORES', 'LIMIT', count - limit, 1)
      local free = tonumber(e[2]) + w - now
      if free > wait then wait, which = free, offset + i end
    end
  end
  return wait, which, longest
end

local na = tonumber(ARGV[3])
local nr = tonumber(ARGV[4 + 2 * na])
local waitA, whichA, longestA = check(KEYS[1], 4, na, 0)
local waitR, whichR, longestR = check(KEYS[2], 5 + 2 * na, nr, na)
local wait, which = waitA, whichA
if waitR > wait then wait, which = waitR, whichR end

if wait > 0 then
  -- Only account-wide waits hold back less urgent messages; one busy recipient does not.
  if waitA > 0 then
    local until_ = now + waitA
    local prev = tonumber(redis.call('HGET', KEYS[3], rank) or '0')
    if until_ > prev then redis.call('HSET', KEYS[3], rank, until_) end
    redis.call('PEXPIRE', KEYS[3], math.floor(waitA / 1000) + 5000)
  end
  return {0, wait, which}
end

-- Is a more urgent message of this account waiting for capacity that is free now?
for r = 0, rank - 1 do
  local until_ = tonumber(redis.call('HGET', KEYS[3], r) or '0')
  if until_ + 200000 > now then
    return {0, math.max(until_ - now, 0) + 20000 * (rank - r), -1}
  end
end

-- This rank's waiters have all reached their time: stop holding back less urgent ones.
local mine = tonumber(redis.call('HGET', KEYS[3], rank) or '0')
if mine > 0 and mine <= now then redis.call('HDEL', KEYS[3], rank) end

if na > 0 then
  redis.call('ZADD', KEYS[1], now, member)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - longestA)
  redis.call('PEXPIRE', KEYS[1], math.floor(longestA / 1000) + 1000)
end
if nr > 0 then
  redis.call('ZADD', KEYS[2], now, member)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - longestR)
  redis.call('PEXPIRE', KEYS[2], math.floor(longestR / 1000) + 1000)
end
return {1, 0, 0}
