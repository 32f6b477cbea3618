"""Train bpetrain, rustbpe and Hugging Face tokenizers on the same input and compare them.

For each trainer this measures the wall time and the CPU time (user + sys, all threads)
of the training call alone, and the peak resident set size of the process, then prints
a markdown table with the ratios to bpetrain and whether rustbpe learned exactly
bpetrain's merges (Hugging Face breaks ties differently, so its merges are only timed).

Every trainer runs in a fresh subprocess of this script (``--worker``), so the peak RSS
(``VmHWM``, read in the worker when training is done) belongs to that trainer alone;
it includes the interpreter, the library and the input held in memory, which the
"RSS before" column shows on its own. Imports and reading the input are not timed,
except that ``bpetrain.BpeTrainer.train`` reads the file itself (pattern and raw-whole
modes), as it does in real use.

Modes:

pattern (default)
    The whole file is one text, split with the ``--pattern`` (cl100k by default).
    rustbpe and tokenizers get it as one string; after timing, the rustbpe worker also
    checks that rustbpe cut the text into the same pieces as bpetrain's pattern does.
stream
    End to end on a file of any size (the kernel-c.txt benchmark): bpetrain runs its
    command line, ``bpetrain train FILE --pat-str PAT`` (reading, parallel counting,
    merging, writing the model); rustbpe and tokenizers read the file in chunks of about
    16 KB decoded to str, each cut where every named pattern ends a piece whatever comes
    before or after (see :func:`last_safe_cut`), so every trainer sees the pieces of the
    whole file and nobody holds it in memory. Before timing, the parent checks on the
    file's first MB that the chunks split into the pieces of the whole text. Reading is
    inside the timed call for all three. Named patterns only: a cut that is safe for any
    regex does not exist.
raw-lines
    Every line (``bytes.splitlines(keepends=True)``) is one document, not pre-tokenized.
raw-whole
    The whole file is one document, not pre-tokenized; bpetrain only unless ``--peers``
    asks for more. Also reports bpetrain's peak RSS per input byte. The peers keep
    one "word" per document and rescan the words that hold a pair at each merge, so
    on one document every merge costs time in proportion to the whole text: compare
    them on a prefix (``--max-bytes``), not on a file of a gigabyte.

``--max-bytes N`` trains every trainer on the first N bytes of the file (copied to a
temporary file first) instead of all of it.

Patterns (pattern and stream modes): ``--pattern NAME|REGEX``, a name of
``splitting.SPLIT_PATTERNS`` (gpt2, cl100k, o200k, minbpe, nanochat, llama3),
``all``, or a regex (pattern mode only); repeat the option to train with several in one
run. Every trainer gets the same ``pat_str`` (Hugging Face with ``\\p{N}{1,3}`` for
cl100k's possessive ``\\p{N}{1,3}+``, which Oniguruma reads differently). With more than
one pattern a last table compares each trainer's runs to its own with the first pattern
(the issue: bpetrain on kernel-c.txt with nanochat's pattern within 1.3x of cl100k).

Run it from the repository (or with bpetrain installed)::

    PYTHONPATH=. python benchmarks/train_peers.py .corpora/mix-10M.txt --vocab-size 32768
    python benchmarks/train_peers.py FILE --mode raw-lines --peers bpetrain,rustbpe --repeat 3 --json out.json
    python benchmarks/train_peers.py mix-100M.txt --pattern nanochat --pattern llama3 --peers bpetrain,rustbpe
    python benchmarks/train_peers.py kernel-c.txt --mode stream --pattern cl100k --pattern nanochat
    python benchmarks/train_peers.py kernel-c.txt --mode raw-whole
    python benchmarks/train_peers.py kernel-c.txt --mode raw-whole --max-bytes 1000000 --peers bpetrain,rustbpe,tokenizers
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from importlib import metadata
from itertools import chain

import regex
from splitting import SPLIT_PATTERNS, resolve_all

TRAINERS = ("bpetrain", "rustbpe", "tokenizers")
MODES = ("pattern", "stream", "raw-lines", "raw-whole")
DEFAULT_PEERS = {"pattern": TRAINERS, "stream": TRAINERS, "raw-lines": TRAINERS, "raw-whole": ("bpetrain",)}
#: The split pattern of the raw modes for the peers, which always split: each document is one piece.
WHOLE_DOCUMENT = r"[\s\S]+"
#: bpetrain's trainer keyword and command-line option for the split pattern: the one
#: place that names them.
TRAINER_PATTERN_KEYWORD = "pat_str"
CLI_PATTERN_OPTION = "--pat-str"


def make_bpetrain_trainer(vocab_size: int, pat_str: str | None, **options):
    """``bpetrain.BpeTrainer`` splitting with ``pat_str`` (``None``: raw mode)."""
    import bpetrain

    return bpetrain.BpeTrainer(vocab_size, **{TRAINER_PATTERN_KEYWORD: pat_str}, **options)


# ------------------------------------------------------------------------- worker


def _peak_rss_kib() -> int:
    """This process's peak resident set size in KiB: Linux's ``VmHWM``, which starts afresh
    at ``exec``. (``ru_maxrss`` keeps the high-water mark of the parent that forked the
    worker, so it never reads below the parent's own peak.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read_lines(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


STREAM_CHUNK = 1 << 14  # bytes a chunk for the peers in stream mode
#: An ASCII letter, then an ASCII byte that is neither a letter nor ' (reverse search: the last one).
_SAFE_CUT = regex.compile(rb"(?r)[A-Za-z](?=[\x00-\x26\x28-\x40\x5B-\x60\x7B-\x7F])")


def last_safe_cut(data, searched: int = 0) -> int:
    """The last position ``p`` in ``data`` (bytes or bytearray) where the peers' chunks may
    be cut for every pattern of ``SPLIT_PATTERNS``, or -1; ``data[:searched]`` holds none.

    ``p`` follows an ASCII letter and precedes an ASCII byte ``c`` that is neither a letter
    nor ``'``. Splitting ``data[:p]`` and ``data[p:]`` on their own gives the pieces of
    the whole, for gpt2, cl100k, o200k, minbpe, nanochat and llama3 alike:

    - none of them has a lookbehind, ``\\b`` or ``^``, and every character starts a match
      (it is a letter, a number, a space or one of ``[^\\s\\p{L}\\p{N}]``), so the pieces
      from a piece boundary on depend only on the text from there on;
    - ``p`` is a piece boundary, and the pieces left of it do not change when the text
      ends at ``p``: only a letter run or a contraction holds the letter at ``p - 1``,
      and the only things any alternative tests after a letter are more letters
      (``\\p{L}``, o200k's case classes, a contraction's letters), marks (o200k) and the
      ``'`` of o200k's contraction suffix; ``c`` is none of them, so every attempt that
      reaches ``p`` fails there exactly as it fails at the end of the text. The ``$`` and
      ``(?!\\S)`` that do see the end only follow whitespace, never a letter.

    The bytes on both sides of ``p`` are ASCII, so ``p`` is a character boundary and
    decoding each chunk with ``errors="replace"`` decodes the whole. Text with few ASCII
    letters (CJK, say) gives longer chunks, never wrong ones. Before timing,
    ``_check_stream_cuts`` tests the cut on the input.

    Not used: a newline followed by a letter, the other cut of ``bpetrain.splitting._blocks.safe_cut``,
    is safe for all of these but gpt2, which splits ``"a  \\nb"`` into ``"a"``, ``"  "``,
    ``"\\n"``, ``"b"`` but ``"a  \\n"`` alone into ``"a"``, ``"  \\n"`` (its ``\\s++$``).
    """
    m = _SAFE_CUT.search(data, max(0, searched - 1))
    return m.end() if m else -1


class _StreamChunks:
    """The file as str chunks of about ``chunk_bytes`` bytes cut at :func:`last_safe_cut` (stream mode)."""

    def __init__(self, path: str, chunk_bytes: int = STREAM_CHUNK, max_bytes: int | None = None):
        self.path = path
        self.chunk_bytes = chunk_bytes
        self.max_bytes = max_bytes  # read only that much of the file (the cut check)
        self.replaced = False

    def __iter__(self):
        buffer = bytearray()
        left = self.max_bytes
        with open(self.path, "rb") as f:
            while True:
                block = f.read(self.chunk_bytes if left is None else min(self.chunk_bytes, left))
                if left is not None:
                    left -= len(block)
                if not block:
                    if buffer:
                        yield self._decode(buffer)
                    return
                searched = len(buffer)
                buffer += block
                cut = last_safe_cut(buffer, searched)
                if cut > 0:
                    yield self._decode(buffer[:cut])
                    del buffer[:cut]

    def _decode(self, chunk: bytearray) -> str:
        try:
            return chunk.decode("utf-8")
        except UnicodeDecodeError:
            self.replaced = True
            return chunk.decode("utf-8", "replace")


def _documents_as_str(path: str, mode: str):
    """The documents of ``mode`` as str (the peers take only str), and whether any byte
    was not valid UTF-8 and had to be replaced (then the peers train on other bytes);
    in stream mode an iterable whose ``replaced`` is known after the iteration."""
    if mode == "stream":
        chunks = _StreamChunks(path)
        return chunks, chunks
    if mode == "raw-lines":
        chunks = _read_lines(path)
    else:
        with open(path, "rb") as f:
            chunks = [f.read()]
    documents, replaced = [], _Replaced()
    for chunk in chunks:
        try:
            documents.append(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            documents.append(chunk.decode("utf-8", "replace"))
            replaced.replaced = True
    return documents, replaced


class _Replaced:
    replaced = False


def _check_stream_cuts(path: str, pat_str: str, n_bytes: int = 1 << 20) -> dict:
    """Whether ~1 KB chunks of the first ``n_bytes`` of ``path``, cut as stream mode cuts
    them, split (``regex``) into the pieces of those bytes as one text."""
    chunks = _StreamChunks(path, chunk_bytes=1 << 10, max_bytes=n_bytes)
    texts = list(chunks)
    whole = "".join(texts)
    expected = [m.group() for m in regex.finditer(pat_str, whole)]
    actual = [m.group() for text in texts for m in regex.finditer(pat_str, text)]
    return {"same": expected == actual, "n_chunks": len(texts), "n_bytes": len(whole.encode("utf-8"))}


def _setup_bpetrain(args):
    import bpetrain

    trainer = make_bpetrain_trainer(
        args.vocab_size,
        args.split if args.mode in ("pattern", "stream") else None,
        min_frequency=args.min_frequency,
        show_progress=False,
    )
    lines = _read_lines(args.file) if args.mode == "raw-lines" else None
    model = args.merges_out + ".bpe"

    def train():
        if args.mode == "stream":  # the command line, end to end
            from bpetrain.cli import main

            main(["train", args.file, "--vocab-size", str(args.vocab_size), "--min-frequency",
                  str(args.min_frequency), CLI_PATTERN_OPTION, args.split, "-o", model, "-q"])
            return bpetrain.Tokenizer.load(model)
        return trainer.train([args.file]) if lines is None else trainer.train_from_iterator(lines)

    def finish(tokenizer):
        _write_merges(args.merges_out, tokenizer.merges)
        return {"n_merges": len(tokenizer.merges), "replaced_invalid_utf8": False}

    return train, finish


def _setup_rustbpe(args):
    import rustbpe

    documents, replaced = _documents_as_str(args.file, args.mode)
    tokenizer = rustbpe.Tokenizer()
    split = args.split if args.mode in ("pattern", "stream") else WHOLE_DOCUMENT

    def train():
        tokenizer.train_from_iterator(iter(documents), args.vocab_size, pattern=split)

    def finish(_):
        from bpetrain._reference import merges_from_ranks  # imported after timing

        merges = merges_from_ranks(tokenizer.get_mergeable_ranks())
        _write_merges(args.merges_out, merges)
        figures = {"n_merges": len(merges), "replaced_invalid_utf8": replaced.replaced}
        if args.check_pieces:
            figures["pieces"] = _check_rustbpe_pieces(tokenizer, documents[0], split)
        return figures

    return train, finish


def _setup_tokenizers(args):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    documents, replaced = _documents_as_str(args.file, args.mode)
    if args.mode in ("pattern", "stream"):
        # Oniguruma (Ruby syntax) reads {1,3}+ as a repeat of {1,3}, not as possessive
        split = args.split.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
    else:
        split = WHOLE_DOCUMENT
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab_size,
        min_frequency=args.min_frequency,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )

    def train():
        tokenizer.train_from_iterator(documents, trainer=trainer)

    def finish(_):
        return {"n_merges": tokenizer.get_vocab_size() - 256, "replaced_invalid_utf8": replaced.replaced}

    return train, finish


def _write_merges(path: str, merges) -> None:
    with open(path, "w") as f:
        json.dump([list(pair) for pair in merges], f)


def _check_rustbpe_pieces(tokenizer, text: str, pat_str: str) -> dict:
    """Whether rustbpe cut ``text`` into the pieces bpetrain's pattern makes.

    rustbpe does not show its pieces, so this compares what it does show: its encoding
    of the whole text against the concatenation of its encodings of bpetrain's pieces,
    each encoded alone. A difference in the pieces changes the tokens unless no learned
    merge crosses it.
    """
    from bpetrain.splitting.pattern import split_pattern

    piece_ids: dict[str, int] = {}
    pieces = (m.group() for m in split_pattern(pat_str).regex.finditer(text))
    order = array("q", (piece_ids.setdefault(piece, len(piece_ids)) for piece in pieces))
    encoded_pieces = tokenizer.batch_encode(list(piece_ids))
    expected = array("q", chain.from_iterable(encoded_pieces[i] for i in order))
    actual = array("q", tokenizer.encode(text))
    if expected == actual:
        return {"same": True, "n_pieces": len(order)}
    first = next((i for i, (a, b) in enumerate(zip(expected, actual)) if a != b), min(len(expected), len(actual)))
    return {"same": False, "n_pieces": len(order), "first_different_token": first}


def run_worker(args) -> dict:
    """Load the input as the trainer takes it, train once, and return the figures."""
    setup = {"bpetrain": _setup_bpetrain, "rustbpe": _setup_rustbpe, "tokenizers": _setup_tokenizers}[args.worker]
    train, finish = setup(args)
    rss_before = _peak_rss_kib()
    cpu_started, started = _cpu_seconds(), time.perf_counter()
    trained = train()
    wall = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_started
    figures = {"wall_s": wall, "cpu_s": cpu, "rss_before_kib": rss_before, "peak_rss_kib": _peak_rss_kib()}
    figures.update(finish(trained))
    return figures


# ------------------------------------------------------------------------- parent


def run_trainer(name: str, args, merges_out: str, check_pieces: bool) -> dict:
    """Run one worker subprocess; its figures, or ``{"status": "timeout" | "failed"}``."""
    command = [
        sys.executable, os.path.abspath(__file__), args.file, "--worker", name, "--mode", args.mode,
        "--vocab-size", str(args.vocab_size), "--min-frequency", str(args.min_frequency), "--merges-out", merges_out,
    ]
    if args.split is not None:
        command += ["--split", args.split]
    if check_pieces:
        command.append("--check-pieces")
    try:
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    if done.returncode != 0:
        error = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"status": "failed", "error": error}
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}


