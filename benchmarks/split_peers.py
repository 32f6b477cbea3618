"""Split one file with bpetrain's splitter and with the ``regex`` module, pattern by pattern.

For every pattern asked for (the names of ``splitting.NAMED_PATTERNS``, ``all``, ``published``,
``generated:N:SEED`` for N patterns drawn from the grammar the tests draw theirs from,
``splitting.generated_patterns``, or any regex) this first checks that bpetrain's pieces of
the first ``--check-bytes`` bytes equal ``regex.finditer``'s (of fewer, said so in the table,
where the regex module takes more than ``--regex-seconds`` on them), then times both splitters on
the whole input, round-robin (run ``i`` of every splitter and pattern before run ``i + 1`` of
any), one thread each, and prints the median MB/s and the ratio as a markdown table. The
piece counts of the timed runs must agree too. A pattern on which bpetrain's splitter gives up (``BacktrackLimitExceeded``: the
backtracking program tried too many ways at one place) is listed as such, not timed; so is one
whose runs of bpetrain's splitter would take more than ``--pattern-seconds`` in all (found first
on longer and longer prefixes: ``over_budget``), with its MB/s on the last prefix timed and how its
time grew with the bytes; one whose ``regex.finditer`` run takes more than ``--regex-seconds`` is
given as over that, and not run again.

- bpetrain: ``splitting.n_pieces(pat_str, data)``, bpetrain's splitter on the UTF-8
  bytes, as training and encoding run it (``splitting.splitter_kind`` says how: the DFA,
  or for patterns that split as gpt2, cl100k, o200k, minbpe's, nanochat's or Llama 3's
  strings do, hand-written code that reads ASCII text 64 bytes at a time).
- sse2: where bpetrain reads ASCII text 64 bytes at a time (``_ascii_blocks.h``) and this CPU
  has AVX-512BW, the same with the blocks' bytes classed by SSE2
  (``splitting.sse2_blocks_n_pieces``), as on CPUs without AVX2 (those with AVX2 alone class by AVX2).
- DFA: where bpetrain runs hand-written code, the pattern's DFA alone
  (``splitting.engine_n_pieces(..., dfa=True)``), to show what the hand-written code is worth.
- program: the backtracking program alone (``splitting.engine_n_pieces``), the splitter
  for patterns without a DFA, to show what the DFA is worth.
- pshufb: where the DFA reads ASCII text by AVX-512 VBMI's ``vpermb`` (bpetrain's, or DFA
  alone's, column on such a CPU), the DFA by AVX2's ``pshufb`` instead
  (``splitting.engine_n_pieces(..., dfa=True, shuffle="pshufb")``), as it splits on CPUs
  with AVX2 but without VBMI (most of them).
- tables: where the DFA reads ASCII text by vector shuffles, the DFA by its own tables alone
  (``splitting.engine_n_pieces(..., dfa=True, shuffle=False)``), as it splits on CPUs with
  neither, to show what the shuffles are worth.
- regex: ``regex.finditer`` over the text already decoded to ``str`` (decoding is not
  timed, which favours it).

The table also gives each pattern's bpetrain MB/s over cl100k's (when cl100k is run), and the
pshufb and tables columns' over cl100k's with SSE2 blocks, what a CPU without AVX-512 compares.

tiktoken's splitting is not exposed on its own, so it is not a peer here.

Run from the repository (after ``pip install -e '.[bench]'``)::

    python benchmarks/split_peers.py .corpora/kernel-docs.txt --pattern all --pattern published --repeat 3
    python benchmarks/split_peers.py .corpora/kernel-docs.txt --max-bytes 2000000 --repeat 1
    python benchmarks/split_peers.py .corpora/kernel-docs.txt --pattern cl100k --pattern generated:30:0 \\
        --splitters '' --repeat 7 --clock cpu

``--clock cpu`` times each call by the CPU time of its thread (``time.thread_time``) rather than
by the wall clock: on a machine shared with other jobs it moves far less from run to run.
``--paired`` runs cl100k right before each run of every other pattern and gives the median of
those pairs' ratios too: on a machine whose speed moves from second to second (a shared or
throttled one; two runs of all and published patterns) the ratios of medians moved by up to a
third between runs, the paired ones by up to 0.14 (most by 0.05 or less).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

from splitting import (
    NAMED_PATTERNS,
    BacktrackLimitExceeded,
    engine_n_pieces,
    has_compiled_splitter,
    has_dfa,
    n_pieces,
    pieces,
    block_isas,
    reads_by_shuffles,
    shuffle_variants,
    sse2_blocks_n_pieces,
    regex_n_pieces,
    regex_pieces,
    resolve_all,
    splitter_kind,
)

CORPORA = Path(os.environ.get("BPETRAIN_CORPORA", Path(__file__).resolve().parents[2] / "corpora"))
SPLITTERS = ("bpetrain", "sse2", "dfa", "pshufb", "tables", "engine", "regex")


def check_pieces(pat_str: str, head: bytes, seconds: float) -> int:
    """Raise if bpetrain's pieces of ``head`` differ from ``regex.finditer``'s; return how many
    bytes were checked. Where the regex module takes more than ``seconds`` on ``head`` (some
    patterns make it backtrack for hours), the check is of the longest of ``head``'s first
    eighth, sixty-fourth, ... (down to 4 KB) that it splits within ``seconds``; 0 if none."""
    size = len(head)
    while True:
        try:
            theirs = regex_pieces(pat_str, head[:size], timeout=seconds)
            break
        except TimeoutError:
            if size <= 4096:
                return 0
            size = max(size // 8, 4096)
    head = head[:size]
    ours = pieces(pat_str, head)
    if ours != theirs:
        first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        raise SystemExit(
            f"bpetrain's pieces differ from regex.finditer's at piece {first}: "
            f"{ours[first:first + 1]!r} vs {theirs[first:first + 1]!r} (pattern {pat_str!r:.60})"
        )
    return size


def over_budget(pat_str: str, data: bytes, seconds: float, clock) -> dict | None:
    """Whether bpetrain's splitter would take more than ``seconds`` to split ``data`` by
    ``pat_str`` once (the backtracking program is quadratic on some patterns: a run of
    text read to its end from each place in it): timed on prefixes four times longer each,
    from 64 KB, while a run takes less than a sixteenth of the budget; past that, the whole
    text's time is projected from the last two prefixes' (``time ~ bytes ** e``). None if the
    whole text was reached within the budget (or is no longer than the first prefix); else
    the last prefix's bytes, its time and pieces, and the projection."""
    size, before = 1 << 16, None
    while size < len(data):
        start = clock()
        found = n_pieces(pat_str, data[:size])
        took = max(clock() - start, 1e-9)
        if took > seconds / 16:
            if before is None:
                exponent = 2.0  # (the first prefix already past it: assume the worst)
            else:
                exponent = max(1.0, math.log(took / before[1]) / math.log(size / before[0]))
            projected = took * (len(data) / size) ** exponent
            if projected > seconds:
                return {"bytes": size, "seconds": took, "pieces": found, "projected_seconds": projected,
                        "exponent": exponent}
            return None
        before = (size, took)
        size *= 4
    return None


