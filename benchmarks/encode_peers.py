"""Encode with bpetrain, tiktoken, bpe-openai and Hugging Face tokenizers side by side.

All encoders get the same OpenAI vocabulary (``cl100k_base`` or ``o200k_base`` from
``../shared/vocabs``, or ``--vocabs DIR``) and split pattern, run in this one process,
round-robin (run ``i`` of every encoder before run ``i + 1`` of any), and must return
exactly bpetrain's token ids before their times count. Reported: the median wall time
of the runs, input MB/s, and the time as a multiple of bpetrain's.

Modes:

docs
    The file cut into documents of about ``--doc-bytes`` bytes (1000; cut on character
    boundaries), each encoded by its own call, on one thread.
whole
    The whole file as one text, one call.
threads
    The documents of ``docs`` as one batch on ``--threads`` threads (2): bpetrain's and
    tiktoken's ``encode_ordinary_batch``, a thread pool over bpe-openai's ``encode``,
    Hugging Face's ``encode_batch`` with ``RAYON_NUM_THREADS``.
worst
    One text that pre-tokenization cannot split, ``--worst-sizes`` bytes long: ``a``
    repeated, and random lower-case letters.

Peers: bpe-openai is its Rust tokenizer (``bpe_openai._bindings``) with the vocabulary
it bundles (the same files; the ids check proves it). Hugging Face gets a byte-level BPE
model built from the ranks: every split of a token into two tokens is a merge, ordered
by the joined token's rank (as tiktoken's rule orders them), and the pattern with
``\\p{N}{1,3}`` for cl100k's ``\\p{N}{1,3}+`` (Oniguruma reads the latter differently).

Run from the repository (after ``pip install '.[bench]'`` or an in-place build)::

    PYTHONPATH=. python benchmarks/encode_peers.py /work/corpora/mix-10M.txt --repeat 5
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

ENCODERS = ("bpetrain", "tiktoken", "bpe-openai", "tokenizers")
MODES = ("docs", "whole", "threads", "worst")
VOCABS = Path(os.environ.get("BPETRAIN_VOCABS", Path(__file__).resolve().parents[2] / "shared" / "vocabs"))


def byte_level_alphabet() -> dict[int, str]:
    """GPT-2's byte -> printable character map (Hugging Face's ``ByteLevel``): printable
    Latin-1 bytes stand for themselves, the others for 256, 257, ... in byte order."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet = {b: chr(b) for b in kept}
    for n, b in enumerate(b for b in range(256) if b not in alphabet):
        alphabet[b] = chr(256 + n)
    return alphabet


