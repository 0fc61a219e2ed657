-- The longest Collatz sequence starting below 60,000: integer division, remainder and branches.

local function collatz(limit)
    local best, best_start = 0, 0
    for start = 1, limit - 1 do
        local n, steps = start, 0
        while n ~= 1 do
            if n % 2 == 0 then
                n = n // 2
            else
                n = 3 * n + 1
            end
            steps = steps + 1
        end
        if steps > best then
            best, best_start = steps, start
        end
    end
    return best_start * 1000 + best
end

print(collatz(60000))
