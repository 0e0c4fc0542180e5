--[[
  renewLeader: compare-and-extend. Extends the term to now + its ttl if it is active,
  unexpired, and held by candidate with token; otherwise changes nothing.

  Input:
    KEYS[1] term       HASH token, candidate, expires_at, ttl, active

    ARGV[1] candidate (str)  candidate id
    ARGV[2] token (uint)     the term's fencing token

  Output -> Renewal:
    { -1 }             LEASE_LOST
    { 0, expiresAt, ttl }   renewed
]]
local rcall = redis.call
--@include nowMs
--@include readTerm

local termKey = K.term
local candidate, token = A.candidate, A.token
local now = nowMs()
local t = readTerm(termKey)
if not t or not t.active or t.expiresAt <= now or tonumber(t.token) ~= token or t.candidate ~= candidate then
  return { -1 }
end
rcall('HSET', termKey, 'expires_at', now + t.ttl)
return { 0, now + t.ttl, t.ttl }
