#!/usr/bin/env bash
# Lua 5.4 workload: a deterministic script exercising the VM (jump-table
# dispatch), GC, strings and patterns, tables and sorting, metatables/OOP,
# closures, coroutines, integer/float/bitwise arithmetic, string.pack, utf8,
# load/string.dump, io, and error handling (pcall/error = setjmp/longjmp),
# then the error paths of the stand-alone interpreter.
# Usage: lua.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

cat >main.lua <<'LUA'
-- Never print pairs()/next() order of hashed keys or tostring() of tables/
-- functions: Lua 5.4 randomises its string hash seed (ASLR + time).
local out = {}
local function emit(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  out[#out + 1] = table.concat(parts, " ", 1, parts.n)
end
local function flush() io.write(table.concat(out, "\n"), "\n"); out = {} end

-- 1. a fixed-seed generator of our own, and math.random with a fixed seed
local seed = 12345
local function rnd(n) seed = (seed * 16807) % 2147483647; return seed % n end
math.randomseed(42, 7)
local mr = {}
for i = 1, 8 do mr[i] = math.random(1000) end
emit("math.random:", table.concat(mr, ","))

-- 2. arithmetic: integers, floats, bitwise, integer division, conversions
local acc, facc, bits = 0, 0.0, 0
for i = 1, 1500000 do
  acc = (acc * 31 + i) % 1000000007
  facc = facc + math.sin(i) / i
  bits = bits ~ ((i << (i % 13)) | (i >> 3)) & 0xFFFFFFFF
end
emit("arith:", acc, string.format("%.12f", facc), string.format("%08x", bits),
     7 // 2, -7 // 2, 7 % -3, 2^10, 10 / 4, math.tointeger(3.0), math.type(1), math.type(1.0),
     math.maxinteger, math.mininteger, math.maxinteger + 1 == math.mininteger)
emit("float fmt:", string.format("%g %g %g %.3e %a", 1e300 * 10, -1/0 < 0 and 0/0 ~= 0/0 and 1 or 0, 1/3, 123456.789, 1.0))

-- 3. tables and sorting with a comparator
local t = {}
for i = 1, 150000 do t[i] = rnd(1000000) end
table.sort(t)
local ok = true
for i = 2, #t do if t[i - 1] > t[i] then ok = false end end
emit("sorted:", tostring(ok), t[1], t[#t // 2], t[#t])
local recs = {}
for i = 1, 50000 do recs[i] = { key = "k" .. rnd(5000), n = i } end
table.sort(recs, function(a, b) if a.key ~= b.key then return a.key < b.key end return a.n < b.n end)
emit("records:", recs[1].key, recs[1].n, recs[#recs].key, recs[#recs].n)
table.insert(t, 1, -1); table.remove(t); table.move(t, 1, 10, 5)
emit("table ops:", #t, table.concat(t, ",", 1, 12), select("#", table.unpack(t, 1, 50)))

-- 4. strings and patterns
local words = {}
for i = 1, 30000 do words[i] = ("w%d"):format(rnd(3000)) end
local text = table.concat(words, " ")
local freq = {}
for w in text:gmatch("%a%d+") do freq[w] = (freq[w] or 0) + 1 end
local keys = {}
for k in pairs(freq) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) if freq[a] ~= freq[b] then return freq[a] > freq[b] end return a < b end)
emit("top words:", keys[1], freq[keys[1]], keys[2], freq[keys[2]], keys[3], freq[keys[3]], #keys)
local s2, n2 = text:sub(1, 20000):gsub("w(%d)(%d*)", function(a, b) return b .. a end)
emit("gsub:", n2, #s2, s2:sub(1, 40))
emit("find:", text:find("w1234", 1, true), ("hello world"):match("^(%w+)%s+(%w+)$"))
emit("format:", ("%5.2f|%-6s|%q|%x|%c%c"):format(math.pi, "ab", "a\nb\0c", 255, 72, 105))
emit("rep/rev:", ("abc"):rep(3, "-"), ("stressed"):reverse(), ("MiXeD"):lower(), ("MiXeD"):upper(), ("x"):byte())
local packed = string.pack("<i4 d z s2 I8", -123456, 3.25, "zero", "short", 0x1122334455667788)
emit("pack:", #packed, string.format("%q", packed))
local a, b, c, d, e = string.unpack("<i4 d z s2 I8", packed)
emit("unpack:", a, b, c, d, e)
emit("utf8:", utf8.char(72, 228, 8364, 128512), utf8.len("h\xC3\xA4\xE2\x82\xAC"), utf8.codepoint("\xE2\x82\xAC"))
flush()

-- 5. metatables and OOP (virtual dispatch the Lua way)
local Shape = {}; Shape.__index = Shape
function Shape.new(name) return setmetatable({ name = name }, Shape) end
function Shape:describe() return self.name .. " area=" .. string.format("%.3f", self:area()) end
local Circle = setmetatable({}, { __index = Shape }); Circle.__index = Circle
function Circle.new(r) local o = Shape.new("circle"); o.r = r; return setmetatable(o, Circle) end
function Circle:area() return math.pi * self.r ^ 2 end
local Rect = setmetatable({}, { __index = Shape }); Rect.__index = Rect
function Rect.new(w, h) local o = Shape.new("rect"); o.w, o.h = w, h; return setmetatable(o, Rect) end
function Rect:area() return self.w * self.h end
local total = 0
for i = 1, 300000 do
  local s = (i % 3 == 0) and Circle.new(i % 7) or Rect.new(i % 5, i % 11)
  total = total + s:area()
end
emit("shapes:", string.format("%.4f", total), Circle.new(2):describe(), Rect.new(3, 4):describe())
local V = {}
V.__index = V
V.__add = function(x, y) return setmetatable({ v = x.v + y.v }, V) end
V.__lt = function(x, y) return x.v < y.v end
V.__tostring = function(x) return "V(" .. x.v .. ")" end
V.__call = function(x, k) return x.v * k end
V.__len = function() return 99 end
V.__concat = function(x, y) return tostring(x) .. "&" .. tostring(y) end
local v1, v2 = setmetatable({ v = 3 }, V), setmetatable({ v = 4 }, V)
emit("metamethods:", tostring(v1 + v2), tostring(v1 < v2), v1(10), #v1, v1 .. v2)
local log = {}
do
  local x <close> = setmetatable({}, { __close = function() log[#log + 1] = "closed" end })
  log[#log + 1] = "body"
end
emit("to-be-closed:", table.concat(log, ","))
local weak = setmetatable({}, { __mode = "k" })
weak[{}] = 1
collectgarbage(); collectgarbage()
local cnt = 0; for _ in pairs(weak) do cnt = cnt + 1 end
emit("weak entries after gc:", cnt)

-- 6. closures, varargs, recursion, goto
local function counter() local c = 0; return function(k) c = c + (k or 1); return c end end
local c1, c2 = counter(), counter()
for i = 1, 1000 do c1(); c2(2) end
emit("closures:", c1(), c2())
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
emit("fib(29):", fib(29))
local function va(...) return select("#", ...), ... end
emit("varargs:", va(1, nil, 3, nil))
do
  local i, s = 1, 0
  ::top::
  s = s + i; i = i + 1
  if i <= 100 then goto top end
  emit("goto sum:", s)
end

-- 7. coroutines
local function gen(n)
  return coroutine.wrap(function() for i = 1, n do coroutine.yield(i * i) end return "done" end)
end
local g, sum = gen(2000), 0
for _ = 1, 2000 do sum = sum + g() end
emit("coroutine:", sum, g())
local co = coroutine.create(function(x) local y = coroutine.yield(x + 1); error("boom " .. y) end)
emit("coroutine status:", coroutine.resume(co, 1))
emit("coroutine error:", coroutine.resume(co, 5))
emit("coroutine dead:", coroutine.status(co), coroutine.resume(co))
flush()

-- 8. errors: pcall/xpcall/error (longjmp), error objects, nested handlers
local function thrower(kind, depth)
  if depth > 0 then return thrower(kind, depth - 1) + 1 end
  if kind == 1 then error("string error")
  elseif kind == 2 then error({ code = 42 })
  elseif kind == 3 then local x = nil; return x.field
  elseif kind == 4 then return 1 + {}
  elseif kind == 5 then error("no position", 0)
  else return ("x"):rep(-1) .. nil end
end
local caught = 0
for i = 1, 100000 do
  local ok, err = pcall(thrower, i % 6 + 1, i % 20)
  if not ok then caught = caught + 1 end
end
emit("pcall caught:", caught)
for k = 1, 6 do
  local ok, err = pcall(thrower, k, 3)
  emit("error " .. k .. ":", tostring(ok), type(err) == "table" and ("table code=" .. err.code) or tostring(err))
end
emit("xpcall:", xpcall(function() error("inner") end, function(m) return "handled: " .. m end))
emit("nested:", pcall(function()
  local ok, e = pcall(error, "first")
  error("second after " .. e, 0)
end))
emit("traceback:", (debug.traceback("tb", 1):gsub("\n%s*", " | ")))
emit("load ok:", load("return 6 * 7")())
emit("load syntax:", load("return +"))
local chunk = string.dump(function(x) return x * 2 + 1 end, true)
emit("dump/load:", load(chunk, "dumped", "b")(20), #chunk)
flush()

-- 9. io: write, read back, lines, seek
local f = assert(io.open("data.txt", "w"))
for i = 1, 5000 do f:write(string.format("%05d;%s;%.2f\n", i, words[i], i / 7)) end
f:close()
local sumc, nlines = 0, 0
for line in io.lines("data.txt") do
  local n, w, x = line:match("^(%d+);(%w+);([%d.]+)$")
  sumc = sumc + tonumber(n) + #w + tonumber(x); nlines = nlines + 1
end
f = assert(io.open("data.txt", "rb"))
local size = f:seek("end"); f:seek("set", 100); local piece = f:read(20); f:close()
emit("io:", nlines, string.format("%.2f", sumc), size, piece)
emit("io error:", io.open("no/such/file.txt"))
emit("os:", os.getenv("NO_SUCH_VARIABLE_HOPEFULLY"), os.date("!%Y-%m-%d %H:%M:%S", 86400 * 365), os.time({ year = 2001, month = 2, day = 3, hour = 4 }))
flush()

-- 10. an uncaught error ends the script (status 1, message on stderr)
local function final() error("final uncaught error") end
final()
LUA

run "main" "$B" main.lua
run "stdin" "$B" - <<'LUA'
print(("stdin chunk %d"):format(6 * 7)); print(select('#', ...), arg and arg[0])
LUA
run "-e" "$B" -e 'x = 10' -e 'print(x * x, _VERSION)'
printf 'print(#arg, arg[0], arg[1], arg[2], ...)\n' >args.lua
run "args" "$B" args.lua one two
printf 'local x = = 1\n' >syntax.lua
run "syntax error" "$B" syntax.lua
run "error object" "$B" -e 'error(setmetatable({}, {__tostring = function() return "custom error object" end}))'
run "error table" "$B" -e 'error({})'
run "os.exit" "$B" -e 'io.write("bye\n"); os.exit(7)'
run "missing file" "$B" no-such-script.lua
run "bad option" "$B" -Z
run "version" "$B" -v
