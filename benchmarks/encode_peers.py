"""Encode with bpetrain, tiktoken, bpe-openai, Hugging Face tokenizers, fastokens, gigatoken and toktok side by side.

All encoders get the same OpenAI vocabulary (``cl100k_base`` or ``o200k_base`` from
``../shared/vocabs``, or the folder ``BPETRAIN_VOCABS``) and split pattern, run in this
one process, round-robin (run ``i`` of every encoder before run ``i + 1`` of any, in a
new order each round), and are checked against bpetrain's token ids before their times count. A run of a case whose
call takes under 20 ms is the mean of several calls (up to 200, about 20 ms of
bpetrain's; a cache is emptied before each call, untimed). Reported: the median
wall time of the runs (``--clock cpu``: CPU time of all the process's threads, which other
jobs on a shared machine do not lengthen), input MB/s, the time as a multiple of bpetrain's, and whether the
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
    boundaries), each encoded by its own call, on one thread. Every call an encoder
    offers per document is timed, labelled by what it returns: a list of int
    (``[list]``) or a numpy array (``[array]``); each call's time is compared with
    bpetrain's call of the same kind, and a second table puts bpetrain's fastest call of
    each kind beside the fastest peer's call of that kind. The calls: bpetrain
    ``encode_ordinary``, ``encode`` (which looks for the vocabulary's special tokens, as
    ``get_encoding`` gives them) and ``encode_to_numpy`` (the same); tiktoken
    ``encode_ordinary`` and ``encode_to_numpy``; bpe-openai ``encode``; Hugging Face
    ``encode(...).ids``; fastokens ``encode_ordinary(text).ids``; gigatoken
    ``backend.encode`` (its Rust tokenizer, an array; ``gigatoken.Tokenizer.encode`` is
    the same call through one more Python function), that array's ``.tolist()``, and
    ``backend.encode_batch_list([text], parallel=False)[0]`` (lists made in Rust, as its
    tiktoken-compatible ``encode`` makes them); toktok ``encode_ordinary`` and
    ``encode_to_numpy``. The other peers offer no array.
calls
    The fixed cost of a call: the docs mode's calls on as many empty strings, then on as
    many strings of 10 characters (the first document's first ten), as ``docs`` has
    documents. A peer's call runs through two more Python functions than bpetrain's
    bound methods (the instance renewed before each run is looked up by a ``lambda``):
    about 0.05 us each. Run it with ``--warm-caches``: a run of these is short, so it is
    many calls of the case, and renewing the peers' instances before each (as the
    docs mode does) would take minutes.
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
pretokenizer="cl100k" | "o200k", special_tokens={})``; outside the docs mode its
``encode`` array is turned into a list, as the others return), and so does fastokens
(``fastokens.Tokenizer.from_tiktoken(path, encoding=vocab, special_tokens={})``). toktok has the vocabularies compiled in
(``toktok._encoding("cl100k_base")``, the full tokenizer its documentation points to;
its public API only counts tokens). None of them downloads anything. Encoders whose module is
not installed are left out of the default ``--peers``.

Caches: bpetrain, fastokens, gigatoken and toktok keep what they have encoded (per
instance), Hugging Face's BPE model keeps words. Every run here encodes the same input, so
before every timed run each of them starts with an empty cache (``Encoding.clear_cache()``;
a new fastokens, gigatoken or toktok instance; Hugging Face's ``model._clear_cache()``): no run reuses
what the ids check or an earlier run cached. Then every encoder, tiktoken and bpe-openai
too, encodes the same 10 KB of other text (untimed), so that each starts with its tables
touched, as a new instance has just touched its own, rather than as the encoder that ran
before it left them.
Within a run a cache still pays off on the pieces that repeat, as it would on a corpus
encoded once. tiktoken and bpe-openai keep nothing between calls. ``--warm-caches``
keeps the caches from run to run instead (what encoding the same text again costs);
``--gigatoken-warm`` adds one gigatoken instance kept warm beside the fresh ones,
labelled "gigatoken (warm)".

``--skip-bytes`` starts that far into the file: text no earlier run encoded (say which
in what you report).

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

# Before numpy loads: its BLAS thread pool, which nothing here uses, would otherwise poll on
# CPU time that --clock cpu counts.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from splitting import SPLIT_PATTERNS, resolve_all  # noqa: E402
from texts import stdlib_text  # noqa: E402

ENCODERS = ("bpetrain", "tiktoken", "bpe-openai", "tokenizers", "fastokens", "gigatoken", "toktok")
#: encoder -> the module it needs
MODULES = {"bpetrain": "bpetrain", "tiktoken": "tiktoken", "bpe-openai": "bpe_openai", "tokenizers": "tokenizers",
           "fastokens": "fastokens", "gigatoken": "gigatoken", "toktok": "toktok"}
#: Encoders that split with the vocabulary's own pattern only.
FIXED_PATTERN = ("bpe-openai", "tokenizers", "fastokens", "gigatoken", "toktok")
MODES = ("docs", "calls", "batch", "threads", "whole", "worst")
#: --clock -> what a run's time is: wall time, or the CPU time of every thread of this
#: process (its own and any an encoder starts), which other jobs on a shared machine do
#: not lengthen.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
VOCABS = Path(os.environ.get("BPETRAIN_VOCABS", Path(__file__).resolve().parents[2] / "shared" / "vocabs"))
#: vocabulary -> the name of its own pattern in SPLIT_PATTERNS
OWN_PATTERN = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


class Call(NamedTuple):
    """One per-document call of an encoder: ``kind``, what it returns (``"list"`` of int or
    numpy ``"array"``); ``name``, the call as written; ``run(text)``, the call."""

    kind: str
    name: str
    run: Callable[[str], object]


class Encoder(NamedTuple):
    """One encoder's calls: ``one(text) -> ids`` (a list); ``batch(texts, n_threads) ->
    list of ids``; ``renew()`` empties what the encoder keeps from earlier calls (``None``
    if it keeps nothing), called before every timed run; ``calls``, its per-document calls
    for the docs mode (:class:`Call`: each output kind it offers, its fastest call of
    each, and where two calls might be the fastest, both)."""

    one: Callable[[str], list[int]]
    batch: Callable[[list[str], int], list[list[int]]]
    renew: Callable[[], None] | None = None
    calls: tuple[Call, ...] = ()


@functools.lru_cache(maxsize=1)
def _warm_up_text() -> str:
    """The 10 KB of other text every encoder is warmed on before a timed run (the standard
    library's sources), read once for all of them."""
    return stdlib_text(10_000)


def _emptied(one, batch, clear=None, calls=()) -> Encoder:
    """An :class:`Encoder` whose ``renew`` empties its cache (``clear``, if it keeps one)
    and encodes the same 10 KB of other text as :func:`_renewable`'s new instances: every
    encoder starts a timed run with nothing of the input cached and its tables touched,
    not left cold by the encoders that ran before it. ``calls``: (kind, name, call) of
    each per-document call (``one`` alone, as a list call, if none)."""
    warm_up = _warm_up_text()

    def renew():
        if clear is not None:
            clear()
        one(warm_up)

    return Encoder(one, batch, renew, tuple(Call(*call) for call in calls) or (Call("list", "", one),))


def _renewable(build, one, batch, calls=()) -> Encoder:
    """An :class:`Encoder` over a tokenizer that caches the pieces it has seen, per
    instance, with no call to empty the cache (gigatoken, toktok): ``renew`` builds a new
    instance and warms it on other text (10 KB of the standard library's sources), so a
    timed run neither reuses what the ids check or an earlier run over the same input
    cached nor pays for first touching the tables. ``one``, ``batch`` and the calls of
    ``calls`` ((kind, name, call) each, as in :func:`_emptied`) take the instance first."""
    current = {}
    warm_up = _warm_up_text()

    def renew():
        current.clear()  # free the old instance first: the warm-up then pays for any memory it gave back
        tokenizer = build()
        one(tokenizer, warm_up)
        current["tokenizer"] = tokenizer

    renew()
    per_doc = tuple(Call(kind, name, lambda text, call=call: call(current["tokenizer"], text))
                    for kind, name, call in calls)
    return Encoder(lambda text: one(current["tokenizer"], text),
                   lambda docs, n_threads: batch(current["tokenizer"], docs, n_threads), renew,
                   per_doc or (Call("list", "", lambda text: one(current["tokenizer"], text)),))


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
    from bpetrain.registry import ENCODINGS

    path = VOCABS / f"{vocab}.tiktoken"
    pat_str = SPLIT_PATTERNS[OWN_PATTERN[vocab]] if pat_str is None else pat_str
    # with the vocabulary's special tokens, as get_encoding gives it: encode and
    # encode_to_numpy look for them in every text (tiktoken's default check)
    ours = Encoding(vocab, pat_str=pat_str, mergeable_ranks=_ranks(vocab), special_tokens=ENCODINGS[vocab].special_tokens)
    encoders = {}
    for name in names:
        if not applies(name, vocab, pat_str):
            continue
        if name == "bpetrain":
            # its piece caches are emptied before every timed run, as the peers get new instances
            encoders[name] = _emptied(
                ours.encode_ordinary, lambda docs, n: ours.encode_ordinary_batch(docs, num_threads=n), ours.clear_cache,
                [("list", "encode_ordinary", ours.encode_ordinary), ("list", "encode", ours.encode),
                 ("array", "encode_to_numpy", ours.encode_to_numpy)],
            )
        elif name == "tiktoken":
            import tiktoken

            tk = tiktoken.Encoding(vocab, pat_str=pat_str, mergeable_ranks=ours.mergeable_ranks, special_tokens={})
            encoders[name] = _emptied(
                tk.encode_ordinary, lambda docs, n, tk=tk: tk.encode_ordinary_batch(docs, num_threads=n), None,
                # no special tokens: encode_to_numpy looks for none
                [("list", "encode_ordinary", tk.encode_ordinary), ("array", "encode_to_numpy", tk.encode_to_numpy)],
            )
        elif name == "bpe-openai":
            from bpe_openai import _bindings

            bo = _bindings.tokenizer_for_encoding(vocab)

            def batch(docs, n, bo=bo):
                if n == 1:
                    return [bo.encode(d) for d in docs]
                with ThreadPoolExecutor(n) as pool:
                    return list(pool.map(bo.encode, docs))

            encoders[name] = _emptied(bo.encode, batch, None, [("list", "encode", bo.encode)])
        elif name == "tokenizers":
            hf = tokenizers_from_ranks(ours.mergeable_ranks, pat_str)

            def one(text, hf=hf):
                return hf.encode(text, add_special_tokens=False).ids

            encoders[name] = _emptied(
                one, lambda docs, n, hf=hf: [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)],
                hf.model._clear_cache,  # its BPE model caches words
                [("list", "encode(text, add_special_tokens=False).ids", one)],
            )
        elif name == "fastokens":
            import fastokens

            def batch(fk, docs, n):
                if n == 1:
                    return [fk.encode_ordinary(d).ids for d in docs]
                with ThreadPoolExecutor(n) as pool:
                    return list(pool.map(lambda d: fk.encode_ordinary(d).ids, docs))

            def one(fk, text):
                return fk.encode_ordinary(text).ids

            # it keeps what it has encoded (a fresh instance took 3x the time of one that
            # had seen the text): a new instance for every timed run
            encoders[name] = _renewable(
                lambda: fastokens.Tokenizer.from_tiktoken(str(path), encoding=vocab, special_tokens={}), one, batch,
                [("list", "encode_ordinary(text).ids", one)],
            )
        elif name == "gigatoken":
            import gigatoken

            def build(vocab=vocab):
                return gigatoken.Tokenizer.from_tiktoken(path, pretokenizer=OWN_PATTERN[vocab], special_tokens={})

            calls = (
                lambda gt, text: gt.encode(text).tolist(),
                # its thread pool has RAYON_NUM_THREADS threads
                lambda gt, docs, n: gt.encode_batch_list(docs, parallel=n > 1),
                [
                    # the Rust tokenizer under gigatoken.Tokenizer (whose encode adds a Python call)
                    ("array", "backend.encode", lambda gt, text: gt.backend.encode(text)),
                    ("list", "backend.encode(text).tolist()", lambda gt, text: gt.backend.encode(text).tolist()),
                    # its lists made in Rust, as its tiktoken-compatible encode makes them
                    ("list", "backend.encode_batch_list([text], parallel=False)[0]",
                     lambda gt, text: gt.backend.encode_batch_list([text], parallel=False)[0]),
                ],
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
            encoders[name] = _renewable(
                lambda: _toktok.Tokenizer(vocab), lambda tt, text: tt.encode_ordinary(text), batch,
                [("list", "encode_ordinary", lambda tt, text: tt.encode_ordinary(text)),
                 ("array", "encode_to_numpy", lambda tt, text: tt.encode_to_numpy(text))],
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
    if "calls" in args.modes:  # the fixed cost of a call: timed as the docs mode times documents
        for text, label in (("", "empty strings"), (docs[0][:10], "strings of 10 characters")):
            out.append(("docs", f"{len(docs)} {label}", len(text.encode("utf-8")) * len(docs), [text] * len(docs)))
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
        f.seek(args.skip_bytes)
        data = f.read(args.max_bytes + 3) if args.max_bytes else f.read()
    while data and data[0] & 0xC0 == 0x80:  # from a character's first byte
        data = data[1:]
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
    return {"machine": machine(args), "results": results, "left_out": left_out, "fastest_by_kind": fastest_by_kind(results)}


def _timed_calls(mode: str, payload, encoders: dict, threads: int) -> dict[str, tuple[str, str, str, Callable]]:
    """label -> (encoder, output kind, call name, the timed call) of every encoder in one
    case: in the docs mode one row per per-document call (:class:`Call`, each encoder's
    fastest call of each output kind it offers), labelled ``encoder [kind] call``."""
    calls = {}
    for name, encoder in encoders.items():
        if mode == "docs":
            for call in encoder.calls:
                label = f"{name} [{call.kind}] {call.name}".rstrip()
                calls[label] = (name, call.kind, call.name, lambda run=call.run, docs=payload: [run(d) for d in docs])
        elif mode in ("batch", "threads"):
            n = 1 if mode == "batch" else threads
            calls[name] = (name, "list", "", lambda batch=encoder.batch, docs=payload, n=n: batch(docs, n))
        else:
            calls[name] = (name, "list", "", lambda one=encoder.one, text=payload: one(text))
    return calls


def _as_lists(output) -> list:
    """``output`` (ids, or a list of ids per document) with every numpy array as a list."""
    if hasattr(output, "tolist"):
        return output.tolist()
    if isinstance(output, list) and output and not isinstance(output[0], int):
        return [_as_lists(item) for item in output]
    return output


def run_pattern(args, data: bytes, pattern: str, encoders: dict) -> list[dict]:
    results = []
    clock = CLOCKS[args.clock]
    for mode, label, n_bytes, payload in cases(args, data):
        calls = _timed_calls(mode, payload, encoders, args.threads)
        base_label = next(iter(calls))  # bpetrain's first call: its list call
        start = time.perf_counter()
        expected = _as_lists(calls[base_label][3]())
        # A run of a short case is several calls (about 20 ms of bpetrain's), so that one
        # call's cold caches and the clock's resolution do not decide it.
        n_calls = max(1, min(200, int(0.02 / max(time.perf_counter() - start, 1e-7))))
        same = {}
        for row, (_, kind, _, call) in calls.items():
            output = call()
            if mode == "docs" and output and not _is_kind(output[0], kind):
                raise SystemExit(f"{row} returns {type(output[0]).__name__}, not a {kind}")
            same[row] = _as_lists(output) == expected
        times = {row: [] for row in calls}
        shuffle = random.Random(0).shuffle
        for _ in range(args.repeat):
            # in a new order each round: a call's run does not always follow the same
            # other call's (which leaves the caches its own way, or with this encoder's
            # tables in them)
            order = list(calls)
            shuffle(order)
            for row in order:
                name, _, _, call = calls[row]
                total = 0.0
                for _ in range(n_calls):
                    if encoders[name].renew is not None and not args.warm_caches:
                        encoders[name].renew()  # not timed
                    start = clock()
                    call()
                    total += clock() - start
                times[row].append(total / n_calls)
        n_docs = len(payload) if mode == "docs" else 1
        for row, (name, kind, call_name, _) in calls.items():
            # bpetrain's first call of the same output kind
            ours = next(other for other, (who, k, _, _) in calls.items() if who == "bpetrain" and k == kind)
            median = statistics.median(times[row])
            base = statistics.median(times[ours])
            # Each round's ratio to bpetrain's run of the same round, whose machine was in
            # the same state: steadier than the ratio of medians when the machine drifts.
            paired = statistics.median(t / b for t, b in zip(times[row], times[ours]))
            results.append({
                "pattern": pattern, "mode": mode, "case": label, "encoder": name, "kind": kind, "call": call_name,
                "n_bytes": n_bytes, "n_docs": n_docs, "seconds": median, "us_per_doc": median / n_docs * 1e6,
                "mb_per_s": n_bytes / median / 1e6, "vs_bpetrain": median / base, "paired_vs_bpetrain": paired,
                "ids_identical": same[row], "runs": times[row],
            })
            print(f"{pattern:8} {mode:7} {label:24} {row:58} {median / n_docs * 1e6:10.2f} us  "
                  f"{n_bytes / median / 1e6:7.1f} MB/s  {median / base:5.2f}x  paired {paired:5.2f}x  "
                  f"ids {'identical' if same[row] else 'DIFFER'}", file=sys.stderr)
    return results


def _is_kind(ids, kind: str) -> bool:
    """Whether ``ids`` (one call's output) is what its output ``kind`` says: a list of int,
    or a numpy array."""
    return type(ids) is list if kind == "list" else type(ids).__name__ == "ndarray"


def fastest_by_kind(results: list[dict]) -> list[dict]:
    """For every docs case and output kind: bpetrain's fastest call of that kind, the
    fastest peer's call of that kind, and the peer's time / bpetrain's (above 1:
    bpetrain is faster), as a ratio of medians and as the median of the rounds' ratios."""
    rows = []
    docs = [r for r in results if r["mode"] == "docs"]
    for key in dict.fromkeys((r["pattern"], r["case"], r["kind"]) for r in docs):
        same = [r for r in docs if (r["pattern"], r["case"], r["kind"]) == key]
        ours = [r for r in same if r["encoder"] == "bpetrain"]
        peers = [r for r in same if r["encoder"] != "bpetrain" and r["encoder"] != "gigatoken (warm)"]
        if not ours or not peers:
            continue
        best_ours = min(ours, key=lambda r: r["seconds"])
        best_peer = min(peers, key=lambda r: r["seconds"])
        paired = statistics.median(p / o for p, o in zip(best_peer["runs"], best_ours["runs"]))
        rows.append({
            "pattern": key[0], "case": key[1], "kind": key[2], "bpetrain": best_ours["call"],
            "bpetrain_us": best_ours["us_per_doc"], "peer": f"{best_peer['encoder']} {best_peer['call']}".rstrip(),
            "peer_us": best_peer["us_per_doc"], "peer_over_bpetrain": best_peer["seconds"] / best_ours["seconds"],
            "paired_peer_over_bpetrain": paired,
        })
    return rows


def machine(args) -> dict:
    versions = {}
    for package in ("tiktoken", "bpe-openai", "tokenizers", "fastokens", "gigatoken", "toktok-rs", "numpy", "regex"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "processor": platform.processor(),
        "file": args.file, "skip_bytes": args.skip_bytes, "max_bytes": args.max_bytes, "vocab": args.vocab,
        "repeat": args.repeat, "threads": args.threads, "clock": args.clock, "versions": versions,
        "patterns": dict(args.patterns), "warm_caches": args.warm_caches,
    }


def markdown(report: dict) -> str:
    head = report["machine"]
    lines = [
        f"- vocabulary {head['vocab']}, {head['repeat']} runs each (median, {head['clock']} time), Python {head['python']}, "
        f"{head['cpu_count']} CPUs; " + ", ".join(f"{k} {v}" for k, v in head["versions"].items() if v),
        ("- caches (bpetrain, gigatoken, toktok, tokenizers): "
         + ("kept from run to run" if head["warm_caches"] else "emptied before every timed run")),
        "",
        "| pattern | mode | input | encoder | output | call | median ms | us / doc | MB/s | time / bpetrain's "
        "(same output) | paired | ids |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['pattern']} | {r['mode']} | {r['case']} | {r['encoder']} | {r['kind']} | {r['call'] or '-'} "
            f"| {r['seconds'] * 1e3:.4g} | {r['us_per_doc']:.2f} | {r['mb_per_s']:.1f} | {r['vs_bpetrain']:.2f}x "
            f"| {r['paired_vs_bpetrain']:.2f}x | {'identical' if r['ids_identical'] else '**differ**'} |"
        )
    fastest = fastest_by_kind(report["results"])
    if fastest:
        lines += [
            "",
            "One call per document, by output kind: bpetrain's fastest call against the fastest peer's call "
            "returning the same kind (peer's time / bpetrain's: above 1, bpetrain is faster)",
            "",
            "| pattern | input | output | bpetrain | us / doc | fastest peer | us / doc | peer / bpetrain | paired |",
            "|---|---|---|---|---:|---|---:|---:|---:|",
        ]
        for r in fastest:
            lines.append(
                f"| {r['pattern']} | {r['case']} | {r['kind']} | {r['bpetrain']} | {r['bpetrain_us']:.2f} | {r['peer']} "
                f"| {r['peer_us']:.2f} | {r['peer_over_bpetrain']:.2f}x | {r['paired_peer_over_bpetrain']:.2f}x |"
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
    parser.add_argument("--skip-bytes", type=int, default=0,
                        help="start N bytes into the file (at the next character), e.g. at text no earlier run used")
    parser.add_argument("--max-bytes", type=int, default=0,
                        help="encode only the first N bytes of the file, after --skip-bytes (default: all)")
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
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                        help="time runs by the wall clock (default) or by the CPU time of all of this process's "
                        "threads (steadier on a machine shared with other jobs)")
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
