# Counting the primes below 200,000 by trial division.


def count_primes(limit):
    count = 0
    for n in range(2, limit):
        d = 2
        prime = True
        while d * d <= n:
            if n % d == 0:
                prime = False
                break
            d += 1
        if prime:
            count += 1
    return count


print(count_primes(200000))
