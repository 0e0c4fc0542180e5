-- cronNext: the next run of a cron agent whose run (lease token) ended in success or was
-- cancelled: the fire Baton recorded for that run when it was acquired (setCronNext), or, if
-- Baton could not record one, a minute after the run started; never in the past (a run that
-- outlasted its next fire is followed at once by one run for it).
local function cronNext(cronKey, name, token, acquiredAt, now)
  local rec = rcall('HGET', cronKey, name)
  local recToken, at
  if rec then recToken, at = string.match(rec, '^(%d+)|(%d+)$') end
  local nextRun = acquiredAt + 60000
  if recToken == token then nextRun = tonumber(at) end
  if nextRun < now then nextRun = now end
  return nextRun
end
