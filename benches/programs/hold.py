"""Hold a buffer faulted in, for a promotion daemon to work on: the programs of BENCHMARKS.md's
warm-page and room-splitting rows. Prints huge_kib=N (its AnonHugePages) after the buffer was
faulted in and again at its end.

usage: python3 hold.py MIB SECONDS [thp] [read]
  thp   advise the buffer MADV_HUGEPAGE before faulting it in (else 4 KiB pages under THP
        `madvise`)
  read  read one byte of each 4 KiB page in a loop until SECONDS are up (else sleep)
"""
import mmap
import sys
import time

MADV_POPULATE_WRITE = 23


def huge_kib():
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    return -1


def main():
    if len(sys.argv) < 3 or not set(sys.argv[3:]) <= {"thp", "read"}:
        sys.exit(__doc__)
    size = int(sys.argv[1]) << 20
    end = time.time() + float(sys.argv[2])
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if "thp" in sys.argv[3:]:
        buf.madvise(mmap.MADV_HUGEPAGE)
    buf.madvise(MADV_POPULATE_WRITE)
    print(f"huge_kib={huge_kib()}", flush=True)
    while time.time() < end:
        if "read" in sys.argv[3:]:
            for i in range(0, size, 4096):
                buf[i]
            time.sleep(0.05)
        else:
            time.sleep(min(1.0, max(0.0, end - time.time())))
    print(f"huge_kib={huge_kib()}", flush=True)


if __name__ == "__main__":
    main()
