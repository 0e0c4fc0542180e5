--[[
  recordStep: records a named step's result in the run a lease holds, fenced by its token: the
  step is appended to the agent's entry in `steps` (stepRecord), which the next attempts' leases
  carry until the run is over (runSteps). A step of that name recorded already in this run keeps
  its first result and nothing is written. A run holds at most maxSteps steps and maxBytes
  result bytes in all; a step beyond either writes nothing. A step recorded under a lease a
  WatchAgent stream watches is announced (watchEvent, numbered in the lease's flags); for any
  other lease nothing more is written or sent.

  Input:
    KEYS of QueueKeys
    KEYS[1] leases   HASH name -> "token|worker|acquired_at|timeout_ms[|flags|progress]"
    KEYS[2] steps    HASH name -> the steps its current run recorded (stepRecord)

    ARGV[1] name (str)        agent name
    ARGV[2] token (str)       the lease's token (decimal)
    ARGV[3] step (str)        step name
    ARGV[4] result (bytes)    the step's result
    ARGV[5] maxSteps (uint)   most steps per run (limits.max_steps)
    ARGV[6] maxBytes (uint)   most result bytes per run (limits.max_step_bytes)
    ARGV[7] channel (str)     where a watched lease's step is announced: "P|S <wake-up channel>"
    ARGV[8] queue (str)       queue name, in the announcement

  Output -> StepAnswer:
    { -1 }                         LEASE_LOST: the token does not hold the lease; nothing written
    { -2, count }                  too many steps: the run has count already; nothing written
    { -3, bytes }                  too many bytes: the run's results hold bytes already
    { 0, at, count }               recorded at (ms); the run has count steps now
    { 1, at, count, result }       a step of that name was recorded already, at, with result
]]
local rcall = redis.call
--@include nowMs
--@include leaseRecord
--@include stepRecord
--@include publish
--@include watchEvent

local name, step, result = A.name, A.step, A.result
local leaseRec = rcall('HGET', K.leases, name)
if leaseToken(leaseRec) ~= A.token then return { -1 } end
local rec = rcall('HGET', K.steps, name) or ''
local steps = parseSteps(rec) or {}
local bytes = 0
-- The run's events share its record (stepRecord) and count toward neither bound.
local count, found = 0, nil
for _, s in ipairs(steps) do
  if isStep(s.name) then
    count = count + 1
    if s.name == step then found = s end
    bytes = bytes + #s.result
  end
end
if found then return { 1, found.at, count, found.result } end
if count >= A.maxSteps then return { -2, count } end
if bytes + #result > A.maxBytes then return { -3, bytes } end
local now = nowMs()
rcall('HSET', K.steps, name, rec .. encodeStep(step, now, result))
local lease = parseLease(leaseRec)
if lease and lease.watch then
  local n = lease.watch + 1
  rcall('HSET', K.leases, name, rewriteLease(lease, leaseFlags(lease.cancel, n, lease.cascade), lease.progress))
  watchEvent(A.channel, A.queue, name, A.token, n, 's', string.format('%d', now) .. '|' .. step .. '|' .. result)
end
return { 0, now, count + 1 }
