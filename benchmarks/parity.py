"""Parity-aware BPE against plain BPE on text in five languages: fairness, total cost, time.

The text is that of ``fortunes.txt`` in the benchmark corpora: the Debian ``fortunes``
packages (English, and German, Spanish, Russian and Chinese from ``fortunes-de``,
``-es``, ``-ru``, ``-zh``), read per language from where they are installed
(``--fortunes``, ``/usr/share/games/fortunes`` by default; files that are not UTF-8 are
skipped, as the corpus builder skips them). Each fortune (text between ``%`` lines) is
one document. Every tenth fortune of each language is held out for evaluation, every
tenth from the fifth on makes the dev set, cut to the same number of bytes in every
language (there is no parallel text, so equal bytes stand in for equal content: the
language whose dev set takes the most tokens is the one with the fewest bytes per
token); the rest is the training text.

Models, all of ``--vocab-size`` tokens with the cl100k split pattern:

plain
    ``BpeTrainer`` on all training text together.
parity base / parity window
    ``ParityBpeTrainer`` with the dev set (``variant="base"`` / ``"window"``).
parity ratio=1
    ``ParityBpeTrainer(ratio=[1] * 5)``: equal compression on the training text.

Reported on the held-out text: bytes per token per language, the worst language's
over the best's (1 is parity), and the total tokens of all held-out text; and the
training time of each (median of ``--repeat`` runs, counting included).

Usage: ``python benchmarks/parity.py [--vocab-size 8192] [--repeat 3]``
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from bpetrain import BpeTrainer, ParityBpeTrainer

#: Which language each top-level fortune file is in (files in de/, es/, ru/ are named by their folder).
CHINESE = ("chinese", "song100", "tang300")


def fortunes_by_language(root: str) -> dict[str, list[str]]:
    """Fortunes per language (en, de, es, ru, zh), in the corpus builder's file order."""
    languages: dict[str, list[str]] = {"en": [], "de": [], "es": [], "ru": [], "zh": []}
    paths = []
    for folder, _, files in os.walk(root):
        paths += [os.path.join(folder, f) for f in files if not f.endswith((".dat", ".u8"))]
    for path in sorted(paths):
        if os.path.islink(path):
            continue
        relative = os.path.relpath(path, root)
        top = relative.split(os.sep)[0]
        language = top if top in ("de", "es", "ru") else "zh" if relative in CHINESE else "en"
        if top == "off":
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        languages[language] += [f.strip("\n") + "\n" for f in text.split("\n%\n") if f.strip()]
    return languages


def split(fortunes: list[str], dev_bytes: int | None = None) -> tuple[list[str], list[str], list[str]]:
    """Training, held-out and dev fortunes (the dev set cut to ``dev_bytes``)."""
    held = fortunes[::10]
    dev = fortunes[5::10]
    train = [f for i, f in enumerate(fortunes) if i % 10 not in (0, 5)]
    if dev_bytes is not None:
        kept, n = [], 0
        for f in dev:
            if n >= dev_bytes:
                break
            kept.append(f)
            n += len(f.encode())
        dev = kept
    return train, held, dev


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fortunes", default="/usr/share/games/fortunes")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    by_language = fortunes_by_language(args.fortunes)
    names = list(by_language)
    dev_bytes = min(sum(len(f.encode()) for f in split(by_language[n])[2]) for n in names)
    parts = {n: split(by_language[n], dev_bytes) for n in names}
    train = {n: parts[n][0] for n in names}
    held = {n: "".join(parts[n][1]) for n in names}
    dev = {n: parts[n][2] for n in names}
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared: timings are noisy)")
    print("training MB: " + ", ".join(f"{n} {sum(len(f.encode()) for f in train[n]) / 1e6:.2f}" for n in names)
          + "; held-out MB: " + ", ".join(f"{n} {len(held[n].encode()) / 1e6:.2f}" for n in names)
          + f"; dev set: {dev_bytes / 1e3:.0f} kB per language")
    runs = {
        "plain": lambda: BpeTrainer(args.vocab_size, show_progress=False).train_from_iterator(
            [f for n in names for f in train[n]]),
        "parity base": lambda: ParityBpeTrainer(args.vocab_size, show_progress=False).train_from_iterator(
            train, dev=dev),
        "parity window": lambda: ParityBpeTrainer(args.vocab_size, variant="window", show_progress=False
                                                  ).train_from_iterator(train, dev=dev),
        "parity ratio=1": lambda: ParityBpeTrainer(args.vocab_size, ratio=[1.0] * len(names), show_progress=False
                                                   ).train_from_iterator(train),
    }
    print(f"\nvocab_size {args.vocab_size}; held-out bytes per token, worst / best language, total held-out "
          f"tokens, training seconds (median of {args.repeat})")
    print(f"{'model':<16}" + "".join(f"{n:>8}" for n in names) + f"{'worst/best':>12}{'tokens':>12}{'seconds':>10}")
    for label, run in runs.items():
        seconds = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            tok = run()
            seconds.append(time.perf_counter() - started)
        bpt = {n: len(held[n].encode()) / len(tok.encode_ordinary(held[n])) for n in names}
        total = sum(len(tok.encode_ordinary(held[n])) for n in names)
        print(f"{label:<16}" + "".join(f"{bpt[n]:>8.3f}" for n in names)
              + f"{max(bpt.values()) / min(bpt.values()):>12.3f}{total:>12,}{statistics.median(seconds):>10.2f}")


if __name__ == "__main__":
    main()
