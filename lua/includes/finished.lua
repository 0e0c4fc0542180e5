-- finished: what a script does when an agent finishes — a success, a dead letter, a cancel by a
-- parent's failure, an unregister. The finish is kept as a result record (for Await, children
-- and deduplicated registrations) until results.retention_ms after it; if the agent has
-- children attached, an outbox entry in the agent's own slot holds the record until Baton has
-- released them (flows); if a caller awaits the agent, its name is announced at the end of the
-- script ("d|<queue>|<name>|…" on the queue's channel), once per script.
--
-- A result record is "<finish>|<outcome>|<token>|<at ms>|<message length>|<message><result>":
-- finish S (succeeded), D (dead-lettered), C (cancelled), U (unregistered); the result bytes
-- come last, binary-safe. resultRecord writes it and parseResultRecord reads it (their Rust side
-- is `crate::flows::records::FinishRecord`).
--
-- The script calls flowKeys(K, ttlMs, maxEntries) first, K naming its eight keys (its header
-- declares them by these names, the fields of QueueKeys): K.results (HASH name -> record),
-- K.resultsat (ZSET name -> kept until, ms), K.fanout (SET: names with children attached),
-- K.children (the base of each parent's ZSET of children, "<children>:<parent>", lex
-- "<child queue>|<child>"), K.outbox (ZSET "<parent>|<seq>" -> written at, ms), K.outboxres
-- (HASH "<parent>|<seq>" -> record, "#" -> seq), K.awaited (ZSET name -> awaited until, ms),
-- K.deps (the base of each agent's HASH of parents, "<deps>:<child>"). ttlMs and maxEntries are
-- numbers: how long a record is kept, and how many at most.
--
-- A finish with children attached moves them (RENAME, O(1)) to "<children>:<parent>|<seq>",
-- the outbox entry's own set, which Baton releases page by page (flows); children attached
-- later wait for the parent's next finish.
local F
local finishedAwaited = {}
local function flowKeys(K, ttlMs, maxEntries)
  F = {
    results = K.results, resultsat = K.resultsat, fanout = K.fanout, children = K.children,
    outbox = K.outbox, outboxres = K.outboxres, awaited = K.awaited, deps = K.deps, ttl = ttlMs,
    max = maxEntries, written = 0, outboxed = 0,
  }
end

local function resultRecord(finish, outcome, token, at, message, result)
  return finish .. '|' .. outcome .. '|' .. token .. '|' .. string.format('%d', at) .. '|' .. #message .. '|'
    .. message .. result
end

-- A result record's fields (token and at as numbers), or nil when it is not a result record.
local function parseResultRecord(rec)
  local finish, outcome, token, at, len, from = string.match(rec, '^([SDCU])|([^|]*)|(%d+)|(%d+)|(%d+)|()')
  if not finish then return nil end
  len = tonumber(len)
  if #rec - from + 1 < len then return nil end
  return {
    finish = finish, outcome = outcome, token = tonumber(token), at = tonumber(at),
    message = string.sub(rec, from, from + len - 1), result = string.sub(rec, from + len),
  }
end

-- A result record's finish letter alone (no copy of the result).
local function resultFinish(rec)
  return string.sub(rec, 1, 1)
end

-- The children check and the awaited check cost one EXISTS each per script when the queue has
-- none (the common case), so a plain drain pays two commands per script call, not per item.
local function hasChildren()
  if F.anyChildren == nil then F.anyChildren = rcall('EXISTS', F.fanout) == 1 end
  return F.anyChildren
end

local function isAwaited(name)
  if F.anyAwaited == nil then F.anyAwaited = rcall('EXISTS', F.awaited) == 1 end
  return F.anyAwaited and rcall('ZSCORE', F.awaited, name) ~= false
end

-- Queues an outbox entry for name's children, if it has any.
local function outboxChildren(name, record, now)
  if not hasChildren() or rcall('SREM', F.fanout, name) == 0 then return end
  local member = name .. '|' .. rcall('HINCRBY', F.outboxres, '#', 1)
  rcall('RENAME', memberKey(F.children, name), memberKey(F.children, member))
  rcall('ZADD', F.outbox, now, member)
  rcall('HSET', F.outboxres, member, record)
  F.outboxed = F.outboxed + 1
end

-- Records how name finished.
local function finished(name, record, now)
  rcall('HSET', F.results, name, record)
  rcall('ZADD', F.resultsat, now + F.ttl, name)
  F.written = F.written + 1
  outboxChildren(name, record, now)
  if isAwaited(name) then finishedAwaited[#finishedAwaited + 1] = name end
end

-- Ends the script's part: drops kept records past their time or beyond maxEntries (bounded: as
-- many as were written, plus two), announces awaited finishes, and, when it wrote outbox
-- entries, announces the queue on the outbox channel (announceOutbox). Returns how many outbox
-- entries the script wrote (Baton releases their children).
local function endFinished(channel, queue, now)
  local n = F.written + 2
  local old = rcall('ZRANGEBYSCORE', F.resultsat, '-inf', string.format('%d', now), 'LIMIT', 0, n)
  local excess = rcall('ZCARD', F.resultsat) - #old - F.max
  if excess > 0 then
    for _, name in ipairs(rcall('ZRANGE', F.resultsat, #old, #old + math.min(excess, n) - 1)) do
      old[#old + 1] = name
    end
  end
  if #old > 0 then
    rcall('ZREM', F.resultsat, unpack(old))
    rcall('HDEL', F.results, unpack(old))
  end
  if #finishedAwaited > 0 then
    publish(channel, 'd|' .. queue .. '|' .. table.concat(finishedAwaited, '|'))
  end
  if F.outboxed > 0 then announceOutbox(channel, queue) end
  return F.outboxed
end

-- finished for many names at once (a batch of one-shot successes): one HSET and one ZADD.
local function finishedMany(names, records, now)
  if #names == 0 then return end
  local h, z = {}, {}
  for i, name in ipairs(names) do
    h[#h + 1], h[#h + 2] = name, records[i]
    z[#z + 1], z[#z + 2] = now + F.ttl, name
  end
  rcall('HSET', F.results, unpack(h))
  rcall('ZADD', F.resultsat, unpack(z))
  F.written = F.written + #names
  if hasChildren() then
    for i, name in ipairs(names) do outboxChildren(name, records[i], now) end
  end
  for _, name in ipairs(names) do
    if isAwaited(name) then finishedAwaited[#finishedAwaited + 1] = name end
  end
end

-- A removed agent's parents (its definition says how many) go with it.
local function dropParents(name, def)
  if string.find(def, '"parents":', 1, true) then rcall('UNLINK', memberKey(F.deps, name)) end
end
