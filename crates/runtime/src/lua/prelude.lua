-- tern's sandbox for EVAL scripts and FUNCTION libraries. Runs once per Lua state, with the
-- standard globals still in place, and returns the pieces the Rust side keeps. Everything a
-- script can reach afterwards lives in a new globals table whose writes fail, as in Redis.
-- Frames of this chunk ("=[tern]") are skipped when errors are located.
local raw, mode = ...

local getinfo = debug.getinfo
local type, error, tostring, tonumber, select = type, error, tostring, tonumber, select
local rawget, rawset, setmetatable, getmetatable = rawget, rawset, setmetatable, getmetatable
local next, pairs, pcall, xpcall, loadstring = next, pairs, pcall, xpcall, loadstring
local floor, concat, byte, sub, find, gsub = math.floor, table.concat, string.byte, string.sub,
    string.find, string.gsub

local RO = 'Attempt to modify a readonly table'

-- proxy -> protected table, and what getmetatable shows for a proxy
local real = setmetatable({}, { __mode = 'k' })
local shown = setmetatable({}, { __mode = 'k' })

local function ro_newindex()
  error(RO, 2)
end

local function protect(t, visible)
  local p = {}
  real[p] = t
  shown[p] = visible
  setmetatable(p, { __index = t, __newindex = ro_newindex, __metatable = false })
  return p
end

local function trunc(x)
  if x >= 0 then return floor(x) end
  return -floor(-x)
end

-- Redis's error table: "-CODE msg" keeps its code, anything else gets ERR.
local function errtable(s)
  local code, msg
  if sub(s, 1, 1) == '-' then
    local sp = find(s, ' ', 1, true)
    if sp then
      code, msg = sub(s, 2, sp - 1), sub(s, sp + 1)
    else
      code, msg = 'ERR', sub(s, 2)
    end
  else
    code, msg = 'ERR', s
  end
  msg = gsub(msg, '^[\r\n]+', '')
  msg = gsub(msg, '[\r\n]+$', '')
  return { err = code .. ' ' .. msg }
end

