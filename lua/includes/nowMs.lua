-- nowMs: the Redis server's clock in whole milliseconds (the only clock Baton uses).
local function nowMs()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
