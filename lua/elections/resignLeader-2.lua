--[[
  resignLeader: compare-and-delete. Ends the term at once if it is active, unexpired, and held
  by candidate with token, records it as resigned in the history, and announces RESIGNED;
  otherwise changes nothing.

  Input:
    KEYS[1] term       HASH token, candidate, expires_at, ttl, active
    KEYS[2] history    LIST "token|leader|started_at|ended_at|how", newest first

    ARGV[1] candidate (str)  candidate id
    ARGV[2] token (uint)     the term's fencing token
    ARGV[3] channel (str)    where to announce: "P|S <leadership events channel>" or ""
    ARGV[4] election (str)   election name (event payload)

  Output -> Resignation:
    { -1 }             LEASE_LOST
    { 0, resignedAt }  resigned
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include readTerm
--@include publishLeader
--@include termHistory

local termKey, historyKey = K.term, K.history
local candidate, token = A.candidate, A.token
local channel, election = A.channel, A.election
local now = nowMs()
local t = readTerm(termKey)
if not t or not t.active or t.expiresAt <= now or tonumber(t.token) ~= token or t.candidate ~= candidate then
  return { -1 }
end
rcall('HSET', termKey, 'active', '0', 'expires_at', now)
endTerm(historyKey, t.token, now, 'resigned')
publishLeader(channel, election, 'RESIGNED', t.token, candidate, now)
return { 0, now }
