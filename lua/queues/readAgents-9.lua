--[[
  readAgents: reads the definition and state of agents, either the listed names or one page
  of the queue's index in name order. Read-only.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[8] index      ZSET name -> 0
    KEYS[9] dlqinfo    HASH name -> dead-letter context JSON

    ARGV[1] paged (bool)      true: one page of the index (after, pageSize, prefix); false:
                              the names listed
    ARGV[2] after (str)       paged: the name to start after ("" for the first)
    ARGV[3] pageSize (uint)   paged: the page size
    ARGV[4] prefix (str)      paged: a name prefix ("" for every name; [A-Za-z0-9._-] only,
                              checked by the caller)
    ARGV[5..] names (items)   not paged: the agents to read
      name (str)              an agent's name

  Output -> AgentPage:
    { more, (name, definition, payload, waitingScore, workingScore, lease, streak, dlqScore,
    dlqContext)* }
    more is 1 when a page has further entries. Absent values are "" (absent definition: the
    agent does not exist); dlqContext only for a dead-lettered agent.
]]
local rcall = redis.call
local waitingKey, workingKey, defsKey, payloadsKey = K.waiting, K.working, K.defs, K.payloads
local leasesKey, streaksKey, dlqKey, indexKey, dlqinfoKey = K.leases, K.streaks, K.dlq, K.index, K.dlqinfo

local names, more = {}, 0
if A.paged then
  local after, pageSize, prefix = A.after, A.pageSize, A.prefix
  -- The names starting with prefix are those in [prefix, successor): the prefix with its last
  -- byte incremented (its bytes are ASCII, below 0x7f). One page of them, wherever they are.
  local from, to = '-', '+'
  if prefix ~= '' then
    from = '[' .. prefix
    to = '(' .. string.sub(prefix, 1, -2) .. string.char(string.byte(prefix, -1) + 1)
  end
  if after ~= '' and (prefix == '' or after >= prefix) then from = '(' .. after end
  names = rcall('ZRANGEBYLEX', indexKey, from, to, 'LIMIT', 0, pageSize + 1)
  if #names > pageSize then
    more = 1
    names[#names] = nil
  end
else
  for _, item in ipairs(A.names) do names[#names + 1] = item.name end
end

local out = { more }
for _, name in ipairs(names) do
  out[#out + 1] = name
  out[#out + 1] = rcall('HGET', defsKey, name) or ''
  out[#out + 1] = rcall('HGET', payloadsKey, name) or ''
  out[#out + 1] = rcall('ZSCORE', waitingKey, name) or ''
  out[#out + 1] = rcall('ZSCORE', workingKey, name) or ''
  out[#out + 1] = rcall('HGET', leasesKey, name) or ''
  out[#out + 1] = rcall('HGET', streaksKey, name) or ''
  local dead = rcall('ZSCORE', dlqKey, name)
  out[#out + 1] = dead or ''
  out[#out + 1] = dead and (rcall('HGET', dlqinfoKey, name) or '') or ''
end
return out
