-- Ackermann's function A(3, 8): about 2.8 million calls, recursion 2,000 deep.

local function ack(m, n)
    if m == 0 then
        return n + 1
    end
    if n == 0 then
        return ack(m - 1, 1)
    end
    return ack(m - 1, ack(m, n - 1))
end

print(ack(3, 8))
