"""pytest-benchmark groups for pre-tokenization: the compiled splitter and the counter.

Run: ``pytest benchmarks/test_bench_pretok.py --benchmark-only``. Each case first checks
the compiled pieces against the ``regex`` module's, then times the splitter alone
(``_pretok.n_pieces``) and splitting + counting (one thread). Throughput in MB/s is in
``extra_info``; the issue's target is >= 150 MB/s per core for cl100k on kernel-docs.txt.
Real corpora come from ``../shared/corpora/build.sh`` (``BPETRAIN_CORPORA``); without them
the standard library's sources are used.
"""
from __future__ import annotations

import os
import pathlib
import sysconfig

import numpy as np
import pytest
import regex

from bpetrain import _counter, _pretok
from bpetrain.patterns import PATTERNS

CORPORA = pathlib.Path(os.environ.get("BPETRAIN_CORPORA", pathlib.Path(__file__).resolve().parents[2] / "corpora"))
IDS = {"gpt2": _pretok.GPT2, "cl100k": _pretok.CL100K, "o200k": _pretok.O200K}


def corpus(name: str, n_bytes: int = 30_000_000) -> bytes:
    path = CORPORA / name
    if path.exists():
        return path.read_bytes()[:n_bytes]
    parts = [p.read_bytes() for p in sorted(pathlib.Path(sysconfig.get_path("stdlib")).glob("*.py"))]
    return b"".join(parts)[:n_bytes]


@pytest.fixture(scope="module", params=["kernel-docs.txt", "kernel-c.txt", "mix-10M.txt"])
def text(request):
    return request.param, corpus(request.param)


@pytest.mark.benchmark(group="pretok-split")
@pytest.mark.parametrize("pattern", list(IDS))
def test_split(benchmark, text, pattern):
    name, data = text
    head = data[:1_000_000]
    want = [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(PATTERNS[pattern], head.decode("utf-8", "surrogateescape"))]
    assert _pretok.split_bytes(head, IDS[pattern]) == want
    benchmark(_pretok.n_pieces, data, IDS[pattern])
    benchmark.extra_info.update(corpus=name, n_bytes=len(data), mb_per_s=len(data) / benchmark.stats["median"] / 1e6)


@pytest.mark.benchmark(group="pretok-split-and-count")
@pytest.mark.parametrize("pattern", ["cl100k", "o200k"])
def test_split_and_count(benchmark, text, pattern):
    name, data = text
    segments = np.array([[0, len(data), len(data)]], dtype=np.int64)

    def count():
        counts = _counter.PieceCounts()
        counts.count(data, segments, IDS[pattern])
        return counts

    benchmark(count)
    benchmark.extra_info.update(corpus=name, n_bytes=len(data), mb_per_s=len(data) / benchmark.stats["median"] / 1e6)
