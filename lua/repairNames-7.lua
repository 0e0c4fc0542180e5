--[[
  repairNames: removes agents whose names are only digits (corrupt entries; Register refuses
  such names) from every structure of the queue, scanning one sorted set from cursor.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] index      ZSET name -> 0

    ARGV[1] set        "waiting" or "working": which set to scan
    ARGV[2] cursor     ZSCAN cursor ("0" to start)
    ARGV[3] limit      ZSCAN COUNT

  Output:
    { nextCursor, removed }   nextCursor "0" when the scan is complete
]]
local rcall = redis.call
local waitingKey, workingKey, defsKey, payloadsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leasesKey, streaksKey, indexKey = KEYS[5], KEYS[6], KEYS[7]
local setKey = workingKey
if ARGV[1] == 'waiting' then setKey = waitingKey end
local scan = rcall('ZSCAN', setKey, ARGV[2], 'COUNT', tonumber(ARGV[3]))
local removed = 0
local entries = scan[2]
for i = 1, #entries, 2 do
  local name = entries[i]
  if string.match(name, '^%d+$') then
    rcall('ZREM', waitingKey, name)
    rcall('ZREM', workingKey, name)
    rcall('ZREM', indexKey, name)
    rcall('HDEL', defsKey, name)
    rcall('HDEL', payloadsKey, name)
    rcall('HDEL', leasesKey, name)
    rcall('HDEL', streaksKey, name)
    removed = removed + 1
  end
end
return { scan[1], removed }
