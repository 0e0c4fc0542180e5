--[[
  readGroup: a shared concurrency group's limits and what it holds now (GetGroupLimits), its
  bucket refilled to now on the Redis clock; nothing is written.

  Input:
    KEYS[1] group  HASH concurrency, rate, burst, key_concurrency, tokens, at, "created", held

  Output -> GroupRead:
    { exists (0/1), concurrency or "", rate or "", burst or "", key_concurrency or "", held,
      tokens or "" }
]]
local rcall = redis.call
--@include nowMs

local g = rcall('HMGET', K.group, 'created', 'concurrency', 'rate', 'burst', 'key_concurrency', 'held', 'tokens', 'at')
if not g[1] then return { 0, '', '', '', '', 0, '' } end
local tokens = ''
if g[3] then
  local burst = tonumber(g[4])
  local t, at = tonumber(g[7] or g[4]), tonumber(g[8] or '0')
  local now = nowMs()
  if at > 0 and now > at then t = t + (now - at) * tonumber(g[3]) / 1000 end
  if t > burst then t = burst end
  tokens = string.format('%.3f', t)
end
return { 1, g[2] or '', g[3] or '', g[4] or '', g[5] or '', tonumber(g[6] or '0'), tokens }