def summarize(runs: list[dict]) -> dict:
    """Median times and maximum RSS over the runs; a timeout or failure in any run wins."""
    for run in runs:
        if run["status"] != "ok":
            return dict(run)
    summary = {key: statistics.median(run[key] for run in runs) for key in ("wall_s", "cpu_s")}
    for key in ("rss_before_kib", "peak_rss_kib"):
        summary[key] = max(run[key] for run in runs)
    summary.update(status="ok", n_merges=runs[0]["n_merges"], replaced_invalid_utf8=runs[0]["replaced_invalid_utf8"])
    return summary


def compare_merges(ours_path: str, theirs_path: str) -> dict:
    with open(ours_path) as f:
        ours = json.load(f)
    with open(theirs_path) as f:
        theirs = json.load(f)
    if ours == theirs:
        return {"identical": True}
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return {"identical": False, "first_difference": first, "n_bpetrain": len(ours), "n_peer": len(theirs)}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _version(name: str) -> str:
    if name == "bpetrain":
        import bpetrain

        return bpetrain.__version__
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _merges_cell(name: str, summary: dict, merges: dict | None) -> str:
    if summary["status"] != "ok":
        return "-"
    n = summary["n_merges"]
    if name == "bpetrain":
        return f"reference ({n})"
    if name == "tokenizers":
        return f"not compared ({n})"
    if summary["replaced_invalid_utf8"]:
        return f"n/a: input not UTF-8 ({n})"
    if merges["identical"]:
        return f"identical ({n})"
    return f"differ from merge {merges['first_difference']} ({merges['n_bpetrain']} vs {merges['n_peer']})"


