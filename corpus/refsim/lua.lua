-- refsim's lua input (tests/tools/corpus_oracle.sh): a few thousand Lua
-- objects through the allocator and the collector, strings interned and
-- formatted, tables resized, closures, coroutines and pcall; small, for
-- Valgrind lackey's address stream.
local t, s = {}, 0
for i = 1, 1500 do t[i] = {i, tostring(i), i * 0.5} end
for i = 1, #t, 3 do s = s + t[i][1] + #t[i][2] end
local h = {}
for i = 1, 1000 do h["k" .. (i % 700)] = (h["k" .. (i % 700)] or 0) + i end
local keys = {}
for k in pairs(h) do keys[#keys + 1] = k end
table.sort(keys)
local words = {}
for w in string.gmatch(string.rep("the quick brown fox jumps ", 60), "%a+") do words[#words + 1] = w:upper() end
local function counter() local n = 0; return function() n = n + 1; return n end end
local c = counter()
for _ = 1, 500 do c() end
local co = coroutine.wrap(function() for i = 1, 200 do coroutine.yield(i * i) end end)
local cs = 0
for _ = 1, 200 do cs = cs + co() end
local ok, err = pcall(function() error({code = 7}) end)
collectgarbage()
print(s, #keys, keys[1], keys[#keys], #words, c(), cs, ok, err.code, string.format("%.3f %5.2e", s / 7, cs))
