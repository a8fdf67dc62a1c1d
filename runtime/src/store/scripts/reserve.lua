-- Charges a call's cost to several budgets at once, all or none (runtime/src/store/budgets.rs).
-- KEYS[i]: budget i's key (what it has spent, in micros). ARGV[1]: the cost (micros);
-- ARGV[1 + i]: budget i's limit (micros).
-- Returns {0, 0} when every budget was charged, else {i, spent}: budget i (the first that
-- cannot pay) has spent `spent` micros, and no budget was charged.
local cost = tonumber(ARGV[1])
for i = 1, #KEYS do
  local spent = tonumber(redis.call('GET', KEYS[i])) or 0
  if spent + cost > tonumber(ARGV[1 + i]) then
    return {i, spent}
  end
end
for i = 1, #KEYS do
  redis.call('INCRBY', KEYS[i], cost)
end
return {0, 0}
