# Heap sort of 100,000 numbers from a linear congruential generator; the sift-down is a function
# that writes into the array it is given.


def sift_down(a, start, end):
    root = start
    while 2 * root + 1 <= end:
        child = 2 * root + 1
        if child + 1 <= end and a[child] < a[child + 1]:
            child += 1
        if a[root] < a[child]:
            a[root], a[child] = a[child], a[root]
            root = child
        else:
            return a
    return a


def heap_sort(n):
    a = [0.0] * n
    x = 11
    for i in range(n):
        x = (1103515245 * x + 12345) % 2147483648
        a[i] = float(x % 1000000)
    for start in range((n - 2) // 2, -1, -1):
        a = sift_down(a, start, n - 1)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        a = sift_down(a, 0, end - 1)
    check = 0
    for i in range(n):
        check = (check * 31 + int(a[i])) % 1000000007
    return check


print(heap_sort(100000))
