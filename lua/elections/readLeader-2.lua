--[[
  readLeader: the current leader, judged by the Redis clock. With expire = "1", a term found
  expired but not yet announced is ended, recorded as expired in the history, and EXPIRED is
  announced (once, whichever replica notices first); with "0" nothing is written.

  Input:
    KEYS[1] term       HASH token, candidate, expires_at, ttl, active
    KEYS[2] history    LIST "token|leader|started_at|ended_at|how", newest first

    ARGV[1] expire (bool)   end and announce an expired term (else only read)
    ARGV[2] channel (str)   where to announce: "P|S <leadership events channel>" or ""
    ARGV[3] election (str)  election name (event payload)

  Output -> LeaderState:
    { now }                             no leader, and none ever (no term recorded)
    { now, 0 }                          no leader now (a term ended, expired or resigned)
    { now, token, leader, expiresAt }   a leader
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include readTerm
--@include publishLeader
--@include termHistory

local termKey, historyKey = K.term, K.history
local expire, channel, election = A.expire, A.channel, A.election
local now = nowMs()
local t = readTerm(termKey)
if not t then
  return { now }
end
if not t.active then
  return { now, 0 }
end
if t.expiresAt <= now then
  if expire then
    rcall('HSET', termKey, 'active', '0')
    endTerm(historyKey, t.token, t.expiresAt, 'expired')
    publishLeader(channel, election, 'EXPIRED', t.token, t.candidate, t.expiresAt)
  end
  return { now, 0 }
end
return { now, t.token, t.candidate, t.expiresAt }
