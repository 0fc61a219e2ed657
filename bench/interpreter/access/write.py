# Element access (see README.md): write.


def run(t, u):
    s, x = 0.0, 0.5
    n = len(t)
    for _ in range(10000):
        for j in range(n):
            t[j] = x
            s += x
    return s + t[7] + u[7][7]


print(run([0.0] * 1000, [[0.0] * 1000 for _ in range(1000)]))
