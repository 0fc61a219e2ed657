# The Mandelbrot set on a 300 by 300 grid over [-2, 0.5] x [-1.25, 1.25], at most 50 iterations
# a point: floating-point arithmetic and comparisons.


def mandelbrot(size, limit):
    inside = 0
    for py in range(size):
        ci = -1.25 + 2.5 * py / size
        for px in range(size):
            cr = -2.0 + 2.5 * px / size
            zr, zi = 0.0, 0.0
            k = 0
            while k < limit and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                k += 1
            if k == limit:
                inside += 1
    return inside


print(mandelbrot(300, 50))
