"""Start-up time: ``import bpetrain``, ``bpetrain --help`` and the first encode, in fresh
processes, beside ``import tiktoken``.

Each case runs ``--repeat`` times (11) in a new interpreter, round-robin; reported are the
median wall time of the whole process and that time minus an empty interpreter's
(``python -c pass``), in milliseconds. The issue's target: ``import bpetrain`` under
150 ms. "first encode" builds the named pattern's character tables from the on-disk
cache (``bpetrain.splitting._charsets``), which the first case fills; ``--cold-cache`` points
``BPETRAIN_CACHE_DIR`` at an empty folder for every run instead.

    python benchmarks/import_time.py [--repeat 11] [--cold-cache]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import bpetrain": [sys.executable, "-c", "import bpetrain"],
    "bpetrain --help": [sys.executable, "-m", "bpetrain", "--help"],
    "from bpetrain import Encoding": [sys.executable, "-c", "from bpetrain import Encoding"],
    "first encode (cl100k pattern)": [
        sys.executable, "-c",
        (
            "import bpetrain\n"
            "e = bpetrain.Encoding('b', pat_str=bpetrain.PATTERNS['cl100k'],"
            " mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})\n"
            "e.encode('hello world')"
        ),
    ],
    "import tiktoken": [sys.executable, "-c", "import tiktoken"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--cold-cache", action="store_true", help="an empty character-set cache for every run")
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.repeat):
        for name, command in CASES.items():
            env = dict(os.environ)
            cache = tempfile.mkdtemp() if args.cold_cache else None
            if cache:
                env["BPETRAIN_CACHE_DIR"] = cache
            started = time.perf_counter()
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - started)
            if cache:
                shutil.rmtree(cache)
    empty = statistics.median(times["python -c pass"])
    print("| case | median ms | minus empty interpreter |\n|---|---:|---:|")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"| {name} | {median * 1e3:.0f} | {(median - empty) * 1e3:.0f} |")


if __name__ == "__main__":
    main()
