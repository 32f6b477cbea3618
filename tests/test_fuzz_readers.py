"""Fuzzing every reader of model, vocabulary and counts files with mutated files.

Each reader gets valid files of a small trained tokenizer, mutated by hypothesis (a fixed
seed: ``derandomize=True``): byte flips, truncation, duplicated and swapped lines, huge and
negative numbers, deep JSON, long lines, and for counts files arrays of wrong shapes and dtypes.
A reader may load the file or raise ``ValueError``/``OSError`` naming the file; anything
else fails. Each reader's run is a forked child with a memory limit and a time limit, so
a crash (a signal) or a runaway allocation fails the test instead of killing the runner.

CI runs ``FUZZ_EXAMPLES`` cases per reader with lines of 10 KB on a raw-mode model (a
mutated split pattern is a new pattern to compile, up to seconds each); ``-m slow`` runs
``FUZZ_EXAMPLES_SLOW`` on a model with GPT-2's pattern and lines of 1 MB, and lines of
100 MB in every file.
"""
from __future__ import annotations

import io
import json
import os
import signal
import time
import traceback

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpetrain import PieceTable, Tokenizer
from bpetrain.counting.inputs import expand_inputs, read_records

# each reader runs in a forked child under a memory limit: POSIX's fork and setrlimit
resource = pytest.importorskip("resource", reason="the fuzzed readers run in a forked child with a memory limit (POSIX)")

FUZZ_EXAMPLES = 300
FUZZ_EXAMPLES_SLOW = 1000
CHILD_SECONDS = 240  # the whole run of one reader in CI
CHILD_SECONDS_SLOW = 1800  # in slow runs
CHILD_EXTRA_BYTES = 3 << 30  # address space a child may add to the parent's

NUMBERS = [b"-1", b"0", b"4294967296", b"9223372036854775808", b"18446744073709551616", b"1" * 400, b"1e999", b"-0"]


def tokenizer(pat_str: str | None) -> Tokenizer:
    merges = [(97, 98), (256, 99), (32, 116), (104, 101), (259, 32), (258, 257)]
    return Tokenizer(merges, pat_str=pat_str, special_tokens={"<|endoftext|>": 262, "<|pad|>": 263})


def files_of(format: str, pat_str: str | None = None) -> dict[str, bytes]:
    """The files a valid export in ``format`` writes: name -> content."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        if format == "bpetrain":
            tokenizer(pat_str).save(os.path.join(folder, "m.bpe"))
        elif format == "counts":
            PieceTable.from_counts({b"ab": 3, b" the": 2, b"c": 7}).save(os.path.join(folder, "s.npz"), pat_str=None)
        elif format == "jsonl":
            with open(os.path.join(folder, "c.jsonl"), "wb") as f:
                f.write(b'{"text": "hello world"}\n{"text": "more", "id": 2}\n{"text": "x\\u00e9"}\n')
        else:
            name = {"tiktoken": "r.tiktoken", "hf": "tokenizer.json", "gpt2": "g", "minbpe": "m"}[format]
            tokenizer(pat_str).export(os.path.join(folder, name), format=format)
        found = {}
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, folder)] = f.read()
        return found


def read(format: str, folder: str):
    """Run the reader of ``format`` on the files in ``folder``."""
    if format == "bpetrain":
        return Tokenizer.load(os.path.join(folder, "m.bpe"))
    if format == "counts":
        return PieceTable.load(os.path.join(folder, "s.npz"))
    if format == "jsonl":
        return [batch for source in expand_inputs([os.path.join(folder, "c.jsonl")]) for batch in read_records(source)]
    if format == "gpt2":
        return Tokenizer.from_file(os.path.join(folder, "g"))
    if format == "minbpe":
        return Tokenizer.from_file(os.path.join(folder, "m.model"))
    name = {"tiktoken": "r.tiktoken", "hf": "tokenizer.json"}[format]
    return Tokenizer.from_file(os.path.join(folder, name), format=format)


@st.composite
def mutations(draw, long_line: int):
    """A list of edits, each a function of bytes to bytes."""
    edits, kinds = [], ["flip", "truncate", "dup", "swap", "number", "deep", "long", "delete"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind == "long":
            kinds = kinds[:-2] + kinds[-1:]  # one long line a case is enough
        at = draw(st.floats(0, 1))
        if kind == "flip":
            bit = draw(st.integers(0, 7))
            edits.append(lambda d, at=at, bit=bit: _flip(d, at, bit))
        elif kind == "truncate":
            edits.append(lambda d, at=at: d[: int(len(d) * at)])
        elif kind in ("dup", "swap", "delete"):
            other = draw(st.floats(0, 1))
            edits.append(lambda d, kind=kind, at=at, other=other: _lines(d, kind, at, other))
        elif kind == "number":
            number = draw(st.sampled_from(NUMBERS))
            edits.append(lambda d, at=at, number=number: _number(d, at, number))
        elif kind == "deep":
            depth = draw(st.sampled_from([200, 5000, 100_000]))
            edits.append(lambda d, at=at, depth=depth: _insert(d, at, b"[" * depth + b"]" * depth))
        else:
            edits.append(lambda d, at=at: _insert(d, at, b"x" * long_line + b"\n"))
    return edits


def _flip(data: bytes, at: float, bit: int) -> bytes:
    if not data:
        return data
    i = min(int(len(data) * at), len(data) - 1)
    return data[:i] + bytes([data[i] ^ (1 << bit)]) + data[i + 1 :]


def _lines(data: bytes, kind: str, at: float, other: float) -> bytes:
    lines = data.split(b"\n")
    i, j = min(int(len(lines) * at), len(lines) - 1), min(int(len(lines) * other), len(lines) - 1)
    if kind == "dup":
        lines.insert(i, lines[i])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        del lines[i]
    return b"\n".join(lines)


def _number(data: bytes, at: float, number: bytes) -> bytes:
    """Replace the run of digits at or after ``at`` with ``number``."""
    import re

    match = re.compile(rb"\d+").search(data, int(len(data) * at)) or re.compile(rb"\d+").search(data)
    return data if match is None else data[: match.start()] + number + data[match.end() :]


def _insert(data: bytes, at: float, text: bytes) -> bytes:
    i = int(len(data) * at)
    return data[:i] + text + data[i:]


def check_case(format: str, base: dict[str, bytes], target: str, edits, tmp: str) -> None:
    """Write ``base`` with ``target`` mutated into a fresh folder and read it."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(dir=tmp)
    try:
        for name, content in base.items():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if name == target:
                for edit in edits:
                    content = edit(content)
            with open(path, "wb") as f:
                f.write(content)
        try:
            read(format, folder)
        except (ValueError, OSError) as exc:
            named = [os.path.basename(n) for n in base] + [os.path.dirname(n) for n in base if os.path.dirname(n)]
            assert any(n in str(exc) for n in named), f"{type(exc).__name__} does not name the file: {exc}"
    finally:
        shutil.rmtree(folder)


