-- Element access (see README.md): loop.

local function run(t, u)
    local s, x = 0.0, 0.5
    local n = #t
    for _ = 1, 10000 do
        for j = 1, n do
            s = s + x
        end
    end
    return s + t[8] + u[8][8]
end

local t, u = {}, {}
for i = 1, 1000 do
    t[i] = 0.0
    local row = {}
    for j = 1, 1000 do
        row[j] = 0.0
    end
    u[i] = row
end
print(run(t, u))
