-- Heap sort of 100,000 numbers from a linear congruential generator; the sift-down is a function
-- that writes into the array it is given (0-based positions, stored from index 1).

local function sift_down(a, start, last)
    local root = start
    while 2 * root + 1 <= last do
        local child = 2 * root + 1
        if child + 1 <= last and a[child + 1] < a[child + 2] then
            child = child + 1
        end
        if a[root + 1] < a[child + 1] then
            a[root + 1], a[child + 1] = a[child + 1], a[root + 1]
            root = child
        else
            return a
        end
    end
    return a
end

local function heap_sort(n)
    local a = {}
    local x = 11
    for i = 1, n do
        x = (1103515245 * x + 12345) % 2147483648
        a[i] = (x % 1000000) + 0.0
    end
    for start = (n - 2) // 2, 0, -1 do
        a = sift_down(a, start, n - 1)
    end
    for last = n - 1, 1, -1 do
        a[1], a[last + 1] = a[last + 1], a[1]
        a = sift_down(a, 0, last - 1)
    end
    local check = 0
    for i = 1, n do
        check = (check * 31 + math.floor(a[i])) % 1000000007
    end
    return check
end

print(heap_sort(100000))
