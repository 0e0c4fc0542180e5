--[[
  acquireAgents: moves up to max due agents from waiting to working, earliest first (ties by
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

  Input:
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
                       the queue once a lease ends: wakeBlocked)

    ARGV[1] worker     worker id of the caller
    ARGV[2] max        most leases to grant
    ARGV[3] scanLimit  most waiting entries to read

  Output:
    { now, nextDue, repaired, (name, token, deadline, attempt, definition, payload)* }
    nextDue is the earliest next run left in waiting, or -1 when waiting is empty. When limits
    hold due work back it is when to try again: -1 when paused or at the concurrency limit (a
    wake-up comes), the bucket's next token when the rate limit binds.
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
local limitsKey = KEYS[9]

local now = nowMs()
local out = { now, -1, 0 }

-- Flow control: one HMGET; a queue without limits pays nothing more.
local lim = rcall('HMGET', limitsKey, 'paused', 'concurrency', 'rate', 'burst', 'tokens', 'at')
if lim[1] == '1' then
  rcall('ZADD', workersKey, 'XX', now, worker)
  return out -- paused: Resume announces the queue
end
local room = -1 -- leases the concurrency limit allows (-1: no limit)
if lim[2] then
  room = tonumber(lim[2]) - rcall('ZCARD', workingKey)
  if room < 0 then room = 0 end
  if room < max then max = room end
end
local rate, tokens, bucketAt = tonumber(lim[3] or '0'), 0, now
if rate > 0 then
  local burst = tonumber(lim[4])
  tokens, bucketAt = tonumber(lim[5] or lim[4]), tonumber(lim[6] or now)
  if now > bucketAt then
    tokens = tokens + (now - bucketAt) * rate / 1000
    if tokens > burst then tokens = burst end
    bucketAt = now
  end
  local whole = math.floor(tokens)
  if whole < max then max = whole end
end
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
if rate > 0 then
  tokens = tokens - granted
  rcall('HSET', limitsKey, 'tokens', string.format('%.6f', tokens), 'at', int(bucketAt))
end
local head = rcall('ZRANGE', waitingKey, 0, 0, 'WITHSCORES')
if head[2] then
  out[2] = tonumber(head[2])
  if out[2] <= now then
    -- Due work left behind: held back by a limit, or beyond the scan limit (then try again).
    if room >= 0 and granted >= room then
      rcall('HSET', limitsKey, 'blocked', '1')
      out[2] = -1
    elseif rate > 0 and tokens < 1 then
      out[2] = bucketAt + math.ceil((1 - tokens) * 1000 / rate)
    end
  end
end
out[3] = repaired
return out
