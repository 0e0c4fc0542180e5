-- termHistory: an election's record of its terms, a LIST, newest first, capped: each entry is
-- "token|leader|started_at|ended_at|how", ended_at and how empty while the term is current;
-- how is resigned, expired or superseded. Terms run one at a time, so an open term is the head.
local function parseTermEntry(entry)
  local token, leader, started, ended, how = string.match(entry, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
  return { token = token, leader = leader, started = started, ended = ended, how = how }
end

-- The entry `e` ended at `at`, `how`.
local function endedEntry(e, at, how)
  return e.token .. '|' .. e.leader .. '|' .. e.started .. '|' .. string.format('%d', at) .. '|' .. how
end

-- Records the end of term `token`, if it is the open head (nothing otherwise: ended already,
-- or never recorded).
local function endTerm(historyKey, token, at, how)
  local head = rcall('LINDEX', historyKey, 0)
  if not head then return end
  local e = parseTermEntry(head)
  if e.token == token and e.ended == '' then
    rcall('LSET', historyKey, 0, endedEntry(e, at, how))
  end
end

-- Records a new term (keeping the newest `keep`); an open head is a term whose end was never
-- recorded (a Baton older than the history ended it): superseded, at `lastEnd`.
local function beginTerm(historyKey, token, leader, at, keep, lastEnd)
  local head = rcall('LINDEX', historyKey, 0)
  if head then
    local e = parseTermEntry(head)
    if e.ended == '' then
      rcall('LSET', historyKey, 0, endedEntry(e, lastEnd, 'superseded'))
    end
  end
  rcall('LPUSH', historyKey, token .. '|' .. leader .. '|' .. string.format('%d', at) .. '||')
  rcall('LTRIM', historyKey, 0, keep - 1)
end
