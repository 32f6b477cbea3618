"""The cost of one write to the on-disk cache when its folder already holds many files.

A fresh folder is filled with ``--files`` synthetic entries (``arrays-*.bin`` of 1 KB, as
compiled split patterns are kept, with a spread of modification times), then, in a fresh
process whose ``BPETRAIN_CACHE_DIR`` is that folder, ``--writes`` new compiled-pattern
entries are kept one after another (``bpetrain.splitting._charsets.store_arrays``, 1 KB
each). Reported: the first write of the process (which may run the cache's eviction pass)
and the median and 90th percentile of the others, in milliseconds; and the folder's file
count after. ``--bound`` sets ``BPETRAIN_CACHE_MAX_BYTES`` for the run (default: unset, the
library's default bound).

    python benchmarks/cache_write.py [--files 40000] [--writes 200] [--bound none]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import os, statistics, sys, time
from bpetrain.splitting._charsets import store_arrays
n = int(sys.argv[1])
times = []
for i in range(n):
    t = time.perf_counter()
    store_arrays(f"benchmark entry {i}", {"data": os.urandom(1024)})
    times.append((time.perf_counter() - t) * 1e3)
rest = sorted(times[1:])
print(f"first write {times[0]:.2f} ms; others: median {statistics.median(rest):.3f} ms, "
      f"p90 {rest[int(0.9 * len(rest))]:.3f} ms ({n - 1} writes)")
"""


def fill(folder: str, n_files: int) -> None:
    now = time.time()
    for i in range(n_files):
        path = os.path.join(folder, f"arrays-{i:032x}.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(1024))
        used = now - 86400 * 30 * i / n_files  # the last month
        os.utime(path, (used, used))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=40_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--bound", default=None, help="BPETRAIN_CACHE_MAX_BYTES for the run")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bpetrain-cache-bench-")
    try:
        fill(folder, args.files)
        env = {**os.environ, "BPETRAIN_CACHE_DIR": folder}
        if args.bound is not None:
            env["BPETRAIN_CACHE_MAX_BYTES"] = args.bound
        run = subprocess.run([sys.executable, "-c", CHILD, str(args.writes)], env=env, check=True,
                             capture_output=True, text=True)
        print(f"{args.files:,} files before: {run.stdout.strip()}; {len(os.listdir(folder)):,} files after")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
