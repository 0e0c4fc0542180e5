-- releasePage: releases a page of this queue's outbox in this slot as far as it can. The page
-- (outboxPage) is the oldest entries written at or before `before`, up to `limit` children in
-- all across entries. Children of this same queue are released here (releaseChild) and leave
-- their entry's set at once; a kept one (WAIT on a failure) goes back to the parent's live set
-- of children, for its next finish; an entry whose set is empty is dropped. Children of other
-- queues stay in their entries. Replaying it changes nothing more: a child released leaves the
-- entry in the same script. Bounded by `limit`.
--
-- r: as releaseChild takes it; the script has called flowKeys. Returns how many children it
-- released here, and the entries with children of other queues: member, record, n, then those
-- n children ("<child queue>|<child>"). Needs outboxPage, releaseChild, memberKey (releaseDirect:
-- finished).
local function releasePage(r, before, limit, now)
  local page = outboxPage(F.outbox, F.outboxres, F.children, before, limit)
  -- Queue names have no '|': a child of this queue is "<queue>|<child>".
  local prefix = r.queue .. '|'
  local rest = {}
  local here = 0
  local i = 1
  while i <= #page do
    local member, record, n = page[i], page[i + 1], page[i + 2]
    local parent = string.match(member, '^(.*)|%d+$')
    local from = r.queue .. '|' .. parent
    local frozen = memberKey(F.children, member)
    local others = {}
    for j = i + 3, i + 2 + n do
      local ref = page[j]
      if string.sub(ref, 1, #prefix) == prefix then
        local done = releaseChild(r, string.sub(ref, #prefix + 1), from, record, now)
        rcall('ZREM', frozen, ref)
        if done == 0 then
          rcall('ZADD', memberKey(F.children, parent), 0, ref)
          rcall('SADD', F.fanout, parent)
          F.anyChildren = true
        end
        here = here + 1
      else
        others[#others + 1] = ref
      end
    end
    if #others > 0 then
      rest[#rest + 1], rest[#rest + 2], rest[#rest + 3] = member, record, #others
      for _, ref in ipairs(others) do rest[#rest + 1] = ref end
    elseif rcall('EXISTS', frozen) == 0 then
      rcall('ZREM', F.outbox, member)
      rcall('HDEL', F.outboxres, member)
    end
    i = i + 3 + n
  end
  return here, rest
end

-- releaseDirect: the finishes F.direct lists (name, record: finishes in this script whose
-- children were left in their live set), released here without an outbox entry when that is
-- the whole of the work: the outbox holds nothing older (which goes first), and every child is
-- of this queue and within `limit` in all. A finish that does not qualify is frozen into the
-- outbox as any other (releasePage, or the flows task, releases it). A child kept (WAIT on a
-- failure) stays in the live set for the parent's next finish, as releasePage puts it back.
-- So a chain's step writes and reads no outbox entry. Reads at most limit + 1 children per
-- finish. Returns how many children it released.
local function releaseDirect(r, limit, now)
  local direct = F.direct
  F.direct = nil -- finishes the releases cause (a CANCEL policy's) take the outbox
  if not direct or #direct == 0 then return 0 end
  local older = rcall('EXISTS', F.outbox) == 1
  local prefix = r.queue .. '|'
  local here = 0
  for _, d in ipairs(direct) do
    local name, record = d[1], d[2]
    local from = memberKey(F.children, name)
    local room = limit - here
    local children = (not older and room > 0) and rcall('ZRANGE', from, 0, room) or {}
    local fits = #children > 0 and #children <= room
    for _, ref in ipairs(children) do
      if not fits then break end
      fits = string.sub(ref, 1, #prefix) == prefix
    end
    if fits then
      local parent = r.queue .. '|' .. name
      local kept = false
      for _, ref in ipairs(children) do
        if releaseChild(r, string.sub(ref, #prefix + 1), parent, record, now) == 0 then
          kept = true
        else
          rcall('ZREM', from, ref)
        end
      end
      if kept then
        rcall('SADD', F.fanout, name)
        F.anyChildren = true
      end
      here = here + #children
    else
      freezeChildren(name, from, record, now)
    end
  end
  return here
end
