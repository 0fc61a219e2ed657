"""Engine references (issue 4): CPython on scalar code, NumPy on matrix products and maps."""

import numpy as np

from timing import measure


def scalar_loop():
    s = 0
    for i in range(2_000_000):
        s += i * i
    return s


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def main():
    assert scalar_loop() == 2666664666667000000
    measure("scalar_loop.cpython", scalar_loop, repeat=5)
    measure("fib27.cpython", lambda: fib(27), repeat=5)
    rng = np.random.default_rng(0)
    for n in (1024, 2048):
        a, b = rng.random((n, n)), rng.random((n, n))
        measure(f"matmul{n}.numpy", lambda: a @ b, repeat=9, warmup=2)
    a, b, c = (rng.random(10_000_000) for _ in range(3))
    measure("elementwise.numpy", lambda: np.exp(a) * b + c, repeat=9, warmup=2)


if __name__ == "__main__":
    main()
