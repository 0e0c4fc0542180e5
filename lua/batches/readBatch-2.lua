--[[
  readBatch: a batch's counts and state (see openBatch). Read only.

  Input:
    KEYS of QueueKeys
    KEYS[1] stats      HASH total, succeeded, failed, closed, created_at, done_at, callbacks
    KEYS[2] pending    HASH name -> pending count

    ARGV[1] batch (str)   the batch's name

  Output -> BatchRead: {} without such a batch, else { total, succeeded, failed, closed, created_at,
          done_at or "", callbacks, pending count }
]]
local rcall = redis.call
local s = rcall('HMGET', K.stats, 'total', 'succeeded', 'failed', 'closed', 'created_at', 'done_at', 'callbacks')
if not s[1] then return {} end
return { s[1], s[2] or '0', s[3] or '0', s[4] or '0', s[5] or '0', s[6] or '', s[7] or '',
  rcall('HGET', K.pending, A.batch) or '0' }
