-- Binary search tree of 100,000 numbers from a linear congruential generator, held in a table of
-- three arrays (keys and child positions, -1 for none; 0-based positions, stored from index 1):
-- each key is inserted by walking down from the root, then a recursive in-order walk that takes
-- the tree computes a checksum of the keys and their depths.

local function new_tree(n)
    local t = { key = {}, left = {}, right = {} }
    for i = 1, n do
        t.key[i] = 0.0
        t.left[i] = -1
        t.right[i] = -1
    end
    return t
end

local function insert_all(t, n)
    local x = 17
    for i = 0, n - 1 do
        x = (1103515245 * x + 12345) % 2147483648
        local key = (x % 1000000) + 0.0
        t.key[i + 1] = key
        local node = 0
        while i > 0 do
            local child
            if key < t.key[node + 1] then
                child = t.left[node + 1]
                if child < 0 then
                    t.left[node + 1] = i
                    break
                end
            else
                child = t.right[node + 1]
                if child < 0 then
                    t.right[node + 1] = i
                    break
                end
            end
            node = child
        end
    end
    return t
end

local function walk(t, node, depth, check)
    if node < 0 then
        return check
    end
    check = walk(t, t.left[node + 1], depth + 1, check)
    check = (check * 31 + math.floor(t.key[node + 1])) % 1000000007
    check = (check * 31 + depth) % 1000000007
    check = walk(t, t.right[node + 1], depth + 1, check)
    return check
end

local n = 100000
local t = insert_all(new_tree(n), n)
print(walk(t, 0, 0, 0))