def run(args) -> dict:
    with open(args.file, "rb") as f:
        data = f.read(args.max_bytes) if args.max_bytes else f.read()
    text = data.decode("utf-8", "surrogateescape")
    checked = {}  # name -> bytes checked against regex.finditer
    for name, pat_str in args.patterns:
        print(f"checking {name} on the first {min(args.check_bytes, len(data))} bytes ...", file=sys.stderr)
        checked[name] = check_pieces(pat_str, data[: args.check_bytes], args.regex_seconds)
    calls = {}
    for name, pat_str in args.patterns:
        calls[(name, "bpetrain")] = lambda pat_str=pat_str: n_pieces(pat_str, data)
        if "blocks" in splitter_kind(pat_str) and "avx512bw" in block_isas():
            calls[(name, "sse2")] = lambda pat_str=pat_str: sse2_blocks_n_pieces(pat_str, data)
        if has_dfa(pat_str) and splitter_kind(pat_str) != "DFA":
            calls[(name, "dfa")] = lambda pat_str=pat_str: engine_n_pieces(pat_str, data, dfa=True)
        if reads_by_shuffles(pat_str) == "vpermb" and "pshufb" in shuffle_variants():
            calls[(name, "pshufb")] = lambda pat_str=pat_str: engine_n_pieces(pat_str, data, dfa=True, shuffle="pshufb")
        if reads_by_shuffles(pat_str):
            calls[(name, "tables")] = lambda pat_str=pat_str: engine_n_pieces(pat_str, data, dfa=True, shuffle=False)
        if has_compiled_splitter(pat_str):
            calls[(name, "engine")] = lambda pat_str=pat_str: engine_n_pieces(pat_str, data)
        calls[(name, "regex")] = lambda pat_str=pat_str: regex_n_pieces(pat_str, text, timeout=args.regex_seconds)
    calls = {key: call for key, call in calls.items() if key[1] == "bpetrain" or key[1] in args.splitters}
    times = {key: [] for key in calls}
    counts = {key: set() for key in calls}
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    failed = {}  # name -> why bpetrain's splitter gave up on the text (BacktrackLimitExceeded)
    budget = {}  # name -> over_budget's prefix, for patterns whose runs would take past --pattern-seconds
    for name, pat_str in args.patterns:
        print(f"sizing {name} ...", file=sys.stderr, flush=True)
        try:
            found = over_budget(pat_str, data, args.pattern_seconds / args.repeat, clock)
        except BacktrackLimitExceeded:
            continue  # (the timed runs say so)
        if found is not None:
            budget[name] = found
    pairs = {}  # name -> cl100k's time over the pattern's, each with cl100k run right before it (--paired)
    base_call = calls.get(("cl100k", "bpetrain")) if args.paired else None
    slow = set()  # names whose regex.finditer run took more than --regex-seconds (not run again)
    for i in range(args.repeat):
        for key, call in calls.items():
            if key[0] in failed or key[0] in budget or (key[1] == "regex" and key[0] in slow):
                continue
            print(f"[{i + 1}/{args.repeat}] {key[0]}: {key[1]} ...", file=sys.stderr, flush=True)
            paired = base_call is not None and key[1] == "bpetrain" and key[0] != "cl100k"
            if paired:
                start = clock()
                base_call()
                base_seconds = clock() - start
            start = clock()
            try:
                counts[key].add(call())
            except BacktrackLimitExceeded as exc:
                failed[key[0]] = str(exc)
                continue
            except TimeoutError:  # the regex module's, past --regex-seconds
                slow.add(key[0])
                times[key].clear()
                continue
            times[key].append(clock() - start)
            if paired:
                pairs.setdefault(key[0], []).append(base_seconds / times[key][-1])
    rows = []
    for name, pat_str in args.patterns:
        if name in failed:
            rows.append({"pattern": name, "pat_str": pat_str, "splitter": splitter_kind(pat_str),
                         "failed": failed[name]})
            continue
        if name in budget:
            rows.append({"pattern": name, "pat_str": pat_str, "splitter": splitter_kind(pat_str),
                         "over_budget": budget[name]})
            continue
        ours = counts[(name, "bpetrain")]
        theirs = counts.get((name, "regex")) or ours  # (empty: regex.finditer timed out)
        if len(ours) != 1 or ours != theirs or any(counts.get((name, k), ours) != ours for k in ("sse2", "dfa", "pshufb", "tables", "engine")):
            raise SystemExit(f"{name}: the piece counts differ: bpetrain {sorted(ours)}, regex {sorted(theirs)}")
        row = {"pattern": name, "pat_str": pat_str, "compiled": has_compiled_splitter(pat_str),
               "splitter": splitter_kind(pat_str), "n_pieces": ours.pop(), "checked_bytes": checked[name]}
        if name in slow:
            row["regex_over_seconds"] = args.regex_seconds
        if name in pairs:
            row["paired_ratio"] = {"median": statistics.median(pairs[name]), "runs": pairs[name]}
        for splitter in SPLITTERS:
            if not times.get((name, splitter)):
                continue
            seconds = statistics.median(times[(name, splitter)])
            row[splitter] = {"seconds": seconds, "mb_per_s": len(data) / seconds / 1e6, "runs": times[(name, splitter)]}
        rows.append(row)
    return {"machine": machine(args, len(data)), "results": rows}


