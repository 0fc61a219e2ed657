# The empty program: each tool's time to start, read a program and stop, which the harness
# subtracts from the other programs' times.
