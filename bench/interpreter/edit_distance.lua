-- The edit distance of two sequences of 800 letters (the high bits of a linear congruential
-- generator), by the dynamic programme over an 801 by 801 table.

local function sequence(n, seed)
    local x, out = seed, {}
    for i = 1, n do
        x = (1103515245 * x + 12345) % 2147483648
        out[i] = (x // 65536 % 4) + 0.0
    end
    return out
end

local function edit_distance(a, b)
    local m, n = #a, #b
    local d = {}
    for i = 0, m do
        local row = {}
        for j = 0, n do
            row[j + 1] = 0.0
        end
        d[i + 1] = row
    end
    for i = 0, m do
        d[i + 1][1] = i + 0.0
    end
    for j = 0, n do
        d[1][j + 1] = j + 0.0
    end
    for i = 1, m do
        for j = 1, n do
            local cost = 1.0
            if a[i] == b[j] then
                cost = 0.0
            end
            local best = d[i][j + 1] + 1.0
            local insert = d[i + 1][j] + 1.0
            if insert < best then
                best = insert
            end
            local replace = d[i][j] + cost
            if replace < best then
                best = replace
            end
            d[i + 1][j + 1] = best
        end
    end
    return math.floor(d[m + 1][n + 1])
end

print(edit_distance(sequence(800, 1), sequence(800, 2)))
