-- Takes the jobs due by now off the schedule; see Forwarder in schedule.go.
-- KEYS: for each message queue, most urgent first, its schedule (ZSET task id -> due ms)
-- and then its jobs (HASH task id -> payload); last the mark that the schedule is kept.
-- ARGV[1] now in ms, ARGV[2] at most this many jobs.
-- Returns the earliest due time left (ms, -1 when nothing is scheduled), 1 when the mark
-- was missing (Redis lost the schedule; it is set again) else 0, then for each job
-- taken: the number of its queue (1, 2, 3 in KEYS order), its task id, its payload.
local limit = tonumber(ARGV[2])
local mark = KEYS[#KEYS]
local out = {-1, 0}
if redis.call('EXISTS', mark) == 0 then
  redis.call('SET', mark, ARGV[1])
  out[2] = 1
end
local taken = 0
for q = 1, #KEYS - 1, 2 do
  if taken < limit then
    local ids = redis.call('ZRANGEBYSCORE', KEYS[q], '-inf', ARGV[1], 'LIMIT', 0, limit - taken)
    if #ids > 0 then
      local payloads = redis.call('HMGET', KEYS[q + 1], unpack(ids))
      redis.call('ZREM', KEYS[q], unpack(ids))
      redis.call('HDEL', KEYS[q + 1], unpack(ids))
      for i, id in ipairs(ids) do
        -- A job without its payload was half written: the sweeper finds its messages.
        if payloads[i] then
          out[#out + 1] = (q + 1) / 2
          out[#out + 1] = id
          out[#out + 1] = payloads[i]
        end
      end
      taken = taken + #ids
    end
  end
  local first = redis.call('ZRANGE', KEYS[q], 0, 0, 'WITHSCORES')
  if first[2] then
    local due = tonumber(first[2])
    if out[1] == -1 or due < out[1] then out[1] = due end
  end
end
return out
