"""Encode with bpetrain, tiktoken, bpe-openai, Hugging Face tokenizers, gigatoken and toktok side by side.

All encoders get the same OpenAI vocabulary (``cl100k_base`` or ``o200k_base`` from
``../shared/vocabs``, or the folder ``BPETRAIN_VOCABS``) and split pattern, run in this
one process, round-robin (run ``i`` of every encoder before run ``i + 1`` of any), and
are checked against bpetrain's token ids before their times count. A run of a case whose
call takes under 20 ms is the mean of several calls (up to 200, about 20 ms of
bpetrain's; a cache is emptied before each call, untimed). Reported: the median
wall time of the runs, input MB/s, the time as a multiple of bpetrain's, and whether the
ids were identical. "paired" is the median over the rounds of each round's time as a
multiple of bpetrain's time in the same round: the machine drifts less within a round
than across all of them.

Patterns: ``--pattern NAME|REGEX`` (a name of ``splitting.SPLIT_PATTERNS``: gpt2, cl100k,
o200k, minbpe, nanochat, llama3; ``all``; or a regex; repeat the option for
several) encodes with the vocabulary's ranks and that ``pat_str``; the default is the
vocabulary's own pattern. bpetrain (``bpetrain.Encoding``) and tiktoken
(``tiktoken.Encoding``) take any pattern. The other peers split with a fixed pattern, so
they run only with the vocabulary's own; for every other pattern the table says so.

Modes:

docs
    The file cut into documents of about ``--doc-bytes`` bytes (1000; cut on character
    boundaries), each encoded by its own call, on one thread.
whole
    The whole file as one text, one call.
batch
    The documents of ``docs`` as one batch call on one thread: bpetrain's and tiktoken's
    ``encode_ordinary_batch(num_threads=1)``, gigatoken's ``encode_batch_list(parallel=False)``,
    toktok's ``encode_batch_to_numpy(threads=1)`` made into lists, a loop over
    bpe-openai's ``encode``, Hugging Face's ``encode_batch`` with ``RAYON_NUM_THREADS=1``
    (set only when the run has no threads mode: Rayon reads it once).
threads
    The same batch on ``--threads`` threads (2): the calls above with that many threads,
    a thread pool over bpe-openai's ``encode``, gigatoken's ``parallel=True`` (its Rayon
    pool has ``RAYON_NUM_THREADS`` threads).
worst
    One text that pre-tokenization cannot split, ``--worst-sizes`` bytes long: ``a``
    repeated, and random lower-case letters.

Peers: bpe-openai is its Rust tokenizer (``bpe_openai._bindings``) with the vocabulary
it bundles (the same files; the ids check proves it). Hugging Face gets a byte-level BPE
model built from the ranks: every split of a token into two tokens is a merge, ordered
by the joined token's rank (as tiktoken's rule orders them), and the pattern with
``\\p{N}{1,3}`` for cl100k's ``\\p{N}{1,3}+`` (Oniguruma reads the latter differently).
gigatoken reads the same rank file (``gigatoken.Tokenizer.from_tiktoken(path,
pretokenizer="cl100k" | "o200k", special_tokens={})``; ``encode`` gives a numpy array,
turned into a list as the others return). toktok has the vocabularies compiled in
(``toktok._encoding("cl100k_base")``, the full tokenizer its documentation points to;
its public API only counts tokens). Neither downloads anything. Encoders whose module is
not installed are left out of the default ``--peers``.

Caches: bpetrain, gigatoken and toktok keep the pieces they have encoded (per instance),
Hugging Face's BPE model keeps words. Every run here encodes the same input, so before
every timed run each of them starts with an empty cache (``Encoding.clear_cache()``; a
new gigatoken or toktok instance; Hugging Face's ``model._clear_cache()``): no run reuses
what the ids check or an earlier run cached. Then every encoder, tiktoken and bpe-openai
too, encodes the same 10 KB of other text (untimed), so that each starts with its tables
touched, as a new instance has just touched its own, rather than as the encoder that ran
before it left them.
Within a run a cache still pays off on the pieces that repeat, as it would on a corpus
encoded once. tiktoken and bpe-openai keep nothing between calls. ``--warm-caches``
keeps the caches from run to run instead (what encoding the same text again costs);
``--gigatoken-warm`` adds one gigatoken instance kept warm beside the fresh ones,
labelled "gigatoken (warm)".

Run from the repository (after ``pip install '.[bench]'`` or an in-place build)::

    PYTHONPATH=. python benchmarks/encode_peers.py .corpora/mix-10M.txt --repeat 5
    python benchmarks/encode_peers.py mix-10M.txt --vocab cl100k_base --pattern all --modes docs --repeat 5
    python benchmarks/encode_peers.py mix-10M.txt --vocab o200k_base --modes docs --repeat 5
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
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
from typing import Callable, NamedTuple

from splitting import SPLIT_PATTERNS, resolve_all
from texts import stdlib_text

ENCODERS = ("bpetrain", "tiktoken", "bpe-openai", "tokenizers", "gigatoken", "toktok")
#: encoder -> the module it needs
MODULES = {"bpetrain": "bpetrain", "tiktoken": "tiktoken", "bpe-openai": "bpe_openai", "tokenizers": "tokenizers",
           "gigatoken": "gigatoken", "toktok": "toktok"}
#: Encoders that split with the vocabulary's own pattern only.
FIXED_PATTERN = ("bpe-openai", "tokenizers", "gigatoken", "toktok")
MODES = ("docs", "batch", "threads", "whole", "worst")
VOCABS = Path(os.environ.get("BPETRAIN_VOCABS", Path(__file__).resolve().parents[2] / "shared" / "vocabs"))
#: vocabulary -> the name of its own pattern in SPLIT_PATTERNS
OWN_PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


class Encoder(NamedTuple):
    """One encoder's calls: ``one(text) -> ids``; ``batch(texts, n_threads) -> list of
    ids``; ``renew()`` empties what the encoder keeps from earlier calls (``None`` if it
    keeps nothing), called before every timed run."""

    one: Callable[[str], list[int]]
    batch: Callable[[list[str], int], list[list[int]]]
    renew: Callable[[], None] | None = None


@functools.lru_cache(maxsize=1)
def _warm_up_text() -> str:
    """The 10 KB of other text every encoder is warmed on before a timed run (the standard
    library's sources), read once for all of them."""
    return stdlib_text(10_000)


def _emptied(one, batch, clear=None) -> Encoder:
    """An :class:`Encoder` whose ``renew`` empties its cache (``clear``, if it keeps one)
    and encodes the same 10 KB of other text as :func:`_renewable`'s new instances: every
    encoder starts a timed run with nothing of the input cached and its tables touched,
    not left cold by the encoders that ran before it."""
    warm_up = _warm_up_text()

    def renew():
        if clear is not None:
            clear()
        one(warm_up)

    return Encoder(one, batch, renew)


def _renewable(build, one, batch) -> Encoder:
    """An :class:`Encoder` over a tokenizer that caches the pieces it has seen, per
    instance, with no call to empty the cache (gigatoken, toktok): ``renew`` builds a new
    instance and warms it on other text (10 KB of the standard library's sources), so a
    timed run neither reuses what the ids check or an earlier run over the same input
    cached nor pays for first touching the tables."""
    current = {}
    warm_up = _warm_up_text()

    def renew():
        current.clear()  # free the old instance first: the warm-up then pays for any memory it gave back
        tokenizer = build()
        one(tokenizer, warm_up)
        current["tokenizer"] = tokenizer

    renew()
    return Encoder(lambda text: one(current["tokenizer"], text),
                   lambda docs, n_threads: batch(current["tokenizer"], docs, n_threads), renew)


def installed(name: str) -> bool:
    """Whether the module encoder ``name`` needs can be imported."""
    return importlib.util.find_spec(MODULES[name]) is not None


def applies(name: str, vocab: str, pat_str: str) -> bool:
    """Whether encoder ``name`` can encode with ``vocab``'s ranks and ``pat_str``."""
    return name not in FIXED_PATTERN or pat_str == SPLIT_PATTERNS[OWN_PATTERN[vocab]]


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


@functools.lru_cache(maxsize=2)
def _ranks(vocab: str) -> dict[bytes, int]:
    from bpetrain.formats.tiktoken import read_tiktoken

    return read_tiktoken(VOCABS / f"{vocab}.tiktoken")


def load_encoders(vocab: str, names, pat_str: str | None = None, with_warm: bool = False) -> dict[str, Encoder]:
    """name -> :class:`Encoder`; with ``with_warm``, also "gigatoken (warm)", one instance
    kept from run to run (labelled: it has seen the text before).

    ``pat_str``: the split pattern (default: the vocabulary's own). The encoders of
    ``names`` that cannot use it (:func:`applies`) are left out.
    """
    from bpetrain import Encoding

    path = VOCABS / f"{vocab}.tiktoken"
    pat_str = SPLIT_PATTERNS[OWN_PATTERN[vocab]] if pat_str is None else pat_str
    ours = Encoding(vocab, pat_str=pat_str, mergeable_ranks=_ranks(vocab), special_tokens={})
    encoders = {}
    for name in names:
        if not applies(name, vocab, pat_str):
            continue
        if name == "bpetrain":
            # its piece caches are emptied before every timed run, as the peers get new instances
            encoders[name] = _emptied(
                ours.encode_ordinary, lambda docs, n: ours.encode_ordinary_batch(docs, num_threads=n), ours.clear_cache
            )
        elif name == "tiktoken":
            import tiktoken

            tk = tiktoken.Encoding(vocab, pat_str=pat_str, mergeable_ranks=ours.mergeable_ranks, special_tokens={})
            encoders[name] = _emptied(tk.encode_ordinary, lambda docs, n, tk=tk: tk.encode_ordinary_batch(docs, num_threads=n))
        elif name == "bpe-openai":
            from bpe_openai import _bindings

            bo = _bindings.tokenizer_for_encoding(vocab)

            def batch(docs, n, bo=bo):
                if n == 1:
                    return [bo.encode(d) for d in docs]
                with ThreadPoolExecutor(n) as pool:
                    return list(pool.map(bo.encode, docs))

            encoders[name] = _emptied(bo.encode, batch)
        elif name == "tokenizers":
            hf = tokenizers_from_ranks(ours.mergeable_ranks, pat_str)
            encoders[name] = _emptied(
                lambda text, hf=hf: hf.encode(text, add_special_tokens=False).ids,
                lambda docs, n, hf=hf: [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)],
                hf.model._clear_cache,  # its BPE model caches words
            )
        elif name == "gigatoken":
            import gigatoken

            def build(vocab=vocab):
                return gigatoken.Tokenizer.from_tiktoken(path, pretokenizer=OWN_PATTERN[vocab], special_tokens={})

            calls = (
                lambda gt, text: gt.encode(text).tolist(),
                # its thread pool has RAYON_NUM_THREADS threads
                lambda gt, docs, n: gt.encode_batch_list(docs, parallel=n > 1),
            )
            encoders[name] = _renewable(build, *calls)
            if with_warm:  # the same instance from run to run: its piece cache has seen the text
                warm = _renewable(build, *calls)
                encoders["gigatoken (warm)"] = warm._replace(renew=None)
        elif name == "toktok":
            from toktok import _toktok

            def batch(tt, docs, n):
                ids, offsets = tt.encode_batch_to_numpy(docs, threads=n)
                ids, offsets = ids.tolist(), offsets.tolist()
                return [ids[a:b] for a, b in zip(offsets[:-1], offsets[1:])]

            # the class toktok._encoding(vocab) returns, without its cache of instances
            encoders[name] = _renewable(lambda: _toktok.Tokenizer(vocab), lambda tt, text: tt.encode_ordinary(text), batch)
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
    if "batch" in args.modes:
        out.append(("batch", f"{len(docs)} docs, 1 thread", len(data), docs))
    if "threads" in args.modes:
        out.append(("threads", f"{len(docs)} docs, {args.threads} threads", len(data), docs))
    if "worst" in args.modes:
        for n in args.worst_sizes:
            out.append(("worst", f"'a' * {n}", n, "a" * n))
            letters = "".join(random.Random(n).choices("abcdefghijklmnopqrstuvwxyz", k=n))
            out.append(("worst", f"{n} random letters", n, letters))
    return out


