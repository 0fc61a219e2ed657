# Recursive in-place quicksort (Lomuto partition, middle pivot) of 200,000 numbers from a linear
# congruential generator; each call writes into the array it is given.


def quicksort(a, lo, hi):
    if lo >= hi:
        return a
    mid = (lo + hi) // 2
    a[mid], a[hi] = a[hi], a[mid]
    pivot = a[hi]
    i = lo
    for j in range(lo, hi):
        if a[j] < pivot:
            a[i], a[j] = a[j], a[i]
            i += 1
    a[i], a[hi] = a[hi], a[i]
    a = quicksort(a, lo, i - 1)
    a = quicksort(a, i + 1, hi)
    return a


def sort(n):
    a = [0.0] * n
    x = 13
    for i in range(n):
        x = (1103515245 * x + 12345) % 2147483648
        a[i] = float(x % 1000000)
    a = quicksort(a, 0, n - 1)
    check = 0
    for i in range(n):
        check = (check * 31 + int(a[i])) % 1000000007
    return check


print(sort(200000))
