--[[
  signalAgent: delivers an event to an agent (AgentService.Signal). An agent waiting for it
  (`waits`) leaves the wait and is due now, the event its run's delivery ('!<event>' in its
  record, stepRecord), which its next leases carry. Otherwise the signal is kept for the run
  ('?<event>'), to be consumed by the wait that names it (waitAgent), at most maxPending of
  them. Each event is consumed once per run: a signal of an event the run consumed already, or
  keeps already, writes nothing (its first payload stands). The run's record goes when the run
  ends (runSteps), so a later run (a recurring agent's next) may be signalled it again. An
  agent that does not exist writes nothing; so does a signal beyond maxPending. A retry with a
  remembered request field gets the first answer and changes nothing.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] steps      HASH name -> the run's steps and events (stepRecord)
    KEYS[4] waits      HASH name -> wait record (waitRecord)
    KEYS[5] waitat     ZSET name -> until (ms): the waits with a time
    KEYS[6] requests   ZSET request field -> remembered at (ms)
    KEYS[7] answers    HASH request field -> first answer JSON

    ARGV[1] name (str)          agent name
    ARGV[2] event (str)         event name
    ARGV[3] payload (bytes)     the event's payload
    ARGV[4] request (str)       request field "signal|<name>|<event>|<request id>", or ""
    ARGV[5] maxPending (uint)   most signals kept per run (limits.max_pending_signals)
    ARGV[6] channel (str)       where to announce: "P|S <wake-up channel>" or ""
    ARGV[7] queue (str)         queue name, published on channel
    ARGV[8] retentionMs (uint)  how long answers are remembered (at least)
    ARGV[9] maxEntries (uint)   most answers remembered per queue

  Output -> Signalled:
    { -1, 0 }        no such agent: nothing written
    { -2, kept }     the run keeps maxPending signals already: nothing written
    { 0, at }        delivered: the agent was waiting for it and is due now (at: sent)
    { 1, at }        kept for a wait that names it
    { 2, at }        kept already (at: when first sent): nothing written
    { 3, at }        consumed already by this run (at: when sent): nothing written
    A retry with a remembered request field gets the first answer, its code plus 10.
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include addWaiting
--@include recall
--@include remember
--@include stepRecord
--@include waitRecord

local again = recall(K.answers, A.request)
if again then return { again[1] + 10, again[2] } end
local name, event = A.name, A.event
if rcall('HEXISTS', K.defs, name) == 0 then return { -1, 0 } end
local rec = rcall('HGET', K.steps, name) or ''
local entries = parseSteps(rec) or {}
local kept = 0
for _, s in ipairs(entries) do
  if s.name == '!' .. event then return { 3, s.at } end
  if s.name == '?' .. event then return { 2, s.at } end
  if string.sub(s.name, 1, 1) == '?' then kept = kept + 1 end
end
local now = nowMs()
local answer
local wait = parseWait(rcall('HGET', K.waits, name))
if wait and wait.event == event then
  rcall('HDEL', K.waits, name)
  if wait.untilMs > 0 then rcall('ZREM', K.waitat, name) end
  rcall('HSET', K.steps, name, encodeSteps(entries, encodeStep('!' .. event, now, A.payload)))
  addWaiting(K.waiting, name, now, A.channel, A.queue)
  answer = { 0, now }
else
  if kept >= A.maxPending then return { -2, kept } end
  rcall('HSET', K.steps, name, rec .. encodeStep('?' .. event, now, A.payload))
  answer = { 1, now }
end
remember(K.requests, K.answers, A.request, answer, now, A.retentionMs, A.maxEntries)
return answer
