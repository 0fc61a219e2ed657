# The longest Collatz sequence starting below 60,000: integer division, remainder and branches.


def collatz(limit):
    best, best_start = 0, 0
    for start in range(1, limit):
        n, steps = start, 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        if steps > best:
            best, best_start = steps, start
    return best_start * 1000 + best


print(collatz(60000))
