--[[
  awaitAgent: an agent's kept finish, or its state; with waitMs, marks an agent that exists
  awaited until then, so the script that finishes it keeps its finish and announces it
  (finished), and drops two awaited marks past their time (bounded). A name with no agent
  (state 0) writes nothing. Also whether the agent's next finish will be kept: it keeps its
  result (keepsFinish), has children attached (fanout) or is awaited now.

  Input:
    KEYS of QueueKeys
    KEYS[1] defs       HASH name -> definition JSON
    KEYS[2] results    HASH name -> result record
    KEYS[3] awaited    ZSET name -> awaited until (ms)
    KEYS[4] waiting    ZSET name -> next run (ms)
    KEYS[5] working    ZSET name -> lease deadline (ms)
    KEYS[6] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[7] pending    HASH name -> parents still pending
    KEYS[8] resultsat  ZSET name -> kept until (ms)
    KEYS[9] fanout     SET names with children
    KEYS[10] waits     HASH name -> wait record: agents waiting for an event or a time

    ARGV[1] name (str)      the agent
    ARGV[2] waitMs (uint)   how long to mark it awaited; 0: only read

  A kept finish comes with the steps its run recorded, when they were kept with it ("<name>|steps"
  in results: "<token>|<at>|<steps record>", runSteps; the caller matches the finish's token and
  time).

  Output -> Awaited: { record or "", state, keeps, steps or "" } state: 0 no agent, 1 waiting, 2 working,
          3 dead-lettered, 4 blocked, 5 defined in no set, 6 waiting for an event; keeps 1 when the agent's next finish
          will be kept, else 0 (0 for no agent)
]]
local rcall = redis.call
--@include nowMs
--@include keepsFinish
local defsKey, resultsKey, awaitedKey = K.defs, K.results, K.awaited
local name, waitMs = A.name, A.waitMs
local now = nowMs()
local record = rcall('HGET', resultsKey, name)
local kept = record and tonumber(rcall('ZSCORE', K.resultsat, name) or '0') >= now
local state = 0
local def = rcall('HGET', defsKey, name)
if def then
  if rcall('ZSCORE', K.working, name) then state = 2
  elseif rcall('ZSCORE', K.waiting, name) then state = 1
  elseif rcall('ZSCORE', K.dlq, name) then state = 3
  elseif rcall('HEXISTS', K.pending, name) == 1 then state = 4
  elseif rcall('HEXISTS', K.waits, name) == 1 then state = 6
  else state = 5 end
end
if waitMs > 0 and state ~= 0 then
  local old = rcall('ZRANGEBYSCORE', awaitedKey, '-inf', string.format('%d', now), 'LIMIT', 0, 2)
  if #old > 0 then rcall('ZREM', awaitedKey, unpack(old)) end
  rcall('ZADD', awaitedKey, 'GT', string.format('%d', now + waitMs), name)
  rcall('ZADD', awaitedKey, 'NX', string.format('%d', now + waitMs), name)
end
local keeps = 0
if state ~= 0 then
  local until_ = tonumber(rcall('ZSCORE', awaitedKey, name) or '-1')
  if keepsFinish(def) or until_ >= now or rcall('SISMEMBER', K.fanout, name) == 1 then keeps = 1 end
end
local steps = kept and rcall('HGET', resultsKey, name .. '|steps') or ''
return { kept and record or '', state, keeps, steps }
