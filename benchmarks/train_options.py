"""What each training option costs against plain training, on the same counted pieces.

The corpus is counted once (``BpeTrainer.count``, not timed here) and saved as a counts
file; each configuration then trains on that file with ``train_from_counts`` and the
call's wall time is reported with its ratio to plain training. The base of the extend
runs is loaded before the clock starts (its load time is printed on its own): the timed
part is encoding every unique piece with the base (compiled) and merging.

Configurations (vocabulary ``--vocab-size``, 32768 by default):

plain
    ``BpeTrainer(vocab_size)``.
max_token_length=N
    No token longer than N bytes (``--max-token-length``, 16 by default).
tie_break=hf
    Hugging Face's tie order.
extend half
    Extend the first half of the plain model's merges to the full vocabulary (checks
    that the merges equal the plain model's).
extend cl100k_base
    Extend cl100k_base (``--cl100k PATH``) by as many merges as plain training learns.

Usage: ``python benchmarks/train_options.py mix-100M.txt [--cl100k ../shared/vocabs/cl100k_base.tiktoken]``
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

from bpetrain import BpeTrainer, Tokenizer


def timed(trainer: BpeTrainer, counts: str, **kwargs) -> tuple[float, Tokenizer]:
    started = time.perf_counter()
    tok = trainer.train_from_counts(counts, **kwargs)
    return time.perf_counter() - started, tok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--max-token-length", type=int, default=16)
    parser.add_argument("--cl100k", default=None, metavar="PATH", help="cl100k_base.tiktoken (extend run)")
    args = parser.parse_args()
    n = args.vocab_size
    with tempfile.TemporaryDirectory() as tmp:
        counts = os.path.join(tmp, "counts.npz")
        started = time.perf_counter()
        BpeTrainer(n, show_progress=False).count(args.corpus).save(counts)
        print(f"counted {args.corpus} in {time.perf_counter() - started:.1f} s "
              f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)")
        rows = []
        seconds, plain = timed(BpeTrainer(n, show_progress=False), counts)
        rows.append(("plain", seconds, len(plain.merges), "reference"))
        seconds, tok = timed(BpeTrainer(n, show_progress=False, max_token_length=args.max_token_length), counts)
        rows.append((f"max_token_length={args.max_token_length}", seconds, len(tok.merges),
                     f"longest {max(len(t) for t in tok.vocab.values())} bytes"))
        seconds, tok = timed(BpeTrainer(n, show_progress=False, tie_break="hf"), counts)
        same = sorted(tok.vocab.values()) == sorted(plain.vocab.values())
        rows.append(("tie_break=hf", seconds, len(tok.merges), "same tokens" if same else "other tokens (ties)"))
        half = Tokenizer(plain.merges[: len(plain.merges) // 2], pat_str=plain.pat_str)
        seconds, tok = timed(BpeTrainer(n, show_progress=False), counts, base=half)
        rows.append(("extend half", seconds, len(tok.merges) - len(half.merges),
                     "identical" if tok.merges == plain.merges else "DIFFERENT"))
        if args.cl100k:
            started = time.perf_counter()
            base = Tokenizer.from_file(args.cl100k, format="tiktoken", pat_str="cl100k")
            print(f"cl100k_base loaded as a Tokenizer in {time.perf_counter() - started:.1f} s (not timed below)")
            trainer = BpeTrainer(100256 + len(plain.merges), show_progress=False)
            seconds, tok = timed(trainer, counts, base=base)
            rows.append(("extend cl100k_base", seconds, len(tok.merges) - len(base.merges), ""))
    print("\n| configuration | train s | / plain | merges learned | check |\n|---|---:|---:|---:|---|")
    for name, seconds, n_merges, check in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / rows[0][1]:.2f}x | {n_merges:,} | {check} |")


if __name__ == "__main__":
    main()
