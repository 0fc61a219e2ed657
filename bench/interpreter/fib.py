# Recursive Fibonacci: about 7 million calls of a two-way recursion on integers.


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


print(fib(32))
