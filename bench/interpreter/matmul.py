# A dense 120 by 120 matrix product in scalar loops, of matrices filled by formulas.


def matmul(n):
    a = [[float(i * n + j) / n for j in range(n)] for i in range(n)]
    b = [[float(i - j) / n for j in range(n)] for i in range(n)]
    c = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(n):
                s += a[i][k] * b[k][j]
            c[i][j] = s
    return int(c[n // 2][n // 3] * 1000)


print(matmul(120))
