-- Recursive in-place quicksort (Lomuto partition, middle pivot) of 200,000 numbers from a linear
-- congruential generator; each call writes into the array it is given (0-based positions, stored
-- from index 1).

local function quicksort(a, lo, hi)
    if lo >= hi then
        return a
    end
    local mid = (lo + hi) // 2
    a[mid + 1], a[hi + 1] = a[hi + 1], a[mid + 1]
    local pivot = a[hi + 1]
    local i = lo
    for j = lo, hi - 1 do
        if a[j + 1] < pivot then
            a[i + 1], a[j + 1] = a[j + 1], a[i + 1]
            i = i + 1
        end
    end
    a[i + 1], a[hi + 1] = a[hi + 1], a[i + 1]
    a = quicksort(a, lo, i - 1)
    a = quicksort(a, i + 1, hi)
    return a
end

local function sort(n)
    local a = {}
    local x = 13
    for i = 1, n do
        x = (1103515245 * x + 12345) % 2147483648
        a[i] = (x % 1000000) + 0.0
    end
    a = quicksort(a, 0, n - 1)
    local check = 0
    for i = 1, n do
        check = (check * 31 + math.floor(a[i])) % 1000000007
    end
    return check
end

print(sort(200000))
