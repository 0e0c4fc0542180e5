--[[
  acquireAgents: the plain path (a queue that is not keyed; a keyed queue's is acquireKeyed):
  moves up to max due agents from waiting to working, earliest first (ties by
  name, as the sorted set orders them), each under a new lease with a fresh fencing token, and
  records the worker as alive in the queue (only refreshed, never added, when it gets nothing:
  liveness matters only for leases, and an unknown queue must get no key).

  Reads at most scanLimit waiting entries, in pages of what is still wanted. A due entry with no
  definition is invalid (its agent was removed while it sat in waiting); it is dropped and
  counted as repaired.

  Flow control (AdminService.SetLimits, Pause), from the limits hash: a paused queue grants
  nothing; at most `concurrency` leases are held across the fleet (working's size); and a token
  bucket of `rate` per second holding at most `burst` grants at most what it holds, on the
  Redis clock (a bucket starts full). Limits lower what this call may grant; they never reorder.

  A queue made keyed ("keyed" in the limits hash) is not this script's: it answers { -1 } and
  writes nothing, and Baton calls acquireKeyed (the flag is read in the same script that
  grants, so a queue never takes the wrong path).

  Expiry: a due agent whose definition carries an expiry ("expire_at_ms": Agent.expire_at or
  ttl) that has passed is not granted: it finishes as expired (expireAgent: a failure for its
  children, kept and announced as finishes are) and counts toward no limit. A grant of an
  agent whose expiry is still ahead starts its first run: its definition drops the expiry and
  it leaves expiring. A definition without one pays a string search, no command.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] seq        STRING fencing token counter of the queue
    KEYS[8] workers    ZSET worker id -> last seen (ms)
    KEYS[9] limits     HASH paused ("1"), concurrency, rate, burst, and the bucket's state:
                       tokens, at (ms, refilled up to then); "blocked" set here when the
                       concurrency limit held due work back (the lease-ending scripts announce
                       the queue once a lease ends: wakeBlocked); keyed, key_concurrency,
                       key_rate, key_burst, vtime, "held|<key>", "bucket|<key>",
                       priority_aging (keyed queues); "key|<key>" = "weight|concurrency|
                       rate|burst", a key's own limits in place of key_concurrency / key_rate
                       / key_burst (read while "key_limits" counts any); "recount",
                       "rc|<key>", "rn|<name>": a recount's bookkeeping, kept for each keyed
                       grant (recountKeys)
    KEYS[10] stats     HASH "expired" -> agents expired (counted here at grant time)
    KEYS[11] expiring  ZSET name -> expire at (ms): agents with an expiry not started yet
    KEYS[12] results   HASH name -> result record (finished)
    KEYS[13] resultsat ZSET name -> kept until (ms)
    KEYS[14] fanout    SET names with children
    KEYS[15] children  base of "children:<parent>"
    KEYS[16] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[17] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[18] awaited   ZSET name -> awaited until (ms)
    KEYS[19] deps      base of "deps:<child>"
    KEYS[20] steps     HASH name -> the steps its current run recorded (runSteps): read for
                       the leases granted only when the queue has any (one EXISTS per call)
    KEYS[21] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[22] groupblocked SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] worker (str)      worker id of the caller
    ARGV[2] max (uint)        most leases to grant
    ARGV[3] scanLimit (uint)  most waiting entries to read
    ARGV[4] channel (str)       where an expired agent's finish is announced: "P|S <wake-up
                                channel>" or "", then "\n<outbox channel>" (announceOutbox)
    ARGV[5] queue (str)         queue name
    ARGV[6] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[7] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[8] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)

  Output -> Acquisition:
    { -1 }  the queue is keyed: nothing written (acquireKeyed is its path)
    { now, nextDue, repaired, expired, outboxed, (name, token, deadline, attempt, definition,
      payload, steps, n, (parent, state)*)* }
    expired: agents expired here; outboxed: outbox entries their finishes wrote. steps is the
    lease's run's steps recorded by earlier attempts (stepRecord), "" for none. n is how many
    (parent, state) pairs follow, the agent's deps ("<parent queue>|<parent>" -> "p<policy>"
    or the parent's result record: what readFamily reads): 0 without parents, -1 when it has
    more than the grant reads (PARENTS_INLINE, grantLeases), which Baton then reads itself.
    nextDue is the earliest next run left in waiting, or -1 when waiting is empty. When limits
    hold due work back it is when to try again: -1 when paused or at the concurrency limit (a
    wake-up comes), the bucket's next token when the rate limit binds (for a keyed queue: the
    earliest of the keys' buckets and the next agent to become due).
]]
local rcall = redis.call
--@include nowMs
--@include int
--@include defField
--@include leaseRecord
--@include publish
--@include memberKey
--@include keepsFinish
--@include finished
--@include expireAgent
--@include runSteps
--@include watchEvent
--@include groupLimits
--@include grantLeases

local early = startAcquire(K, A.worker, A.max, false, A.groupName)
if early then return early end
flowKeys(K, A.resultTtlMs, A.resultMax)
local now, max, scanLimit = G.now, G.max, A.scanLimit
-- Read in pages of what is still wanted: every entry read leaves waiting (granted or dropped
-- as invalid), so the next page starts at 0 again, and a healthy queue needs one page. Each
-- page costs a fixed number of commands whatever its size.
local scanned = 0
while G.granted < max and scanned < scanLimit do
  local want = max - G.granted
  if want > scanLimit - scanned then want = scanLimit - scanned end
  local due = rcall('ZRANGEBYSCORE', K.waiting, '-inf', now, 'LIMIT', 0, want)
  if #due == 0 then break end
  scanned = scanned + #due
  rcall('ZREM', K.waiting, unpack(due))
  grant(K, due, nil)
end
endAcquire(K, A.channel, A.queue)
local out = G.out
local head = rcall('ZRANGE', K.waiting, 0, 0, 'WITHSCORES')
if head[2] then
  out[2] = tonumber(head[2])
  if out[2] <= now then
    -- Due work left behind: held back by a limit, or beyond the scan limit (then try again).
    if G.room >= 0 and G.granted >= G.room then
      rcall('HSET', K.limits, 'blocked', '1')
      out[2] = -1
    elseif G.groupRoom >= 0 and G.granted >= G.groupRoom then
      -- The group's places are taken: a lease end in any member queue announces this one.
      groupBlocked(K, A.queue, A.channel)
      out[2] = -1
    elseif G.rate > 0 and G.tokens < 1 then
      out[2] = G.bucketAt + math.ceil((1 - G.tokens) * 1000 / G.rate)
    elseif G.groupRate > 0 and G.groupTokens < 1 then
      out[2] = G.groupAt + math.ceil((1 - G.groupTokens) * 1000 / G.groupRate)
    end
  end
end
out[3] = G.repaired
return out
