"""Where a program's 4 KiB pages land on a fragmented machine: the free memory and the part of
it in whole 2 MiB blocks (orders 9 and up in /proc/buddyinfo), before and after faulting a
buffer on 4 KiB pages. BENCHMARKS.md's fragmentation row runs it under `hugewise env with
--pressure-leave ... --fragment ...`.

usage: python3 holes.py GIB
"""
import mmap
import sys
import time


def free_and_whole_mib():
    """Free memory and the part of it in free blocks of 2 MiB or more, in MiB."""
    free = whole = 0
    with open("/proc/buddyinfo") as f:
        for line in f:
            counts = [int(x) for x in line.split()[4:]]
            for order, n in enumerate(counts):
                size = n * (4096 << order)
                free += size
                if order >= 9:
                    whole += size
    return free >> 20, whole >> 20


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        gib = float(sys.argv[1])
    except ValueError:
        sys.exit(f"holes.py: GIB must be a number of GiB, not {sys.argv[1]!r}")
    if not 0 < gib <= 1024:
        sys.exit(f"holes.py: GIB must be above 0 and at most 1024, not {sys.argv[1]}")
    free0, whole0 = free_and_whole_mib()
    buf = mmap.mmap(-1, int(gib * (1 << 30)))
    buf.madvise(mmap.MADV_NOHUGEPAGE)
    for off in range(0, len(buf), 4096):
        buf[off] = 1
    # Let freed per-CPU pages settle into the buddy lists before the second look.
    time.sleep(1)
    free1, whole1 = free_and_whole_mib()
    print(f"before: free_mib={free0} whole_mib={whole0}")
    print(f"after faulting {len(buf) >> 20} MiB of 4 KiB pages: free_mib={free1} whole_mib={whole1}")
    print(f"whole_used_mib={whole0 - whole1} holes_used_mib={(len(buf) >> 20) - (whole0 - whole1)}")


if __name__ == "__main__":
    main()
