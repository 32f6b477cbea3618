"""Train bpetrain, rustbpe and Hugging Face tokenizers on the same input and compare them.

For each trainer this measures the wall time and the CPU time (user + sys, all threads)
of the training call alone, and the peak resident set size of the process, then prints
a markdown table with the ratios to bpetrain and whether rustbpe learned exactly
bpetrain's merges (Hugging Face breaks ties differently, so its merges are only timed).

Every trainer runs in a fresh subprocess of this script (``--worker``), so the peak RSS
(``ru_maxrss``, read in the worker when training is done) belongs to that trainer alone;
it includes the interpreter, the library and the input held in memory, which the
"RSS before" column shows on its own. Imports and reading the input are not timed,
except that ``bpetrain.BpeTrainer.train`` reads the file itself (pattern and raw-whole
modes), as it does in real use.

Modes:

pattern (default)
    The whole file is one text, split with the cl100k pattern. rustbpe and tokenizers
    get it as one string; after timing, the rustbpe worker also checks that rustbpe cut
    the text into the same pieces as bpetrain's pattern does.
stream
    End to end on a file of any size (the kernel-c.txt benchmark): bpetrain runs its
    command line, ``bpetrain train FILE`` (reading, parallel counting, merging, writing
    the model); rustbpe and tokenizers read the file in chunks of about 16 KB decoded to
    str, cut where the cl100k pattern cuts anyway (``bpetrain._pretok.safe_cut``: a
    newline or a space between letters and a letter, where cl100k's pieces end whatever
    follows), so every trainer sees the pieces of the whole file and nobody holds it in
    memory. Reading is inside the timed call for all three.
raw-lines
    Every line (``bytes.splitlines(keepends=True)``) is one document, not pre-tokenized.
raw-whole
    The whole file is one document, not pre-tokenized; bpetrain only unless ``--peers``
    asks for more. Also reports bpetrain's peak RSS per input byte.

Run it from the repository (or with bpetrain installed)::

    PYTHONPATH=. python benchmarks/train_peers.py /work/corpora/mix-10M.txt --vocab-size 32768
    python benchmarks/train_peers.py FILE --mode raw-lines --peers bpetrain,rustbpe --repeat 3 --json out.json
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

TRAINERS = ("bpetrain", "rustbpe", "tokenizers")
MODES = ("pattern", "stream", "raw-lines", "raw-whole")
DEFAULT_PEERS = {"pattern": TRAINERS, "stream": TRAINERS, "raw-lines": TRAINERS, "raw-whole": ("bpetrain",)}
#: The split pattern of the raw modes for the peers, which always split: each document is one piece.
WHOLE_DOCUMENT = r"[\s\S]+"


# ------------------------------------------------------------------------- worker


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read_lines(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


STREAM_CHUNK = 1 << 14  # bytes a chunk for the peers in stream mode


class _StreamChunks:
    """The file as str chunks cut at safe cuts of the cl100k pattern (stream mode)."""

    def __init__(self, path: str):
        self.path = path
        self.replaced = False

    def __iter__(self):
        from bpetrain import _pretok

        carry = b""
        with open(self.path, "rb") as f:
            while True:
                block = f.read(STREAM_CHUNK)
                data = carry + block
                cut = _pretok.safe_cut(data) if block else len(data)
                if cut <= 0:
                    carry = data
                    continue
                yield self._decode(data[:cut])
                carry = data[cut:]
                if not block:
                    return

    def _decode(self, chunk: bytes) -> str:
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

    """The documents of ``mode`` as str (the peers take only str), and whether any byte
    was not valid UTF-8 and had to be replaced (then the peers train on other bytes)."""
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


def _setup_bpetrain(args):
    import bpetrain

    trainer = bpetrain.BpeTrainer(
        args.vocab_size,
        pattern=args.split if args.mode in ("pattern", "stream") else None,
        min_frequency=args.min_frequency,
        show_progress=False,
    )
    lines = _read_lines(args.file) if args.mode == "raw-lines" else None
    model = args.merges_out + ".bpe"

    def train():
        if args.mode == "stream":  # the command line, end to end
            from bpetrain.cli import main

            main(["train", args.file, "--vocab-size", str(args.vocab_size), "--min-frequency",
                  str(args.min_frequency), "--pattern", args.split, "-o", model, "-q"])
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
    from bpetrain.patterns import compile_pattern

    piece_ids: dict[str, int] = {}
    pieces = (m.group() for m in compile_pattern(pat_str).finditer(text))
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
        "--vocab-size", str(args.vocab_size), "--min-frequency", str(args.min_frequency), "--split", args.split, "--merges-out", merges_out,
    ]
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
    lines = [
        f"### {head['mode']} mode, vocab size {head['vocab_size']}, min_frequency {head['min_frequency']}",
        "",
        f"- input: {head['input']} ({head['input_bytes'] / 1e6:.1f} MB, {head['input_bytes']} bytes)",
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
            "their train_from_iterator over ~16 KB str chunks cut where cl100k cuts anyway)."),
        ]
    lines += [
        "",
        ("Times cover the training call only; cpu is user + sys of all threads. Peak RSS is the "
        "worker's `ru_maxrss` and includes the interpreter, the library and the input in memory; "
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


def run_benchmark(args) -> dict:
    from bpetrain.patterns import PATTERNS

    args.split = PATTERNS["cl100k"]
    trainers = ["bpetrain"] + [name for name in TRAINERS[1:] if name in args.peers]
    runs: dict[str, list[dict]] = {name: [] for name in trainers}
    with tempfile.TemporaryDirectory() as tmp:
        merges_files = {name: os.path.join(tmp, f"{name}.json") for name in trainers}
        for i in range(args.repeat):
            for name in trainers:
                print(f"[{i + 1}/{args.repeat}] training {name} ...", file=sys.stderr, flush=True)
                check_pieces = name == "rustbpe" and args.mode == "pattern" and i == 0
                runs[name].append(run_trainer(name, args, merges_files[name], check_pieces))
        summaries = {name: summarize(runs[name]) for name in trainers}
        merges = {}
        if "rustbpe" in trainers and summaries["bpetrain"]["status"] == summaries["rustbpe"]["status"] == "ok":
            merges["rustbpe"] = compare_merges(merges_files["bpetrain"], merges_files["rustbpe"])
    header = {
        "mode": args.mode,
        "vocab_size": args.vocab_size,
        "min_frequency": args.min_frequency,
        "input": args.file,
        "input_bytes": os.path.getsize(args.file),
        "cpu": _cpu_name(),
        "arch": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in TRAINERS},
        "repeat": args.repeat,
        "timeout_s": args.timeout,
    }
    report = {
        "header": header,
        "results": {name: {"summary": summaries[name], "runs": runs[name]} for name in trainers},
        "merges": merges,
    }
    first_rustbpe = runs.get("rustbpe", [{}])[0]
    if "pieces" in first_rustbpe:
        report["rustbpe_pieces"] = first_rustbpe["pieces"]
    return report


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
        "--peers",
        type=lambda s: [name.strip() for name in s.split(",") if name.strip()],
        help="comma list of trainers from " + ",".join(TRAINERS) + "; bpetrain, the baseline, always "
        "runs (default: all three, bpetrain only in raw-whole mode)",
    )
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
    args.peers = args.peers if args.peers is not None else list(DEFAULT_PEERS[args.mode])
    unknown = sorted(set(args.peers) - set(TRAINERS))
    if unknown:
        parser.error(f"unknown trainers in --peers: {', '.join(unknown)} (choose from {', '.join(TRAINERS)})")
    report = run_benchmark(args)
    print(render(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
