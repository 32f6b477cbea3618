"""pytest-benchmark groups for pre-tokenization: the splitter alone, and splitting + counting.

Run: ``pytest benchmarks/test_bench_pretok.py --benchmark-only``. Every pattern of
``splitting.SPLIT_PATTERNS`` (tiktoken's gpt2, cl100k and o200k; cl100k as rustbpe writes
it; nanochat's; Llama 3's) on every corpus. Each case first checks that bpetrain's pieces
of the first 1 MB equal ``regex.finditer``'s, then times, on one thread:

- ``pretok-split``: the splitter alone (``splitting.n_pieces``, the adapter to repoint
  when the compiled engine for any pattern lands);
- ``pretok-split-and-count``: splitting and counting one text with
  :class:`bpetrain.PieceCounter`, as training does.

``extra_info`` holds the corpus, the pattern, whether bpetrain has a compiled splitter for
it (today only gpt2, cl100k and o200k; the others run the ``regex`` module) and the
throughput in MB/s per core. The issue's target is >= 150 MB/s per core for cl100k on
kernel-docs.txt. Real corpora come from ``../shared/corpora/build.sh``
(``BPETRAIN_CORPORA``; without them the standard library's sources are used), cut to
``BPETRAIN_BENCH_BYTES`` bytes (30 MB; set it small for a smoke run).
"""
from __future__ import annotations

import os
import pathlib
import sysconfig

import pytest
from splitting import (
    SPLIT_PATTERNS,
    count_pieces,
    has_compiled_splitter,
    n_pieces,
    pieces,
    regex_pieces,
)

CORPORA = pathlib.Path(os.environ.get("BPETRAIN_CORPORA", pathlib.Path(__file__).resolve().parents[2] / "corpora"))
N_BYTES = int(os.environ.get("BPETRAIN_BENCH_BYTES", "30000000"))
CHECKED_BYTES = 1_000_000


def corpus(name: str, n_bytes: int = N_BYTES) -> bytes:
    path = CORPORA / name
    if path.exists():
        with open(path, "rb") as f:
            return f.read(n_bytes)
    parts = [p.read_bytes() for p in sorted(pathlib.Path(sysconfig.get_path("stdlib")).glob("*.py"))]
    return b"".join(parts)[:n_bytes]


@pytest.fixture(scope="module", params=["kernel-docs.txt", "kernel-c.txt", "mix-10M.txt"])
def text(request):
    return request.param, corpus(request.param)


@pytest.fixture(autouse=True)
def _machine(benchmark):
    benchmark.extra_info["cpu_count"] = os.cpu_count()
    benchmark.extra_info["threads"] = 1


def check_and_describe(benchmark, name: str, data: bytes, pattern: str) -> str:
    """Check bpetrain's pieces of the first MB against the regex module's; the pat_str."""
    pat_str = SPLIT_PATTERNS[pattern]
    head = data[:CHECKED_BYTES]
    assert pieces(pat_str, head) == regex_pieces(pat_str, head), f"{pattern}: other pieces than regex.finditer's"
    benchmark.extra_info.update(
        corpus=name, pattern=pattern, compiled=has_compiled_splitter(pat_str), n_bytes=len(data)
    )
    return pat_str


def record_throughput(benchmark, data: bytes) -> None:
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["mb_per_s"] = len(data) / benchmark.stats["median"] / 1e6


@pytest.mark.benchmark(group="pretok-split")
@pytest.mark.parametrize("pattern", list(SPLIT_PATTERNS))
def test_split(benchmark, text, pattern):
    name, data = text
    pat_str = check_and_describe(benchmark, name, data, pattern)
    benchmark(n_pieces, pat_str, data)
    record_throughput(benchmark, data)


@pytest.mark.benchmark(group="pretok-split-and-count")
@pytest.mark.parametrize("pattern", list(SPLIT_PATTERNS))
def test_split_and_count(benchmark, text, pattern):
    name, data = text
    pat_str = check_and_describe(benchmark, name, data, pattern)
    benchmark(count_pieces, pat_str, data)
    record_throughput(benchmark, data)
