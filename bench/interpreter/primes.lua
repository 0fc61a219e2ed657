-- Counting the primes below 200,000 by trial division.

local function count_primes(limit)
    local count = 0
    for n = 2, limit - 1 do
        local d = 2
        local prime = true
        while d * d <= n do
            if n % d == 0 then
                prime = false
                break
            end
            d = d + 1
        end
        if prime then
            count = count + 1
        end
    end
    return count
end

print(count_primes(200000))
