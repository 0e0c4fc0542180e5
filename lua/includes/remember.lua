-- remember: records the answer of a call that changed something, under its request field
-- ("<rpc>|...|<request id>", built by the host; "" remembers nothing), so a retry with the same
-- request id gets it back (recall). Bounded work: each call drops at most two entries older
-- than retentionMs and at most two beyond maxEntries (oldest first), and both keys expire
-- retentionMs after the last call that remembered something, so a quiet source keeps nothing.
local function remember(requestsKey, answersKey, field, answer, now, retentionMs, maxEntries)
  if field == '' then return end
  rcall('ZADD', requestsKey, now, field)
  rcall('HSET', answersKey, field, cjson.encode(answer))
  local old = rcall('ZRANGEBYSCORE', requestsKey, '-inf', '(' .. string.format('%d', now - retentionMs), 'LIMIT', 0, 2)
  local excess = rcall('ZCARD', requestsKey) - #old - maxEntries
  if excess > 0 then
    for _, f in ipairs(rcall('ZRANGE', requestsKey, #old, #old + math.min(excess, 2) - 1)) do old[#old + 1] = f end
  end
  if #old > 0 then
    rcall('ZREM', requestsKey, unpack(old))
    rcall('HDEL', answersKey, unpack(old))
  end
  rcall('PEXPIRE', requestsKey, retentionMs)
  rcall('PEXPIRE', answersKey, retentionMs)
end
