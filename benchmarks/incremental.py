"""Appendable and interval counting against counting from scratch (the rust-gems ``bpe`` crate's operations).

For each vocabulary (``cl100k_base``, ``o200k_base`` from ``../shared/vocabs`` or
``BPETRAIN_VOCABS``) and its split pattern, and for raw mode (``pat_str=None``), on the
first ``--chars`` characters of a text file:

appending
    The text pushed into ``Encoding.appendable()`` one character per push and in pushes of
    64 characters; the total time as a multiple of one ``count`` of the whole text, and
    the same for re-counting the text after each push (what one does without an
    appendable encoder: quadratic, so measured on a prefix and scaled by n^2).
intervals
    ``Encoding.interval_counter(text)`` built once (its time reported), then
    ``count(start, end)`` of random slices of 10, 100, 1000 and 10000 characters, against
    ``enc.count(text[start:end])`` of the same slices; every answer is checked first.

Medians of ``--repeat`` runs. Run from the repository after an in-place build::

    PYTHONPATH=. python benchmarks/incremental.py .corpora/mix-10M.txt --chars 200000
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

VOCABS = Path(os.environ.get("BPETRAIN_VOCABS", Path(__file__).resolve().parents[2] / "shared" / "vocabs"))
PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


def median_time(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def push_all(enc, text: str, size: int) -> int:
    app = enc.appendable()
    for i in range(0, len(text), size):
        app.push(text[i : i + size])
    return app.count


def appending(enc, text: str, repeat: int) -> list[str]:
    whole = median_time(lambda: enc.count(text), repeat)
    expected = enc.count(text)
    rows = []
    for size in (1, 64):
        if push_all(enc, text, size) != expected:
            raise SystemExit(f"appendable count differs from enc.count with pushes of {size}")
        seconds = median_time(lambda size=size: push_all(enc, text, size), repeat)
        prefix = text[: min(len(text), 20_000 if size == 1 else 200_000)]  # re-counting is quadratic
        naive = median_time(lambda prefix=prefix, size=size: [enc.count(prefix[:i]) for i in range(size, len(prefix) + size, size)], 1)
        naive *= (len(text) / len(prefix)) ** 2
        rows.append(f"| appending | {size} char | {seconds * 1e3:.1f} ms | {seconds / whole:.1f}x | "
                    f"{naive:.1f} s (re-count after each push, scaled from {len(prefix):,} chars) | {naive / seconds:,.0f}x |")
    rows.insert(0, f"| one `count` of the whole text | | {whole * 1e3:.2f} ms | 1.0x | | |")
    return rows


def intervals(enc, text: str, repeat: int, n_slices: int = 2000) -> list[str]:
    built = median_time(lambda: enc.interval_counter(text), repeat)
    counter = enc.interval_counter(text)
    rows = [f"| interval counter built | | {built * 1e3:.1f} ms | | | |"]
    rng = random.Random(0)
    for length in (10, 100, 1000, 10000):
        slices = [(s, s + length) for s in (rng.randrange(len(text) - length) for _ in range(n_slices))]
        for start, end in slices:
            if counter.count(start, end) != enc.count(text[start:end]):
                raise SystemExit(f"interval count differs from enc.count on text[{start}:{end}]")
        fast = median_time(lambda slices=slices: [counter.count(s, e) for s, e in slices], repeat) / n_slices
        slow = median_time(lambda slices=slices: [enc.count(text[s:e]) for s, e in slices], repeat) / n_slices
        rows.append(f"| interval count | {length} chars | {fast * 1e6:.2f} us | | {slow * 1e6:.2f} us "
                    f"(`enc.count` of the slice) | {slow / fast:.1f}x |")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--chars", type=int, default=200_000, help="characters of the file to use (default 200000)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--vocab", action="append", choices=sorted(PATTERN), help="default: both")
    args = parser.parse_args(argv)
    from bpetrain import Encoding
    from bpetrain.formats.tiktoken import read_tiktoken

    text = Path(args.file).read_text(encoding="utf-8")[: args.chars]
    for vocab in args.vocab or sorted(PATTERN):
        ranks = read_tiktoken(VOCABS / f"{vocab}.tiktoken")
        for pat_str in (PATTERN[vocab], None):
            enc = Encoding(vocab, pat_str=pat_str, mergeable_ranks=ranks)
            print(f"\n### {vocab}, pat_str={'none (raw)' if pat_str is None else pat_str}, "
                  f"{len(text):,} characters of {Path(args.file).name}\n")
            print("| operation | unit | bpetrain | vs one count | from scratch | speed-up |")
            print("|---|---|---:|---:|---:|---:|")
            for row in appending(enc, text, args.repeat) + intervals(enc, text, args.repeat):
                print(row)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
