--[[
  cancelCascade: CancelRun with cascade. Marks the agent's current lease as cancelRun does (its
  run ends at the holder's next heartbeat), and freezes its children attached now under an
  outbox entry whose record cascades ("c", finished), so Baton cancels each of them, and their
  descendants in turn, page by page (flows: releaseOutbox, releaseChildren, releaseChild). An
  agent with no children costs one EXISTS more than cancelRun. Nothing is written for an
  unknown agent.

  Input:
    KEYS of QueueKeys
    KEYS[1]  defs      HASH name -> definition JSON
    KEYS[2]  leases    HASH name -> "token|worker|acquired_at|timeout_ms[|flags|progress]"
    KEYS[3]  results   HASH name -> result record (finished)
    KEYS[4]  resultsat ZSET name -> kept until (ms)
    KEYS[5]  fanout    SET names with children
    KEYS[6]  children  base of "children:<parent>" and of "children:<parent>|<seq>"
    KEYS[7]  outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[8]  outboxres HASH "<parent>|<seq>" -> result record
    KEYS[9]  awaited   ZSET name -> awaited until (ms)
    KEYS[10] deps      base of "deps:<child>"

    ARGV[1] channel (str)  where to announce: "P|S <wake-up channel>" or "", then
                           "\n<outbox channel>" (announceOutbox)
    ARGV[2] queue (str)    queue name
    ARGV[3] name (str)     agent name

  Output -> Pair:
    { -1 no such agent, 0 not running, or the marked lease's token; children frozen for the
      cascade }
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include memberKey
--@include leaseRecord
--@include finished
flowKeys(K, 0, 0)
local name = A.name
if rcall('HEXISTS', K.defs, name) == 0 then return { -1, 0 } end
local token = 0
local lease = parseLease(rcall('HGET', K.leases, name))
if lease then
  if not lease.cancel then rcall('HSET', K.leases, name, rewriteLease(lease, leaseFlags(true, lease.watch), lease.progress)) end
  token = tonumber(lease.token)
end
local now = nowMs()
cascadeChildren(name, A.queue, now)
endFinished(A.channel, A.queue, now)
return { token, F.cascaded }
