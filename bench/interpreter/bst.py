# Binary search tree of 100,000 numbers from a linear congruential generator, held in an object of
# three lists (keys and child positions, -1 for none): each key is inserted by walking down from
# the root, then a recursive in-order walk that takes the tree computes a checksum of the keys
# and their depths.


class Tree:
    def __init__(self, n):
        self.key = [0.0] * n
        self.left = [-1] * n
        self.right = [-1] * n


def insert_all(t, n):
    x = 17
    for i in range(n):
        x = (1103515245 * x + 12345) % 2147483648
        key = float(x % 1000000)
        t.key[i] = key
        node = 0
        while i > 0:
            if key < t.key[node]:
                child = t.left[node]
                if child < 0:
                    t.left[node] = i
                    break
            else:
                child = t.right[node]
                if child < 0:
                    t.right[node] = i
                    break
            node = child
    return t


def walk(t, node, depth, check):
    if node < 0:
        return check
    check = walk(t, t.left[node], depth + 1, check)
    check = (check * 31 + int(t.key[node])) % 1000000007
    check = (check * 31 + depth) % 1000000007
    check = walk(t, t.right[node], depth + 1, check)
    return check


n = 100000
t = insert_all(Tree(n), n)
print(walk(t, 0, 0, 0))
