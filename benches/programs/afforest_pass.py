"""How much work Afforest's final pass has on a graph: link each vertex to its first two
neighbours (two rounds, each followed by a compression), find the most common label, and count
the vertices outside it and the arcs past their first two, which the final pass links. Serial,
with the suite's link and compress, so that hugewise's and GAP's runs can be set against it.

usage: python3 afforest_pass.py GRAPH.sg
  GRAPH.sg  a GAP-format graph (hugewise graph convert --out F.sg); at most a few million arcs:
            pure Python, about a minute for cnr-2000
"""
import array
import collections
import os
import stat
import struct
import sys

ROUNDS = 2
MAX_BYTES = 1 << 30


def read_sg(path):
    # A pipe or a device would block or never end: only a regular file is read.
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            sys.exit(f"{path}: not a regular file")
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        sys.exit(f"{path}: larger than {MAX_BYTES} bytes")
    if len(data) < 17:
        sys.exit(f"{path}: {len(data)} bytes, shorter than a .sg header")
    edges, n = struct.unpack_from("<qq", data, 1)
    offsets = array.array("q")
    end = 17 + 8 * (n + 1)
    offsets.frombytes(data[17:end])
    if len(offsets) != n + 1:
        sys.exit(f"{path}: truncated in its offsets (vertex count {n})")
    arcs = array.array("i")
    arcs.frombytes(data[end : end + 4 * offsets[-1]])
    if len(arcs) != offsets[-1]:
        sys.exit(f"{path}: truncated in its neighbours ({offsets[-1]} arcs expected)")
    return n, offsets, arcs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    n, off, nb = read_sg(sys.argv[1])
    comp = list(range(n))

    def link(u, v):
        a, b = comp[u], comp[v]
        while a != b:
            high, low = (a, b) if a > b else (b, a)
            up = comp[high]
            if up == low:
                return
            if up == high:
                comp[high] = low
                return
            a, b = comp[comp[high]], comp[low]

    def compress():
        for v in range(n):
            while comp[v] != comp[comp[v]]:
                comp[v] = comp[comp[v]]

    for r in range(ROUNDS):
        for u in range(n):
            if off[u] + r < off[u + 1]:
                link(u, nb[off[u] + r])
        compress()
    counts = collections.Counter(comp)
    giant, size = counts.most_common(1)[0]
    outside = [u for u in range(n) if comp[u] != giant]
    rest = sum(max(0, off[u + 1] - off[u] - ROUNDS) for u in outside)
    print(f"vertices {n}, trees after {ROUNDS} rounds {len(counts)}, largest {size}")
    print(f"final pass: {len(outside)} vertices, {rest} arcs")


if __name__ == "__main__":
    main()
