-- The Mandelbrot set on a 300 by 300 grid over [-2, 0.5] x [-1.25, 1.25], at most 50 iterations
-- a point: floating-point arithmetic and comparisons.

local function mandelbrot(size, limit)
    local inside = 0
    for py = 0, size - 1 do
        local ci = -1.25 + 2.5 * py / size
        for px = 0, size - 1 do
            local cr = -2.0 + 2.5 * px / size
            local zr, zi = 0.0, 0.0
            local k = 0
            while k < limit and zr * zr + zi * zi <= 4.0 do
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                k = k + 1
            end
            if k == limit then
                inside = inside + 1
            end
        end
    end
    return inside
end

print(mandelbrot(300, 50))
