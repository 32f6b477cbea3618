"""Time importing OpenAI's vocabularies and exporting them again.

For each rank file (cl100k_base, o200k_base) this times, as the median of ``--repeat``
runs: reading the rank file, recovering the merges (``formats.tiktoken.merges_from_ranks``
and the pure-Python oracle ``_reference.merges_from_ranks``, whose merges must agree),
``Tokenizer.from_file``, the export check (``unreachable_tokens``), and a
``tokenizer.json`` export and import. It prints a markdown table.

Run it from the repository (or with bpetrain installed)::

    PYTHONPATH=. python benchmarks/import_vocabs.py --vocabs ../shared/vocabs --repeat 3
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

from bpetrain import Tokenizer
from bpetrain._reference import merges_from_ranks as reference_merges_from_ranks
from bpetrain.formats.tiktoken import merges_from_ranks, read_tiktoken

VOCABS = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


def median_seconds(repeat: int, call):
    """Median wall time of ``repeat`` calls, and the last call's result."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def measure(path: str, pattern: str, repeat: int) -> dict:
    row = {}
    row["read_tiktoken"], ranks = median_seconds(repeat, lambda: read_tiktoken(path))
    row["merges_from_ranks"], (merges, _) = median_seconds(repeat, lambda: merges_from_ranks(ranks))
    # the oracle wants the bytes at ids 0..255 in byte order
    tokens = sorted(ranks, key=ranks.get)
    canonical = {bytes([b]): b for b in range(256)} | {t: i for i, t in enumerate(tokens) if i >= 256}
    row["reference"], expected = median_seconds(repeat, lambda: reference_merges_from_ranks(canonical.items()))
    if merges_from_ranks(canonical)[0] != expected:
        raise SystemExit(f"{path}: merges_from_ranks and the reference disagree")
    row["from_file"], tok = median_seconds(repeat, lambda: Tokenizer.from_file(path, pat_str=pattern))
    row["unreachable_tokens"], unreachable = median_seconds(repeat, tok.unreachable_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "tokenizer.json")
        row["export_hf"], _ = median_seconds(repeat, lambda: tok.export(out, format="hf"))
        row["import_hf"], back = median_seconds(repeat, lambda: Tokenizer.from_file(out))
    if back != tok or tok.merges != merges or unreachable:
        raise SystemExit(f"{path}: the hf round trip changed the tokenizer, or tokens are unreachable")
    row["n_tokens"] = len(ranks)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabs", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "vocabs"),
                        help="folder holding cl100k_base.tiktoken and o200k_base.tiktoken")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; median of {args.repeat} runs, seconds\n")
    columns = ["read_tiktoken", "merges_from_ranks", "reference", "from_file", "unreachable_tokens",
               "export_hf", "import_hf"]
    print("| vocab | tokens | " + " | ".join(columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for name, pattern in VOCABS.items():
        row = measure(os.path.join(args.vocabs, f"{name}.tiktoken"), pattern, args.repeat)
        print(f"| {name} | {row['n_tokens']:,} | " + " | ".join(f"{row[c]:.2f}" for c in columns) + " |")


if __name__ == "__main__":
    main()
