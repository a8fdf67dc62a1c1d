-- Gives a call's cost back to several budgets (runtime/src/store/budgets.rs), never below 0.
-- KEYS[i]: budget i's key (micros spent). ARGV[1]: the cost (micros). Returns 0.
local cost = tonumber(ARGV[1])
for i = 1, #KEYS do
  local spent = tonumber(redis.call('GET', KEYS[i]))
  if spent then
    redis.call('SET', KEYS[i], string.format('%d', math.max(0, spent - cost)))
  end
end
return 0
