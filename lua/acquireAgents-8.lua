--[[
  acquireAgents: moves up to max due agents from waiting to working, earliest first (ties by
  name, as the sorted set orders them), each under a new lease with a fresh fencing token, and
  records the worker as alive in the queue (only refreshed, never added, when it gets nothing:
  liveness matters only for leases, and an unknown queue must get no key).

  Reads at most scanLimit waiting entries, in pages of what is still wanted. A due entry with no
  definition is invalid (its agent was removed while it sat in waiting); it is dropped and
  counted as repaired.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] seq        STRING fencing token counter of the queue
    KEYS[8] workers    ZSET worker id -> last seen (ms)

    ARGV[1] worker     worker id of the caller
    ARGV[2] max        most leases to grant
    ARGV[3] scanLimit  most waiting entries to read

  Output:
    { now, nextDue, repaired, (name, token, deadline, attempt, definition, payload)* }
    nextDue is the earliest next run left in waiting, or -1 when waiting is empty.
]]
local rcall = redis.call
--@include nowMs
--@include int
--@include defField

local waitingKey, workingKey, defsKey, payloadsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leasesKey, streaksKey, seqKey, workersKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local worker = ARGV[1]
local max = tonumber(ARGV[2])
local scanLimit = tonumber(ARGV[3])

local now = nowMs()
local out = { now, -1, 0 }
local repaired, granted = 0, 0
-- Read in pages of what is still wanted: every entry read leaves waiting (granted or dropped
-- as invalid), so the next page starts at 0 again, and a healthy queue needs one page. Each
-- page costs a fixed number of commands whatever its size: definitions, streaks and payloads
-- are read with one HMGET each, and the page's entries move with one ZREM, one ZADD and one
-- HSET; the page's tokens come from one INCRBY, numbered in order.
local scanned = 0
while granted < max and scanned < scanLimit do
  local want = max - granted
  if want > scanLimit - scanned then want = scanLimit - scanned end
  local due = rcall('ZRANGEBYSCORE', waitingKey, '-inf', now, 'LIMIT', 0, want)
  if #due == 0 then break end
  scanned = scanned + #due
  local defs = rcall('HMGET', defsKey, unpack(due))
  rcall('ZREM', waitingKey, unpack(due))
  local valid = {}
  for i, name in ipairs(due) do
    if defs[i] then valid[#valid + 1] = i else repaired = repaired + 1 end
  end
  if #valid > 0 then
    local names = {}
    for j, i in ipairs(valid) do names[j] = due[i] end
    local streaks = rcall('HMGET', streaksKey, unpack(names))
    local payloads = rcall('HMGET', payloadsKey, unpack(names))
    local token = rcall('INCRBY', seqKey, #names) - #names
    -- Per lease only what differs is built; counters instead of # (each # is a search).
    local working, leases, w, o = {}, {}, 0, #out
    local middle = '|' .. worker .. '|' .. int(now) .. '|'
    for j, name in ipairs(names) do
      local def = defs[valid[j]]
      local timeout = defField(def, 'timeout_ms')
      token = token + 1
      local tokenText = int(token)
      local deadline = now + timeout
      working[w + 1], working[w + 2] = deadline, name
      leases[w + 1], leases[w + 2] = name, tokenText .. middle .. int(timeout)
      w = w + 2
      out[o + 1], out[o + 2], out[o + 3] = name, tokenText, deadline
      out[o + 4], out[o + 5], out[o + 6] = tonumber(streaks[j] or '0') + 1, def, payloads[j] or ''
      o = o + 6
    end
    rcall('ZADD', workingKey, unpack(working))
    rcall('HSET', leasesKey, unpack(leases))
    granted = granted + #names
  end
end
if granted > 0 then
  rcall('ZADD', workersKey, now, worker)
else
  rcall('ZADD', workersKey, 'XX', now, worker)
end
local head = rcall('ZRANGE', waitingKey, 0, 0, 'WITHSCORES')
if head[2] then out[2] = tonumber(head[2]) end
out[3] = repaired
return out