def tokenizers_from_ranks(mergeable_ranks: dict[bytes, int], pat_str: str):
    """A Hugging Face byte-level BPE tokenizer that encodes as tiktoken does (see the module docstring)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    alphabet = byte_level_alphabet()

    def spell(token: bytes) -> str:
        return "".join(alphabet[b] for b in token)

    merges = []
    for token, rank in sorted(mergeable_ranks.items(), key=lambda item: item[1]):
        for k in range(1, len(token)):
            left, right = token[:k], token[k:]
            if left in mergeable_ranks and right in mergeable_ranks:
                merges.append((rank, mergeable_ranks[left], (spell(left), spell(right))))
    merges.sort()
    vocab = {spell(token): rank for token, rank in mergeable_ranks.items()}
    tokenizer = Tokenizer(models.BPE(vocab, [pair for _, _, pair in merges], ignore_merges=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pat_str.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    return tokenizer


def load_encoders(vocab: str, names, n_threads: int) -> dict:
    """name -> (encode one text -> list of ids, encode a list of texts on ``n_threads`` threads)."""
    from bpetrain import PATTERNS, load_tiktoken

    path = VOCABS / f"{vocab}.tiktoken"
    pat_str = PATTERNS[vocab.split("_")[0]]
    ours = load_tiktoken(path, pat_str=pat_str)
    encoders = {}
    for name in names:
        if name == "bpetrain":
            encoders[name] = (ours.encode_ordinary, lambda docs: ours.encode_ordinary_batch(docs, num_threads=n_threads))
        elif name == "tiktoken":
            import tiktoken

            tk = tiktoken.Encoding(vocab, pat_str=pat_str, mergeable_ranks=ours.mergeable_ranks, special_tokens={})
            encoders[name] = (tk.encode_ordinary, lambda docs, tk=tk: tk.encode_ordinary_batch(docs, num_threads=n_threads))
        elif name == "bpe-openai":
            from bpe_openai import _bindings

            bo = _bindings.tokenizer_for_encoding(vocab)

            def batch(docs, bo=bo):
                with ThreadPoolExecutor(n_threads) as pool:
                    return list(pool.map(bo.encode, docs))

            encoders[name] = (bo.encode, batch)
        elif name == "tokenizers":
            hf = tokenizers_from_ranks(ours.mergeable_ranks, pat_str)
            encoders[name] = (
                lambda text, hf=hf: hf.encode(text, add_special_tokens=False).ids,
                lambda docs, hf=hf: [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)],
            )
        else:
            raise ValueError(f"unknown encoder {name!r}; choose from {', '.join(ENCODERS)}")
    return encoders


def documents(data: bytes, n_bytes: int) -> list[str]:
    """``data`` cut into pieces of about ``n_bytes`` bytes, each cut on a UTF-8 character boundary."""
    docs, start = [], 0
    while start < len(data):
        stop = min(start + n_bytes, len(data))
        while stop < len(data) and data[stop] & 0xC0 == 0x80:
            stop -= 1
        docs.append(data[start:stop].decode("utf-8"))
        start = stop
    return docs


def cases(args, data: bytes) -> list[tuple[str, str, int, object]]:
    """(mode, label, input bytes, input) for every case asked for."""
    out = []
    docs = documents(data, args.doc_bytes)
    if "docs" in args.modes:
        out.append(("docs", f"{len(docs)} docs of ~{args.doc_bytes} B", len(data), docs))
    if "whole" in args.modes:
        out.append(("whole", "one text", len(data), data.decode("utf-8")))
    if "threads" in args.modes:
        out.append(("threads", f"{len(docs)} docs, {args.threads} threads", len(data), docs))
    if "worst" in args.modes:
        for n in args.worst_sizes:
            out.append(("worst", f"'a' * {n}", n, "a" * n))
            letters = "".join(random.Random(n).choices("abcdefghijklmnopqrstuvwxyz", k=n))
            out.append(("worst", f"{n} random letters", n, letters))
    return out


def run(args) -> dict:
    data = Path(args.file).read_bytes()
    data.decode("utf-8")  # every peer takes str: the file must be UTF-8
    encoders = load_encoders(args.vocab, args.peers, args.threads)
    results = []
    for mode, label, n_bytes, payload in cases(args, data):
        calls = {}
        for name, (one, batch) in encoders.items():
            if mode == "docs":
                calls[name] = lambda one=one, docs=payload: [one(d) for d in docs]
            elif mode == "threads":
                calls[name] = lambda batch=batch, docs=payload: batch(docs)
            else:
                calls[name] = lambda one=one, text=payload: one(text)
        expected = calls["bpetrain"]()
        same = {name: (call() == expected) for name, call in calls.items()}
        times = {name: [] for name in calls}
        for _ in range(args.repeat):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
        base = statistics.median(times["bpetrain"])
        for name in calls:
            median = statistics.median(times[name])
            results.append({
                "mode": mode, "case": label, "encoder": name, "n_bytes": n_bytes, "seconds": median,
                "mb_per_s": n_bytes / median / 1e6, "vs_bpetrain": median / base, "ids_identical": same[name],
                "runs": times[name],
            })
            print(f"{mode:8} {label:32} {name:11} {median:9.4f} s  {n_bytes / median / 1e6:8.1f} MB/s  "
                  f"{median / base:6.2f}x  ids {'identical' if same[name] else 'DIFFER'}", file=sys.stderr)
    return {"machine": machine(args), "results": results}


def machine(args) -> dict:
    versions = {}
    for package in ("tiktoken", "bpe-openai", "tokenizers", "numpy", "regex"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "processor": platform.processor(),
        "file": args.file, "vocab": args.vocab, "repeat": args.repeat, "threads": args.threads, "versions": versions,
    }


def markdown(report: dict) -> str:
    head = report["machine"]
    lines = [
        f"- vocabulary {head['vocab']}, {head['repeat']} runs each (median), Python {head['python']}, "
        f"{head['cpu_count']} CPUs; " + ", ".join(f"{k} {v}" for k, v in head["versions"].items() if v),
        "",
        "| mode | input | encoder | median ms | MB/s | time / bpetrain's | ids |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['mode']} | {r['case']} | {r['encoder']} | {r['seconds'] * 1e3:.4g} | {r['mb_per_s']:.1f} | "
            f"{r['vs_bpetrain']:.2f}x | {'identical' if r['ids_identical'] else '**differ**'} |"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Encode with bpetrain and its peers side by side.")
    parser.add_argument("file", help="UTF-8 text to encode")
    parser.add_argument("--vocab", default="cl100k_base", choices=("cl100k_base", "o200k_base"))
    parser.add_argument("--peers", default=",".join(ENCODERS), help=f"comma-separated subset of {','.join(ENCODERS)}")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--repeat", type=int, default=5, help="runs per encoder and case (default 5)")
    parser.add_argument("--doc-bytes", type=int, default=1000, help="document size in bytes (default 1000)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the threads mode (default 2)")
    parser.add_argument("--worst-sizes", default="1000,10000,100000,1000000", help="text sizes of the worst mode")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.peers = ["bpetrain", *[p for p in args.peers.split(",") if p and p != "bpetrain"]]
    args.modes = [m for m in args.modes.split(",") if m]
    args.worst_sizes = [int(n) for n in args.worst_sizes.split(",") if n]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}; choose from {', '.join(MODES)}")
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))  # before tokenizers starts its pool
    report = run(args)
    print(markdown(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