def run_isolated(function, seconds: float) -> None:
    """Run ``function`` in a forked child with limits; fail with its traceback, signal or timeout."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            with open("/proc/self/status") as f:
                vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
            resource.setrlimit(resource.RLIMIT_AS, (vm + CHILD_EXTRA_BYTES, vm + CHILD_EXTRA_BYTES))
            function()
            os._exit(0)
        except BaseException:  # noqa: BLE001 (report whatever it is to the parent)
            os.write(write_end, traceback.format_exc().encode()[-20000:])
            os._exit(1)
        finally:
            os._exit(2)
    os.close(write_end)
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the reader ran past {seconds} s")
        time.sleep(0.05)
    with os.fdopen(read_end, "rb") as f:
        report = f.read().decode(errors="replace")
    if os.WIFSIGNALED(status):
        pytest.fail(f"the reader crashed with signal {os.WTERMSIG(status)}")
    if os.WEXITSTATUS(status) != 0:
        pytest.fail(report)


FORMATS = ["bpetrain", "tiktoken", "hf", "gpt2", "minbpe", "counts", "jsonl"]


def fuzz(format: str, tmp_path, n_examples: int, long_line: int, pat_str: str | None) -> None:
    base = files_of(format, pat_str)
    targets = sorted(base)

    @settings(max_examples=n_examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(targets), mutations(long_line))
    def case(target, edits):
        check_case(format, base, target, edits, str(tmp_path))

    run_isolated(case, CHILD_SECONDS if n_examples <= FUZZ_EXAMPLES else CHILD_SECONDS_SLOW)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="runs each reader in a forked child (POSIX only)")
@pytest.mark.parametrize("format", FORMATS)
def test_fuzz_readers(format, tmp_path):
    fuzz(format, tmp_path, FUZZ_EXAMPLES, long_line=10_000, pat_str=None)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="runs each reader in a forked child (POSIX only)")
@pytest.mark.parametrize("format", FORMATS)
def test_fuzz_readers_long(format, tmp_path):
    fuzz(format, tmp_path, FUZZ_EXAMPLES_SLOW, long_line=1 << 20, pat_str="gpt2")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="runs each reader in a forked child (POSIX only)")
@pytest.mark.parametrize("format", FORMATS)
def test_100_mb_lines(format, tmp_path):
    """A line of 100 MB at the start, middle and end of each file: read or refused, within
    the child's memory and time limits."""
    base = files_of(format, "gpt2")

    def cases():
        for target in sorted(base):
            for at in (0.0, 0.5, 1.0):
                check_case(format, base, target, [lambda d, at=at: _insert(d, at, b"x" * (100 << 20) + b"\n")],
                           str(tmp_path))

    run_isolated(cases, CHILD_SECONDS_SLOW)


@st.composite
def counts_file_arrays(draw):
    """A counts file's members with random dtypes and shapes (valid ones among them)."""
    dtypes = st.sampled_from([np.uint8, np.int64, np.int32, np.float64, np.uint64, np.bool_])
    members = {}
    for name in ("data", "offsets", "counts"):
        shape = draw(st.sampled_from([(0,), (1,), (3,), (4,), (2, 2), ()]))
        values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=4, max_size=4))
        members[name] = np.resize(np.array(values, dtype=np.int64), shape).astype(draw(dtypes))
    header = draw(st.sampled_from([
        {"format": "bpetrain counts v1", "pat_str": None, "special_tokens": [], "n_input_bytes": 3, "n_documents": 1},
        {"format": "bpetrain counts v1", "pat_str": 5, "special_tokens": [1], "n_input_bytes": -1, "n_documents": 0},
        {"format": "other"},
        [1, 2],
    ]))
    members["header"] = np.array(json.dumps(header)) if draw(st.booleans()) else np.arange(3)
    if draw(st.booleans()):
        del members[draw(st.sampled_from(sorted(members)))]
    return members


@pytest.mark.skipif(not hasattr(os, "fork"), reason="runs the reader in a forked child (POSIX only)")
def test_fuzz_counts_file_arrays(tmp_path):
    """Counts files with arrays of wrong dtypes and shapes: a table or a ValueError naming the file."""

    @settings(max_examples=FUZZ_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(counts_file_arrays())
    def case(members):
        buffer = io.BytesIO()
        np.savez(buffer, **members)
        path = tmp_path / "s.npz"
        path.write_bytes(buffer.getvalue())
        try:
            PieceTable.load(path)
        except ValueError as exc:
            assert "s.npz" in str(exc), str(exc)

    run_isolated(case, CHILD_SECONDS)
