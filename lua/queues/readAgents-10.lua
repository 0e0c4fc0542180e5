--[[
  readAgents: reads the definition and state of agents, either the listed names or one page
  of the queue's definitions (HSCAN), sorted by name within the page. Read-only.

  A page holds at most pageSize agents and scans at most 8 HSCAN batches of pageSize (at least
  128) hash buckets: a queue of up to about a thousand agents is read in one call, and with a
  prefix that matches few names a page may be short, even empty, and still continue. Every
  agent present for the whole listing is listed at least once (HSCAN's promise); one may be
  listed twice when the hash grows or shrinks between pages.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[8] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[9] steps      HASH name -> the steps and events of its current run (the agents
                       named, and the agents of a page that wait for an event)
    KEYS[10] waits     HASH name -> wait record: agents waiting for an event or a time (read
                       per agent only when the queue has any)

    ARGV[1] paged (bool)      true: one page of the definitions (cursor, after, pageSize,
                              prefix); false: the names listed
    ARGV[2] cursor (str)      paged: the HSCAN cursor to scan from ("0" for the first page)
    ARGV[3] after (str)       paged: skip the names up to this one in the first batch scanned
                              ("" for none: a page that ended inside a batch)
    ARGV[4] pageSize (uint)   paged: the page size
    ARGV[5] prefix (str)      paged: a name prefix ("" for every name; [A-Za-z0-9._-] only,
                              checked by the caller, so it holds no glob character)
    ARGV[6..] names (items)   not paged: the agents to read
      name (str)              an agent's name

  Output -> AgentPage:
    { cursor, after, (name, definition, payload, waitingScore, workingScore, lease, streak,
    dlqScore, dlqContext, steps, wait)* }
    cursor and after continue the listing ("" and "" on its last page). Absent values are ""
    (absent definition: the agent does not exist); dlqContext only for a dead-lettered agent; steps (a stepRecord list)
    only for the agents named, and in a page for an agent waiting for an event; wait is its
    wait record (waitRecord), "" when it waits for none.
]]
local rcall = redis.call
local waitingKey, workingKey, defsKey, payloadsKey = K.waiting, K.working, K.defs, K.payloads
local leasesKey, streaksKey, dlqKey, dlqinfoKey = K.leases, K.streaks, K.dlq, K.dlqinfo

local names, defs, head = {}, {}, { '', '' }
if A.paged then
  local pageSize, match = A.pageSize, A.prefix .. '*'
  local count = pageSize < 128 and 128 or pageSize
  local cursor, after = A.cursor, A.after
  local seen = {}
  -- HSCAN batches are taken whole while they fit; the batch that does not fit is taken in name
  -- order up to the page size, and the next page scans that batch again, past its last name.
  for _ = 1, 8 do
    local scan = rcall('HSCAN', defsKey, cursor, 'MATCH', match, 'COUNT', count)
    local batch = {}
    for i = 1, #scan[2], 2 do
      local name = scan[2][i]
      if not seen[name] and (after == '' or name > after) then
        seen[name] = true
        batch[#batch + 1] = name
        defs[name] = scan[2][i + 1]
      end
    end
    after = ''
    if #names + #batch > pageSize then
      table.sort(batch)
      for i = 1, pageSize - #names do names[#names + 1] = batch[i] end
      head = { cursor, names[#names] }
      break
    end
    for _, name in ipairs(batch) do names[#names + 1] = name end
    cursor = scan[1]
    if cursor == '0' then
      head = { '', '' }
      break
    end
    head = { cursor, '' }
    if #names == pageSize then break end
  end
  table.sort(names)
else
  for _, item in ipairs(A.names) do
    names[#names + 1] = item.name
    defs[item.name] = rcall('HGET', defsKey, item.name) or ''
  end
end

local out = head
local anyWaits = rcall('EXISTS', K.waits) == 1
for _, name in ipairs(names) do
  local wait = anyWaits and rcall('HGET', K.waits, name) or ''
  out[#out + 1] = name
  out[#out + 1] = defs[name]
  out[#out + 1] = rcall('HGET', payloadsKey, name) or ''
  out[#out + 1] = rcall('ZSCORE', waitingKey, name) or ''
  out[#out + 1] = rcall('ZSCORE', workingKey, name) or ''
  out[#out + 1] = rcall('HGET', leasesKey, name) or ''
  out[#out + 1] = rcall('HGET', streaksKey, name) or ''
  local dead = rcall('ZSCORE', dlqKey, name)
  out[#out + 1] = dead or ''
  out[#out + 1] = dead and (rcall('HGET', dlqinfoKey, name) or '') or ''
  out[#out + 1] = (not A.paged or wait ~= '') and (rcall('HGET', K.steps, name) or '') or ''
  out[#out + 1] = wait
end
return out
