--[[
  repairNames: removes agents whose names are only digits (corrupt entries; Register refuses
  such names) from every structure of the queue, scanning one sorted set from cursor.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures

    ARGV[1] set (str)      "waiting" or "working": which set to scan
    ARGV[2] cursor (str)   ZSCAN cursor ("0" to start)
    ARGV[3] limit (uint)   ZSCAN COUNT

  Output -> Repaired:
    { nextCursor, removed }   nextCursor "0" when the scan is complete
]]
local rcall = redis.call
local waitingKey, workingKey, defsKey, payloadsKey = K.waiting, K.working, K.defs, K.payloads
local leasesKey, streaksKey = K.leases, K.streaks
local setKey = workingKey
if A.set == 'waiting' then setKey = waitingKey end
local scan = rcall('ZSCAN', setKey, A.cursor, 'COUNT', A.limit)
local removed = 0
local entries = scan[2]
for i = 1, #entries, 2 do
  local name = entries[i]
  if string.match(name, '^%d+$') then
    rcall('ZREM', waitingKey, name)
    rcall('ZREM', workingKey, name)
    rcall('HDEL', defsKey, name)
    rcall('HDEL', payloadsKey, name)
    rcall('HDEL', leasesKey, name)
    rcall('HDEL', streaksKey, name)
    removed = removed + 1
  end
end
return { scan[1], removed }
