-- runSteps: what the scripts that grant and end leases do with the steps runs recorded
-- (recordStep; the record is stepRecord's). Only an agent that recorded a step has an entry in
-- the queue's `steps` hash, so a queue where none did has no such key: each script checks
-- EXISTS once per call (stepsAny) and pays nothing per agent.
--
-- A run is over at a success (one-shot or recurring), a dead letter, an unregister, a cancel,
-- or when its agent is gone: its steps leave `steps` then, and go with its finish where the
-- finish is kept ("<name>|steps" -> "<token>|<at>|<record>" in `results`, beside the finish
-- record, with the finish's token and time, and trimmed with it by endFinished). A failure that reschedules keeps them for the next
-- attempt's lease.
local S

-- Starts a call's part: key is the queue's `steps` hash.
local function stepsKeys(key)
  S = { key = key, ended = {}, tokens = {} }
end

-- Whether any agent of the queue has steps (one EXISTS per script call, when first asked).
local function stepsAny()
  if S.any == nil then S.any = rcall('EXISTS', S.key) == 1 end
  return S.any
end

-- The records of names (a list), each false when none: one HMGET; nil when the queue has none.
local function stepsOf(names)
  if not stepsAny() then return nil end
  return rcall('HMGET', S.key, unpack(names))
end

-- The run of name under token is over: its steps are settled by stepsSettle.
local function stepsEnded(name, token)
  if stepsAny() then
    local n = #S.ended + 1
    S.ended[n], S.tokens[n] = name, token
  end
end

-- Drops the steps of the runs that ended (one HMGET and one HDEL), and keeps those whose finish
-- was kept (kept[name]: finished's F.kept) in results (one HSET), with the finish's token and
-- time (now, the script's). Call before endFinished.
local function stepsSettle(kept, resultsKey, now)
  if #S.ended == 0 then return end
  local recs = rcall('HMGET', S.key, unpack(S.ended))
  local gone, keep = {}, {}
  for i, name in ipairs(S.ended) do
    if recs[i] then
      gone[#gone + 1] = name
      if kept[name] then
        keep[#keep + 1] = name .. '|steps'
        keep[#keep + 1] = S.tokens[i] .. '|' .. string.format('%d', now) .. '|' .. recs[i]
      end
    end
  end
  if #gone > 0 then rcall('HDEL', S.key, unpack(gone)) end
  if #keep > 0 then rcall('HSET', resultsKey, unpack(keep)) end
end
