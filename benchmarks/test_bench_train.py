"""pytest-benchmark groups for training: real text by size and mode, and a worst case.

Run: ``pytest benchmarks/ --benchmark-only`` (after ``pip install '.[bench]'``). Every
case first checks that bpetrain and rustbpe learn the same merges, then times bpetrain.
The peers side by side, with memory, are in ``train_peers.py``.
"""
from __future__ import annotations

import os
import random

import pytest
from texts import stdlib_text

from bpetrain import BpeTrainer

rustbpe = pytest.importorskip("rustbpe", reason="rustbpe is a bench dependency: pip install '.[bench]'")


def rustbpe_ranks(texts, vocab_size, pattern):
    peer = rustbpe.Tokenizer()
    peer.train_from_iterator(iter(texts), vocab_size, pattern=pattern)
    return sorted(peer.get_mergeable_ranks(), key=lambda item: item[1])


def ours(texts, vocab_size, pattern):
    return BpeTrainer(vocab_size, pat_str=pattern, min_frequency=1, show_progress=False).train_from_iterator(texts)


def check_same_as_rustbpe(texts, vocab_size, pattern, peer_pattern):
    tok = ours(texts, vocab_size, pattern)
    peer = rustbpe_ranks(texts, vocab_size, peer_pattern)
    assert [(token, rank) for token, rank in peer] == [(tok.vocab[i], i) for i in range(len(peer))]


@pytest.fixture(autouse=True)
def _machine(benchmark):
    benchmark.extra_info["cpu_count"] = os.cpu_count()


@pytest.mark.benchmark(group="train-pattern-cl100k")
@pytest.mark.parametrize("n_bytes", [10**5, 10**6, 4 * 10**6])
def test_pattern_mode(benchmark, n_bytes):
    text = stdlib_text(n_bytes)
    from bpetrain import PATTERNS

    check_same_as_rustbpe([text], 4096, "cl100k", PATTERNS["cl100k"])
    benchmark.extra_info["n_bytes"] = n_bytes
    benchmark(ours, [text], 4096, "cl100k")


@pytest.mark.benchmark(group="train-raw-lines")
@pytest.mark.parametrize("n_bytes", [10**5, 10**6, 4 * 10**6])
def test_raw_lines(benchmark, n_bytes):
    lines = stdlib_text(n_bytes).splitlines(keepends=True)
    check_same_as_rustbpe(lines, 4096, None, r"[\s\S]+")
    benchmark.extra_info["n_bytes"] = n_bytes
    benchmark(ours, lines, 4096, None)


@pytest.mark.benchmark(group="train-worst-case")
@pytest.mark.parametrize("n_bytes", [10**5, 10**6, 10**7])
@pytest.mark.filterwarnings("ignore::bpetrain.VocabSizeNotReachedWarning")
def test_one_repeated_byte(benchmark, n_bytes):
    """One document of equal bytes: each merge rewrites the whole document (log2 n merges)."""
    benchmark.extra_info["n_bytes"] = n_bytes
    benchmark(ours, [b"a" * n_bytes], 512, None)


@pytest.mark.benchmark(group="train-worst-case")
@pytest.mark.parametrize("n_bytes", [10**5, 10**6, 10**7])
def test_one_random_document(benchmark, n_bytes):
    """One document of random letters from {a, b, c, d}: no pieces, all ties, deep merges."""
    data = bytes(random.Random(n_bytes).choices(b"abcd", k=n_bytes))
    benchmark.extra_info["n_bytes"] = n_bytes
    benchmark(ours, [data], 4096, None)
