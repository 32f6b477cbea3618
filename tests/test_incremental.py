"""Appendable counting and interval counting against ``Encoding.count`` of the same text."""
from __future__ import annotations

import random

import pytest
from helpers import MULTILINGUAL, SPLIT_PATTERNS, VOCABS, stdlib_text

from bpetrain import AppendableEncoder, BpeTrainer, Encoding, IntervalCounter
from bpetrain.formats.tiktoken import read_tiktoken


@pytest.fixture(scope="module")
def text() -> str:
    rng = random.Random(2)
    return (stdlib_text(30_000).decode("utf-8") + MULTILINGUAL + "a" * 700 + " " * 300 + "x\ud800y "
            + "".join(rng.choices("ab c\n", k=2000)) + "1234567" * 40)


@pytest.fixture(scope="module")
def trained(text) -> dict[bytes, int]:
    tok = BpeTrainer(256 + 800, pat_str="cl100k", min_frequency=1, show_progress=False).train_from_iterator(
        [stdlib_text(300_000).decode("utf-8") + MULTILINGUAL * 3 + "a" * 5000])
    return tok.mergeable_ranks


def encodings(ranks) -> list[Encoding]:
    """The same ranks with a named, a compiled custom, a regex-module and no split pattern."""
    return [
        Encoding("cl100k", pat_str="cl100k", mergeable_ranks=ranks),
        Encoding("llama3", pat_str=SPLIT_PATTERNS["llama3"], mergeable_ranks=ranks),
        Encoding("lookbehind", pat_str=r"(?<=a)b|\w+|\s+|[^\w\s]+", mergeable_ranks=ranks, unicode_version="regex"),
        Encoding("raw", pat_str=None, mergeable_ranks=ranks),
    ]


def check_appendable(enc: Encoding, text: str, sizes) -> None:
    app = enc.appendable()
    assert isinstance(app, AppendableEncoder) and app.count == 0
    i = 0
    for size in sizes:
        if i >= len(text):
            break
        returned = app.push(text[i : i + size])
        i += size
        assert returned == app.count == enc.count(text[:i]), (enc.name, i)


@pytest.mark.parametrize("which", range(4))
def test_appendable_counts_every_prefix(trained, text, which):
    enc = encodings(trained)[which]
    rng = random.Random(which)
    sample = text[:3000] + text[-3500:]
    check_appendable(enc, sample, [1] * len(sample))  # one character at a time
    check_appendable(enc, sample, iter(lambda: rng.randint(1, 40), None))  # random chunks
    check_appendable(enc, "".join(rng.choices("ab \n1é", k=1500)), iter(lambda: rng.randint(1, 5), None))
    app = enc.appendable()
    app.push("")
    assert app.count == 0
    with pytest.raises(TypeError):
        app.push(b"bytes")


@pytest.mark.parametrize("which", range(4))
def test_interval_counts_equal_counting_the_slice(trained, text, which):
    enc = encodings(trained)[which]
    counter = enc.interval_counter(text)
    assert isinstance(counter, IntervalCounter)
    rng = random.Random(10 + which)
    n = len(text)
    for _ in range(2500 if which != 2 else 300):
        start = rng.randrange(n + 1)
        end = start + rng.choice([0, 1, 2, 5, 10, 100, 1000, rng.randrange(n)])
        assert counter.count(start, end) == enc.count(text[start:end]), (enc.name, start, end)
    for start, end in [(0, n), (-50, None), (-10, -3), (5, 2), (n, n + 5), (-(10**9), 10**9), (0, 1)]:
        assert counter.count(start, n if end is None else end) == enc.count(text[start:end]), (start, end)


def test_interval_counter_edges_inside_long_pieces(trained):
    """Slices that start or end inside runs much longer than LONG_PIECE bytes."""
    text = "x " + "a" * 5000 + " " + "ab" * 2000 + " y" + "b" * 3000
    for enc in encodings(trained):
        counter = enc.interval_counter(text)
        rng = random.Random(1)
        for _ in range(400):
            start = rng.randrange(len(text))
            end = rng.randrange(start, len(text) + 1)
            assert counter.count(start, end) == enc.count(text[start:end]), (enc.name, start, end)


def test_empty_and_tiny_texts(trained):
    for enc in encodings(trained):
        for text in ["", "a", " ", "\ud800"]:
            counter = enc.interval_counter(text)
            assert counter.count(0, len(text)) == enc.count(text)
            app = enc.appendable()
            app.push(text)
            assert app.count == enc.count(text)


def test_out_of_order_ranks_recount():
    """A vocabulary whose merges are not in rank order has no automaton: both recount, exactly."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"abc": 256, b"bc": 257, b"ab": 258})
    enc = Encoding("odd", pat_str=None, mergeable_ranks=ranks)
    assert not enc._bpe.linear
    text = "abcabcab" * 20
    check_appendable(enc, text, [3] * 100)
    counter = enc.interval_counter(text)
    assert all(counter.count(a, b) == enc.count(text[a:b]) for a in range(0, 60, 7) for b in range(a, 160, 11))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_with_openai_ranks(name):
    path = VOCABS / f"{name}.tiktoken"
    if not path.exists():
        pytest.skip(f"{path} is absent: OpenAI's ranks for the incremental counters' tests")
    ranks = read_tiktoken(path)
    text = stdlib_text(40_000).decode("utf-8") + MULTILINGUAL * 2 + "a" * 2000 + "".join(
        random.Random(3).choices("abcdefghij", k=3000))
    for pat in [name[:-5], None]:
        enc = Encoding(name, pat_str=pat, mergeable_ranks=ranks)
        check_appendable(enc, text[:2000] + text[-5200:], [1] * 7200)
        counter = enc.interval_counter(text)
        rng = random.Random(4)
        for _ in range(3000):
            start = rng.randrange(len(text))
            end = start + rng.choice([1, 10, 100, 1000, 10000])
            assert counter.count(start, end) == enc.count(text[start:end]), (pat, start, end)
