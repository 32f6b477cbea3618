"""pytest-benchmark groups for encoding: bpetrain and its peers on 1 KB documents, whole
texts, and worst cases (text that pre-tokenization cannot split), by input size.

Run: ``pytest benchmarks/test_bench_encode.py --benchmark-only`` (after
``pip install '.[bench]'``; the OpenAI vocabularies in ``../shared/vocabs`` or
``BPETRAIN_VOCABS``). Every case first checks that the peer returns exactly bpetrain's
token ids, then times it. Peers that are not installed (gigatoken, toktok) are left out.
Encoders that cache pieces between calls start every round with empty caches (see
``encode_peers.py``), so no round reuses what an earlier one cached. ``encode_peers.py``
runs the same peers side by side on a corpus and prints the ratios.
"""
from __future__ import annotations

import os
import random

import pytest
from encode_peers import ENCODERS, VOCABS, documents, installed, load_encoders
from texts import stdlib_text

VOCAB = "cl100k_base"
if not (VOCABS / f"{VOCAB}.tiktoken").exists():
    pytest.skip(f"{VOCABS / VOCAB}.tiktoken is absent: the OpenAI vocabularies (set BPETRAIN_VOCABS)",
                allow_module_level=True)
for module in ("tiktoken", "bpe_openai", "tokenizers"):
    pytest.importorskip(module, reason=f"{module} is a bench dependency: pip install '.[bench]'")
AVAILABLE = [name for name in ENCODERS if installed(name)]
ROUNDS = 5


@pytest.fixture(scope="module")
def encoders():
    return load_encoders(VOCAB, AVAILABLE)


@pytest.fixture(autouse=True)
def _machine(benchmark):
    benchmark.extra_info["cpu_count"] = os.cpu_count()
    benchmark.extra_info["threads"] = 1
    benchmark.extra_info["vocab"] = VOCAB


def timed(benchmark, encoders, encoder, call, n_bytes):
    """Check ``call(bpetrain's encode)`` equals ``call(encoder's)``, then time the latter,
    emptying the encoder's caches before every round."""
    one, renew = encoders[encoder].one, encoders[encoder].renew
    assert call(one) == call(encoders["bpetrain"].one), f"{encoder} gives other ids than bpetrain"
    benchmark.extra_info["n_bytes"] = n_bytes
    benchmark.pedantic(call, args=(one,), setup=renew, rounds=ROUNDS, warmup_rounds=0)


@pytest.mark.benchmark(group="encode-docs-1KB")
@pytest.mark.parametrize("n_bytes", [10**5, 10**6])
@pytest.mark.parametrize("encoder", AVAILABLE)
def test_documents(benchmark, encoders, encoder, n_bytes):
    docs = documents(stdlib_text(n_bytes).encode("utf-8"), 1000)
    timed(benchmark, encoders, encoder, lambda encode: [encode(d) for d in docs], n_bytes)


@pytest.mark.benchmark(group="encode-whole")
@pytest.mark.parametrize("n_bytes", [10**5, 10**6, 4 * 10**6])
@pytest.mark.parametrize("encoder", AVAILABLE)
def test_whole_text(benchmark, encoders, encoder, n_bytes):
    text = stdlib_text(n_bytes)
    timed(benchmark, encoders, encoder, lambda encode: encode(text), n_bytes)


@pytest.mark.benchmark(group="encode-worst-case")
@pytest.mark.parametrize("kind", ["repeated-a", "random-letters"])
@pytest.mark.parametrize("n_bytes", [10**3, 10**4, 10**5, 10**6])
@pytest.mark.parametrize("encoder", AVAILABLE)
def test_worst_case(benchmark, encoders, encoder, n_bytes, kind):
    """One piece of n_bytes: the heap encoder's O(n log n) against the peers."""
    if kind == "repeated-a":
        text = "a" * n_bytes
    else:
        text = "".join(random.Random(n_bytes).choices("abcdefghijklmnopqrstuvwxyz", k=n_bytes))
    timed(benchmark, encoders, encoder, lambda encode: encode(text), n_bytes)
