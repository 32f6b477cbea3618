"""Superword (SuperBPE) training against plain training: compression on held-out text,
stage 2's time and memory, and encoding with the superword tokenizer against tiktoken.

``compare``: trains a plain tokenizer of ``--vocab-size`` tokens and superword ones of the
same size for each ``--transition`` and each ``--rule`` on the corpus, and reports bytes per
token of each on held-out texts with the ids checked against tiktoken given the same ranks
and pattern; then times encoding the first held-out text with bpetrain's ``Encoding`` and
tiktoken's (median of ``--repeat``, one thread each; ``--repeat 0``: not timed).

A held-out text is ``PATH[@OFFSET][:BYTES]`` (``BYTES``, default ``--held-out-bytes``, from
byte ``OFFSET``, cut at line ends), or several joined by ``+`` (a text made of those parts,
e.g. of several kinds in the proportions of the training corpus). The rules:
``superbpe`` (the authors' current rule: :data:`bpetrain.PATTERNS` ``"superbpe"``, at most 4
words a token, no ``": "``) and ``superbpe-original`` (the paper's: ``"superbpe-original"``,
no constraints); ``--max-words-per-token`` and ``--allow-colon-space`` override the
constraints of both. Each superword tokenizer trains from the text, both stages; with
``--stage1-from-plain`` stage 1 is the plain tokenizer cut to T (``truncate``, which equals
training to T) and only stage 2 is trained (``base=``).

``stage2``: runs stage 2 alone, in this process, on a stage-1 model saved before
(``--stage1``, e.g. from ``python -m bpetrain train CORPUS --vocab-size 24576 -o s1.json``)
: ``BpeTrainer(vocab_size, superword_transition=<its size>).train(corpus, base=stage1)``
counts the stage-2 pieces, encodes them with stage 1 and merges; it prints the wall time,
the process's CPU time and its peak resident memory (``ru_maxrss``, stage-1 model load included).

Usage::

    python benchmarks/train_superword.py compare mix-100M.txt --held-out help.txt kernel-c.txt@600000000
    python benchmarks/train_superword.py compare mix-100M.txt --rule superbpe superbpe-original \
        --transition 8192 16384 --stage1-from-plain --held-out "help.txt:3900000+kernel-c.txt@600000000:4900000"
    python benchmarks/train_superword.py stage2 mix-100M.txt --stage1 s1.json
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time

from bpetrain import BpeTrainer, Tokenizer


#: Each rule's stage-2 pattern and constraints (those of the authors' code at the time).
RULES = {
    "superbpe": {"superword_pat_str": "superbpe", "max_words_per_token": 4, "forbid_colon_space": True},
    "superbpe-original": {"superword_pat_str": "superbpe-original", "max_words_per_token": None,
                          "forbid_colon_space": False},
}


def held_out_part(spec: str, n_bytes: int) -> tuple[bytes, str]:
    """``PATH[@OFFSET][:BYTES]``: up to ``BYTES`` (default ``n_bytes``) from byte ``OFFSET``
    on, cut at line ends (from the start of a file, the first line is kept), and a label."""
    spec, colon, size = spec.rpartition(":") if ":" in spec else (spec, "", "")
    path, _, offset = spec.partition("@")
    with open(path, "rb") as f:
        f.seek(int(offset or 0))
        data = f.read(int(size) if colon else n_bytes)
    start = data.find(b"\n") + 1 if offset else 0
    end = data.rfind(b"\n") + 1
    label = f"{os.path.basename(path)}" + (f" from byte {offset}" if offset else "")
    return data[start:end], label


def held_out_text(spec: str, n_bytes: int) -> tuple[str, str]:
    """A held-out text: one :func:`held_out_part`, or several joined by ``+``; and a label."""
    parts = [held_out_part(part, n_bytes) for part in spec.split("+")]
    data = b"".join(part for part, _ in parts)
    label = " + ".join(f"{label} ({len(part)} bytes)" if len(parts) > 1 else label for part, label in parts)
    return data.decode("utf-8", "replace"), label


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def compare(args) -> None:
    import tiktoken

    texts = [held_out_text(spec, args.held_out_bytes) for spec in args.held_out]
    for text, label in texts:
        print(f"held-out: {label}, {len(text.encode())} bytes")
    runs = [("plain", BpeTrainer(args.vocab_size, show_progress=False), None)]
    for rule in args.rule:
        options = {**RULES[rule], "show_progress": False}
        if args.max_words_per_token is not None:
            options["max_words_per_token"] = args.max_words_per_token or None
        if args.allow_colon_space:
            options["forbid_colon_space"] = False
        print(f"rule {rule}: {options}")
        runs += [(f"{rule} T={t}", BpeTrainer(args.vocab_size, superword_transition=t, **options), t)
                 for t in args.transition]
    plain_tokens: dict[str, int] = {}
    plain = None
    for label, trainer, transition in runs:
        base = plain.truncate(transition) if args.stage1_from_plain and transition is not None else None
        started = time.perf_counter()
        tokenizer = trainer.train(args.corpus, base=base)
        seconds = time.perf_counter() - started
        if plain is None:
            plain = tokenizer
        encoding = tokenizer.encoding()
        reference = tiktoken.Encoding("peer", pat_str=tokenizer.pat_str, mergeable_ranks=tokenizer.mergeable_ranks,
                                      special_tokens={})
        stages = ""
        if trainer.stage_stats is not None:
            first, second = trainer.stage_stats
            stages = (" (stage 1: the plain tokenizer's first merges" if first is None
                      else f" (stage 1 {first.seconds:.1f} s") + f", stage 2 {second.seconds:.1f} s)"
        print(f"{label}: trained in {seconds:.1f} s{stages}; training text {trainer.stats.bytes_per_token:.3f} "
              "bytes/token (piece bytes over tokens)")
        for text, name in texts:
            ids = encoding.encode_ordinary(text)
            same = reference.encode_ordinary(text) == ids
            plain_tokens.setdefault(name, len(ids))
            print(f"  {name}: {len(ids)} tokens, {len(text.encode()) / len(ids):.3f} bytes/token, "
                  f"{100 * (1 - len(ids) / plain_tokens[name]):.1f}% fewer than plain; ids equal tiktoken's: {same}")
        text = texts[0][0]
        n_bytes = len(text.encode())
        if label != "plain" and args.repeat:
            times = {"bpetrain": [], "tiktoken": []}
            for _ in range(args.repeat):
                for name, encode in (("bpetrain", encoding.encode_ordinary), ("tiktoken", reference.encode_ordinary)):
                    started = time.perf_counter()
                    encode(text)
                    times[name].append(time.perf_counter() - started)
            ours, theirs = statistics.median(times["bpetrain"]), statistics.median(times["tiktoken"])
            print(f"  encoding the held-out text (median of {args.repeat}): bpetrain {ours:.3f} s "
                  f"({n_bytes / ours / 1e6:.1f} MB/s), tiktoken {theirs:.3f} s ({n_bytes / theirs / 1e6:.1f} MB/s), "
                  f"{theirs / ours:.1f}x")


def stage2(args) -> None:
    base = Tokenizer.load(args.stage1)
    size = 256 + len(base.merges)
    trainer = BpeTrainer(args.vocab_size, superword_transition=size, show_progress=False)
    started = time.perf_counter()
    tokenizer = trainer.train(args.corpus, base=base)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"stage 2 on {os.path.basename(args.corpus)}: {size} -> {256 + len(tokenizer.merges)} tokens, "
          f"{trainer.stats.n_pieces} unique pieces, {seconds:.1f} s wall, "
          f"{usage.ru_utime + usage.ru_stime:.1f} s CPU (the whole process), peak RSS {peak_rss_gib():.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("compare", "stage2"))
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--transition", type=int, nargs="+", default=[24576])
    parser.add_argument("--held-out", nargs="+", default=None, metavar="PATH[@OFFSET][:BYTES][+...]",
                        help="compare: held-out texts, each BYTES from byte OFFSET (0) of PATH, or parts joined "
                             "by + (the first text is timed)")
    parser.add_argument("--held-out-bytes", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="compare: timed encodings (0: none)")
    parser.add_argument("--rule", nargs="+", choices=tuple(RULES), default=["superbpe"],
                        help="compare: the stage-2 rules, each with its constraints")
    parser.add_argument("--max-words-per-token", type=int, default=None, help="every rule's limit; 0: no limit")
    parser.add_argument("--allow-colon-space", action="store_true", help="no rule refuses ': '")
    parser.add_argument("--stage1-from-plain", action="store_true",
                        help="compare: stage 1 is the plain tokenizer cut to T; only stage 2 trains")
    parser.add_argument("--stage1", default=None, help="stage2: the stage-1 model file")
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared machine)")
    if args.what == "compare":
        if args.held_out is None:
            parser.error("compare needs --held-out")
        compare(args)
    else:
        if args.stage1 is None:
            parser.error("stage2 needs --stage1")
        stage2(args)


if __name__ == "__main__":
    main()
