local function esc(s)
  return (string.gsub(s, '[^%w%p ]', function(c) return string.format('\\x%02x', string.byte(c)) end))
end
local function hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local ser
ser = function(v)
  local t = type(v)
  if t == 'string' then return '"' .. esc(v) .. '"'
  elseif t == 'number' then
    if v ~= v then return 'nan' end
    return string.format('%.17g', v)
  elseif t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      local ta, tb = type(a), type(b)
      if ta ~= tb then return ta < tb end
      if ta == 'number' or ta == 'string' then return a < b end
      return tostring(a) < tostring(b)
    end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = '[' .. ser(k) .. ']=' .. ser(v[k]) end
    return '{' .. table.concat(parts, ',') .. '}'
  elseif t == 'userdata' then
    if v == cjson.null then return 'NULL' end
    return 'userdata'
  elseif t == 'boolean' or t == 'nil' then
    return tostring(v)
  end
  return t
end
local function R(...)
  local n = select('#', ...)
  local t = {...}
  local out = {}
  for i = 1, n do out[i] = ser(t[i]) end
  return table.concat(out, ' ')
end
local function E(f, ...)
  return R(pcall(f, ...))
end
