# The edit distance of two sequences of 800 letters (the high bits of a linear congruential
# generator), by the dynamic programme over an 801 by 801 table.


def sequence(n, seed):
    x, out = seed, []
    for _ in range(n):
        x = (1103515245 * x + 12345) % 2147483648
        out.append(float(x // 65536 % 4))
    return out


def edit_distance(a, b):
    m, n = len(a), len(b)
    d = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(m + 1):
        d[i][0] = float(i)
    for j in range(n + 1):
        d[0][j] = float(j)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0.0 if a[i - 1] == b[j - 1] else 1.0
            best = d[i - 1][j] + 1.0
            insert = d[i][j - 1] + 1.0
            if insert < best:
                best = insert
            replace = d[i - 1][j - 1] + cost
            if replace < best:
                best = replace
            d[i][j] = best
    return int(d[m][n])


print(edit_distance(sequence(800, 1), sequence(800, 2)))
