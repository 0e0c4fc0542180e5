-- jitter: spreads a non-zero delay by ±ratio (math.random is seeded from ARGV by the caller,
-- because Redis seeds it identically on every script call).
local function jitter(delay, ratio)
  if delay <= 0 or ratio <= 0 then return delay end
  local d = math.floor(delay * (1 + ratio * (2 * math.random() - 1)))
  if d < 0 then d = 0 end
  return d
end
