-- A dense 120 by 120 matrix product in scalar loops, of matrices filled by formulas.

local function matmul(n)
    local a, b, c = {}, {}, {}
    for i = 0, n - 1 do
        local ra, rb, rc = {}, {}, {}
        for j = 0, n - 1 do
            ra[j + 1] = (i * n + j) / n
            rb[j + 1] = (i - j) / n
            rc[j + 1] = 0.0
        end
        a[i + 1], b[i + 1], c[i + 1] = ra, rb, rc
    end
    for i = 1, n do
        for j = 1, n do
            local s = 0.0
            for k = 1, n do
                s = s + a[i][k] * b[k][j]
            end
            c[i][j] = s
        end
    end
    return math.floor(c[n // 2 + 1][n // 3 + 1] * 1000)
end

print(matmul(120))