def run(args) -> dict:
    with open(args.file, "rb") as f:
        data = f.read(args.max_bytes + 3) if args.max_bytes else f.read()
    if args.max_bytes:  # whole characters only
        stop = min(args.max_bytes, len(data))
        while stop < len(data) and data[stop] & 0xC0 == 0x80:
            stop -= 1
        data = data[:stop]
    data.decode("utf-8")  # every peer takes str: the file must be UTF-8
    results, left_out = [], {}
    for pattern, pat_str in args.patterns:
        encoders = load_encoders(args.vocab, args.peers, pat_str, with_warm=args.gigatoken_warm)
        left_out[pattern] = [name for name in args.peers if name not in encoders]
        results += run_pattern(args, data, pattern, encoders)
    return {"machine": machine(args), "results": results, "left_out": left_out}


def run_pattern(args, data: bytes, pattern: str, encoders: dict) -> list[dict]:
    results = []
    for mode, label, n_bytes, payload in cases(args, data):
        calls = {}
        for name, (one, batch, _) in encoders.items():
            if mode == "docs":
                calls[name] = lambda one=one, docs=payload: [one(d) for d in docs]
            elif mode in ("batch", "threads"):
                n = 1 if mode == "batch" else args.threads
                calls[name] = lambda batch=batch, docs=payload, n=n: batch(docs, n)
            else:
                calls[name] = lambda one=one, text=payload: one(text)
        start = time.perf_counter()
        expected = calls["bpetrain"]()
        # A run of a short case is several calls (about 20 ms of bpetrain's), so that one
        # call's cold caches and the clock's resolution do not decide it.
        n_calls = max(1, min(200, int(0.02 / max(time.perf_counter() - start, 1e-7))))
        same = {name: (call() == expected) for name, call in calls.items()}
        times = {name: [] for name in calls}
        for _ in range(args.repeat):
            for name, call in calls.items():
                total = 0.0
                for _ in range(n_calls):
                    if encoders[name].renew is not None and not args.warm_caches:
                        encoders[name].renew()  # not timed
                    start = time.perf_counter()
                    call()
                    total += time.perf_counter() - start
                times[name].append(total / n_calls)
        base = statistics.median(times["bpetrain"])
        for name in calls:
            median = statistics.median(times[name])
            # Each round's ratio to bpetrain's run of the same round, whose machine was in
            # the same state: steadier than the ratio of medians when the machine drifts.
            paired = statistics.median(t / b for t, b in zip(times[name], times["bpetrain"]))
            results.append({
                "pattern": pattern, "mode": mode, "case": label, "encoder": name, "n_bytes": n_bytes, "seconds": median,
                "mb_per_s": n_bytes / median / 1e6, "vs_bpetrain": median / base, "paired_vs_bpetrain": paired,
                "ids_identical": same[name], "runs": times[name],
            })
            print(f"{pattern:14} {mode:8} {label:32} {name:11} {median:9.4f} s  {n_bytes / median / 1e6:8.1f} MB/s  "
                  f"{median / base:6.2f}x  paired {paired:5.2f}x  ids {'identical' if same[name] else 'DIFFER'}",
                  file=sys.stderr)
    return results


