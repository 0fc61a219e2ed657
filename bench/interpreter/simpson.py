# Simpson's rule for the integral of sin(x) exp(-x / 3) over [0, 10] with 10^6 intervals.
import math


def simpson(n):
    a, b = 0.0, 10.0
    h = (b - a) / n
    s = math.sin(a) * math.exp(-a / 3.0) + math.sin(b) * math.exp(-b / 3.0)
    for i in range(1, n):
        x = a + i * h
        weight = 4.0 if i % 2 == 1 else 2.0
        s += weight * math.sin(x) * math.exp(-x / 3.0)
    return int(s * h / 3.0 * 1e12)


print(simpson(1000000))
