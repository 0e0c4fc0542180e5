--[[
  watchAgent: what a WatchAgent stream shows first (its snapshot), and the watch mark. Reads the
  agent's kept finish (with the steps kept beside it), where it is, its current lease, the steps
  its current run recorded, its failure streak and the queue's token counter. With markMs, an
  agent that exists is marked until now + markMs: awaited (as awaitAgent marks it, dropping two
  marks past their time), so the script that finishes it keeps its finish and announces it; its
  definition's watch mark (defWithWatch), so the acquire scripts mark the next lease watched and
  announce its grant; and its current lease, marked watched ("w0" in its flags, unless it is
  already), so heartbeatLeases and recordStep announce its progress and steps (watchEvent). A
  name with no agent (state 0) writes nothing.

  Input:
    KEYS of QueueKeys
    KEYS[1]  defs       HASH name -> definition JSON
    KEYS[2]  leases     HASH name -> "token|worker|acquired_at|timeout_ms[|flags|progress]"
    KEYS[3]  streaks    HASH name -> consecutive failures
    KEYS[4]  steps      HASH name -> the steps its current run recorded (stepRecord)
    KEYS[5]  results    HASH name -> result record; "<name>|steps" -> steps kept with it
    KEYS[6]  resultsat  ZSET name -> kept until (ms)
    KEYS[7]  awaited    ZSET name -> awaited until (ms)
    KEYS[8]  waiting    ZSET name -> next run (ms)
    KEYS[9]  working    ZSET name -> lease deadline (ms)
    KEYS[10] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[11] pending    HASH name -> parents still pending
    KEYS[12] seq        STRING the queue's fencing-token counter

    ARGV[1] name (str)      the agent
    ARGV[2] markMs (uint)   how long to mark it watched and awaited; 0: only read

  Output -> Watched: { record or "", state, kept steps or "", lease or "", steps or "", streak,
          seq } state as awaitAgent's (0 no agent, 1 waiting, 2 working, 3 dead-lettered,
          4 blocked, 5 defined in no set); lease only while working, as marked; seq the
          token counter (every later lease's token is above it)
]]
local rcall = redis.call
--@include nowMs
--@include leaseRecord
--@include publish
--@include watchEvent
local name, markMs = A.name, A.markMs
local now = nowMs()
local record = rcall('HGET', K.results, name)
local kept = record and tonumber(rcall('ZSCORE', K.resultsat, name) or '0') >= now
local state = 0
local def = rcall('HGET', K.defs, name)
if def then
  if rcall('ZSCORE', K.working, name) then state = 2
  elseif rcall('ZSCORE', K.waiting, name) then state = 1
  elseif rcall('ZSCORE', K.dlq, name) then state = 3
  elseif rcall('HEXISTS', K.pending, name) == 1 then state = 4
  else state = 5 end
end
local lease = state == 2 and rcall('HGET', K.leases, name) or ''
if markMs > 0 and state ~= 0 then
  local untilMs = string.format('%d', now + markMs)
  local old = rcall('ZRANGEBYSCORE', K.awaited, '-inf', string.format('%d', now), 'LIMIT', 0, 2)
  if #old > 0 then rcall('ZREM', K.awaited, unpack(old)) end
  rcall('ZADD', K.awaited, 'GT', untilMs, name)
  rcall('ZADD', K.awaited, 'NX', untilMs, name)
  rcall('HSET', K.defs, name, defWithWatch(def, now + markMs))
  local l = parseLease(lease ~= '' and lease or nil)
  if l and not l.watch then
    lease = rewriteLease(l, leaseFlags(l.cancel, 0, l.cascade), l.progress)
    rcall('HSET', K.leases, name, lease)
  end
end
local steps = def and rcall('HGET', K.steps, name) or ''
local keptSteps = kept and rcall('HGET', K.results, name .. '|steps') or ''
local streak = def and tonumber(rcall('HGET', K.streaks, name) or '0') or 0
return { kept and record or '', state, keptSteps, lease, steps, streak, tonumber(rcall('GET', K.seq) or '0') }
