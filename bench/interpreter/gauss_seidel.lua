-- Gauss-Seidel relaxation of Laplace's equation on a 120 by 120 grid, 80 sweeps, with the top
-- edge held at 1.

local function relax(n, sweeps)
    local u = {}
    for i = 1, n do
        local row = {}
        for j = 1, n do
            row[j] = 0.0
        end
        u[i] = row
    end
    for j = 1, n do
        u[1][j] = 1.0
    end
    for _ = 1, sweeps do
        for i = 2, n - 1 do
            for j = 2, n - 1 do
                u[i][j] = 0.25 * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1])
            end
        end
    end
    local total = 0.0
    for i = 1, n do
        for j = 1, n do
            total = total + u[i][j]
        end
    end
    return math.floor(total * 1e6)
end

print(relax(120, 80))