local function nonexistent(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
local errmeta = { __index = nonexistent }

---------------------------------------------------------------------------------------------
-- the redis table

-- raw.wrap(f) makes a C function that calls f, which returns (value, failed), and raises value
-- when failed: errors then point at the script's line, even from a tail call, as they do in
-- Redis where these are C functions.
local wrap = raw.wrap
local redis = {}

redis.call = raw.call
redis.pcall = raw.pcall

redis.sha1hex = wrap(function(...)
  if select('#', ...) ~= 1 then return errtable('wrong number of arguments'), true end
  local s = ...
  if type(s) == 'number' then
    s = tostring(s)
  elseif type(s) ~= 'string' then
    s = ''
  end
  return raw.sha1hex(s)
end)

function redis.error_reply(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    return errtable('wrong number or type of arguments')
  end
  if sub(e, 1, 1) ~= '-' then e = '-' .. e end
  return errtable(e)
end

function redis.status_reply(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return errtable('wrong number or type of arguments')
  end
  return { ok = s }
end

local log = wrap(function(...)
  local n = select('#', ...)
  if n < 2 then return errtable('redis.log() requires two arguments or more.'), true end
  local level = tonumber((...))
  if level == nil then return errtable('First argument must be a number (log level).'), true end
  level = trunc(level)
  if level < 0 or level > 3 then return errtable('Invalid debug level.'), true end
  local parts = {}
  for i = 2, n do
    local s = select(i, ...)
    local t = type(s)
    if t == 'string' or t == 'number' then parts[#parts + 1] = tostring(s) end
  end
  raw.log(level, concat(parts, ' '))
end)
redis.log = log

redis.setresp = wrap(function(...)
  if select('#', ...) ~= 1 then return errtable('redis.setresp() requires one argument.'), true end
  local r = trunc(tonumber((...)) or 0)
  if r ~= 2 and r ~= 3 then return errtable('RESP version must be 2 or 3.'), true end
  raw.setresp(r)
end)

redis.set_repl = wrap(function(...)
  if select('#', ...) ~= 1 then return errtable('redis.set_repl() requires one argument.'), true end
  local f = trunc(tonumber((...)) or 0)
  if f < 0 or f > 3 then
    return errtable('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'),
      true
  end
end)

redis.acl_check_cmd = wrap(raw.acl_check_cmd)

if mode == 'eval' then
  function redis.replicate_commands() return true end
  function redis.breakpoint() return false end
  function redis.debug() end
end

local function add_constants(t)
  t.LOG_DEBUG, t.LOG_VERBOSE, t.LOG_NOTICE, t.LOG_WARNING = 0, 1, 2, 3
  t.REDIS_VERSION = raw.version
  t.REDIS_VERSION_NUM = raw.version_num
end
add_constants(redis)
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

---------------------------------------------------------------------------------------------
-- math.random / math.randomseed on Redis's process-wide rand48

local MAXR = 2147483647
-- Errors come back as (message, true); raw.wrap_where raises them with the caller's position,
-- as luaL_error does in Redis's C implementation.
local function checkint(i, v, fname)
  local x = tonumber(v)
  if x == nil then
    local got = v == nil and 'no value' or type(v)
    return nil, "bad argument #" .. i .. " to '" .. fname .. "' (number expected, got " .. got .. ")"
  end
  return trunc(x)
end

math.random = raw.wrap_where(function(...)
  local r = (raw.lrand48() % MAXR) / MAXR
  local n = select('#', ...)
  if n == 0 then return r end
  local a, b = ...
  if n == 1 then
    local u, e = checkint(1, a, 'random')
    if e then return e, true end
    if u < 1 then return "bad argument #1 to 'random' (interval is empty)", true end
    return floor(r * u) + 1
  elseif n == 2 then
    local l, e = checkint(1, a, 'random')
    if e then return e, true end
    local u, e2 = checkint(2, b, 'random')
    if e2 then return e2, true end
    if l > u then return "bad argument #2 to 'random' (interval is empty)", true end
    return floor(r * (u - l + 1)) + l
  end
  return 'wrong number of arguments', true
end)

math.randomseed = raw.wrap_where(function(s)
  local x, e = checkint(1, s, 'randomseed')
  if e then return e, true end
  raw.srand48(x)
end)

---------------------------------------------------------------------------------------------
-- the globals

local G = {}
local allowed = {
  'xpcall', 'tostring', 'getfenv', 'setmetatable', 'next', 'assert', 'tonumber', 'rawequal',
  'collectgarbage', 'getmetatable', 'rawset', 'pcall', 'coroutine', 'type', 'select', 'unpack',
  'gcinfo', 'pairs', 'rawget', 'loadstring', 'ipairs', '_VERSION', 'setfenv', 'load', 'error',
  'newproxy', 'string', 'math', 'table', 'cjson', 'bit', 'cmsgpack', 'struct',
}
for _, name in pairs(allowed) do
  G[name] = _G[name]
end
G.redis = redis

-- Redis 7 errors are tables; pcall hands scripts their message, as Redis's own pcall does. A
-- killed script stays killed: catching the kill error only raises it again.
local function pcall_result(ok, ...)
  if ok then return true, ... end
  if raw.killed() then error((...), 0) end
  local e = ...
  if type(e) == 'table' then
    local m = rawget(e, 'err')
    if type(m) == 'string' or type(m) == 'number' then return false, m end
  end
  return false, e
end
G.pcall = function(...)
  return pcall_result(pcall(...))
end
G.xpcall = function(f, h)
  return pcall_result(xpcall(f, function(e)
    if raw.killed() then return e end
    return h(e)
  end))
end

G.setmetatable = wrap(function(t, m)
  if real[t] ~= nil then return RO, true end
  return setmetatable(t, m)
end)
G.getmetatable = function(t)
  if real[t] ~= nil then return shown[t] end
  return getmetatable(t)
end
G.rawset = wrap(function(t, k, v)
  if real[t] ~= nil then return RO, true end
  return rawset(t, k, v)
end)
G.rawget = function(t, k)
  local r = real[t]
  if r ~= nil then return rawget(r, k) end
  return rawget(t, k)
end
G.next = function(t, k)
  local r = real[t]
  if r ~= nil then return next(r, k) end
  return next(t, k)
end
G.pairs = function(t)
  local r = real[t]
  if r ~= nil then return next, r, nil end
  return pairs(t)
end
-- Source text only, as Redis's Lua: precompiled chunks never load.
G.loadstring = function(s, name)
  if type(s) == 'string' and byte(s, 1) == 27 then
    return nil, 'binary chunks are not allowed'
  end
  return loadstring(s, name)
end
G.load = function(f, name)
  if type(f) ~= 'function' then return load(f, name) end
  local parts = {}
  while true do
    local p = f()
    if p == nil or p == '' then break end
    if type(p) ~= 'string' then return nil, 'reader function must return a string' end
    parts[#parts + 1] = p
  end
  return G.loadstring(concat(parts), name or '=(load)')
end

-- Library tables become read-only proxies; the string metatable points at the proxy.
for _, name in pairs({ 'string', 'math', 'table', 'cjson', 'bit', 'cmsgpack', 'struct',
                       'coroutine', 'redis' }) do
  if type(G[name]) == 'table' then G[name] = protect(G[name]) end
end
local smt = getmetatable('')
if smt then
  smt.__index = G.string
  smt.__metatable = protect({ __index = G.string })
end

setmetatable(G, errmeta)
local Pmt = { __index = G, __newindex = ro_newindex, __metatable = false }
local P = setmetatable({}, Pmt)
real[P] = G
shown[P] = protect({ __index = nonexistent })
rawset(G, '_G', P)

---------------------------------------------------------------------------------------------
-- FUNCTION LOAD's view: only redis.register_function, redis.log and the constants.

local loadapi
if mode == 'function' then
  local lr = {}
  lr.register_function = wrap(raw.register_function)
  lr.log = log
  add_constants(lr)
  setmetatable(lr, errmeta)
  loadapi = setmetatable({ redis = protect(lr) }, errmeta)
end

---------------------------------------------------------------------------------------------
-- running

-- The error table Redis builds: {err=..., source=..., line=...} located at the first frame
-- that is neither C nor this sandbox.
local function handler(err)
  local level = 2
  local i = getinfo(level, 'nSl')
  while i and (i.what == 'C' or i.what == 'tail' or i.source == '=[tern]') do
    level = level + 1
    i = getinfo(level, 'nSl')
  end
  if type(err) ~= 'table' then
    err = { err = 'ERR ' .. tostring(err) }
  end
  if i then
    rawset(err, 'source', i.source)
    rawset(err, 'line', i.currentline)
  end
  return err
end

local function compile(body, name)
  local f, err = loadstring(body, name)
  if f then setfenv(f, P) end
  return f, err
end

-- Run a library's code with the load view, then restore the normal one.
local function load_library(f)
  Pmt.__index = loadapi
  local ok, err = xpcall(f, handler)
  Pmt.__index = G
  return ok, err
end

-- Scripts and function callbacks run under `handler` from the Rust side (a C closure that
-- calls them with lua_pcall, so no Lua closure is made per run).
return { G = G, P = P, handler = handler, compile = compile, load_library = load_library }
