-- countingChanged: the limits changed whether the queue counts keys' leases (setLimits,
-- setKeyLimits; was and now are countsKeys before and after): counting from now on starts a recount of the leases held from
-- their records ("recount" = "s0", recountKeys), unless one is under way; stopping drops the
-- counts ("d0": a pass that deletes them). A count started while a drop or a recount's last
-- pass runs drops first ("d0"), and the drop pass starts the recount at its end. Answers 1 when
-- a recount or a drop is under way, which the caller steps to its end, else 0.
local function countingChanged(limitsKey, was, now)
  local recount = rcall('HGET', limitsKey, 'recount')
  local phase = recount and string.sub(recount, 1, 1)
  if now and not was then
    if phase ~= 's' and phase ~= 'a' then
      rcall('HSET', limitsKey, 'recount', phase and 'd0' or 's0')
    end
    return 1
  elseif was and not now then
    rcall('HSET', limitsKey, 'recount', 'd0')
    return 1
  end
  return recount and 1 or 0
end