def _ratio(peer: float, ours: float) -> str:
    return f"{peer / ours:.2f}x" if ours else "-"


def render(report: dict) -> str:
    """The report as markdown: a header list, the table and notes."""
    head, results = report["header"], report["results"]
    pattern = "" if head["pat_str"] is None else f", pattern {head['pattern']}"
    lines = [
        f"### {head['mode']} mode{pattern}, vocab size {head['vocab_size']}, min_frequency {head['min_frequency']}",
        "",
        f"- input: {head['input']} ({head['input_bytes'] / 1e6:.1f} MB, {head['input_bytes']} bytes)",
        *([f"- pat_str: `{head['pat_str']}`"] if head["pat_str"] is not None else []),
        f"- machine: {head['cpu']} ({head['arch']}), {head['cpu_count']} CPUs, Python {head['python']}",
        "- versions: " + ", ".join(f"{name} {version}" for name, version in head["versions"].items()),
        f"- runs per trainer: {head['repeat']} (median time, maximum RSS)",
        "",
        ("| trainer | wall s | cpu s | peak RSS MiB | RSS before MiB | wall vs bpetrain | cpu vs bpetrain "
        "| RSS vs bpetrain | merges |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    base = results["bpetrain"]["summary"]
    for name, result in results.items():
        s = result["summary"]
        if s["status"] == "timeout":
            lines.append(f"| {name} | timeout (>{head['timeout_s']:g} s) | - | - | - | - | - | - | - |")
            continue
        if s["status"] == "failed":
            lines.append(f"| {name} | failed: {s['error'][:80]} | - | - | - | - | - | - | - |")
            continue
        ratios = ["-"] * 3
        if base["status"] == "ok":
            ratios = [
                _ratio(s["wall_s"], base["wall_s"]),
                _ratio(s["cpu_s"], base["cpu_s"]),
                _ratio(s["peak_rss_kib"], base["peak_rss_kib"]),
            ]
        lines.append(
            f"| {name} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['peak_rss_kib'] / 1024:.0f} "
            f"| {s['rss_before_kib'] / 1024:.0f} | {' | '.join(ratios)} "
            f"| {_merges_cell(name, s, report['merges'].get(name))} |"
        )
    if head["mode"] == "stream":
        lines += [
            "",
            ("Stream mode times the whole job: reading the file, splitting, counting and merging "
            "(bpetrain: its command line, `bpetrain train`, writing the model included; the peers: "
            "their train_from_iterator over ~16 KB str chunks, each cut after an ASCII letter followed by an "
            "ASCII byte that is neither a letter nor ', where every named pattern ends a piece)."),
        ]
        cuts = report.get("stream_cuts")
        if cuts:
            verdict = "the same pieces as" if cuts["same"] else "OTHER pieces than"
            lines += [
                "",
                (f"Stream cuts checked before timing: {cuts['n_chunks']} chunks of ~1 KB of the first "
                 f"{cuts['n_bytes']} bytes split into {verdict} those bytes as one text."),
            ]
    lines += [
        "",
        ("Times cover the training call only; cpu is user + sys of all threads. Peak RSS is the "
        "worker's own high-water mark (`VmHWM`) and includes the interpreter, the library and the input in memory; "
        "RSS before is the same figure just before training. Merges: rustbpe's are rebuilt from its "
        "ranks and compared with bpetrain's; tokenizers breaks ties differently, so its are not."),
    ]
    if any(result["summary"].get("replaced_invalid_utf8") for result in results.values()):
        lines += [
            "",
            ("The input is not valid UTF-8: the peers take str, so they trained on it with invalid "
            "bytes replaced by U+FFFD, and their merges cannot be compared with bpetrain's."),
        ]
    pieces = report.get("rustbpe_pieces")
    if pieces:
        verdict = "the same as"
        if not pieces["same"]:
            verdict = f"NOT the same as (first different token {pieces['first_different_token']})"
        lines += [
            "",
            (f"rustbpe's pieces: {verdict} bpetrain's, judged by rustbpe's encoding of the whole text "
            f"against its encodings of bpetrain's {pieces['n_pieces']} pieces one by one."),
        ]
    if head["mode"] == "raw-whole" and base["status"] == "ok":
        per_byte = base["peak_rss_kib"] * 1024 / head["input_bytes"]
        growth = (base["peak_rss_kib"] - base["rss_before_kib"]) * 1024 / head["input_bytes"]
        lines += [
            "",
            f"bpetrain peak RSS per input byte: {per_byte:.1f} bytes ({growth:.1f} above the RSS before training).",
        ]
    return "\n".join(lines)


def _header(args, pattern: str, pat_str: str | None) -> dict:
    return {
        "mode": args.mode,
        "pattern": pattern,
        "pat_str": pat_str,
        "vocab_size": args.vocab_size,
        "min_frequency": args.min_frequency,
        "input": args.input_name,
        "input_bytes": os.path.getsize(args.file),
        "cpu": _cpu_name(),
        "arch": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in TRAINERS},
        "repeat": args.repeat,
        "timeout_s": args.timeout,
    }


def run_benchmark(args) -> dict:
    """Every trainer with every pattern, round-robin over the runs; one report per pattern."""
    trainers = ["bpetrain"] + [name for name in TRAINERS[1:] if name in args.peers]
    stream_cuts = {}
    if args.mode == "stream" and len(trainers) > 1:  # the peers' chunks must give the whole file's pieces
        for pattern, pat_str in args.patterns:
            print(f"checking the stream cuts for {pattern} ...", file=sys.stderr, flush=True)
            stream_cuts[pattern] = _check_stream_cuts(args.file, pat_str)
            if not stream_cuts[pattern]["same"]:
                raise SystemExit(f"stream mode: the chunks of {args.file} split into other pieces with {pattern}")
    runs = {(pattern, name): [] for pattern, _ in args.patterns for name in trainers}
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        merges_files = {key: os.path.join(tmp, f"{key[0]}.{key[1]}.json") for key in runs}
        for i in range(args.repeat):
            for pattern, pat_str in args.patterns:
                args.split = pat_str
                for name in trainers:
                    print(f"[{i + 1}/{args.repeat}] training {name} with {pattern} ...", file=sys.stderr, flush=True)
                    check_pieces = name == "rustbpe" and args.mode == "pattern" and i == 0
                    key = (pattern, name)
                    runs[key].append(run_trainer(name, args, merges_files[key], check_pieces))
        for pattern, pat_str in args.patterns:
            summaries = {name: summarize(runs[(pattern, name)]) for name in trainers}
            merges = {}
            if "rustbpe" in trainers and summaries["bpetrain"]["status"] == summaries["rustbpe"]["status"] == "ok":
                merges["rustbpe"] = compare_merges(merges_files[(pattern, "bpetrain")], merges_files[(pattern, "rustbpe")])
            report = {
                "header": _header(args, pattern, pat_str),
                "results": {name: {"summary": summaries[name], "runs": runs[(pattern, name)]} for name in trainers},
                "merges": merges,
            }
            if pattern in stream_cuts:
                report["stream_cuts"] = stream_cuts[pattern]
            first_rustbpe = runs.get((pattern, "rustbpe"), [{}])[0]
            if "pieces" in first_rustbpe:
                report["rustbpe_pieces"] = first_rustbpe["pieces"]
            reports.append(report)
    return {"reports": reports}


def render_across_patterns(reports: list[dict]) -> str:
    """Each trainer's runs with every pattern against its own with the first pattern."""
    first = reports[0]["header"]["pattern"]
    lines = [
        f"### Across patterns: each trainer against itself with {first}",
        "",
        "| trainer | pattern | wall s | cpu s | peak RSS MiB | wall vs first | cpu vs first | RSS vs first |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in reports[0]["results"]:
        base = reports[0]["results"][name]["summary"]
        for report in reports:
            s = report["results"][name]["summary"]
            pattern = report["header"]["pattern"]
            if s["status"] != "ok":
                lines.append(f"| {name} | {pattern} | {s['status']} | - | - | - | - | - |")
                continue
            ratios = ["-"] * 3
            if base["status"] == "ok":
                ratios = [_ratio(s[key], base[key]) for key in ("wall_s", "cpu_s", "peak_rss_kib")]
            lines.append(
                f"| {name} | {pattern} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['peak_rss_kib'] / 1024:.0f} "
                f"| {' | '.join(ratios)} |"
            )
    return "\n".join(lines)


def render_all(full: dict) -> str:
    parts = [render(report) for report in full["reports"]]
    if len(full["reports"]) > 1:
        parts.append(render_across_patterns(full["reports"]))
    return "\n\n".join(parts)


def _prefix_file(path: str, n_bytes: int, out: str) -> str:
    """Copy the first ``n_bytes`` of ``path`` to ``out``; return ``out``."""
    with open(path, "rb") as source, open(out, "wb") as target:
        while n_bytes > 0:
            block = source.read(min(n_bytes, 1 << 24))
            if not block:
                break
            target.write(block)
            n_bytes -= len(block)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Train bpetrain, rustbpe and Hugging Face tokenizers on one file; "
        "print wall time, CPU time and peak RSS as a markdown table.",
    )
    parser.add_argument("file", metavar="FILE", help="training text (read as bytes)")
    parser.add_argument("--vocab-size", type=int, default=32768, help="target vocabulary size (default 32768)")
    parser.add_argument(
        "--min-frequency", type=int, default=2,
        help="min_frequency of bpetrain and tokenizers (default 2, bpetrain's default; rustbpe has "
        "no such option and merges every pair seen at least once, which gives the same merges "
        "whenever the vocabulary is reached first)",
    )
    parser.add_argument("--mode", choices=MODES, default="pattern", help="input mode (default pattern)")
    parser.add_argument(
        "--pattern", action="append", metavar="NAME|REGEX",
        help=f"split pattern of the pattern and stream modes: one of {', '.join(SPLIT_PATTERNS)}, all, or a "
        "regex (pattern mode only); repeat the option to train with several (default cl100k)",
    )
    parser.add_argument(
        "--peers",
        type=lambda s: [name.strip() for name in s.split(",") if name.strip()],
        help="comma list of trainers from " + ",".join(TRAINERS) + "; bpetrain, the baseline, always "
        "runs (default: all three, bpetrain only in raw-whole mode)",
    )
    parser.add_argument("--max-bytes", type=int, metavar="N", help="train on the first N bytes of FILE only")
    parser.add_argument("--repeat", type=int, default=1, help="runs per trainer, each in a new process (default 1)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a run is killed (default 1800)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    # worker side, set by the parent
    parser.add_argument("--worker", choices=TRAINERS, help=argparse.SUPPRESS)
    parser.add_argument("--split", help=argparse.SUPPRESS)
    parser.add_argument("--merges-out", help=argparse.SUPPRESS)
    parser.add_argument("--check-pieces", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(args)))
        return 0
    if not os.path.isfile(args.file):
        parser.error(f"no such file: {args.file}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.mode in ("pattern", "stream"):
        try:
            args.patterns = resolve_all(args.pattern, "cl100k")
        except ValueError as exc:
            parser.error(str(exc))
        custom = [pat_str for name, pat_str in args.patterns if name == "custom"]
        if args.mode == "stream" and custom:
            parser.error(f"stream mode cuts the peers' chunks where every named pattern ends a piece; "
                         f"{custom[0]!r:.60} is not one of {', '.join(SPLIT_PATTERNS)} (use --mode pattern)")
    elif args.pattern:
        parser.error(f"--mode {args.mode} does not split: leave out --pattern")
    else:
        args.patterns = [("none", None)]
    args.peers = args.peers if args.peers is not None else list(DEFAULT_PEERS[args.mode])
    unknown = sorted(set(args.peers) - set(TRAINERS))
    if unknown:
        parser.error(f"unknown trainers in --peers: {', '.join(unknown)} (choose from {', '.join(TRAINERS)})")
    args.input_name = args.file
    with tempfile.TemporaryDirectory() as tmp:
        if args.max_bytes is not None:
            if args.max_bytes < 1:
                parser.error("--max-bytes must be at least 1")
            args.input_name = f"{args.file}, first {args.max_bytes} bytes"
            args.file = _prefix_file(args.file, args.max_bytes, os.path.join(tmp, os.path.basename(args.file)))
        report = run_benchmark(args)
    print(render_all(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
