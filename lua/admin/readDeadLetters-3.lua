--[[
  readDeadLetters: one page of a dead-letter queue, oldest first, with each entry's context
  and (for agents) payload. Read-only.

  Input:
    KEYS[1] dlq        ZSET id -> dead-lettered at (ms)
    KEYS[2] dlqinfo    HASH id -> dead-letter context JSON
    KEYS[3] payloads   HASH id -> payload bytes (agents); for a pool, its dlqinfo again

    ARGV[1] offset (uint)        rank to start at
    ARGV[2] count (uint)         most entries
    ARGV[3] withPayload (bool)   whether to read payloads from payloads

  Output -> DeadLetterPage:
    { total, (id, failedAt, context JSON, payload)* }
]]
local rcall = redis.call
local dlqKey, dlqinfoKey, payloadsKey = K.dlq, K.dlqinfo, K.payloads
local offset, count, withPayload = A.offset, A.count, A.withPayload
local page = rcall('ZRANGE', dlqKey, offset, offset + count - 1, 'WITHSCORES')
local out = { rcall('ZCARD', dlqKey) }
for i = 1, #page, 2 do
  local id = page[i]
  out[#out + 1] = id
  out[#out + 1] = tonumber(page[i + 1])
  out[#out + 1] = rcall('HGET', dlqinfoKey, id) or '{}'
  out[#out + 1] = withPayload and (rcall('HGET', payloadsKey, id) or '') or ''
end
return out
