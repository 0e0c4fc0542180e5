--[[
  completeAgents: ends leases of one queue with the workers' outcomes, each as finishLease
  decides (success reschedules or removes a one-shot agent; failures back off by class and
  dead-letter at max_attempts). A stale or unknown token changes nothing for that item; the
  others still complete. A name listed twice is completed once: the second is stale. An item
  with a request field whose answer is remembered (a retry of a completion already applied)
  gets that answer and changes nothing; an applied item with a request field is remembered.
  A run that is over (a success, a dead letter, an agent gone) drops the steps it recorded, kept
  with its finish where the finish is kept (runSteps); a failure that reschedules keeps them.

  Batched for throughput: the lease records and definitions of all items are read with one
  HMGET each, and one-shot successes (the common case of a drained queue) are removed with one
  command per key for the whole batch; other outcomes go through finishLease one by one.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[8] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[9]  stats     HASH completed, failed, dead_lettered -> counts
    KEYS[10] limits    HASH flow control: "blocked" (acquireAgents) is cleared and announced
                       once a lease ended; with a rate limit, a THROTTLED item's retryAfterMs
                       empties the queue's token bucket for that long ("tokens", "at")
    KEYS[11] cron      HASH name -> "token|next fire" of cron agents' runs (setCronNext)
    KEYS[12] requests  ZSET request field -> remembered at (ms)
    KEYS[13] answers   HASH request field -> first answer JSON
    KEYS[14] results   HASH name -> result record (finished)
    KEYS[15] resultsat ZSET name -> kept until (ms)
    KEYS[16] fanout    SET names with children
    KEYS[17] children  base of "children:<parent>"
    KEYS[18] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[19] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[20] awaited   ZSET name -> awaited until (ms)
    KEYS[21] deps      base of "deps:<child>"
    KEYS[22] steps     HASH name -> the steps its current run recorded (runSteps): read and
                       dropped for runs that ended only when the queue has any
    KEYS[23] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[24] groupblocked SET "<queue>|<channel>": member queues held back by the group
    KEYS[25] pending   HASH name -> parents still pending (the children released here)

    ARGV[1] forbiddenMs (uint)          PERMANENT_FORBIDDEN backoff (readPolicy: these eight)
    ARGV[2] throttledBaseMs (uint)      THROTTLED backoff base
    ARGV[3] throttledMultiplier (num)   THROTTLED backoff multiplier
    ARGV[4] throttledCapMs (uint)       THROTTLED backoff cap
    ARGV[5] maxImmediateRetries (uint)  failures retried at once before error_interval
    ARGV[6] jitterRatio (num)           random part of a backoff
    ARGV[7] dlqTtlMs (uint)             dead-letter TTL (0: none)
    ARGV[8] dlqMaxEntries (uint)        dead-letter queue size bound (0: none)
    ARGV[9]  seed (uint)          random seed for the jitter
    ARGV[10] channel (str)        where to announce: "P|S <wake-up channel>" or "", then
                                  "\n<outbox channel>" (announceOutbox)
    ARGV[11] queue (str)          queue name (wake-up message, dead-letter context)
    ARGV[12] retentionMs (uint)   how long answers are remembered (at least)
    ARGV[13] maxEntries (uint)    most answers remembered per queue
    ARGV[14] resultTtlMs (uint)   how long finishes are kept (results.retention_ms)
    ARGV[15] resultMax (uint)     most finishes kept per queue (results.max_entries)
    ARGV[16] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)
    ARGV[17] releaseLimit (uint)  most children of this queue released here, straight from
                                  their parents' sets (releaseDirect) or from the outbox
                                  (releasePage) (flows.release_inline); 0: all are left to
                                  Baton's flows task
    ARGV[18] announceReleased (bool) 1: a child released here that becomes due is announced
                                  as any agent due (addWaiting); 0: not, and its name is in
                                  the answer: the caller acquires from this queue in the same
                                  round and announces what its acquire did not take (Session)
    ARGV[19..] items (items)      one item per lease ended:
      name (str)                  agent name
      token (str)                 the lease's token (decimal)
      outcome (str)               SUCCESS | PERMANENT_FORBIDDEN | THROTTLED | TRANSIENT |
                                  SERVER_ERROR | UNKNOWN
      message (str)               the worker's message
      retryAfterMs (uint)         THROTTLED: not before this long
      request (str)               request field "complete|<name>|<token>|<request id>" or ""
      result (bytes)              the result bytes

  Output -> Completions: per item, in order, three numbers:
    -1, 0, 0                  LEASE_LOST: token stale or unknown; nothing changed
    0, nextRun, streak        RESCHEDULED
    1, 0, 0                   REMOVED: one-shot success, or no definition left
    2, deadLetteredAt, streak DEAD_LETTERED
  A retry with a remembered request field gets the first call's three numbers, its code plus 10
  (10, 11, 12): the same answer, told apart so it is not counted twice.
  Then the names of the children released here that became due unannounced (announceReleased
  0; none otherwise) and their count n; how many children this script released in this queue
  (their parents finished here); last, how many outbox entries are left for Baton to release
  (0 when the finishes here wrote none, or when this script released all of them).

  A finish with children of this same queue releases them here, up to releaseLimit, so a
  chain's next step is due (and announced, unless announceReleased says the caller does) when
  this script returns, with no call of the flows task in between. Children of other queues,
  and those past the limit, stay in the outbox for the flows task, which the outbox
  announcement wakes.
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include leaseRecord
--@include addWaiting
--@include jitter
--@include failureDelay
--@include readPolicy
--@include trimDeadLetters
--@include cronNext
--@include memberKey
--@include keepsFinish
--@include finished
--@include finishLease
--@include defField
--@include wakeBlocked
--@include countsKeys
--@include keyLeaseEnded
--@include groupLimits
--@include recall
--@include remember
--@include runSteps
--@include finishBatch
--@include releaseChild
--@include outboxPage
--@include releasePage

local k = {
  waiting = K.waiting, working = K.working, defs = K.defs, payloads = K.payloads, leases = K.leases,
  streaks = K.streaks, dlq = K.dlq, dlqinfo = K.dlqinfo, stats = K.stats,
  limits = K.limits, cron = K.cron, requests = K.requests, answers = K.answers,
}
local policy = readPolicy(A)
math.randomseed(A.seed)
local channel, queue = A.channel, A.queue
local retentionMs, maxEntries = A.retentionMs, A.maxEntries
flowKeys(K, A.resultTtlMs, A.resultMax)
stepsKeys(K.steps)
local items = A.items
local count = #items
-- Children of this queue are released at the end straight from their parents' live sets
-- where they can be (releaseDirect), not through outbox entries written and read here.
if A.releaseLimit > 0 then F.direct = {} end
-- Children made due here unannounced (announceReleased 0): their names go back to the caller.
if not A.announceReleased then F.due = {} end

local names = {}
for i = 1, count do names[i] = items[i].name end
local records = rcall('HMGET', k.leases, unpack(names))
local defs = rcall('HMGET', k.defs, unpack(names))
-- The groups of the leases it may end, checked before anything is written (groupLimits): no
-- command, a string match per record.
local groups = {}
for i = 1, count do groups[i] = records[i] and leaseGroup(records[i]) end
checkGroups(A.groupName, groups)
local groupEnds, groupKeys = 0, {}

local now = nowMs()
local out = {}
local seen = {}
local gone, g = {}, 0 -- one-shot successes, removed together below
local goneItems, goneKeeps = {}, {}
local ended, throttledFor = 0, 0
local throttledKeys = {} -- key -> held until (ms)
local keyEnds = {} -- key -> the names of the keyed leases this batch ended (keyLeasesEnded: all keys at once)
for i = 0, count - 1 do
  local item, o = items[i + 1], i * 3
  local name, token, outcome, request = item.name, item.token, item.outcome, item.request
  local again = recall(k.answers, request)
  local rec = not again and not seen[name] and records[i + 1]
  seen[name] = true
  -- The token alone decides the fast path; the whole record is parsed only for the others.
  local recToken = rec and leaseToken(rec)
  if again then
    out[o + 1], out[o + 2], out[o + 3] = again[1] + 10, again[2], again[3]
  elseif recToken ~= token then
    out[o + 1], out[o + 2], out[o + 3] = -1, 0, 0
  else
    ended = ended + 1
    local key = leaseKey(rec)
    if key then keyEnds[key] = keyEnds[key] or {}; table.insert(keyEnds[key], name) end
    if groups[i + 1] then
      groupEnds = groupEnds + 1
      if key then groupKeys[key] = (groupKeys[key] or 0) + 1 end
    end
    local def = defs[i + 1]
    -- A run a cascade marked ("k") takes finishLease, which ends it as cancelled: a plain find,
    -- no command, and a parse only when the record may hold the mark.
    local marked = string.find(rec, '|k', 1, true) and parseLease(rec).cascade
    if outcome == 'SUCCESS' and def and not marked and defField(def, 'interval_ms') == 0 and not defIsCron(def) then
      g = g + 1
      gone[g] = name
      goneItems[g] = item
      goneKeeps[g] = keepsFinish(def)
      dropParents(name, def)
      stepsEnded(name, token)
      out[o + 1], out[o + 2], out[o + 3] = 1, 0, 0
      remember(k.requests, k.answers, request, { 1, 0, 0 }, now, retentionMs, maxEntries)
    else
      local r = finishLease(k, name, parseLease(rec), outcome, item.message, item.retryAfterMs, policy, now,
        channel, queue, item.result)
      out[o + 1], out[o + 2], out[o + 3] = r[1], r[2], r[3]
      if outcome == 'SUCCESS' or r[1] ~= 0 then stepsEnded(name, token) end
      remember(k.requests, k.answers, request, { r[1], r[2], r[3] }, now, retentionMs, maxEntries)
      local retryAfter = item.retryAfterMs
      if outcome == 'THROTTLED' and retryAfter > throttledFor then throttledFor = retryAfter end
      if outcome == 'THROTTLED' and retryAfter > 0 and key then
        local until_ = throttledKeys[key]
        if not until_ or now + retryAfter > until_ then throttledKeys[key] = now + retryAfter end
      end
    end
  end
end
if g > 0 then
  rcall('ZREM', k.working, unpack(gone))
  rcall('HDEL', k.leases, unpack(gone))
  rcall('HDEL', k.streaks, unpack(gone))
  rcall('HDEL', k.defs, unpack(gone))
  rcall('HDEL', k.payloads, unpack(gone))
  rcall('HINCRBY', k.stats, 'completed', #gone)
  -- A finish record is made only for a finish that is kept.
  finishedMany(gone, function(j)
    local item = goneItems[j]
    return resultRecord('S', 'SUCCESS', item.token, now, '', item.result)
  end, goneKeeps, now)
end
stepsSettle(F.kept, F.results, now)
keyLeasesEnded(k.limits, keyEnds)
if groupEnds > 0 then groupLeaseEnded(K, A.groupName, groupEnds, groupKeys) end
if ended > 0 then wakeBlocked(k.limits, channel, queue) end
-- The service said "not before retryAfter": a rate-limited queue holds its whole bucket that
-- long, not just the one agent (the bucket refills from then on).
if throttledFor > 0 and rcall('HEXISTS', k.limits, 'rate') == 1 then
  local at = tonumber(rcall('HGET', k.limits, 'at') or '0')
  if now + throttledFor > at then at = now + throttledFor end
  rcall('HSET', k.limits, 'tokens', '0', 'at', string.format('%d', at))
end
-- The same for a keyed agent's key, when keys have buckets: the key's bucket is held.
if next(throttledKeys) and rcall('HEXISTS', k.limits, 'key_rate') == 1 then
  for key, until_ in pairs(throttledKeys) do
    local rec = rcall('HGET', k.limits, 'bucket|' .. key)
    local at = tonumber(rec and string.match(rec, '|(%d+)$') or '0')
    if until_ > at then rcall('HSET', k.limits, 'bucket|' .. key, '0|' .. string.format('%d', until_)) end
  end
end
-- Children of this queue whose parents finished here are due now, not after a call of the
-- flows task; the outbox is announced only when something is left in it.
local released = 0
if (F.direct and #F.direct > 0) or (F.outboxed > 0 and A.releaseLimit > 0) then
  local r = {
    waiting = K.waiting, defs = K.defs, payloads = K.payloads, pending = K.pending, stats = K.stats,
    leases = K.leases, streaks = K.streaks, dlq = K.dlq, dlqinfo = K.dlqinfo, cron = K.cron,
    channel = A.announceReleased and channel or '', queue = queue,
  }
  released = releaseDirect(r, A.releaseLimit, now)
  if F.outboxed > 0 and released < A.releaseLimit then
    local here, rest = releasePage(r, '+inf', A.releaseLimit - released, now)
    released = released + here
    if #rest == 0 and rcall('EXISTS', F.outbox) == 0 then F.outboxed = 0 end
  end
end
-- The summary goes after the items (Baton reads it from the end), so they are not copied.
local due = F.due or {}
for _, name in ipairs(due) do out[#out + 1] = name end
out[#out + 1] = #due
out[#out + 1] = released
out[#out + 1] = endFinished(channel, queue, now)
return out
