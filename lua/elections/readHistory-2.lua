--[[
  readHistory: an election's recorded terms, newest first, as of the Redis clock; writes
  nothing. An open head that the term record shows ended is answered as ended (how it will be
  recorded): past its expiry while active, "expired" at its expiry; inactive (ended by a Baton
  older than the history), at its expiry with no how.

  Input:
    KEYS[1] term       HASH token, candidate, expires_at, ttl, active
    KEYS[2] history    LIST "token|leader|started_at|ended_at|how", newest first

    ARGV[1] limit (uint)  the most terms to answer (0: all kept)

  Output -> History:
    { now, currentExpiresAt (0: no current term), entry... }  entries as in the history
]]
local rcall = redis.call
--@include nowMs
--@include readTerm
--@include termHistory

local termKey, historyKey = K.term, K.history
local limit = A.limit
local now = nowMs()
local entries = rcall('LRANGE', historyKey, 0, limit > 0 and limit - 1 or -1)
local current = 0
if entries[1] then
  local e = parseTermEntry(entries[1])
  local t = readTerm(termKey)
  if e.ended == '' and t and t.token == e.token then
    if t.active and t.expiresAt > now then
      current = t.expiresAt
    elseif t.active then
      entries[1] = endedEntry(e, t.expiresAt, 'expired')
    else
      entries[1] = endedEntry(e, t.expiresAt, '')
    end
  end
end
local out = { now, current }
for i = 1, #entries do
  out[#out + 1] = entries[i]
end
return out
