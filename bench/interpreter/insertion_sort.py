# Insertion sort of 3,000 numbers from a linear congruential generator.


def insertion_sort(n):
    a = [0.0] * n
    x = 7
    for i in range(n):
        x = (1103515245 * x + 12345) % 2147483648
        a[i] = float(x % 100000)
    for i in range(1, n):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    check = 0
    for i in range(n):
        check = (check * 31 + int(a[i])) % 1000000007
    return check


print(insertion_sort(3000))
