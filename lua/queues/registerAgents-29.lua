--[[
  registerAgents: upserts agent definitions into a queue.

  A new agent enters waiting at now + a random initial jitter; a cron agent at the first fire
  Baton computed ("first_fire_ms" in its definition), also when its schedule is reset. An existing agent keeps its
  schedule, unless reset is set and it is not held: then it is due at once again, its failure
  streak and dead-letter entry cleared (with a dead-lettered agent's kept finish, which the new
  run supersedes). An existing agent found in no state at all (not held,
  not waiting, not dead-lettered, not waiting for an event) is put back in waiting, which
  repairs partial state. A new agent with a wait (Agent.wait_for) waits for its event or time
  in `waits` (and `waitat`) instead of waiting; an existing agent waiting for an event keeps
  its wait, unless reset is set: then the wait ends and it is due at once.

  With a request field, a retry of a call already applied returns the first call's answer and
  changes nothing (recall / remember).

  A new agent with parents ("after") is blocked instead of waiting: its parents go into
  "<deps>:<name>" as pending (with their failure policy), their count into pending, and the
  agent into unattached until Baton has attached it to each parent (attachChildren) and
  confirmed. Re-registering an existing agent keeps its parents, and the trace contexts of its
  first parents stored with its definition at creation ("ptp"). A new agent drops any finish
  kept of an earlier agent of its name, and the steps of its run. Registering never makes a blocked agent due. Parents are
  fixed at creation: an existing agent given parents ("after" not empty) other than the ones it
  has (compared as a set of "<parent queue>|<parent>"; policies are read at creation only)
  refuses the whole call before anything is written.

  An agent with an idempotency key held by an agent of the queue (within its window), in mode
  F (keep the first), is not registered: the answer names the holder, with its kept finish.
  In mode R (replace), a holder still waiting (not running, blocked or dead-lettered) is removed
  and finishes cancelled ("replaced by <name>"; its children see a failure), and this agent is
  created and takes the key; a holder that is not waiting is left alone, and this agent is
  created all the same. In mode D (debounce), a holder still waiting takes this registration's
  definition and payload and is due again a debounce after now (the answer names it, code 3);
  otherwise this agent is created, due a debounce after now. An agent that takes the key holds it
  for its window. Each call drops at most as many expired keys as it has items, plus two.

  An agent with a key or a priority makes its queue keyed ("keyed" in the limits hash, for
  good): acquireAgents then hands out due agents by priority and round-robin across keys. In a
  keyed queue the agents this call makes due at once are promoted here, into dispatch order
  (keyedOrder), so a key registered behind another key's long backlog takes its turn at once
  instead of after every agent ahead of it was promoted; agents due later are promoted by
  acquireAgents, a bounded number per call. When dispatch order is empty its tags start again
  from 0 (the keys' last tags are forgotten).

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] streaks    HASH name -> consecutive failures
    KEYS[6] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[7] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[8] cron       HASH name -> "token|next fire" of a cron agent's latest run: dropped when
                       the agent is created or its schedule reset (it starts from its first fire)
    KEYS[9]  limits    HASH flow control: "keyed" set when an agent has a key or a priority,
                       "parents" when an agent was ever registered with parents; a keyed
                       queue's "vtime", and its keys' weights ("key|<key>") only while
                       "key_limits" counts any (keyedOrder)
    KEYS[10] requests  ZSET request field -> remembered at (ms)
    KEYS[11] answers   HASH request field -> first answer JSON
    KEYS[12] order     ZSET name -> rank * 2^42 + tag: promoted agents of a keyed queue
    KEYS[13] tags      HASH key -> the tag of its last promoted agent
    KEYS[14] results   HASH name -> result record (a new agent drops its name's)
    KEYS[15] resultsat ZSET name -> kept until (ms)
    KEYS[16] pending   HASH name -> parents still pending (blocked agents)
    KEYS[17] unattached ZSET name -> registered at (ms): blocked agents not yet attached
    KEYS[18] deps      base of "<deps>:<name>" HASH "<parent queue>|<parent>" -> "p<policy>"
    KEYS[19] dedup     HASH idempotency key -> "<name>|<held until ms>"
    KEYS[20] dedupat   ZSET idempotency key -> held until (ms)
    KEYS[21] fanout    SET names with children (finished: a replaced agent)
    KEYS[22] children  base of "children:<parent>"
    KEYS[23] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[24] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[25] awaited   ZSET name -> awaited until (ms)
    KEYS[26] expiring  ZSET name -> expire at (ms): an agent with an expiry ("expire_at_ms")
    KEYS[27] steps     HASH name -> the steps its current run recorded: a new agent drops an
                       earlier agent's of its name (a run a purge or repair ended)
    KEYS[28] waits     HASH name -> wait record (waitRecord): a new agent with a wait waits
                       here instead of in waiting; an existing one keeps its wait (a reset ends it)
    KEYS[29] waitat    ZSET name -> until (ms): the waits with a time

    ARGV[1] reset (bool)        reset the schedule of existing agents not held
    ARGV[2] jitterMs (uint)     upper bound of the random delay added to a new agent's first run
    ARGV[3] seed (uint)         random seed for the jitter
    ARGV[4] channel (str)       where to announce: "P|S <wake-up channel>" or ""
    ARGV[5] queue (str)         queue name, published on channel
    ARGV[6] request (str)       request field "register|<request id>", or "" for none
    ARGV[7] retentionMs (uint)  how long answers are remembered (at least)
    ARGV[8] maxEntries (uint)   most answers remembered per queue
    ARGV[9] finishChannel (str) where a replaced agent's finish is announced (finished)
    ARGV[10] resultTtlMs (uint) how long finishes are kept (results.retention_ms)
    ARGV[11] resultMax (uint)   most finishes kept per queue (results.max_entries)
    ARGV[12..] agents (items)   one item per agent:
      name (str)                agent name
      def (str)                 definition JSON
      payload (bytes)           payload ("" for none)
      after (str)               parents: "" for none, else "<parent queue>|<parent>|<policy W, C
                                or A>" lines
      idempotency (str)         "" for none, else "<mode F, R or D>|<window ms>|<debounce ms>|<key>"
      waitFor (str)             "" for none, else "<event>|<until ms>|<timeout ms>" (Agent.wait_for:
                                a new agent waits for the event or the time before its first run)

  Output -> Registered:
    { created, updated, deduplicated, outboxed, then per agent: code (0 created, 1 updated,
      2 deduplicated, 3 debounced into the holder), the key's holder (deduplicated, debounced)
      or the agent replaced (created) or "", the holder's kept finish ("" for none) }
    (the first call's, for a retry with its request id); or { -1, name } when the existing agent
    `name` was given other parents (nothing written)
]]
local rcall = redis.call
--@include memberKey
--@include publish
--@include nowMs
--@include addWaiting
--@include recall
--@include remember
--@include keyedOrder
--@include defField
--@include keepsFinish
--@include finished
--@include waitRecord

local waitingKey, workingKey, defsKey, payloadsKey = K.waiting, K.working, K.defs, K.payloads
local streaksKey, dlqKey, dlqinfoKey, cronKey = K.streaks, K.dlq, K.dlqinfo, K.cron
local limitsKey, requestsKey, answersKey, orderKey, tagsKey = K.limits, K.requests, K.answers, K.order, K.tags
local resultsKey, resultsatKey, pendingKey, unattachedKey = K.results, K.resultsat, K.pending, K.unattached
local depsBase, dedupKey, dedupatKey = K.deps, K.dedup, K.dedupat
local request = A.request
local first = recall(answersKey, request)
if first then return first end
for _, item in ipairs(A.agents) do
  local name, after = item.name, item.after
  if after ~= '' and rcall('HEXISTS', defsKey, name) == 1 then
    local depsKey = memberKey(depsBase, name)
    local n = 0
    for parent in string.gmatch(after, '([^|\n]+|[^|\n]+)|%a') do
      if rcall('HEXISTS', depsKey, parent) == 0 then return { -1, name } end
      n = n + 1
    end
    if n ~= rcall('HLEN', depsKey) then return { -1, name } end
  end
end
local reset = A.reset
local jitterMs = A.jitterMs
local channel, queue = A.channel, A.queue
math.randomseed(A.seed)

flowKeys(K, A.resultTtlMs, A.resultMax)
local now = nowMs()
local created, updated, deduplicated, keyed = 0, 0, 0, false
local items = {}
local function blocked(name) return rcall('HEXISTS', pendingKey, name) == 1 end
-- What a new agent drops of an earlier agent of its name (a cron run, a kept finish, parents)
-- is looked for once per call: a queue that keeps none pays one read per call, not a write per
-- agent. Parents are looked for only in a queue where an agent was ever registered with some
-- ("parents" in the limits hash, set for good).
local cronSeen, resultsSeen, parentsSeen, stepsSeen
local function anySteps()
  if stepsSeen == nil then stepsSeen = rcall('EXISTS', K.steps) == 1 end
  return stepsSeen
end
local function anyCron()
  if cronSeen == nil then cronSeen = rcall('EXISTS', cronKey) == 1 end
  return cronSeen
end
local function anyResults()
  if resultsSeen == nil then resultsSeen = rcall('EXISTS', resultsKey) == 1 end
  return resultsSeen
end
local function anyParents()
  if parentsSeen == nil then parentsSeen = rcall('HEXISTS', limitsKey, 'parents') == 1 end
  return parentsSeen
end
local dueNames, dueDefs, dueAt = {}, {}, {} -- made due at once by this call: promoted if keyed
-- The earliest entry of waiting (at or above 0; keyed promotions wait below), read once per call
-- and kept as this call adds new agents, so a batch of new agents pays one read, not one each.
-- An existing agent's move may make the earliest later: the next wait reads it again.
local headRead, headScore = false, nil
local function wait(name, def, score, existing)
  if existing then
    headRead = false
    addWaiting(waitingKey, name, score, channel, queue)
  else
    if not headRead then
      local head = rcall('ZRANGEBYSCORE', waitingKey, 0, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      headRead, headScore = true, tonumber(head[2])
    end
    rcall('ZADD', waitingKey, score, name)
    if headScore == nil or score < headScore then
      publish(channel, queue)
      headScore = score
    end
  end
  if score <= now then
    dueNames[#dueNames + 1], dueDefs[#dueDefs + 1], dueAt[#dueAt + 1] = name, def, score
  end
end
-- A definition stored over an existing agent's: it keeps its parents, their count, and the
-- trace contexts its creation stored (defKeepParents, defField).
local function redefine(name, def)
  local parents = rcall('HLEN', memberKey(depsBase, name))
  if parents > 0 then
    rcall('HSET', defsKey, name, defKeepParents(def, rcall('HGET', defsKey, name), parents))
  else
    rcall('HSET', defsKey, name, defWithoutLinks(def))
  end
end
-- A waiting holder of an idempotency key replaced by a newer registration (mode R): removed,
-- its finish a cancel.
local function replace(old, by)
  local def = rcall('HGET', defsKey, old)
  rcall('HDEL', defsKey, old)
  rcall('HDEL', payloadsKey, old)
  rcall('HDEL', streaksKey, old)
  rcall('ZREM', waitingKey, old)
  rcall('ZREM', orderKey, old)
  dropParents(old, def)
  finished(old, resultRecord('C', '', 0, now, 'replaced by ' .. by, ''), now, keepsFinish(def))
end
local count = 0
for _, item in ipairs(A.agents) do
  count = count + 1
  local name, def, payload, after, idem = item.name, item.def, item.payload, item.after, item.idempotency
  local holder, replaced, debounced, dueAt
  if idem ~= '' then
    local mode, window, debounceMs, key = string.match(idem, '^(%a)|(%d+)|(%d+)|(.*)$')
    local held = rcall('HGET', dedupKey, key)
    if held then
      local who, untl = string.match(held, '^(.*)|(%d+)$')
      if tonumber(untl) > now then holder = who end
    end
    if mode == 'D' then dueAt = now + tonumber(debounceMs) end
    if holder and mode ~= 'F' then
      local waiting = rcall('ZSCORE', waitingKey, holder)
      if mode == 'D' and waiting then
        debounced = holder
      elseif mode == 'R' and waiting and holder ~= name then
        replace(holder, name)
        replaced = holder
      end
      if not debounced then holder = nil end
    end
    if not holder or debounced then
      local untl = string.format('%d', now + tonumber(window))
      rcall('HSET', dedupKey, key, (debounced or name) .. '|' .. untl)
      rcall('ZADD', dedupatKey, untl, key)
    end
  end
  if debounced then
    deduplicated = deduplicated + 1
    redefine(debounced, def)
    if payload == '' then rcall('HDEL', payloadsKey, debounced) else rcall('HSET', payloadsKey, debounced, payload) end
    rcall('ZREM', orderKey, debounced)
    wait(debounced, def, dueAt, true)
    local expireAt = defExpireAt(def)
    if expireAt then rcall('ZADD', K.expiring, expireAt, debounced) end
    local n = #items
    items[n + 1], items[n + 2], items[n + 3] = 3, debounced, ''
  elseif holder then
    deduplicated = deduplicated + 1
    local n = #items
    items[n + 1], items[n + 2], items[n + 3] = 2, holder, rcall('HGET', resultsKey, holder) or ''
  else
  -- Baton writes "key" first and "priority" only when not 0 (a label cannot look like either).
  if not keyed and (string.find(def, '^{"key":') or string.find(def, '"priority":%-?%d')) then keyed = true end
  local existed = rcall('HEXISTS', defsKey, name) == 1
  if existed then redefine(name, def) else rcall('HSET', defsKey, name, def) end
  if payload == '' then
    if existed then rcall('HDEL', payloadsKey, name) end
  else
    rcall('HSET', payloadsKey, name, payload)
  end
  local firstRun = now
  if jitterMs > 0 then firstRun = now + math.random(0, jitterMs) end
  local firstFire = tonumber(string.match(def, '"first_fire_ms":(%d+)') or '')
  if firstFire then firstRun = firstFire end
  if dueAt then firstRun = dueAt end

  local held = rcall('ZSCORE', workingKey, name)
  if existed then
    updated = updated + 1
    if not held and not blocked(name) then
      if reset then
        if rcall('HDEL', K.waits, name) == 1 then rcall('ZREM', K.waitat, name) end
        rcall('HDEL', streaksKey, name)
        rcall('HDEL', cronKey, name)
        if rcall('ZREM', dlqKey, name) == 1 then
          -- Its dead-lettered finish is superseded: an Await waits for the new run.
          rcall('HDEL', resultsKey, name)
          rcall('ZREM', resultsatKey, name)
        end
        rcall('HDEL', dlqinfoKey, name)
        wait(name, def, firstFire or now, true)
      elseif not rcall('ZSCORE', waitingKey, name) and not rcall('ZSCORE', dlqKey, name)
        and rcall('HEXISTS', K.waits, name) == 0 then
        wait(name, def, firstRun, true)
      end
    end
  else
    created = created + 1
    if anyCron() then rcall('HDEL', cronKey, name) end
    if anyResults() then
      rcall('HDEL', resultsKey, name, name .. '|steps')
      rcall('ZREM', resultsatKey, name)
    end
    if anySteps() then rcall('HDEL', K.steps, name) end
    local depsKey = memberKey(depsBase, name)
    if anyParents() then rcall('UNLINK', depsKey) end
    if after ~= '' then
      if not parentsSeen then
        rcall('HSET', limitsKey, 'parents', '1')
        parentsSeen = true
      end
      local n = 0
      for parent, policy in string.gmatch(after, '([^|\n]+|[^|\n]+)|(%a)') do
        rcall('HSET', depsKey, parent, 'p' .. policy)
        n = n + 1
      end
      rcall('HSET', pendingKey, name, n)
      rcall('ZADD', unattachedKey, now, name)
      rcall('HSET', defsKey, name, defWithParents(def, n))
    elseif item.waitFor ~= '' then
      local event, untilMs, timeoutMs = string.match(item.waitFor, '^([^|]*)|(%d+)|(%d+)$')
      untilMs, timeoutMs = tonumber(untilMs), tonumber(timeoutMs)
      if timeoutMs > 0 and (untilMs == 0 or now + timeoutMs < untilMs) then untilMs = now + timeoutMs end
      rcall('HSET', K.waits, name, encodeWait(event, untilMs, now))
      if untilMs > 0 then rcall('ZADD', K.waitat, untilMs, name) end
    elseif not held then
      wait(name, def, firstRun)
    end
  end
  -- Expiry: an agent whose definition carries one ("expire_at_ms") is indexed for the sweeper
  -- (expireAgents); an agent without one pays a string search, no command.
  local expireAt = defExpireAt(def)
  if expireAt then rcall('ZADD', K.expiring, expireAt, name) end
  local n = #items
  items[n + 1], items[n + 2], items[n + 3] = existed and 1 or 0, replaced or '', ''
  end
end
if #items > 0 then
  local old = rcall('ZRANGEBYSCORE', dedupatKey, '-inf', string.format('%d', now), 'LIMIT', 0, count + 2)
  if #old > 0 then
    rcall('ZREM', dedupatKey, unpack(old))
    rcall('HDEL', dedupKey, unpack(old))
  end
end
if keyed then rcall('HSET', limitsKey, 'keyed', '1') end
if #dueNames > 0 then
  local lim = rcall('HMGET', limitsKey, 'keyed', 'vtime', 'key_limits')
  if lim[1] == '1' then
    local vtime = tonumber(lim[2] or '0')
    if vtime > 0 and rcall('EXISTS', orderKey) == 0 then
      vtime = 0
      rcall('UNLINK', tagsKey)
      rcall('HSET', limitsKey, 'vtime', '0')
    end
    -- In waiting's order (due time, then name), as acquireAgents promotes.
    local idx = {}
    for j = 1, #dueNames do idx[j] = j end
    table.sort(idx, function(a, b)
      if dueAt[a] ~= dueAt[b] then return dueAt[a] < dueAt[b] end
      return dueNames[a] < dueNames[b]
    end)
    local n, d, t = {}, {}, {}
    for j, i in ipairs(idx) do n[j], d[j], t[j] = dueNames[i], dueDefs[i], dueAt[i] end
    -- Weights are read only while some key has a record ("key_limits").
    local weighted = lim[3] and lim[3] ~= '0'
    promoteKeyed(waitingKey, orderKey, tagsKey, vtime, n, d, t, weighted and limitsKey or nil)
  end
end
local answer = { created, updated, deduplicated, endFinished(A.finishChannel, queue, now) }
for _, v in ipairs(items) do answer[#answer + 1] = v end
remember(requestsKey, answersKey, request, answer, now, A.retentionMs, A.maxEntries)
return answer