def machine(args, n_bytes: int) -> dict:
    versions = {}
    for package in ("bpetrain", "regex"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "file": args.file, "n_bytes": n_bytes, "repeat": args.repeat, "check_bytes": args.check_bytes,
        "regex_seconds": args.regex_seconds, "pattern_seconds": args.pattern_seconds,
        "clock": args.clock,
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "machine": platform.machine(),
        "processor": platform.processor(), "threads": 1, "versions": versions,
    }


def markdown(report: dict) -> str:
    head = report["machine"]
    lines = [
        (f"- input: {head['file']} ({head['n_bytes'] / 1e6:.1f} MB), one thread, median of {head['repeat']} runs "
         f"({'CPU time of the thread' if head['clock'] == 'cpu' else 'wall time'}); "
         f"pieces of the first {min(head['check_bytes'], head['n_bytes'])} bytes checked equal to regex.finditer's"),
        (f"- Python {head['python']}, {head['cpu_count']} CPUs; "
         + ", ".join(f"{k} {v}" for k, v in head["versions"].items() if v)),
        "",
        ("| pattern | bpetrain splitter | pieces | bpetrain MB/s | / cl100k's | paired / cl100k's | SSE2 blocks MB/s "
         "| DFA alone MB/s "
         "| DFA by pshufb MB/s | / cl100k's | / cl100k's SSE2 | DFA tables alone MB/s | / cl100k's SSE2 "
         "| program alone MB/s | regex MB/s | regex time / bpetrain's |"),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    check = min(head["check_bytes"], head["n_bytes"])
    short = [f"{r['pattern']} ({r['checked_bytes']:,})" for r in report["results"]
             if r.get("checked_bytes", check) < check]
    if short:
        lines.insert(2, f"- regex.finditer took more than {head['regex_seconds']:g} s on the checked bytes of these "
                        "patterns, so they were checked on fewer (bytes checked; 0: not checked): " + ", ".join(short))
    cl100k = next((r for r in report["results"] if r["pattern"] == "cl100k"), {})
    base = cl100k["bpetrain"]["mb_per_s"] if cl100k else None
    base_sse2 = cl100k["sse2"]["mb_per_s"] if "sse2" in cl100k else base

    def speed(r, key):
        return f"{r[key]['mb_per_s']:.1f}" if key in r else "-"

    def versus(r, key, base=base):
        return f"{r[key]['mb_per_s'] / base:.2f}" if key in r and base else "-"

    for r in report["results"]:
        if "failed" in r:
            lines.append(f"| {r['pattern']} | {r['splitter']} | - | over the backtracking limit "
                         "| - | - | - | - | - | - | - |")
            continue
        if "over_budget" in r:
            b = r["over_budget"]
            lines.append(f"| {r['pattern']} | {r['splitter']} | - | over {head['pattern_seconds']:g} s: "
                         f"{b['bytes'] / b['seconds'] / 1e6:.2f} on the first {b['bytes']:,} bytes, "
                         f"time ~ bytes^{b['exponent']:.1f} | - | - | - | - | - | - | - |")
            continue
        ratio = f"{r['regex']['seconds'] / r['bpetrain']['seconds']:.2f}x" if "regex" in r else "-"
        regex_speed = f"over {r['regex_over_seconds']:g} s" if "regex_over_seconds" in r else speed(r, "regex")
        paired = f"{r['paired_ratio']['median']:.2f}" if "paired_ratio" in r else "-"
        lines.append(
            f"| {r['pattern']} | {r['splitter']} | {r['n_pieces']:,} | {r['bpetrain']['mb_per_s']:.1f} "
            f"| {versus(r, 'bpetrain')} | {paired} | {speed(r, 'sse2')} | {speed(r, 'dfa')} | {speed(r, 'pshufb')} "
            f"| {versus(r, 'pshufb')} | {versus(r, 'pshufb', base_sse2)} | {speed(r, 'tables')} "
            f"| {versus(r, 'tables', base_sse2)} | {speed(r, 'engine')} | {regex_speed} | {ratio} |"
        )
    lines += [
        "",
        ("bpetrain: `splitting.n_pieces` on the UTF-8 bytes, as bpetrain splits (a pattern outside the compiled "
         "matcher's syntax is decoded and split by the regex module). paired / cl100k's (--paired): the median of "
         "cl100k's time over the pattern's, cl100k run right before each of the pattern's runs. SSE2 blocks: the same with the 64-byte blocks' "
         "bytes classed by SSE2, as on a CPU without AVX-512BW (shown where bpetrain reads by blocks and this CPU has "
         "AVX-512BW; the pshufb and tables columns' / cl100k's SSE2 are over cl100k's SSE2 blocks MB/s). "
         "DFA alone: the pattern's DFA without the hand-written code (shown where bpetrain runs hand-written code). DFA by pshufb: the DFA reading ASCII text "
         "by AVX2's pshufb instead of AVX-512 VBMI's vpermb, as on a CPU with AVX2 but without VBMI (shown where "
         "bpetrain's DFA reads by vpermb). DFA tables alone: the DFA without vector shuffles, as on a CPU with "
         "neither (shown where bpetrain's DFA reads by shuffles). program alone: "
         "the backtracking program. "
         "regex: `regex.finditer` on the decoded text, decoding not timed."),
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Split one file with bpetrain's splitter and the regex module, "
                                     "pattern by pattern; print MB/s per core as a markdown table.")
    parser.add_argument("file", nargs="?", default=str(CORPORA / "kernel-docs.txt"),
                        help="text to split, read as bytes (default: kernel-docs.txt in BPETRAIN_CORPORA)")
    parser.add_argument("--pattern", action="append", metavar="NAME|REGEX",
                        help=f"a pattern: one of {', '.join(NAMED_PATTERNS)}, all, published, variants (edits of the named ones a user might make), "
                        "generated:N:SEED (N patterns "
                        "drawn from the tests' grammar with SEED, named gen-SEED-i; needs Hypothesis), or a regex; "
                        "repeat the option for several (default: all and published)")
    parser.add_argument("--max-bytes", type=int, default=0, help="split only the first N bytes (default: all)")
    parser.add_argument("--check-bytes", type=int, default=1_000_000,
                        help="bytes whose pieces are checked against regex.finditer's first (default 1000000)")
    parser.add_argument("--regex-seconds", type=float, default=60.0,
                        help="the most seconds one regex.finditer call may take (its timeout argument): a longer "
                        "check is made on a shorter head of the text, a longer timed run is reported as over "
                        "this (default 60)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per splitter and pattern (default 3)")
    parser.add_argument("--pattern-seconds", type=float, default=120.0,
                        help="a pattern whose --repeat runs of bpetrain's splitter would take longer than this "
                             "in all is timed on a prefix of the text alone, found by timing longer and longer ones, "
                             "and listed as over it (default 120)")
    parser.add_argument("--splitters", default="sse2,dfa,pshufb,tables,engine,regex",
                        type=lambda v: set(v.split(",")) - {""},
                        help="which splitters to time beside bpetrain's: a comma-separated subset of sse2 (the "
                        "64-byte blocks by SSE2, where this CPU has AVX-512BW), dfa, pshufb "
                        "(the DFA by AVX2's pshufb, where it reads by AVX-512 VBMI's vpermb), tables (the DFA "
                        "without vector shuffles), engine (the backtracking program) and regex (default: all "
                        "six; none: bpetrain's alone, round-robin over the patterns, which keeps their ratios "
                        "steadier on a busy machine)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time each call by the wall clock or by its thread's CPU time (steadier on a machine "
                        "shared with other jobs; default: wall)")
    parser.add_argument("--paired", action="store_true",
                        help="also run cl100k right before each run of every other pattern by bpetrain, and give "
                        "the median of those pairs' ratios: what a machine whose speed moves from second to second "
                        "(shared, throttled) moves least (needs --pattern cl100k or all)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not os.path.isfile(args.file):
        parser.error(f"no such file: {args.file}")
    if args.repeat < 1 or args.max_bytes < 0 or args.check_bytes < 0 or not args.regex_seconds > 0 \
            or not args.pattern_seconds > 0:
        parser.error("--repeat must be at least 1; --max-bytes and --check-bytes at least 0; --regex-seconds and "
                     "--pattern-seconds above 0")
    if args.splitters - set(SPLITTERS[1:]):
        parser.error(f"--splitters takes {', '.join(SPLITTERS[1:])}, got {','.join(sorted(args.splitters))}")
    try:
        args.patterns = resolve_all(args.pattern or ["all", "published"], "all")
    except ValueError as exc:
        parser.error(str(exc))
    if args.paired and "cl100k" not in dict(args.patterns):
        parser.error("--paired needs the pattern cl100k (--pattern cl100k or --pattern all)")
    report = run(args)
    print(markdown(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
