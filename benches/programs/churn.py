"""Allocation churn: buffers of a few MiB made, touched once per page and dropped, as a
program that builds and discards large temporaries does. The cost the preload library adds
to such a program (an mmap, a madvise and a munmap per buffer, where glibc may reuse its heap).
Prints time_s=SECONDS.

usage: python3 churn.py [buffers] [MiB]
"""
import sys
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
mib = int(sys.argv[2]) if len(sys.argv) > 2 else 4

t = time.perf_counter()
total = 0
for n in range(count):
    b = bytearray(mib << 20)
    b[::4096] = b"\x01" * ((mib << 20) // 4096)
    total += b[n % len(b)]
    del b
print(f"time_s={time.perf_counter() - t:.6f}")
print(f"checksum={total}")