def machine(args) -> dict:
    versions = {}
    for package in ("tiktoken", "bpe-openai", "tokenizers", "gigatoken", "toktok-rs", "numpy", "regex"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "processor": platform.processor(),
        "file": args.file, "vocab": args.vocab, "repeat": args.repeat, "threads": args.threads, "versions": versions,
        "patterns": dict(args.patterns), "warm_caches": args.warm_caches,
    }


def markdown(report: dict) -> str:
    head = report["machine"]
    lines = [
        f"- vocabulary {head['vocab']}, {head['repeat']} runs each (median), Python {head['python']}, "
        f"{head['cpu_count']} CPUs; " + ", ".join(f"{k} {v}" for k, v in head["versions"].items() if v),
        ("- caches (bpetrain, gigatoken, toktok, tokenizers): "
         + ("kept from run to run" if head["warm_caches"] else "emptied before every timed run")),
        "",
        "| pattern | mode | input | encoder | median ms | MB/s | time / bpetrain's | paired | ids |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['pattern']} | {r['mode']} | {r['case']} | {r['encoder']} | {r['seconds'] * 1e3:.4g} "
            f"| {r['mb_per_s']:.1f} | {r['vs_bpetrain']:.2f}x | {r['paired_vs_bpetrain']:.2f}x "
            f"| {'identical' if r['ids_identical'] else '**differ**'} |"
        )
    lines.append("")
    for pattern, pat_str in head["patterns"].items():
        lines.append(f"- {pattern}: `{pat_str}`")
    for pattern, names in report["left_out"].items():
        if names:
            lines.append(f"- not run with {pattern} (they split with {OWN_PATTERN[head['vocab']]} only): {', '.join(names)}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Encode with bpetrain and its peers side by side.")
    parser.add_argument("file", help="UTF-8 text to encode")
    parser.add_argument("--vocab", default="cl100k_base", choices=("cl100k_base", "o200k_base"))
    parser.add_argument("--pattern", action="append", metavar="NAME|REGEX",
                        help=f"split pattern: one of {', '.join(SPLIT_PATTERNS)}, all, or a regex; repeat the option "
                        "for several (default: the vocabulary's own)")
    parser.add_argument("--peers", help=f"comma-separated subset of {','.join(ENCODERS)} (default: those installed)")
    parser.add_argument("--max-bytes", type=int, default=0, help="encode only the first N bytes of the file (default: all)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--repeat", type=int, default=5, help="runs per encoder and case (default 5)")
    parser.add_argument("--doc-bytes", type=int, default=1000, help="document size in bytes (default 1000)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the threads mode (default 2)")
    parser.add_argument("--worst-sizes", default="1000,10000,100000,1000000", help="text sizes of the worst mode")
    parser.add_argument("--warm-caches", action="store_true",
                        help="keep the caches of gigatoken, toktok and tokenizers from run to run (default: empty "
                        "them before every timed run, see the module docstring)")
    parser.add_argument("--gigatoken-warm", action="store_true",
                        help='also time "gigatoken (warm)": one instance kept from run to run, whose piece cache '
                        "has seen the text (labelled as such)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p] if args.peers else [p for p in ENCODERS if installed(p)]
    unknown = sorted(set(peers) - set(ENCODERS))
    if unknown:
        parser.error(f"unknown encoders {', '.join(unknown)}; choose from {', '.join(ENCODERS)}")
    args.peers = ["bpetrain", *[p for p in peers if p != "bpetrain"]]
    try:
        args.patterns = resolve_all(args.pattern, OWN_PATTERN[args.vocab])
    except ValueError as exc:
        parser.error(str(exc))
    args.modes = [m for m in args.modes.split(",") if m]
    args.worst_sizes = [int(n) for n in args.worst_sizes.split(",") if n]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}; choose from {', '.join(MODES)}")
    # before tokenizers starts its pool; one thread if only the one-thread batch runs
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads if "threads" in args.modes else 1))
    report = run(args)
    print(markdown(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
