-- trimDeadLetters: enforces a dead-letter queue's TTL and size: entries older than ttlMs
-- (0: no TTL) and the oldest beyond maxEntries (0: no bound) are removed, with their context;
-- onRemove(id), if given, is called for each (agents drop their definition with it). Returns
-- the ids removed (at most 2,000: a queue far past its bound is trimmed over several calls).
-- With dryRun nothing is removed and onRemove is not called.
local function trimDeadLetters(dlqKey, dlqinfoKey, now, ttlMs, maxEntries, onRemove, dryRun)
  local removed = {}
  if ttlMs > 0 then
    for _, id in ipairs(rcall('ZRANGEBYSCORE', dlqKey, '-inf', '(' .. (now - ttlMs), 'LIMIT', 0, 1000)) do
      removed[#removed + 1] = id
    end
  end
  if maxEntries > 0 then
    local excess = rcall('ZCARD', dlqKey) - #removed - maxEntries
    if excess > 1000 then excess = 1000 end -- at most 1,000 per call: the next call goes on
    if excess > 0 then
      local skip = #removed
      for _, id in ipairs(rcall('ZRANGE', dlqKey, skip, skip + excess - 1)) do
        removed[#removed + 1] = id
      end
    end
  end
  if not dryRun then
    for _, id in ipairs(removed) do
      rcall('ZREM', dlqKey, id)
      rcall('HDEL', dlqinfoKey, id)
      if onRemove then onRemove(id) end
    end
  end
  return removed
end
