--[[
  reapLeases: takes back leases found by findZombies or findOrphans, re-checking each first so
  a worker that heartbeated in between keeps its lease. A zombie (deadline + thresholdMs passed)
  ends as TIMEOUT, an orphan (its worker silent for thresholdMs) as ORPHANED: either way its
  holder vanished, so it is due again at once, with no error_interval (failureDelay), and the
  run counts toward max_attempts (finishLease). A working entry with no lease record (token "")
  is put back in waiting.

  Input:
    KEYS of QueueKeys
    KEYS[1]  waiting    ZSET name -> next run (ms)
    KEYS[2]  working    ZSET name -> lease deadline (ms)
    KEYS[3]  defs       HASH name -> definition JSON
    KEYS[4]  payloads   HASH name -> payload bytes
    KEYS[5]  leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6]  streaks    HASH name -> consecutive failures
    KEYS[7]  dlq        ZSET name -> dead-lettered at (ms)
    KEYS[8]  dlqinfo    HASH name -> dead-letter context JSON
    KEYS[9]  stats      HASH completed, failed, dead_lettered -> counts
    KEYS[10] limits     HASH flow control: "blocked" (acquireAgents) cleared and announced
    KEYS[11] cron       HASH name -> "token|next fire" of cron agents' runs (finishLease)
    KEYS[12] workers    ZSET worker id -> last seen (ms)
    KEYS[13] results   HASH name -> result record (finished)
    KEYS[14] resultsat ZSET name -> kept until (ms)
    KEYS[15] fanout    SET names with children
    KEYS[16] children  base of "children:<parent>"
    KEYS[17] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[18] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[19] awaited   ZSET name -> awaited until (ms)
    KEYS[20] deps      base of "deps:<child>"
    KEYS[21] steps     HASH name -> the steps its current run recorded: kept for the next
                       attempt; dropped when the run is over (dead-lettered, removed: runSteps)
    KEYS[22] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[23] groupblocked SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] queue (str)       queue name (wake-up message, dead-letter context)
    ARGV[2] channel (str)     where to announce: "P|S <wake-up channel>" or "", then
                              "\n<outbox channel>" (announceOutbox)
    ARGV[3] seed (uint)       random seed for the jitter
    ARGV[4] forbiddenMs (uint)          PERMANENT_FORBIDDEN backoff (readPolicy: these eight)
    ARGV[5] throttledBaseMs (uint)      THROTTLED backoff base
    ARGV[6] throttledMultiplier (num)   THROTTLED backoff multiplier
    ARGV[7] throttledCapMs (uint)       THROTTLED backoff cap
    ARGV[8] maxImmediateRetries (uint)  failures retried at once before error_interval
    ARGV[9] jitterRatio (num)           random part of a backoff
    ARGV[10] dlqTtlMs (uint)             dead-letter TTL (0: none)
    ARGV[11] dlqMaxEntries (uint)        dead-letter queue size bound (0: none)
    ARGV[12] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[13] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[14] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)
    ARGV[15..] suspects (items)  one item per lease to take back:
      name (str)                 agent name
      token (str)                the lease's token as found ("" when it had no lease record)
      kind (str)                 "ZOMBIE" or "ORPHAN"
      thresholdMs (uint)         how late (zombie) or silent (orphan) it must be

  Output -> Reaps:
    { code per quad }   -1 skipped (token changed, lease extended, worker alive again);
                        0 rescheduled, 1 removed, 2 dead-lettered, 3 repaired;
                        then how many outbox entries were written (children to release)
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
--@include wakeBlocked
--@include countsKeys
--@include keyLeaseEnded
--@include groupLimits
--@include runSteps

local k = {
  waiting = K.waiting, working = K.working, defs = K.defs, payloads = K.payloads, leases = K.leases,
  streaks = K.streaks, dlq = K.dlq, dlqinfo = K.dlqinfo, stats = K.stats,
}
local limitsKey, workersKey = K.limits, K.workers
k.cron = K.cron
local queue, channel = A.queue, A.channel
math.randomseed(A.seed)
local policy = readPolicy(A)
flowKeys(K, A.resultTtlMs, A.resultMax)
stepsKeys(K.steps)

local now = nowMs()
local out, ended = {}, false
-- The groups of the leases it may end, checked before anything is written (groupLimits).
if #A.suspects > 0 then
  local names = {}
  for j, item in ipairs(A.suspects) do names[j] = item.name end
  local recs, groups = rcall('HMGET', k.leases, unpack(names)), {}
  for j = 1, #names do groups[j] = recs[j] and leaseGroup(recs[j]) end
  checkGroups(A.groupName, groups)
end
local groupEnds, groupKeys = 0, {}
local keyEnds = {} -- key -> the names of the keyed leases this call ended (keyLeasesEnded)
for _, item in ipairs(A.suspects) do
  local name, token, kind, thresholdMs = item.name, item.token, item.kind, item.thresholdMs
  local code = -1
  local deadline = tonumber(rcall('ZSCORE', k.working, name) or '')
  local lease = parseLease(rcall('HGET', k.leases, name))
  if token == '' then
    if deadline and not lease then
      rcall('ZREM', k.working, name)
      if rcall('HEXISTS', k.defs, name) == 1 then addWaiting(k.waiting, name, now, channel, queue) end
      code = 3
    end
  elseif lease and lease.token == token and deadline then
    if kind == 'ZOMBIE' and deadline + thresholdMs < now then
      local message = 'lease ended ' .. (now - deadline) .. ' ms past its deadline without a heartbeat'
      code = finishLease(k, name, lease, 'TIMEOUT', message, 0, policy, now, channel, queue)[1]
    elseif kind == 'ORPHAN' then
      local seen = tonumber(rcall('ZSCORE', workersKey, lease.worker) or '0')
      if seen < now - thresholdMs then
        local message = 'worker ' .. lease.worker .. ' silent for ' .. (now - seen) .. ' ms'
        code = finishLease(k, name, lease, 'ORPHANED', message, 0, policy, now, channel, queue)[1]
      end
    end
  end
  out[#out + 1] = code
  if (code == 1 or code == 2) and lease then stepsEnded(name, lease.token) end
  if code >= 0 then ended = true end
  if code >= 0 and lease and lease.key then
    keyEnds[lease.key] = keyEnds[lease.key] or {}
    table.insert(keyEnds[lease.key], name)
  end
  if code >= 0 and lease and lease.group then
    groupEnds = groupEnds + 1
    if lease.key then groupKeys[lease.key] = (groupKeys[lease.key] or 0) + 1 end
  end
end
keyLeasesEnded(limitsKey, keyEnds)
if groupEnds > 0 then groupLeaseEnded(K, A.groupName, groupEnds, groupKeys) end
if ended then wakeBlocked(limitsKey, channel, queue) end
stepsSettle(F.kept, F.results, now)
out[#out + 1] = endFinished(channel, queue, now)
return out
