-- int: formats a number as a decimal integer string (tostring would print 1e+15).
local function int(n)
  return string.format('%d', n)
end
