-- outboxPage: a page of an outbox, oldest entries first: the entries written at or before
-- `before` (ms, or "+inf"), each as member ("<parent>|<seq>"), result record, n, and its first n
-- children ("<child queue>|<child>"), with at most `limit` children and `limit` entries in all.
-- The page ends inside an entry when it is full: that entry's other children come in a later
-- page. Entries are read in steps of at most 100, so a page of one large entry reads no more
-- than that of the outbox. Bounded by `limit`. Needs memberKey.
local function outboxPage(outboxKey, outboxresKey, childrenKey, before, limit)
  local out, room, entries = {}, limit, 0
  while room > 0 and entries < limit do
    local step = math.min(100, limit - entries)
    local members = rcall('ZRANGEBYSCORE', outboxKey, '-inf', before, 'LIMIT', entries, step)
    for _, member in ipairs(members) do
      local children = rcall('ZRANGE', memberKey(childrenKey, member), 0, room - 1)
      out[#out + 1] = member
      out[#out + 1] = rcall('HGET', outboxresKey, member) or ''
      out[#out + 1] = #children
      for _, child in ipairs(children) do out[#out + 1] = child end
      room = room - #children
      entries = entries + 1
      if room <= 0 then break end
    end
    if #members < step then break end
  end
  return out
end
