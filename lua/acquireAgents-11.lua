--[[
  acquireAgents: moves up to max due agents from waiting to working, earliest first (ties by
  name, as the sorted set orders them), each under a new lease with a fresh fencing token, and
  records the worker as alive in the queue (only refreshed, never added, when it gets nothing:
  liveness matters only for leases, and an unknown queue must get no key).

  Reads at most scanLimit waiting entries, in pages of what is still wanted. A due entry with no
  definition is invalid (its agent was removed while it sat in waiting); it is dropped and
  counted as repaired.

  Flow control (AdminService.SetLimits, Pause), from the limits hash: a paused queue grants
  nothing; at most `concurrency` leases are held across the fleet (working's size); and a token
  bucket of `rate` per second holding at most `burst` grants at most what it holds, on the
  Redis clock (a bucket starts full). Limits lower what this call may grant; they never reorder.

  A keyed queue ("keyed" in the limits hash: an agent was registered with a key or a priority)
  hands out due agents by priority, then round-robin across keys, then by due time and name:
  - each call first *promotes* up to scanLimit (at most 2000) newly due agents: in waiting their score becomes
    minus their due time (still "due" to every other script, and the due time is kept), and
    they enter `lanes` as "key|rank|due|name" (rank = 1000 - priority, 4 digits; due, 14
    digits), so a key's due agents are one lexicographic range in its best order;
  - `ready` holds one entry per key with promoted agents, scored rank * 2^42 + turn, where turn
    (the queue's "turn" counter) grows with every grant: a key that is served goes behind every
    key of the same priority, and a key that becomes ready goes behind the keys already there;
  - each step takes the head of `ready`: a key at `key_concurrency` ("held|<key>" leases held) or
    with an empty bucket ("bucket|<key>" = "tokens|at", `key_rate` per second holding `key_burst`) is
    set aside for the rest of the call (put back at its place at the end), so it never blocks
    keys behind it; otherwise its best agent is granted and the key takes its next turn.
  A lanes entry whose agent left waiting (Unregister, purge, a reset) no longer matches the
  agent's score and is dropped when it comes up. Agents without a key form the key "".
  A keyed lease records its key in the lease record ("...|timeout_ms@key"), and every script
  that ends a lease gives the key's place back (keyLeaseEnded).

  Input:
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
                       key_rate, key_burst, turn, "held|<key>", "bucket|<key>" (keyed queues)
    KEYS[10] lanes     ZSET (scores 0) "key|rank|due|name": promoted agents of a keyed queue
    KEYS[11] ready     ZSET key -> rank * 2^42 + turn: keys with promoted agents

    ARGV[1] worker     worker id of the caller
    ARGV[2] max        most leases to grant
    ARGV[3] scanLimit  most waiting entries to read

  Output:
    { now, nextDue, repaired, (name, token, deadline, attempt, definition, payload)* }
    nextDue is the earliest next run left in waiting, or -1 when waiting is empty. When limits
    hold due work back it is when to try again: -1 when paused or at the concurrency limit (a
    wake-up comes), the bucket's next token when the rate limit binds (for a keyed queue: the
    earliest of the keys' buckets and the next agent to become due).
]]
local rcall = redis.call
--@include nowMs
--@include int
--@include defField

local waitingKey, workingKey, defsKey, payloadsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leasesKey, streaksKey, seqKey, workersKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local worker = ARGV[1]
local max = tonumber(ARGV[2])
local scanLimit = tonumber(ARGV[3])
local limitsKey, lanesKey, readyKey = KEYS[9], KEYS[10], KEYS[11]
local asked = max

local now = nowMs()
local out = { now, -1, 0 }

-- Flow control: one HMGET; a queue without limits pays nothing more.
local lim = rcall('HMGET', limitsKey, 'paused', 'concurrency', 'rate', 'burst', 'tokens', 'at', 'keyed',
  'key_concurrency', 'key_rate', 'key_burst', 'turn')
if lim[1] == '1' then
  rcall('ZADD', workersKey, 'XX', now, worker)
  return out -- paused: Resume announces the queue
end
local room = -1 -- leases the concurrency limit allows (-1: no limit)
if lim[2] then
  room = tonumber(lim[2]) - rcall('ZCARD', workingKey)
  if room < 0 then room = 0 end
  if room < max then max = room end
end
local rate, tokens, bucketAt = tonumber(lim[3] or '0'), 0, now
if rate > 0 then
  local burst = tonumber(lim[4])
  tokens, bucketAt = tonumber(lim[5] or lim[4]), tonumber(lim[6] or now)
  if now > bucketAt then
    tokens = tokens + (now - bucketAt) * rate / 1000
    if tokens > burst then tokens = burst end
    bucketAt = now
  end
  local whole = math.floor(tokens)
  if whole < max then max = whole end
end
local repaired, granted = 0, 0

-- Hands out the named agents (all still in waiting's place, which the caller already left):
-- reads their definitions, streaks and payloads with one HMGET each, numbers their tokens with
-- one INCRBY and writes them with one ZADD and one HSET. suffixes[j] ends lease j's record
-- ("@key" for a keyed lease, else ""). Agents with no definition are dropped as repaired.
-- Returns the indexes (in names) of the agents granted.
local function grant(names, suffixes)
  local defs = rcall('HMGET', defsKey, unpack(names))
  local valid = {}
  for i = 1, #names do
    if defs[i] then valid[#valid + 1] = i else repaired = repaired + 1 end
  end
  if #valid == 0 then return valid end
  local kept = {}
  for j, i in ipairs(valid) do kept[j] = names[i] end
  local streaks = rcall('HMGET', streaksKey, unpack(kept))
  local payloads = rcall('HMGET', payloadsKey, unpack(kept))
  local token = rcall('INCRBY', seqKey, #kept) - #kept
  -- Per lease only what differs is built; counters instead of # (each # is a search).
  local working, leases, w, o = {}, {}, 0, #out
  local middle = '|' .. worker .. '|' .. int(now) .. '|'
  for j, name in ipairs(kept) do
    local def = defs[valid[j]]
    local timeout = defField(def, 'timeout_ms')
    token = token + 1
    local tokenText = int(token)
    local deadline = now + timeout
    working[w + 1], working[w + 2] = deadline, name
    local suffix = suffixes and suffixes[valid[j]] or ''
    leases[w + 1], leases[w + 2] = name, tokenText .. middle .. int(timeout) .. suffix
    w = w + 2
    out[o + 1], out[o + 2], out[o + 3] = name, tokenText, deadline
    out[o + 4], out[o + 5], out[o + 6] = tonumber(streaks[j] or '0') + 1, def, payloads[j] or ''
    o = o + 6
  end
  rcall('ZADD', workingKey, unpack(working))
  rcall('HSET', leasesKey, unpack(leases))
  granted = granted + #kept
  return valid
end

local keyedNext -- a keyed queue's nextDue (false: -1), decided below
if lim[7] ~= '1' then
  -- Read in pages of what is still wanted: every entry read leaves waiting (granted or dropped
  -- as invalid), so the next page starts at 0 again, and a healthy queue needs one page. Each
  -- page costs a fixed number of commands whatever its size.
  local scanned = 0
  while granted < max and scanned < scanLimit do
    local want = max - granted
    if want > scanLimit - scanned then want = scanLimit - scanned end
    local due = rcall('ZRANGEBYSCORE', waitingKey, '-inf', now, 'LIMIT', 0, want)
    if #due == 0 then break end
    scanned = scanned + #due
    rcall('ZREM', waitingKey, unpack(due))
    grant(due, nil)
  end
else
  local UNIT = 4398046511104 -- 2^42: a ready score is rank * UNIT + turn
  local turn = tonumber(lim[11] or '0')
  local turnBefore = turn
  local function lane(entry) return string.match(entry, '^([^|]*)|(%d+)|(%d+)|(.*)$') end
  -- cmd key list..., in chunks (Lua's unpack takes at most ~8000 values).
  local function chunked(cmd, key, list)
    for i = 1, #list, 4000 do rcall(cmd, key, unpack(list, i, math.min(i + 3999, #list))) end
  end

  -- Promote newly due agents (their due time >= 0) into lanes and their keys into ready.
  local readyAt = {} -- key -> ready score, or false when not ready; read once per call
  -- (At most 2000 a call: Lua's unpack takes at most ~8000 values, and scan_limit is config.)
  local fresh = rcall('ZRANGEBYSCORE', waitingKey, 0, now, 'WITHSCORES', 'LIMIT', 0, math.min(scanLimit, 2000))
  if #fresh > 0 then
    local names = {}
    for i = 1, #fresh, 2 do names[#names + 1] = fresh[i] end
    local defs = rcall('HMGET', defsKey, unpack(names))
    local moved, entries, gone, changed, m = {}, {}, {}, {}, 0
    for j, name in ipairs(names) do
      local def = defs[j]
      if not def then
        gone[#gone + 1] = name
        repaired = repaired + 1
      else
        local due = tonumber(fresh[2 * j])
        local key = string.match(def, '^{"key":"([^"]*)"') or ''
        local rank = 1000 - tonumber(string.match(def, '"priority":(-?%d+)') or '0')
        moved[m + 1], moved[m + 2] = -due, name
        entries[m + 1], entries[m + 2] = 0, key .. '|' .. string.format('%04d|%014d|', rank, due) .. name
        m = m + 2
        local cur = readyAt[key]
        if cur == nil then
          cur = tonumber(rcall('ZSCORE', readyKey, key)) or false
        end
        if not cur then
          turn = turn + 1
          readyAt[key] = rank * UNIT + turn
          changed[key] = true
        elseif rank < math.floor(cur / UNIT) then
          readyAt[key] = rank * UNIT + cur % UNIT -- a better agent: the key keeps its turn
          changed[key] = true
        else
          readyAt[key] = cur
        end
      end
    end
    chunked('ZREM', waitingKey, gone)
    if m > 0 then
      chunked('ZADD', waitingKey, moved)
      chunked('ZADD', lanesKey, entries)
      local r = {}
      for key in pairs(changed) do
        r[#r + 1], r[#r + 2] = readyAt[key], key
      end
      chunked('ZADD', readyKey, r)
    end
  end

  -- Take keys from the head of ready; keys that may not have more are set aside. A key served
  -- takes a new turn, which puts it behind every key of its priority already there, so a pass
  -- over the head's run of keys of one priority (one ZRANGE) visits them in the order
  -- step-by-step heads would. A visit picks the key's next lanes entry (past those this call
  -- already took); the pass re-scores its keys with one ZADD and one ZREM, and the picks are
  -- checked against waiting and granted together at the end (one ZMSCORE, one ZREM per key).
  local keyLimit = tonumber(lim[8] or '')
  local keyRate, keyBurst = tonumber(lim[9] or '0'), tonumber(lim[10] or '0')
  local held, buckets = {}, {}
  local aside, a = {}, 0
  local heldBack, refillAt = false, nil
  local taken = {} -- key -> lanes entries this call took from it
  local picks, n = {}, 0 -- { entry, key, name, due }
  local steps, stop = 0, 'empty'
  while true do
    if n >= max then stop = 'max' break end
    if steps >= scanLimit then stop = 'steps' break end
    local want = max - n
    if want > scanLimit - steps then want = scanLimit - steps end
    local page = rcall('ZRANGE', readyKey, 0, want - 1, 'WITHSCORES')
    if not page[1] then break end
    -- The pass is the head's run of one priority: keys of a lower one wait for the next pass.
    local rank = math.floor(tonumber(page[2]) / UNIT)
    local cut = #page
    for i = 3, #page, 2 do
      if math.floor(tonumber(page[i + 1]) / UNIT) ~= rank then
        cut = i - 1
        break
      end
    end
    for i = #page, cut + 1, -1 do page[i] = nil end
    -- The page's keys' counts and buckets, read once a call (one HMGET each a pass).
    local unread, fields = {}, {}
    for i = 1, #page, 2 do
      local key = page[i]
      if key ~= '' and held[key] == nil then unread[#unread + 1] = key end
    end
    if #unread > 0 and (keyLimit or keyRate > 0) then
      for j, key in ipairs(unread) do fields[j] = 'held|' .. key end
      local counts = keyLimit and rcall('HMGET', limitsKey, unpack(fields)) or {}
      for j, key in ipairs(unread) do fields[j] = 'bucket|' .. key end
      local recs = keyRate > 0 and rcall('HMGET', limitsKey, unpack(fields)) or {}
      for j, key in ipairs(unread) do
        held[key] = tonumber(counts[j] or '0')
        if keyRate > 0 then
          local t, at = keyBurst, now
          if recs[j] then
            local tt, aa = string.match(recs[j], '^([^|]+)|(%d+)$')
            t, at = tonumber(tt), tonumber(aa)
          end
          if now > at then
            t = t + (now - at) * keyRate / 1000
            at = now
          end
          if t > keyBurst then t = keyBurst end
          buckets[key] = { t, at, false, recs[j] ~= false and recs[j] ~= nil }
        end
      end
    end
    local readds, removes, r, x = {}, {}, 0, 0
    for i = 1, #page, 2 do
      steps = steps + 1
      local key, score = page[i], tonumber(page[i + 1])
      local ok, b = true, buckets[key]
      if key ~= '' and keyLimit and held[key] >= keyLimit then
        ok = false
        heldBack = true
      end
      if ok and b and b[1] < 1 then
        ok = false
        local when = b[2] + math.ceil((1 - b[1]) * 1000 / keyRate)
        if not refillAt or when < refillAt then refillAt = when end
      end
      if not ok then
        x = x + 1
        removes[x] = key
        aside[a + 1], aside[a + 2] = score, key
        a = a + 2
      else
        -- The key's next agent and the one after it (the key's next turn).
        local skip = taken[key] or 0
        local two = rcall('ZRANGEBYLEX', lanesKey, '[' .. key .. '|', '[' .. key .. '|\255', 'LIMIT', skip, 2)
        if not two[1] then
          x = x + 1
          removes[x] = key
        else
          taken[key] = skip + 1
          local _, _, due, name = lane(two[1])
          n = n + 1
          picks[n] = { two[1], key, name, tonumber(due) }
          if key ~= '' then
            if held[key] then held[key] = held[key] + 1 end
            if b then
              b[1] = b[1] - 1
              b[3] = true
            end
          end
          if two[2] then
            local _, nextRank = lane(two[2])
            turn = turn + 1
            readds[r + 1], readds[r + 2] = tonumber(nextRank) * UNIT + turn, key
            r = r + 2
          else
            x = x + 1
            removes[x] = key
          end
        end
      end
    end
    if x > 0 then rcall('ZREM', readyKey, unpack(removes)) end
    if r > 0 then rcall('ZADD', readyKey, unpack(readds)) end
  end
  -- The picks still in waiting at minus their due time are granted; the others are stale
  -- (their agent left waiting since it was promoted) and only leave lanes.
  local stale = 0
  if n > 0 then
    local entries, names = {}, {}
    for i = 1, n do
      entries[i], names[i] = picks[i][1], picks[i][3]
    end
    rcall('ZREM', lanesKey, unpack(entries))
    local scores = rcall('ZMSCORE', waitingKey, unpack(names))
    local grantNames, suffixes, keyOf, g = {}, {}, {}, 0
    for i = 1, n do
      local p = picks[i]
      if tonumber(scores[i] or '1') == -p[4] then
        g = g + 1
        grantNames[g] = p[3]
        suffixes[g] = p[2] ~= '' and ('@' .. p[2]) or ''
        keyOf[g] = p[2]
      else
        stale = stale + 1
        local b = buckets[p[2]]
        if b and b[3] then b[1] = b[1] + 1 end -- not granted: the token goes back
      end
    end
    if g > 0 then
      rcall('ZREM', waitingKey, unpack(grantNames))
      local perKey = {}
      for _, i in ipairs(grant(grantNames, suffixes)) do
        local key = keyOf[i]
        if key ~= '' then perKey[key] = (perKey[key] or 0) + 1 end
      end
      for key, count in pairs(perKey) do rcall('HINCRBY', limitsKey, 'held|' .. key, count) end
    end
  end
  for key, b in pairs(buckets) do
    if b[3] then
      rcall('HSET', limitsKey, 'bucket|' .. key, string.format('%.6f|%d', b[1], b[2]))
    elseif b[4] and b[1] >= keyBurst then
      rcall('HDEL', limitsKey, 'bucket|' .. key) -- full again: an absent bucket is a full one
    end
  end
  chunked('ZADD', readyKey, aside)
  if turn ~= turnBefore then rcall('HSET', limitsKey, 'turn', int(turn)) end

  -- When to look again: at once when this call made progress and may have left work (the
  -- caller with no credit left does not look); else the next promotion, a token, or a wake-up.
  local nextDue = false
  if (stop == 'steps' and n > 0) or (stop == 'max' and n >= asked) or stale > 0 then
    nextDue = now
  else
    local unpromoted = rcall('ZRANGEBYSCORE', waitingKey, 0, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    nextDue = unpromoted[2] and tonumber(unpromoted[2]) or false
  end
  if nextDue ~= now and rcall('EXISTS', readyKey) == 1 then
    if stop == 'max' and room >= 0 and granted >= room then
      rcall('HSET', limitsKey, 'blocked', '1')
      nextDue = false
    elseif stop == 'max' and rate > 0 then
      nextDue = bucketAt + math.ceil((1 - (tokens - granted)) * 1000 / rate)
    elseif stop == 'max' then
      nextDue = now
    else
      -- Everything left was set aside (or a whole scan of keys was: a scan reads at most
      -- scanLimit keys): wait for a place (a wake-up) or a key's next token.
      if heldBack then rcall('HSET', limitsKey, 'blocked', '1') end
      if refillAt and (not nextDue or refillAt < nextDue) then nextDue = refillAt end
    end
  end
  keyedNext = nextDue
end
if granted > 0 then
  rcall('ZADD', workersKey, now, worker)
else
  rcall('ZADD', workersKey, 'XX', now, worker)
end
if rate > 0 then
  tokens = tokens - granted
  rcall('HSET', limitsKey, 'tokens', string.format('%.6f', tokens), 'at', int(bucketAt))
end
if keyedNext ~= nil then
  out[2] = keyedNext or -1
else
  local head = rcall('ZRANGE', waitingKey, 0, 0, 'WITHSCORES')
  if head[2] then
    out[2] = tonumber(head[2])
    if out[2] <= now then
      -- Due work left behind: held back by a limit, or beyond the scan limit (then try again).
      if room >= 0 and granted >= room then
        rcall('HSET', limitsKey, 'blocked', '1')
        out[2] = -1
      elseif rate > 0 and tokens < 1 then
        out[2] = bucketAt + math.ceil((1 - tokens) * 1000 / rate)
      end
    end
  end
end
out[3] = repaired
return out
