-- Insertion sort of 3,000 numbers from a linear congruential generator.

local function insertion_sort(n)
    local a = {}
    local x = 7
    for i = 1, n do
        x = (1103515245 * x + 12345) % 2147483648
        a[i] = (x % 100000) + 0.0
    end
    for i = 2, n do
        local key = a[i]
        local j = i - 1
        while j >= 1 and a[j] > key do
            a[j + 1] = a[j]
            j = j - 1
        end
        a[j + 1] = key
    end
    local check = 0
    for i = 1, n do
        check = (check * 31 + math.floor(a[i])) % 1000000007
    end
    return check
end

print(insertion_sort(3000))
