--[[
  acquireKeyed: acquireAgents for a keyed queue ("keyed" in the limits hash: an agent was
  registered with a key or a priority): moves up to max due agents from waiting to working, each
  under a new lease with a fresh fencing token, under the same flow control as acquireAgents
  (pause, concurrency, rate: grantLeases), and records the worker as alive in the queue (only
  refreshed, never added, when it gets nothing). A queue that is not keyed is not this
  script's: it answers { -1 } and writes nothing, and Baton calls acquireAgents.

  It hands out due agents by priority, then round-robin across keys (start-time fair queuing),
  then by due time and name (a key of weight w, "key|<key>", takes w agents per round:
  keyedOrder):
  - agents made due at once by Register are promoted by registerAgents; each call here first
    *promotes* up to 2 * max + 100 (at most scanLimit) agents that became due since: in waiting their
    score becomes minus their due time (still "due" to every other script, and the due time is
    kept), and they enter `order` scored rank * 2^42 + tag (rank = 1000 - priority). An agent's
    tag is its key's last tag (`tags`) or the queue's virtual time ("vtime"), whichever is
    later, plus one: a key's agents take one tag each in due order, so keys with due work take
    turns, one agent per key per round, and a key that was idle joins the current round;
  - grants read `order` from its head, in pages, at most 4 * max + 200 entries: an agent whose key is at `key_concurrency`
    ("held|<key>" leases held, counted only while the queue limits keys' concurrency: countsKeys)
    or out of tokens ("bucket|<key>" = "tokens|at", `key_rate` per
    second holding `key_burst`) is passed over, so it never blocks the keys behind it, and moves
    to the rounds after the call's last grant (keeping its order); "vtime" becomes the tag of the
    last grant;
  - with priority aging ("priority_aging", ms), an agent due for longer than that goes ahead of
    every priority: its `order` entry takes rank 0 (as priority 1000) and keeps its tag, so the
    aged go in their turn. Each call looks only at the oldest promoted agents (at most asked +
    100, read from waiting's head of promoted entries), so the work per call stays fixed.
  An `order` entry whose agent is no longer promoted in waiting (Unregister, purge, a reset) is
  stale and dropped when it comes up; when `order` is empty, agents left promoted without an
  entry are promoted again, and tags start again from 0. Agents without a key form the key "".
  A keyed lease records its key in the lease record ("...|timeout_ms@key"), and every script
  that ends a lease gives the key's place back (keyLeaseEnded).

  Expiry: a due agent whose definition carries an expiry ("expire_at_ms": Agent.expire_at or
  ttl) that has passed is not granted: it finishes as expired (expireAgent: a failure for its
  children, kept and announced as finishes are) and counts toward no limit. A grant of an
  agent whose expiry is still ahead starts its first run: its definition drops the expiry and
  it leaves expiring. A definition without one pays a string search, no command.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] seq        STRING fencing token counter of the queue
    KEYS[8] workers    ZSET worker id -> last seen (ms)
    KEYS[9] limits     HASH paused ("1"), concurrency, rate, burst, and the bucket's state:
                       tokens, at (ms, refilled up to then); "blocked" set here when the
                       concurrency limit held due work back (the lease-ending scripts announce
                       the queue once a lease ends: wakeBlocked); keyed, key_concurrency,
                       key_rate, key_burst, vtime, "held|<key>", "bucket|<key>",
                       priority_aging (keyed queues); "key|<key>" = "weight|concurrency|
                       rate|burst", a key's own limits in place of key_concurrency / key_rate
                       / key_burst (read while "key_limits" counts any); "recount",
                       "rc|<key>", "rn|<name>": a recount's bookkeeping, kept for each keyed
                       grant (recountKeys)
    KEYS[10] order     ZSET name -> rank * 2^42 + tag: promoted agents of a keyed queue
    KEYS[11] tags      HASH key -> the tag of its last promoted agent
    KEYS[12] stats     HASH "expired" -> agents expired (counted here at grant time)
    KEYS[13] expiring  ZSET name -> expire at (ms): agents with an expiry not started yet
    KEYS[14] results   HASH name -> result record (finished)
    KEYS[15] resultsat ZSET name -> kept until (ms)
    KEYS[16] fanout    SET names with children
    KEYS[17] children  base of "children:<parent>"
    KEYS[18] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[19] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[20] awaited   ZSET name -> awaited until (ms)
    KEYS[21] deps      base of "deps:<child>"
    KEYS[22] steps     HASH name -> the steps its current run recorded (runSteps)
    KEYS[23] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[24] groupblocked SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] worker (str)      worker id of the caller
    ARGV[2] max (uint)        most leases to grant
    ARGV[3] scanLimit (uint)  most waiting entries to read
    ARGV[4] channel (str)       where an expired agent's finish is announced: "P|S <wake-up
                                channel>" or "", then "\n<outbox channel>" (announceOutbox)
    ARGV[5] queue (str)         queue name
    ARGV[6] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[7] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[8] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)

  Output -> Acquisition:
    { -1 }  the queue is not keyed: nothing written (acquireAgents is its path)
    { now, nextDue, repaired, expired, outboxed, (name, token, deadline, attempt, definition,
      payload, steps, n, (parent, state)*)* }
    expired: agents expired here; outboxed: outbox entries their finishes wrote. steps is the
    lease's run's steps recorded by earlier attempts (stepRecord), "" for none. n is how many
    (parent, state) pairs follow, the agent's deps ("<parent queue>|<parent>" -> "p<policy>"
    or the parent's result record: what readFamily reads): 0 without parents, -1 when it has
    more than the grant reads (PARENTS_INLINE, grantLeases), which Baton then reads itself.
    nextDue is the earliest next run left in waiting, or -1 when waiting is empty. When limits
    hold due work back it is when to try again: -1 when paused or at the concurrency limit (a
    wake-up comes), the bucket's next token when the rate limit binds (for a keyed queue: the
    earliest of the keys' buckets and the next agent to become due).
]]
local rcall = redis.call
--@include nowMs
--@include int
--@include defField
--@include keyedOrder
--@include countsKeys
--@include leaseRecord
--@include publish
--@include memberKey
--@include keepsFinish
--@include finished
--@include expireAgent
--@include runSteps
--@include watchEvent
--@include groupLimits
--@include grantLeases

