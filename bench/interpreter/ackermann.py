# Ackermann's function A(3, 8): about 2.8 million calls, recursion 2,000 deep.
import sys

sys.setrecursionlimit(10000)


def ack(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ack(m - 1, 1)
    return ack(m - 1, ack(m, n - 1))


print(ack(3, 8))
