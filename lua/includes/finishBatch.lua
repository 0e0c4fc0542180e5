-- finishBatch: a batch (`store::batches`) is done — closed, and its last member finished. Its
-- sentinel agent finishes (finished): succeeded when every member succeeded, else
-- dead-lettered, which releases its callbacks (on_success ones are cancelled by a failure).
-- Its counts and finish are kept for the retention of finishes, then expire.
-- b: {defs, pending, stats}; the script has called flowKeys.
local function finishBatch(b, name, now)
  rcall('HDEL', b.pending, name)
  rcall('HDEL', b.defs, name)
  rcall('UNLINK', memberKey(F.deps, name))
  local c = rcall('HMGET', b.stats, 'total', 'failed')
  local failed = tonumber(c[2] or '0')
  local record
  if failed > 0 then
    record = resultRecord('D', '', 0, now, failed .. ' of ' .. (c[1] or '0') .. ' members failed', '')
  else
    record = resultRecord('S', 'SUCCESS', 0, now, '', '')
  end
  rcall('HSET', b.stats, 'done_at', string.format('%d', now))
  finished(name, record, now, true)
  rcall('PEXPIRE', b.stats, F.ttl)
  rcall('PEXPIRE', F.results, F.ttl)
  rcall('PEXPIRE', F.resultsat, F.ttl)
end
