-- GCRA over several buckets at once, all or none (runtime/src/store/limits.rs).
-- KEYS[i]: bucket i's key, narrowest first. ARGV[2i-1]: its emission interval t (microseconds,
-- one call every t); ARGV[2i]: its tolerance tau = t * (burst - 1) (microseconds).
-- A bucket's value is its theoretical arrival time (TAT), in microseconds of Redis' own clock.
-- Returns {0, 0} when every bucket let the call through (each took one token), else
-- {i, wait}: bucket i (the first, narrowest, that refused) lets a call through in `wait`
-- microseconds, and no bucket took anything.
local now = redis.call('TIME')
local t0 = tonumber(now[1]) * 1000000 + tonumber(now[2])
local next_tat = {}
for i = 1, #KEYS do
  local t = tonumber(ARGV[2 * i - 1])
  local tau = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i])) or t0
  local earliest = tat - tau
  if t0 < earliest then
    return {i, earliest - t0}
  end
  next_tat[i] = math.max(tat, t0) + t
end
for i = 1, #KEYS do
  -- Once its TAT has passed, a bucket is as good as new: it expires then.
  local ttl = math.max(1, math.ceil((next_tat[i] - t0) / 1000))
  redis.call('SET', KEYS[i], string.format('%d', next_tat[i]), 'PX', ttl)
end
return {0, 0}
