--[[
  registerAgents: upserts agent definitions into a queue.

  A new agent enters waiting at now + a random initial jitter; a cron agent at the first fire
  Baton computed ("first_fire_ms" in its definition), also when its schedule is reset. An existing agent keeps its
  schedule, unless reset is set and it is not held: then it is due at once again, its failure
  streak and dead-letter entry cleared. An existing agent found in no state at all (not held,
  not waiting, not dead-lettered) is put back in waiting, which repairs partial state.

  With a request field, a retry of a call already applied returns the first call's answer and
  changes nothing (recall / remember).

  An agent with a key or a priority makes its queue keyed ("keyed" in the limits hash, for
  good): acquireAgents then hands out due agents by priority and round-robin across keys. In a
  keyed queue the agents this call makes due at once are promoted here, into dispatch order
  (keyedOrder), so a key registered behind another key's long backlog takes its turn at once
  instead of after every agent ahead of it was promoted; agents due later are promoted by
  acquireAgents, a bounded number per call. When dispatch order is empty its tags start again
  from 0 (the keys' last tags are forgotten).

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] streaks    HASH name -> consecutive failures
    KEYS[6] index      ZSET name -> 0 (every agent, for listing in name order)
    KEYS[7] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[8] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[9] cron       HASH name -> "token|next fire" of a cron agent's latest run: dropped when
                       the agent is created or its schedule reset (it starts from its first fire)
    KEYS[10] limits    HASH flow control: "keyed" set when an agent has a key or a priority
    KEYS[11] requests  ZSET request field -> remembered at (ms)
    KEYS[12] answers   HASH request field -> first answer JSON
    KEYS[13] order     ZSET name -> rank * 2^42 + tag: promoted agents of a keyed queue
    KEYS[14] tags      HASH key -> the tag of its last promoted agent

    ARGV[1] reset      "1" to reset the schedule of existing agents not held, else "0"
    ARGV[2] jitterMs   upper bound of the random delay added to a new agent's first run
    ARGV[3] seed       random seed for the jitter
    ARGV[4] channel    where to announce: "P|S <wake-up channel>" or ""
    ARGV[5] queue      queue name, published on channel
    ARGV[6] request    request field "register|<request id>", or "" for none
    ARGV[7] retentionMs how long answers are remembered (at least)
    ARGV[8] maxEntries most answers remembered per queue
    ARGV[9..] triples  name, definition JSON, payload ("" for none)

  Output:
    { created, updated }   (the first call's, for a retry with its request id)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include addWaiting
--@include recall
--@include remember
--@include keyedOrder

local waitingKey, workingKey, defsKey, payloadsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local streaksKey, indexKey, dlqKey, dlqinfoKey, cronKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local limitsKey, requestsKey, answersKey, orderKey, tagsKey = KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14]
local request = ARGV[6]
local first = recall(answersKey, request)
if first then return first end
local reset = ARGV[1] == '1'
local jitterMs = tonumber(ARGV[2])
local channel, queue = ARGV[4], ARGV[5]
math.randomseed(tonumber(ARGV[3]))

local now = nowMs()
local created, updated, keyed = 0, 0, false
local dueNames, dueDefs, dueAt = {}, {}, {} -- made due at once by this call: promoted if keyed
local function wait(name, def, score)
  addWaiting(waitingKey, name, score, channel, queue)
  if score <= now then
    dueNames[#dueNames + 1], dueDefs[#dueDefs + 1], dueAt[#dueAt + 1] = name, def, score
  end
end
for i = 9, #ARGV, 3 do
  local name, def, payload = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  -- Baton writes "key" first and "priority" only when not 0 (a label cannot look like either).
  if not keyed and (string.find(def, '^{"key":') or string.find(def, '"priority":%-?%d')) then keyed = true end
  local existed = rcall('HSET', defsKey, name, def) == 0
  if payload == '' then
    rcall('HDEL', payloadsKey, name)
  else
    rcall('HSET', payloadsKey, name, payload)
  end
  rcall('ZADD', indexKey, 0, name)
  local firstRun = now
  if jitterMs > 0 then firstRun = now + math.random(0, jitterMs) end
  local firstFire = tonumber(string.match(def, '"first_fire_ms":(%d+)') or '')
  if firstFire then firstRun = firstFire end

  local held = rcall('ZSCORE', workingKey, name)
  if existed then
    updated = updated + 1
    if not held then
      if reset then
        rcall('HDEL', streaksKey, name)
        rcall('HDEL', cronKey, name)
        rcall('ZREM', dlqKey, name)
        rcall('HDEL', dlqinfoKey, name)
        wait(name, def, firstFire or now)
      elseif not rcall('ZSCORE', waitingKey, name) and not rcall('ZSCORE', dlqKey, name) then
        wait(name, def, firstRun)
      end
    end
  else
    created = created + 1
    rcall('HDEL', cronKey, name)
    if not held then
      wait(name, def, firstRun)
    end
  end
end
if keyed then rcall('HSET', limitsKey, 'keyed', '1') end
if #dueNames > 0 then
  local lim = rcall('HMGET', limitsKey, 'keyed', 'vtime')
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
    promoteKeyed(waitingKey, orderKey, tagsKey, vtime, n, d, t, limitsKey)
  end
end
remember(requestsKey, answersKey, request, { created, updated }, now, tonumber(ARGV[7]), tonumber(ARGV[8]))
return { created, updated }
