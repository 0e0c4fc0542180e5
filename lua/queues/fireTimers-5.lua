--[[
  fireTimers: the sweeper's step of durable timers. Takes up to `limit` entries of waitat whose
  time has come; each agent still waiting with that time leaves the wait, timed out: its run's
  delivery is '~<event>' (stepRecord: no payload; the event is not consumed) and it is due now.
  An entry whose wait is gone (a signal came first, an unregister) is dropped; one whose wait
  has a later time is put back at it. The work per call is bounded by `limit`.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] steps      HASH name -> the run's steps and events (stepRecord)
    KEYS[3] waits      HASH name -> wait record (waitRecord)
    KEYS[4] waitat     ZSET name -> until (ms): the waits with a time
    KEYS[5] stats      HASH "timed_out" -> waits that timed out

    ARGV[1] channel (str)   where to announce: "P|S <wake-up channel>" or ""
    ARGV[2] queue (str)     queue name, published on channel
    ARGV[3] limit (uint)    most waitat entries to take

  Output -> Pair:
    { fired, taken }  waits timed out; entries taken (limit: call again)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include addWaiting
--@include stepRecord
--@include waitRecord

local now = nowMs()
local due = rcall('ZRANGEBYSCORE', K.waitat, '-inf', now, 'LIMIT', 0, A.limit)
if #due == 0 then return { 0, 0 } end
rcall('ZREM', K.waitat, unpack(due))
local waits = rcall('HMGET', K.waits, unpack(due))
local fired = 0
for j, name in ipairs(due) do
  local wait = waits[j] and parseWait(waits[j])
  if wait and wait.untilMs > now then
    rcall('ZADD', K.waitat, wait.untilMs, name)
  elseif wait and wait.untilMs > 0 then
    rcall('HDEL', K.waits, name)
    local entries = parseSteps(rcall('HGET', K.steps, name) or '') or {}
    rcall('HSET', K.steps, name, encodeSteps(entries, encodeStep('~' .. wait.event, now, '')))
    addWaiting(K.waiting, name, now, A.channel, A.queue)
    fired = fired + 1
  end
end
if fired > 0 then rcall('HINCRBY', K.stats, 'timed_out', fired) end
return { fired, #due }
