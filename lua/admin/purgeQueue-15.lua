--[[
  purgeQueue: one page of the auto-purge of an agent queue. Finds, and unless dryRun acts on:
  leases more than maxWorkingAgeMs past their deadline (the agent is dead-lettered, reason
  PURGED); definitions in no state at all (requeued, due at once: an agent blocked on its
  parents, a child or a batch's callback, is in `pending`, and one waiting for an event in
  `waits`: neither is ever requeued); dead letters
  past their TTL or beyond the size bound (removed, with the agent). Stuck leases and dead
  letters are handled on the first page (cursor "0"); definitions are scanned page by page.

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
    KEYS[11] cron       HASH name -> "token|next fire" of cron agents' runs: a purged lease's
                        record is dropped
    KEYS[12] pending    HASH name -> parents still pending: blocked agents, left alone
    KEYS[13] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[14] groupblocked SET "<queue>|<channel>": member queues held back by the group
    KEYS[15] waits      HASH name -> wait record: agents waiting for an event, left alone

    ARGV[1] dryRun (bool)            report only
    ARGV[2] maxWorkingAgeMs (uint)   how far past its deadline a lease may be (0: no bound)
    ARGV[3] dlqTtlMs (uint)          dead-letter TTL (0: none)
    ARGV[4] dlqMax (uint)            dead-letter size bound (0: none)
    ARGV[5] cursor (str)             HSCAN cursor over definitions ("0" to start)
    ARGV[6] limit (uint)             entries per page
    ARGV[7] channel (str)            where to announce: "P|S <wake-up channel>" or ""
    ARGV[8] queue (str)              queue name
    ARGV[9] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)

  Output -> PurgePage:
    { nextCursor, (id, reason, action)* }   action DEAD_LETTERED | REQUEUED | REMOVED
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include leaseRecord
--@include addWaiting
--@include trimDeadLetters
--@include wakeBlocked
--@include countsKeys
--@include keyLeaseEnded
--@include groupLimits

local waitingKey, workingKey, defsKey, payloadsKey, leasesKey = K.waiting, K.working, K.defs, K.payloads, K.leases
local streaksKey, dlqKey, dlqinfoKey, statsKey = K.streaks, K.dlq, K.dlqinfo, K.stats
local dryRun = A.dryRun
local maxWorkingAgeMs, dlqTtlMs, dlqMax = A.maxWorkingAgeMs, A.dlqTtlMs, A.dlqMax
local cursor, limit, channel, queue = A.cursor, A.limit, A.channel, A.queue
local now = nowMs()
local out = {}
local function found(id, reason, action)
  out[#out + 1] = id
  out[#out + 1] = reason
  out[#out + 1] = action
end

if cursor == '0' then
  if maxWorkingAgeMs > 0 then
    local stuck = rcall('ZRANGEBYSCORE', workingKey, '-inf', '(' .. (now - maxWorkingAgeMs), 'WITHSCORES', 'LIMIT', 0, limit)
    if not dryRun and #stuck > 0 then
      -- The groups of the leases it ends, checked before anything is written (groupLimits).
      local names = {}
      for i = 1, #stuck, 2 do names[#names + 1] = stuck[i] end
      local recs, groups = rcall('HMGET', leasesKey, unpack(names)), {}
      for j = 1, #names do groups[j] = recs[j] and leaseGroup(recs[j]) end
      checkGroups(A.groupName, groups)
    end
    for i = 1, #stuck, 2 do
      local name, deadline = stuck[i], tonumber(stuck[i + 1])
      local reason = 'held ' .. math.floor((now - deadline) / 1000) .. ' s past its deadline (max '
        .. math.floor(maxWorkingAgeMs / 1000) .. ' s)'
      found(name, reason, 'DEAD_LETTERED')
      if not dryRun then
        local lease = parseLease(rcall('HGET', leasesKey, name))
        rcall('ZREM', workingKey, name)
        rcall('HDEL', leasesKey, name)
        rcall('HDEL', K.cron, name)
        keyLeaseEnded(K.limits, lease and lease.key, name)
        if lease then groupLeaseEnded(K, lease.group, 1, lease.key and { [lease.key] = 1 }) end
        wakeBlocked(K.limits, channel, queue)
        if rcall('HEXISTS', defsKey, name) == 1 then
          rcall('ZADD', dlqKey, now, name)
          rcall('HSET', dlqinfoKey, name, cjson.encode({
            source = 'agent', queue = queue, name = name, outcome = 'PURGED', message = reason,
            failed_at = now, attempts = tonumber(rcall('HGET', streaksKey, name) or '0'),
            worker = lease and lease.worker or '',
          }))
          rcall('HINCRBY', statsKey, 'dead_lettered', 1)
        end
      end
    end
  end
  local gone = trimDeadLetters(dlqKey, dlqinfoKey, now, dlqTtlMs, dlqMax, function(name)
    rcall('HDEL', defsKey, name)
    rcall('HDEL', payloadsKey, name)
    rcall('HDEL', streaksKey, name)
  end, dryRun)
  for _, name in ipairs(gone) do
    found(name, 'dead letter past its TTL or beyond the size bound', 'REMOVED')
  end
end

local scan = rcall('HSCAN', defsKey, cursor, 'COUNT', limit)
local entries = scan[2]
for i = 1, #entries, 2 do
  local name = entries[i]
  if not rcall('ZSCORE', waitingKey, name) and not rcall('ZSCORE', workingKey, name)
    and not rcall('ZSCORE', dlqKey, name) and rcall('HEXISTS', K.pending, name) == 0
    and rcall('HEXISTS', K.waits, name) == 0 then
    found(name, 'definition with no queue entry', 'REQUEUED')
    if not dryRun then
      addWaiting(waitingKey, name, now, channel, queue)
    end
  end
end
local result = { scan[1] }
for _, v in ipairs(out) do result[#result + 1] = v end
return result
