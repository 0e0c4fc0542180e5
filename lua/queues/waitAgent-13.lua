--[[
  waitAgent: ends a lease by waiting (CompleteRequest.wait_for), fenced by its token: the run is
  not over and the wait is no failure (its steps stay, the failure streak is unchanged). The
  agent then holds no lease and no worker and is not due: it waits in `waits` for the event,
  the time (`waitat`, for the timers' sweeper step, fireTimers), or the first of both, unless
  the wait is met at once:
  - a signal of the event kept for the run ('?<event>' in its record) is consumed: it becomes
    the run's delivery ('!<event>') and the agent is due now;
  - an event the run consumed already ('!<event>') is its delivery again (a retried attempt
    that waits for it again gets the same event: each event is consumed once per run);
  - a time already past times the wait out ('~<event>') and the agent is due now.
  An agent unregistered while held is dropped with its run's record. A run CancelRun or a
  cascade marked does not wait: the answer says so and nothing is written (Baton then ends the
  run as the holder's heartbeat would, cancelled). The lease's place in a shared concurrency
  group is given back (groupLimits). A retry with a remembered request field gets the first
  answer and changes nothing.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[5] streaks    HASH name -> consecutive failures (read)
    KEYS[6] limits     HASH flow control: "blocked" is cleared and announced; a keyed lease's
                       "held|<key>" given back (keyLeaseEnded)
    KEYS[7] steps      HASH name -> the run's steps and events (stepRecord)
    KEYS[8] waits      HASH name -> wait record (waitRecord)
    KEYS[9] waitat     ZSET name -> until (ms): the waits with a time
    KEYS[10] requests  ZSET request field -> remembered at (ms)
    KEYS[11] answers   HASH request field -> first answer JSON
    KEYS[12] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[13] groupblocked SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] name (str)          agent name
    ARGV[2] token (str)         the lease's token (decimal)
    ARGV[3] event (str)         the event waited for ("" for a time only)
    ARGV[4] untilMs (uint)      wait at most until then (Redis time, ms; 0: no such bound)
    ARGV[5] timeoutMs (uint)    wait at most this long from now (0: no such bound)
    ARGV[6] request (str)       request field "wait|<name>|<token>|<request id>", or ""
    ARGV[7] channel (str)       where to announce: "P|S <wake-up channel>" or ""
    ARGV[8] queue (str)         queue name, published on channel
    ARGV[9] retentionMs (uint)  how long answers are remembered (at least)
    ARGV[10] maxEntries (uint)  most answers remembered per queue
    ARGV[11] groupName (str)    the group whose keys these are ("" for none): a lease end
                                gives the place back to its record's group (groupLimits)

  Output -> Waited:
    { -1 }                    LEASE_LOST: the token does not hold the lease; nothing written
    { -2, worker }            the run is marked cancelled (CancelRun, a cascade): nothing written;
                              worker is the lease's holder
    { 0, until, streak }      waiting (until: the wait's time, 0 for none)
    { 1, now, streak }        due now with the event (kept before the wait, or consumed before)
    { 2, now, streak }        due now, timed out (the time had passed)
    { 3, 0, 0 }               the agent was unregistered while held: dropped
    A retry with a remembered request field gets the first answer, its code plus 10.
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include leaseRecord
--@include addWaiting
--@include wakeBlocked
--@include countsKeys
--@include keyLeaseEnded
--@include recall
--@include remember
--@include stepRecord
--@include waitRecord
--@include groupLimits

local again = recall(K.answers, A.request)
if again then return { again[1] + 10, again[2], again[3] } end
local name, event, channel, queue = A.name, A.event, A.channel, A.queue
local lease = parseLease(rcall('HGET', K.leases, name))
if not lease or lease.token ~= A.token then return { -1 } end
if lease.cancel then return { -2, lease.worker } end
checkGroups(A.groupName, { lease.group })
rcall('ZREM', K.working, name)
rcall('HDEL', K.leases, name)
keyLeaseEnded(K.limits, lease.key, name)
groupLeaseEnded(K, lease.group, 1, lease.key and { [lease.key] = 1 })
wakeBlocked(K.limits, channel, queue)
local now = nowMs()
local answer
if rcall('HEXISTS', K.defs, name) == 0 then
  rcall('HDEL', K.steps, name)
  answer = { 3, 0, 0 }
else
  local streak = tonumber(rcall('HGET', K.streaks, name) or '0')
  local untilMs = A.untilMs
  if A.timeoutMs > 0 and (untilMs == 0 or now + A.timeoutMs < untilMs) then untilMs = now + A.timeoutMs end
  local entries = parseSteps(rcall('HGET', K.steps, name) or '') or {}
  local met
  if event ~= '' then
    for i, s in ipairs(entries) do
      if s.name == '?' .. event or s.name == '!' .. event then
        met = s
        table.remove(entries, i)
        break
      end
    end
  end
  if met then
    rcall('HSET', K.steps, name, encodeSteps(entries, encodeStep('!' .. event, met.at, met.result)))
    addWaiting(K.waiting, name, now, channel, queue)
    answer = { 1, now, streak }
  elseif untilMs > 0 and untilMs <= now then
    rcall('HSET', K.steps, name, encodeSteps(entries, encodeStep('~' .. event, now, '')))
    addWaiting(K.waiting, name, now, channel, queue)
    answer = { 2, now, streak }
  else
    rcall('HSET', K.waits, name, encodeWait(event, untilMs, now))
    if untilMs > 0 then rcall('ZADD', K.waitat, untilMs, name) end
    answer = { 0, untilMs, streak }
  end
end
remember(K.requests, K.answers, A.request, answer, now, A.retentionMs, A.maxEntries)
return answer
