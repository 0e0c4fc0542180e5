-- countsKeys: whether a queue counts the leases each key holds ("held|<key>" in the limits
-- hash). Only a limit on a key's concurrency reads those counts, so only such a limit pays for
-- them: key_concurrency, or a key's own record ("key_limits" counts the records, SetKeyLimits).
-- A keyed queue without either (keys for fair queuing and weights' sake, priorities, key rates)
-- writes no per-key count at a grant and reads none at a lease end. keyConcurrency and
-- keyLimits are the limits hash's fields as HMGET answers them (false when absent).
local function countsKeys(keyConcurrency, keyLimits)
  return (keyConcurrency and keyConcurrency ~= '') or (tonumber(keyLimits or '0') or 0) > 0
end
