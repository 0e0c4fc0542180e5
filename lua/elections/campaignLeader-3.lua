--[[
  campaignLeader: lazy election. If a term is active and unexpired, its leader keeps it: the
  same candidate refreshes the expiry, anyone else is told who leads. Otherwise (no term,
  resigned, or expired) the candidate starts a new term with the next fencing token; an
  expiry nobody announced yet is announced (and recorded in the history) first. A new term is
  recorded in the history, which keeps the newest historyKeep terms.

  Input:
    KEYS[1] term       HASH token, candidate, expires_at, ttl, active ("1"/"0")
    KEYS[2] seq        STRING fencing token counter of the election
    KEYS[3] history    LIST "token|leader|started_at|ended_at|how", newest first

    ARGV[1] candidate (str)    candidate id
    ARGV[2] ttlMs (uint)       term length without renewal
    ARGV[3] channel (str)      where to announce: "P|S <leadership events channel>" or ""
    ARGV[4] election (str)     election name (event payload)
    ARGV[5] historyKeep (uint) terms the history keeps

  Output -> Campaigned:
    { isLeader (1/0), token, leader, expiresAt, now, newTerm (1/0) }
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include int
--@include readTerm
--@include publishLeader
--@include termHistory

local termKey, seqKey, historyKey = K.term, K.seq, K.history
local candidate, ttl = A.candidate, A.ttlMs
local channel, election = A.channel, A.election
local keep = A.historyKeep

local now = nowMs()
local t = readTerm(termKey)
if t and t.active and t.expiresAt > now then
  if t.candidate ~= candidate then
    return { 0, t.token, t.candidate, t.expiresAt, now, 0 }
  end
  rcall('HSET', termKey, 'expires_at', now + ttl, 'ttl', ttl)
  return { 1, t.token, candidate, now + ttl, now, 0 }
end
if t and t.active then
  rcall('HSET', termKey, 'active', '0')
  endTerm(historyKey, t.token, t.expiresAt, 'expired')
  publishLeader(channel, election, 'EXPIRED', t.token, t.candidate, t.expiresAt)
end
local token = int(rcall('INCR', seqKey))
rcall('HSET', termKey, 'token', token, 'candidate', candidate, 'expires_at', now + ttl, 'ttl', ttl, 'active', '1')
beginTerm(historyKey, token, candidate, now, keep, t and math.min(t.expiresAt, now) or now)
publishLeader(channel, election, 'ELECTED', token, candidate, now + ttl)
return { 1, token, candidate, now + ttl, now, 1 }
