"""Random single-byte reads over a large buffer, as an unmodified Python program does them:
the workload of `hugewise bench exec` in BENCHMARKS.md. Prints time_s=SECONDS for the timed
reads alone (setup apart).

usage: python3 randaccess.py [GiB] [reads] [seed]
"""
import random
import sys
import time

gib = float(sys.argv[1]) if len(sys.argv) > 1 else 4
reads = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1

size = int(gib * (1 << 30))
buf = bytearray(size)
for i in range(0, size, 4096):
    buf[i] = i >> 12 & 0xFF
random.seed(seed)
where = [random.randrange(size) for _ in range(reads)]
total = 0
for i in where[: reads // 10]:
    total += buf[i]
t = time.perf_counter()
for _ in range(3):
    for i in where:
        total += buf[i]
print(f"time_s={time.perf_counter() - t:.6f}")
print(f"checksum={total}")
