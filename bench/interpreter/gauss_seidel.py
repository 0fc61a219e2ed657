# Gauss-Seidel relaxation of Laplace's equation on a 120 by 120 grid, 80 sweeps, with the top
# edge held at 1.


def relax(n, sweeps):
    u = [[0.0] * n for _ in range(n)]
    for j in range(n):
        u[0][j] = 1.0
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i][j] = 0.25 * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1])
    total = 0.0
    for i in range(n):
        for j in range(n):
            total += u[i][j]
    return int(total * 1e6)


print(relax(120, 80))
