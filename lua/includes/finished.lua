-- finished: what a script does when an agent finishes — a success, a dead letter, a cancel by a
-- parent's failure, an unregister, an expiry. The finish is kept as a result record only where someone can
-- read it (keepsFinish): an agent that keeps its result (its definition says "keep": Agent.keep_result,
-- its queue's results.keep_queues, an idempotency key, a batch member, a parent named in its
-- child's Register call), a recurring agent, a batch's sentinel, an agent with children attached
-- (or named as a parent by a Register in progress: knownAgents marks it in fanout), and an agent
-- an Await waits for (awaited, not past its time). A plain one-shot agent's finish writes nothing.
-- F.kept names the agents whose finish this script kept (their steps go with it: runSteps).
-- A kept record stays until results.retention_ms after it (for Await, children and deduplicated
-- registrations); if the agent has children attached, an outbox entry in the agent's own slot
-- holds the record until Baton has released them (flows); if a caller awaits the agent, its
-- name is announced at the end of the script ("d|<queue>|<name>|…" on the queue's channel),
-- once per script.
--
-- A result record is "<finish>|<outcome>|<token>|<at ms>|<message length>|<message><result>":
-- finish S (succeeded), D (dead-lettered), C (cancelled), U (unregistered), X (expired: no run
-- started before the agent's expiry); c and u are C and U that cascade (CancelRun or Unregister
-- with cascade, and every descendant a cascade cancelled): a child released from one is
-- cancelled whatever its policy (releaseChild); the result bytes
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
local function flowKeys(K, ttlMs, maxEntries)
  F = {
    results = K.results, resultsat = K.resultsat, fanout = K.fanout, children = K.children,
    outbox = K.outbox, outboxres = K.outboxres, awaited = K.awaited, deps = K.deps, ttl = ttlMs,
    max = maxEntries, written = 0, outboxed = 0, kept = {}, cascaded = 0, awaitedNames = {},
  }
end

local function resultRecord(finish, outcome, token, at, message, result)
  return finish .. '|' .. outcome .. '|' .. token .. '|' .. string.format('%d', at) .. '|' .. #message .. '|'
    .. message .. result
end

-- A result record's fields (token and at as numbers), or nil when it is not a result record.
local function parseResultRecord(rec)
  local finish, outcome, token, at, len, from = string.match(rec, '^([SDCUXcu])|([^|]*)|(%d+)|(%d+)|(%d+)|()')
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

-- Whether a result record's finish cascades to the children (c, u).
local function cascades(rec)
  local f = string.sub(rec, 1, 1)
  return f == 'c' or f == 'u'
end

-- The children check and the awaited check cost one EXISTS each per script when the queue has
-- none (the common case), so a plain drain pays two commands per script call, not per item.
local function hasChildren()
  if F.anyChildren == nil then F.anyChildren = rcall('EXISTS', F.fanout) == 1 end
  return F.anyChildren
end

local function anyAwaited()
  if F.anyAwaited == nil then F.anyAwaited = rcall('EXISTS', F.awaited) == 1 end
  return F.anyAwaited
end

-- Awaited: an Await marked it until a time not past yet.
local function isAwaited(name, now)
  return anyAwaited() and tonumber(rcall('ZSCORE', F.awaited, name) or '-1') >= now
end

-- Queues an outbox entry for name's children, if it has any. Returns whether name was in fanout
-- (children attached, or named as a parent by a Register not yet attached: no children set).
-- The message of a descendant a cascade from ancestor ("<queue>|<name>", the queue physical: a
-- shard's "#<i>" is left out) cancels.
local function cascadeMessage(ancestor)
  local q, n = string.match(ancestor, '^([^|]*)|(.*)$')
  return 'cancelled: ancestor ' .. (string.gsub(q or '', '#%d+$', '')) .. '/' .. (n or ancestor)
end

-- Moves name's set of children (from, which exists) under a new outbox entry that releases
-- them from record.
local function freezeChildren(name, from, record, now)
  local member = name .. '|' .. rcall('HINCRBY', F.outboxres, '#', 1)
  -- A cascade counts the children it takes (CancelRun's and Unregister's `cascaded`).
  if cascades(record) then F.cascaded = F.cascaded + rcall('ZCARD', from) end
  rcall('RENAME', from, memberKey(F.children, member))
  rcall('ZADD', F.outbox, now, member)
  rcall('HSET', F.outboxres, member, record)
  F.outboxed = F.outboxed + 1
end

-- In a script that releases children here (F.direct, set by completeAgents), a finish that
-- does not cascade leaves its children in place and is listed in F.direct; the script then
-- releases them from their live set (releaseDirect), or freezes them as here when it cannot.
local function outboxChildren(name, record, now)
  if not hasChildren() or rcall('SREM', F.fanout, name) == 0 then return false end
  local from = memberKey(F.children, name)
  if rcall('EXISTS', from) == 0 then return true end
  if F.direct and not cascades(record) then
    F.direct[#F.direct + 1] = { name, record }
  else
    freezeChildren(name, from, record, now)
  end
  return true
end

-- A cascade from an agent that goes on (CancelRun with cascade): its children attached now are
-- frozen under an outbox entry whose record cascades (message: the ancestor), so each is
-- cancelled; the agent keeps its place in fanout (its next finish is still kept for children
-- attached later). Nothing when it has no children.
local function cascadeChildren(name, queue, now)
  local from = memberKey(F.children, name)
  if rcall('EXISTS', from) == 0 then return end
  freezeChildren(name, from, resultRecord('c', '', 0, now, cascadeMessage(queue .. '|' .. name), ''), now)
end

-- Records how name finished: its children's outbox entry, its announcement to awaiters, and
-- the kept record where someone can read it (keep: keepsFinish of its definition).
local function finished(name, record, now, keep)
  local parent = outboxChildren(name, record, now)
  local awaited = isAwaited(name, now)
  if keep or parent or awaited then
    rcall('HSET', F.results, name, record)
    rcall('ZADD', F.resultsat, now + F.ttl, name)
    F.written = F.written + 1
    F.kept[name] = true
  end
  if awaited then F.awaitedNames[#F.awaitedNames + 1] = name end
end

-- Ends the script's part: when it kept records, drops kept records past their time or beyond
-- maxEntries (bounded: as many as were written, plus two) and makes both keys expire ttlMs after
-- this last write (a queue that stops keeping finishes keeps none for long; a script that kept
-- none pays nothing here); announces awaited finishes, and, when it wrote outbox entries,
-- announces the queue on the outbox channel (announceOutbox). Returns how many outbox entries
-- the script wrote (Baton releases their children).
local function endFinished(channel, queue, now)
  if F.written > 0 then
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
      -- A finish's steps ("<name>|steps", runSteps) go with it, in the same command.
      local fields = {}
      for i, name in ipairs(old) do fields[2 * i - 1], fields[2 * i] = name, name .. '|steps' end
      rcall('HDEL', F.results, unpack(fields))
    end
    rcall('PEXPIRE', F.results, F.ttl)
    rcall('PEXPIRE', F.resultsat, F.ttl)
  end
  if #F.awaitedNames > 0 then
    publish(channel, 'd|' .. queue .. '|' .. table.concat(F.awaitedNames, '|'))
  end
  if F.outboxed > 0 then announceOutbox(channel, queue) end
  return F.outboxed
end

-- finished for many names at once (a batch of one-shot successes; keeps[i]: keepsFinish of
-- name i's definition; recordOf(i): name i's result record, made only for a finish that is
-- kept or has children): one HSET and one ZADD for the records kept, none when nobody reads
-- them. A queue with no children and no awaiters pays nothing per name.
local function finishedMany(names, recordOf, keeps, now)
  if #names == 0 then return end
  local children, awaited = hasChildren(), anyAwaited()
  local h, z = {}, {}
  for i, name in ipairs(names) do
    local keep = keeps[i]
    local record = (keep or children) and recordOf(i)
    if children and outboxChildren(name, record, now) then keep = true end
    if awaited and isAwaited(name, now) then
      keep = true
      F.awaitedNames[#F.awaitedNames + 1] = name
    end
    if keep then
      F.kept[name] = true
      h[#h + 1], h[#h + 2] = name, record or recordOf(i)
      z[#z + 1], z[#z + 2] = now + F.ttl, name
    end
  end
  if #h > 0 then
    rcall('HSET', F.results, unpack(h))
    rcall('ZADD', F.resultsat, unpack(z))
    F.written = F.written + #h / 2
  end
end

-- A removed agent's parents (its definition says how many) go with it.
local function dropParents(name, def)
  if string.find(def, '"parents":', 1, true) then rcall('UNLINK', memberKey(F.deps, name)) end
end
