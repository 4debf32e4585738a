"""Fill a large malloc'd buffer in steps, pausing between them: a program still faulting its
memory in while `hugewise promote` watches it (the daemon's count of a filling program in
BENCHMARKS.md). It knows nothing of hugewise; under the preload library its buffer is advised
huge at first fault.

usage: python3 fill.py MIB [STEP_MIB] [PAUSE_S]

Writes one byte a 4 KiB page, STEP_MIB (256) at a time with PAUSE_S (0.5) seconds after each
step, prints huge_kib=N (its AnonHugePages once filled), then holds the buffer 3 s and exits.
"""
import ctypes
import sys
import time

from hold import huge_kib


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    size = int(sys.argv[1]) << 20
    step = (int(sys.argv[2]) if len(sys.argv) > 2 else 256) << 20
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    buf = libc.malloc(size)
    if not buf:
        sys.exit("malloc failed")
    for start in range(0, size, step):
        for off in range(start, min(start + step, size), 4096):
            ctypes.memset(buf + off, 1, 1)
        time.sleep(pause)
    print(f"huge_kib={huge_kib()}", flush=True)
    time.sleep(3)


if __name__ == "__main__":
    main()
