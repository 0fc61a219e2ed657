-- Simpson's rule for the integral of sin(x) exp(-x / 3) over [0, 10] with 10^6 intervals.

local function simpson(n)
    local a, b = 0.0, 10.0
    local h = (b - a) / n
    local s = math.sin(a) * math.exp(-a / 3.0) + math.sin(b) * math.exp(-b / 3.0)
    for i = 1, n - 1 do
        local x = a + i * h
        local weight = 2.0
        if i % 2 == 1 then
            weight = 4.0
        end
        s = s + weight * math.sin(x) * math.exp(-x / 3.0)
    end
    return math.floor(s * h / 3.0 * 1e12)
end

print(simpson(1000000))