local early = startAcquire(K, A.worker, A.max, true, A.groupName)
if early then return early end
flowKeys(K, A.resultTtlMs, A.resultMax)
local waitingKey, defsKey, limitsKey, orderKey, tagsKey = K.waiting, K.defs, K.limits, K.order, K.tags
local now, max, asked, scanLimit, lim = G.now, G.max, G.asked, A.scanLimit, G.lim
local out = G.out
-- Start-time fair queuing: every promoted agent gets a tag, max(its key's last tag, the
-- queue's virtual time) + 1, and `order` hands agents out by priority rank, then tag, then
-- name. A key's agents take consecutive tags, so keys with due work take turns (one agent per
-- key per round), a key that was idle joins the current round, and one ZRANGE reads the
-- dispatch order whatever the number of keys.
local UNIT = ORDER_UNIT
local vtime = tonumber(lim[11] or '0')
local vtimeBefore = vtime
local keyLimit = tonumber(lim[8] or '')
local keyRate, keyBurst = tonumber(lim[9] or '0'), tonumber(lim[10] or '0')
-- Per-key overrides (SetKeyLimits: "key|<key>" records, "key_limits" while any exists).
local overrides = lim[13] ~= false and lim[13] ~= nil and lim[13] ~= '0'
-- Per-key lease counts only where a limit on keys' concurrency reads them (countsKeys).
local counting = countsKeys(lim[8], lim[13])
local limitOf, rateOf = {}, {} -- key -> its concurrency limit (false: none); { rate, burst }
-- cmd key list..., in chunks (Lua's unpack takes at most ~8000 values).
local function chunked(cmd, key, list)
  for i = 1, #list, 4000 do rcall(cmd, key, unpack(list, i, math.min(i + 3999, #list))) end
end

-- Promote newly due agents (score >= 0) into order; when order is empty, also any agent left
-- promoted without an order entry (written by an older layout): promotion is idempotent.
-- A drained queue starts its tags again from 0 and forgets its keys' tags (UNLINK: freed off
-- the script's thread, so the cost does not grow with the number of keys). Keys' held counts
-- need no sweep: the lease-ending scripts delete a count that reaches 0 (keyLeaseEnded).
local cap = math.min(scanLimit, asked * 2 + 100)
local drained = rcall('ZCARD', orderKey) == 0
if drained and vtime > 0 then
  vtime = 0
  rcall('UNLINK', tagsKey)
end
local fresh = rcall('ZRANGEBYSCORE', waitingKey, 0, now, 'WITHSCORES', 'LIMIT', 0, cap)
if #fresh == 0 and drained then
  fresh = rcall('ZRANGEBYSCORE', waitingKey, '-inf', '(0', 'WITHSCORES', 'LIMIT', 0, cap)
end
if #fresh > 0 then
  local names = {}
  for i = 1, #fresh, 2 do names[#names + 1] = fresh[i] end
  local defs = rcall('HMGET', defsKey, unpack(names))
  local pNames, pDefs, pDues, gone = {}, {}, {}, {}
  for j, name in ipairs(names) do
    if defs[j] then
      pNames[#pNames + 1], pDefs[#pDefs + 1] = name, defs[j]
      pDues[#pDues + 1] = math.abs(tonumber(fresh[2 * j]))
    else
      gone[#gone + 1] = name
      G.repaired = G.repaired + 1
    end
  end
  chunked('ZREM', waitingKey, gone)
  promoteKeyed(waitingKey, orderKey, tagsKey, vtime, pNames, pDefs, pDues, overrides and limitsKey or nil)
end

-- Priority aging: an agent due for longer than the aging period goes ahead of every priority
-- (rank 0), keeping its tag. Promoted agents wait at minus their due time, so the oldest are
-- the highest scores below 0: one read from there finds those past the period, oldest first,
-- at most asked + 100 per call (the ones already aged among them are left as they are).
local aging = tonumber(lim[12] or '')
if aging and aging > 0 then
  local old = rcall('ZREVRANGEBYSCORE', waitingKey, '(0', '(' .. int(aging - now), 'LIMIT', 0, math.min(cap, asked + 100))
  if #old > 0 then
    local scores = rcall('ZMSCORE', orderKey, unpack(old))
    local aged, a = {}, 0
    for j, name in ipairs(old) do
      local score = tonumber(scores[j] or '')
      if score and score >= UNIT then
        aged[a + 1], aged[a + 2] = score % UNIT, name
        a = a + 2
      end
    end
    if a > 0 then rcall('ZADD', orderKey, unpack(aged)) end
  end
end

-- Read order in pages from its head. Each page's definitions, waiting scores and keys' counts
-- and buckets are read together; an agent whose key is at key_concurrency or out of tokens is
-- passed over (it keeps its place, and its key's later agents are passed over too), so a key
-- held back never blocks the keys behind it. An entry whose agent is no longer promoted in
-- waiting (Unregister, purge, a reset) is stale and leaves order.
local held, buckets = {}, {}
local heldBack, refillAt = false, nil
-- Within a shared group: each key's leases over every member queue ("held|<key>" in the group's
-- hash), counted whether or not the group has a key_concurrency.
local inGroup, groupHeld, groupPerKey, groupHeldBack = G.group ~= '', {}, {}, false
local grants, grantKeys, grantDefs, g = {}, {}, {}, 0
local drop, d = {}, 0 -- order entries leaving: granted or stale
local expiredNames, expiredDefs = {}, {} -- expired before their first run (expireAgent)
local passed, p = {}, 0 -- { key, rank, name } passed over, in order
local scanned, stop, stale = 0, 'empty', 0
local steps = math.min(scanLimit, asked * 4 + 200) -- order entries read at most
local perKey = {}
local pages = 0
while true do
  if g >= max then stop = 'max' break end
  if scanned >= steps then stop = 'steps' break end
  -- The first page is what is wanted (nothing passed over: one page does); later pages,
  -- after entries were passed over, twice what is still wanted.
  local want = pages == 0 and (max - g) or (max - g) * 2
  pages = pages + 1
  if want > steps - scanned then want = steps - scanned end
  local page = rcall('ZRANGE', orderKey, scanned, scanned + want - 1, 'WITHSCORES')
  if not page[1] then break end
  local names = {}
  for i = 1, #page, 2 do names[#names + 1] = page[i] end
  scanned = scanned + #names
  local defs = rcall('HMGET', defsKey, unpack(names))
  local scores = rcall('ZMSCORE', waitingKey, unpack(names))
  local unread = {}
  for j = 1, #names do
    if defs[j] then
      local key = keyOfDef(defs[j])
      if key ~= '' and held[key] == nil then
        held[key] = false
        unread[#unread + 1] = key
      end
    end
  end
  if #unread > 0 then
    -- Leases held, counted while a limit on keys' concurrency reads them (a limit set later
    -- starts from a recount: countingChanged); a group's per-key counts, always.
    local fields, counts = {}, {}
    if counting or inGroup then
      for j, key in ipairs(unread) do fields[j] = 'held|' .. key end
    end
    if counting then counts = rcall('HMGET', limitsKey, unpack(fields)) end
    if inGroup then
      local gcounts = rcall('HMGET', K.group, unpack(fields))
      for j, key in ipairs(unread) do groupHeld[key] = tonumber(gcounts[j] or '0') end
    end
    local own = {}
    if overrides then
      for j, key in ipairs(unread) do fields[j] = 'key|' .. key end
      own = rcall('HMGET', limitsKey, unpack(fields))
    end
    local anyRate = keyRate > 0
    for j, key in ipairs(unread) do
      local _, c, r, b = parseKeyLimits(own[j] or nil)
      if c then limitOf[key] = c > 0 and c else limitOf[key] = keyLimit or false end
      if r then
        rateOf[key] = { r, b }
        anyRate = true
      elseif keyRate > 0 then
        rateOf[key] = { keyRate, keyBurst }
      end
    end
    local recs = {}
    if anyRate then
      for j, key in ipairs(unread) do fields[j] = 'bucket|' .. key end
      recs = rcall('HMGET', limitsKey, unpack(fields))
    end
    for j, key in ipairs(unread) do
      held[key] = tonumber(counts[j] or '0')
      local kr = rateOf[key]
      if kr then
        local t, at = kr[2], now
        if recs[j] then
          local tt, aa = string.match(recs[j], '^([^|]+)|(%d+)$')
          t, at = tonumber(tt), tonumber(aa)
        end
        if now > at then
          t = t + (now - at) * kr[1] / 1000
          at = now
        end
        if t > kr[2] then t = kr[2] end
        buckets[key] = { t, at, false, recs[j] ~= false and recs[j] ~= nil, kr[1], kr[2] }
      end
    end
  end
  for j, name in ipairs(names) do
    local def, score = defs[j], tonumber(scores[j] or '0')
    local expireAt = def and defExpireAt(def)
    if not def or score >= 0 then
      d = d + 1
      drop[d] = name
      stale = stale + 1
    elseif expireAt and expireAt <= now then
      -- Expired before its first run: it leaves order and waiting and finishes, taking no
      -- place of its key.
      d = d + 1
      drop[d] = name
      expiredNames[#expiredNames + 1], expiredDefs[#expiredDefs + 1] = name, def
    elseif g < max then
      local key = keyOfDef(def)
      local ok, b = true, buckets[key]
      local limit = limitOf[key]
      if key ~= '' and limit and held[key] >= limit then
        ok = false
        heldBack = true
      elseif key ~= '' and inGroup and G.groupKeyLimit and groupHeld[key] >= G.groupKeyLimit then
        ok = false
        groupHeldBack = true
      elseif b and b[1] < 1 then
        ok = false
        local when = b[2] + math.ceil((1 - b[1]) * 1000 / b[5])
        if not refillAt or when < refillAt then refillAt = when end
      end
      local entryScore = tonumber(page[2 * j])
      if ok then
        d = d + 1
        drop[d] = name
        g = g + 1
        grants[g], grantDefs[g] = name, def
        grantKeys[g] = key
        local tag = entryScore % UNIT
        if tag > vtime then vtime = tag end
        if key ~= '' then
          held[key] = held[key] + 1
          if counting then perKey[key] = held[key] end
          if inGroup then
            groupHeld[key] = groupHeld[key] + 1
            groupPerKey[key] = true
          end
          if b then
            b[1] = b[1] - 1
            b[3] = true
          end
        end
      else
        p = p + 1
        passed[p] = { math.floor(entryScore / UNIT), name }
      end
    end
  end
end
if d > 0 then chunked('ZREM', orderKey, drop) end
if #expiredNames > 0 then
  chunked('ZREM', waitingKey, expiredNames)
  for j, name in ipairs(expiredNames) do expireAgent(K, name, expiredDefs[j], now) end
  G.expired = G.expired + #expiredNames
end
-- Agents passed over move to the rounds after this call's last grant, keeping their order, so
-- the next call does not read them again before the keys that were served.
if p > 0 then
  local r = {}
  for i = 1, p do r[2 * i - 1], r[2 * i] = passed[i][1] * UNIT + vtime + i, passed[i][2] end
  chunked('ZADD', orderKey, r)
end
if g > 0 then
  -- Every grant has a definition (read above, in this same script), so grant drops none.
  rcall('ZREM', waitingKey, unpack(grants))
  grant(K, grants, grantKeys, grantDefs)
  -- The group's per-key counts, read above in this script: one HSET for every key granted.
  local gh = {}
  for key in pairs(groupPerKey) do gh[#gh + 1], gh[#gh + 2] = 'held|' .. key, int(groupHeld[key]) end
  chunked('HSET', K.group, gh)
  -- A recount running (recountKeys): its count follows every keyed grant; while it scans the
  -- leases, the agent is marked as counted, so the scan does not count it again.
  local recount = lim[14] and string.sub(lim[14], 1, 1)
  if recount == 's' or recount == 'a' then
    local per, marks, m = {}, {}, 0
    for j = 1, g do
      local key = grantKeys[j]
      if key ~= '' then
        per[key] = (per[key] or 0) + 1
        marks[m + 1], marks[m + 2] = 'rn|' .. grants[j], '1'
        m = m + 2
      end
    end
    for key, n in pairs(per) do rcall('HINCRBY', limitsKey, 'rc|' .. key, n) end
    if recount == 's' and m > 0 then rcall('HSET', limitsKey, unpack(marks)) end
  end
end
-- The keys' held counts, their buckets and vtime: one HSET (and one HDEL) for the whole call.
local h, full = {}, {}
for key, count in pairs(perKey) do h[#h + 1], h[#h + 2] = 'held|' .. key, int(count) end
for key, b in pairs(buckets) do
  if b[3] then
    h[#h + 1], h[#h + 2] = 'bucket|' .. key, string.format('%.6f|%d', b[1], b[2])
  elseif b[4] and b[1] >= b[6] then
    full[#full + 1] = 'bucket|' .. key -- full again: an absent bucket is a full one
  end
end
if vtime ~= vtimeBefore then h[#h + 1], h[#h + 2] = 'vtime', int(vtime) end
chunked('HSET', limitsKey, h)
chunked('HDEL', limitsKey, full)

-- When to look again: at once when this call made progress and may have left work (the
-- caller with no credit left does not look); else the next promotion, a token, or a wake-up.
local nextDue = false
if (stop == 'steps' and g > 0) or (stop == 'max' and g >= asked) or stale > 0 or #expiredNames > 0 then
  nextDue = now
else
  local unpromoted = rcall('ZRANGEBYSCORE', waitingKey, 0, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  nextDue = unpromoted[2] and tonumber(unpromoted[2]) or false
end
if nextDue ~= now and rcall('EXISTS', orderKey) == 1 then
  if stop == 'max' and G.room >= 0 and G.granted >= G.room then
    rcall('HSET', limitsKey, 'blocked', '1')
    nextDue = false
  elseif stop == 'max' and G.groupRoom >= 0 and G.granted >= G.groupRoom then
    -- The group's places are taken: a lease end in any member queue announces this one.
    groupBlocked(K, A.queue, A.channel)
    nextDue = false
  elseif stop == 'max' and G.groupRate > 0 and G.groupTokens - G.granted < 1
    and not (G.rate > 0 and G.tokens - G.granted < 1) then
    nextDue = G.groupAt + math.ceil((1 - (G.groupTokens - G.granted)) * 1000 / G.groupRate)
  elseif stop == 'max' and G.rate > 0 then
    nextDue = G.bucketAt + math.ceil((1 - (G.tokens - G.granted)) * 1000 / G.rate)
  elseif stop == 'max' then
    nextDue = now
  else
    -- Everything left was passed over (or a whole scan was): wait for a place (a wake-up) or
    -- a key's next token.
    if heldBack then rcall('HSET', limitsKey, 'blocked', '1') end
    if groupHeldBack then groupBlocked(K, A.queue, A.channel) end
    if refillAt and (not nextDue or refillAt < nextDue) then nextDue = refillAt end
  end
end
endAcquire(K, A.channel, A.queue)
out[2] = nextDue or -1
out[3] = G.repaired
return out
