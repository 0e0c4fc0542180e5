--[[
  heartbeatLeases: extends each listed lease still held with its token to now + the lease's
  timeout, records the progress the holder reports, and records the worker as alive in the
  queue (added only when it holds a lease there: a heartbeat naming unknown queues creates no
  key); the progress of a lease a WatchAgent stream watches is announced (watchEvent), and
  nothing more is sent for any other. A lease whose token does not match (or that no longer exists) is lost; it is not
  touched. A lease CancelRun marked ends here: the agent is scheduled as after a success
  without counting one (a recurring agent at acquired_at + interval, never in the past, a cron
  agent at its run's next fire; a one-shot agent removed, its finish kept as cancelled, so an
  Await answers and its children apply their policy) and counted as cancelled. A lease a
  cascade marked ("k") ends the agent whatever its schedule: removed, finished as cancelled by a
  cascade (its children are cancelled in turn).

  Input:
    KEYS of QueueKeys
    KEYS[1]  waiting    ZSET name -> next run (ms)
    KEYS[2]  working    ZSET name -> lease deadline (ms)
    KEYS[3]  defs       HASH name -> definition JSON
    KEYS[4]  payloads   HASH name -> payload bytes
    KEYS[5]  leases     HASH name -> "token|worker|acquired_at|timeout_ms[|flags|progress]"
    KEYS[6]  streaks    HASH name -> consecutive failures
    KEYS[7]  stats      HASH completed, failed, dead_lettered, cancelled -> counts
    KEYS[8]  limits     HASH flow control: "blocked" cleared and announced when a lease ends
    KEYS[9]  workers    ZSET worker id -> last seen (ms)
    KEYS[10] cron       HASH name -> "token|next fire" of cron agents' runs (setCronNext)
    KEYS[11] results   HASH name -> result record (finished): a removed one-shot's finish
    KEYS[12] resultsat ZSET name -> kept until (ms)
    KEYS[13] fanout    SET names with children
    KEYS[14] children  base of "children:<parent>"
    KEYS[15] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[16] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[17] awaited   ZSET name -> awaited until (ms)
    KEYS[18] deps      base of "deps:<child>"
    KEYS[19] steps     HASH name -> the steps its current run recorded: a cancelled run's are
                       dropped (kept with a kept finish: runSteps)
    KEYS[20] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[21] groupblocked SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] worker (str)        worker id of the caller
    ARGV[2] channel (str)       where to announce: "P|S <wake-up channel>" or "", then
                                "\n<outbox channel>" (announceOutbox)
    ARGV[3] queue (str)         queue name, published on channel
    ARGV[4] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[5] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[6] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)
    ARGV[7..] held (items)      one item per lease held:
      name (str)                agent name
      token (str)               the lease's token (decimal)
      progress (str)            "" leaves it; "=<value>" sets it

  Output -> Beats:
    { deadline, or -1 lost, or -2 cancelled (ended now), per triple, in order }, then how many
    outbox entries the call wrote (children to release)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include leaseRecord
--@include addWaiting
--@include defField
--@include wakeBlocked
--@include countsKeys
--@include keyLeaseEnded
--@include groupLimits
--@include cronNext
--@include memberKey
--@include keepsFinish
--@include finished
--@include runSteps
--@include watchEvent

local waitingKey, workingKey, defsKey, payloadsKey, leasesKey = K.waiting, K.working, K.defs, K.payloads, K.leases
local streaksKey, statsKey, limitsKey, workersKey = K.streaks, K.stats, K.limits, K.workers
local cronKey = K.cron
local worker, channel, queue = A.worker, A.channel, A.queue
flowKeys(K, A.resultTtlMs, A.resultMax)
stepsKeys(K.steps)
local now = nowMs()
local out = {}
local held, ended = false, false
-- Every lease record is read first: the groups of the cancelled runs that end here are checked
-- before anything is written (groupLimits).
local leases, groups = {}, {}
for j, item in ipairs(A.held) do
  local lease = parseLease(rcall('HGET', leasesKey, item.name))
  leases[j] = lease or false
  if lease and lease.token == item.token and lease.cancel then groups[#groups + 1] = lease.group end
end
checkGroups(A.groupName, groups)
for j, item in ipairs(A.held) do
  local name, token, progress = item.name, item.token, item.progress
  local lease = leases[j]
  if lease and lease.token == token and lease.cancel then
    rcall('ZREM', workingKey, name)
    rcall('HDEL', leasesKey, name)
    keyLeaseEnded(limitsKey, lease.key, name)
    groupLeaseEnded(K, lease.group, 1, lease.key and { [lease.key] = 1 })
    local def = rcall('HGET', defsKey, name)
    if def and lease.cascade then
      -- A cascade's: the agent ends whatever its schedule, and its children are cancelled too.
      rcall('HDEL', defsKey, name)
      rcall('HDEL', payloadsKey, name)
      rcall('HDEL', streaksKey, name)
      rcall('HDEL', cronKey, name)
      dropParents(name, def)
      finished(name, resultRecord('c', '', lease.token, now, 'cancelled: an ancestor was cancelled', ''), now,
        keepsFinish(def))
    elseif def and defIsCron(def) then
      addWaiting(waitingKey, name, cronNext(cronKey, name, lease.token, lease.acquiredAt, now), channel, queue)
    elseif def and defField(def, 'interval_ms') > 0 then
      local nextRun = lease.acquiredAt + defField(def, 'interval_ms')
      if nextRun < now then nextRun = now end
      addWaiting(waitingKey, name, nextRun, channel, queue)
    elseif def then
      rcall('HDEL', defsKey, name)
      rcall('HDEL', payloadsKey, name)
      rcall('HDEL', streaksKey, name)
      dropParents(name, def)
      finished(name, resultRecord('C', '', lease.token, now, 'cancelled by CancelRun', ''), now, keepsFinish(def))
    end
    rcall('HINCRBY', statsKey, 'cancelled', 1)
    stepsEnded(name, token)
    ended = true
    out[#out + 1] = -2
  elseif lease and lease.token == token then
    local deadline = now + lease.timeout
    rcall('ZADD', workingKey, 'XX', deadline, name)
    if progress ~= '' then
      local value, n = string.sub(progress, 2), lease.watch
      if n then
        -- A watched lease (WatchAgent): its progress is announced, numbered in its flags.
        n = n + 1
        watchEvent(channel, queue, name, token, n, 'p', value)
      end
      rcall('HSET', leasesKey, name, rewriteLease(lease, leaseFlags(false, n), value))
    end
    out[#out + 1] = deadline
    held = true
  else
    out[#out + 1] = -1
  end
end
if held then
  rcall('ZADD', workersKey, now, worker)
else
  rcall('ZADD', workersKey, 'XX', now, worker)
end
if ended then
  wakeBlocked(limitsKey, channel, queue)
  stepsSettle(F.kept, F.results, now)
end
-- Only a cancelled one-shot agent wrote a finish: a plain heartbeat pays nothing here.
out[#out + 1] = F.written > 0 and endFinished(channel, queue, now) or 0
return out
