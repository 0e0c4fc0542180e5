-- grantLeases: what the two acquire scripts share (acquireAgents, the plain path, and
-- acquireKeyed, a keyed queue's): the queue's flow control, the grants, and the call's end.
-- The call's state is G: now, out (the reply: { now, nextDue, repaired, leases... }), worker,
-- asked (max as the caller asked), max (lowered by the limits), lim (the limits hash's fields
-- below), room (leases the concurrency limit allows, -1: no limit), rate, tokens and bucketAt
-- (the token bucket, rate 0: no bucket), repaired, granted and expired (counts); group (the
-- queue's shared concurrency group, "" for none: groupLimits), groupRoom (places the group has
-- left, -1: no limit), groupRate, groupTokens and groupAt (its bucket), groupKeyLimit (its
-- per-key concurrency, nil: none).
local G

-- Most parents whose finishes a lease carries from the grant itself (one HGETALL of its deps);
-- an agent with more has them read by Baton in a call of their own (readFamily).
local PARENTS_INLINE = 32

-- Leases held from WIDE_LEASES on: `working` and `leases` become a skiplist and a hash table.
-- Redis keeps a sorted set or hash of at most 128 short elements as a listpack, searched from
-- one end, and every grant and lease end looks its agents up by name in both: at 100 leases
-- a ZADD + ZREM cost 2.6 µs and an HSET + HMGET + HDEL 1.9 µs against 1.5 and 1.0 once
-- converted (and a hash table is no slower at 8). An element longer than 64 bytes converts a
-- key, and Redis does not convert it back while the key exists, so an element that no agent
-- name can be (names are [A-Za-z0-9._-]) is added and removed at once: nothing stays behind.
local WIDE_LEASES = 16
local WIDENER = '~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~' -- 65 bytes

-- Starts a call: reads the limits hash (one HMGET; a queue without limits pays nothing more).
-- Returns the reply to give at once, or nil to go on: a paused queue grants nothing (the worker
-- is refreshed; Resume announces the queue); a queue whose "keyed" flag is not `keyed` is not
-- this script's ({ -1 }, nothing written: Baton calls the other one). A queue in a group
-- (lim[15]) reads the group's hash too (one HMGET); given is the group whose keys the call got
-- (checkGroups raises before anything is written when it is not the queue's).
local function startAcquire(K, worker, max, keyed, given)
  local now = nowMs()
  G = {
    now = now, out = { now, -1, 0, 0, 0 }, worker = worker, asked = max, max = max, room = -1, rate = 0,
    tokens = 0, bucketAt = now, repaired = 0, granted = 0, expired = 0,
    group = '', groupRoom = -1, groupRate = 0, groupTokens = 0, groupAt = now,
  }
  stepsKeys(K.steps)
  local lim = rcall('HMGET', K.limits, 'paused', 'concurrency', 'rate', 'burst', 'tokens', 'at', 'keyed',
    'key_concurrency', 'key_rate', 'key_burst', 'vtime', 'priority_aging', 'key_limits', 'recount', 'group')
  G.lim = lim
  if lim[15] and lim[15] ~= '' then
    G.group = lim[15]
    checkGroups(given, { G.group })
  end
  if lim[1] == '1' then
    rcall('ZADD', K.workers, 'XX', now, worker)
    return G.out
  end
  if (lim[7] == '1') ~= keyed then return { -1 } end
  if lim[2] then
    G.room = tonumber(lim[2]) - rcall('ZCARD', K.working)
    if G.room < 0 then G.room = 0 end
    if G.room < G.max then G.max = G.room end
  end
  G.rate = tonumber(lim[3] or '0')
  if G.rate > 0 then
    local burst = tonumber(lim[4])
    local tokens, bucketAt = tonumber(lim[5] or lim[4]), tonumber(lim[6] or now)
    if now > bucketAt then
      tokens = tokens + (now - bucketAt) * G.rate / 1000
      if tokens > burst then tokens = burst end
      bucketAt = now
    end
    G.tokens, G.bucketAt = tokens, bucketAt
    local whole = math.floor(tokens)
    if whole < G.max then G.max = whole end
  end
  if G.group ~= '' then
    -- The group's limits over every member queue: its held count and its bucket.
    local gl = rcall('HMGET', K.group, 'concurrency', 'held', 'rate', 'burst', 'tokens', 'at', 'key_concurrency')
    if gl[1] then
      G.groupRoom = tonumber(gl[1]) - tonumber(gl[2] or '0')
      if G.groupRoom < 0 then G.groupRoom = 0 end
      if G.groupRoom < G.max then G.max = G.groupRoom end
    end
    G.groupRate = tonumber(gl[3] or '0')
    if G.groupRate > 0 then
      local burst = tonumber(gl[4])
      local tokens, at = tonumber(gl[5] or gl[4]), tonumber(gl[6] or now)
      if now > at then
        tokens = tokens + (now - at) * G.groupRate / 1000
        if tokens > burst then tokens = burst end
        at = now
      end
      G.groupTokens, G.groupAt = tokens, at
      local whole = math.floor(tokens)
      if whole < G.max then G.max = whole end
    end
    G.groupKeyLimit = tonumber(gl[7] or '')
  end
  return nil
end

-- Hands out the named agents (all still in waiting's place, which the caller already left):
-- reads their definitions, streaks and payloads with one HMGET each (and their runs' steps,
-- when the queue has any: runSteps), numbers their tokens with
-- one INCRBY and writes them with one ZADD and one HSET (the records by encodeLease). keys[j]
-- is lease j's key ("" when not keyed); known[j], when given, is agent j's definition, already
-- read by this script. Agents with no definition are dropped as repaired. An agent whose
-- expiry has passed finishes as expired instead (expireAgent, counted in G.expired); one with
-- an expiry still ahead starts its first run, so its definition drops the expiry and it
-- leaves expiring (one HSET and one ZREM per call, paid by such agents only). An agent whose
-- definition carries a watch mark not past (defWatched: a WatchAgent stream) gets a lease
-- marked watched, and its grant is announced (watchEvent; a plain find per agent otherwise).
local function grant(K, names, keys, known)
  local defs = known or rcall('HMGET', K.defs, unpack(names))
  local valid = {}
  for i = 1, #names do
    local def = defs[i]
    local expireAt = def and defExpireAt(def)
    if not def then
      G.repaired = G.repaired + 1
    elseif expireAt and expireAt <= G.now then
      expireAgent(K, names[i], def, G.now)
      G.expired = G.expired + 1
    else
      valid[#valid + 1] = i
    end
  end
  if #valid == 0 then return end
  local kept, started, rewritten = {}, {}, {}
  for j, i in ipairs(valid) do
    kept[j] = names[i]
    if defExpireAt(defs[i]) then
      defs[i] = defWithoutExpiry(defs[i])
      started[#started + 1] = names[i]
      rewritten[#rewritten + 1], rewritten[#rewritten + 2] = names[i], defs[i]
    end
  end
  if #started > 0 then
    rcall('HSET', K.defs, unpack(rewritten))
    rcall('ZREM', K.expiring, unpack(started))
  end
  local streaks = rcall('HMGET', K.streaks, unpack(kept))
  local payloads = rcall('HMGET', K.payloads, unpack(kept))
  -- Steps of earlier attempts: one EXISTS per call, one HMGET only when the queue has any.
  local steps = stepsOf(kept)
  local token = rcall('INCRBY', K.seq, #kept) - #kept
  -- Per lease only what differs is built; counters instead of # (each # is a search).
  local now, out = G.now, G.out
  local nowText = int(now)
  local working, leases, w, o = {}, {}, 0, #out
  for j, name in ipairs(kept) do
    local def = defs[valid[j]]
    local timeoutText = defDigits(def, 'timeout_ms')
    local timeout = tonumber(timeoutText)
    token = token + 1
    local tokenText = int(token)
    local deadline = now + timeout
    working[w + 1], working[w + 2] = deadline, name
    local attempt = tonumber(streaks[j] or '0') + 1
    if defWatched(def, now) then
      -- A WatchAgent stream watches it: the lease is marked, its grant announced (watchEvent).
      leases[w + 1], leases[w + 2] = name, encodeLease(tokenText, G.worker, nowText, timeoutText, keys and keys[valid[j]], 'w0', '', G.group)
      watchEvent(A.channel, A.queue, name, tokenText, 0, 'g', attempt)
    else
      leases[w + 1], leases[w + 2] = name, encodeLease(tokenText, G.worker, nowText, timeoutText, keys and keys[valid[j]], nil, nil, G.group)
    end
    w = w + 2
    out[o + 1], out[o + 2], out[o + 3] = name, tokenText, deadline
    out[o + 4], out[o + 5], out[o + 6] = attempt, def, payloads[j] or ''
    out[o + 7] = steps and steps[j] or ''
    -- The parents' states ride with the lease when there are few: no second call before it
    -- is handed over. A definition without parents pays a plain search, no command.
    local parents = defField(def, 'parents')
    if parents == 0 then
      out[o + 8] = 0
      o = o + 8
    elseif parents <= PARENTS_INLINE then
      -- pcall: a deps record that cannot be read must not stop the grant halfway (a script's
      -- writes before an error stay); Baton reads it apart then, and gives the lease back if
      -- that fails too.
      local deps = redis.pcall('HGETALL', memberKey(K.deps, name))
      if deps.err then
        out[o + 8] = -1
        o = o + 8
      else
        out[o + 8] = #deps / 2
        for x = 1, #deps do out[o + 8 + x] = deps[x] end
        o = o + 8 + #deps
      end
    else
      out[o + 8] = -1
      o = o + 8
    end
  end
  rcall('ZADD', K.working, unpack(working))
  rcall('HSET', K.leases, unpack(leases))
  G.granted = G.granted + #kept
end

-- After a call's grants: `working` and `leases` leave their listpack once WIDE_LEASES are held
-- (one OBJECT ENCODING per granting call, and a ZCARD while `working` is still a listpack; four
-- more commands once, when the keys convert).
local function widenLeases(K)
  local encoding = rcall('OBJECT', 'ENCODING', K.working)
  if encoding ~= 'listpack' and encoding ~= 'ziplist' then return end
  if rcall('ZCARD', K.working) < WIDE_LEASES then return end
  rcall('ZADD', K.working, '+inf', WIDENER)
  rcall('ZREM', K.working, WIDENER)
  rcall('HSET', K.leases, WIDENER, '')
  rcall('HDEL', K.leases, WIDENER)
end

-- Ends a call: a grant under a group counts in the group's "held" and takes its tokens; the
-- worker is recorded alive (only refreshed, never added, when it got nothing),
-- and the bucket gives up what was granted. The reply's expired and outboxed (out[4], out[5]):
-- agents expired at grant time, and the outbox entries their finishes wrote (endFinished:
-- nothing to do, and no command, when none expired).
local function endAcquire(K, channel, queue)
  G.out[4] = G.expired
  G.out[5] = endFinished(channel, queue, G.now)
  if G.granted > 0 then
    widenLeases(K)
    rcall('ZADD', K.workers, G.now, G.worker)
  else
    rcall('ZADD', K.workers, 'XX', G.now, G.worker)
  end
  if G.rate > 0 then
    G.tokens = G.tokens - G.granted
    rcall('HSET', K.limits, 'tokens', string.format('%.6f', G.tokens), 'at', int(G.bucketAt))
  end
  if G.group ~= '' and G.granted > 0 then
    rcall('HINCRBY', K.group, 'held', G.granted)
    if G.groupRate > 0 then
      G.groupTokens = G.groupTokens - G.granted
      rcall('HSET', K.group, 'tokens', string.format('%.6f', G.groupTokens), 'at', int(G.groupAt))
    end
  end
end
