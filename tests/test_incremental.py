"""Appendable counting and interval counting against ``Encoding.count`` of the same text."""
from __future__ import annotations

import os
import pathlib
import random
import subprocess
import sys
import textwrap

import pytest
from helpers import MULTILINGUAL, SPLIT_PATTERNS, VOCABS, stdlib_text

import bpetrain
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
    # every prefix is counted whole, and the regex module's pushes split it whole again: time
    # quadratic in the sample, so that encoding's is shorter (its tail still holds spaces, the
    # lone surrogate, the random text and the digits)
    sample = text[:3000] + text[-3500:] if which != 2 else text[:300] + text[-2400:]
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


def run_child(code: str) -> str:
    """Run ``code`` in a child Python that imports this bpetrain (from the folder that holds it,
    which ``-c`` puts first on the path) and the tests' helpers; its output."""
    home = pathlib.Path(bpetrain.__file__).parents[1]
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600,
                          cwd=home, env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parent)})
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout


SURROGATE_TEXTS = ["\ud83d\ude00" * 2, "a\ud83d\ude00b \ud83d \ude00\ud83d\ud83d\ude00é 命\ude00",
                   "\udbff\udfff x" * 40 + "\ud800", "é" * 70 + "\ud83d\ude00" * 70 + " abc" * 20]


@pytest.mark.parametrize("which", range(4))
def test_interval_counter_indexes_the_str_given(trained, which):
    """Indices are those of the str given, surrogate pairs as two code units: a slice that cuts
    a pair holds a lone half (U+FFFD), as enc.count of the slice says; out-of-range indices
    are clamped as slicing clamps them, and none is read past the counter's tables."""
    enc = encodings(trained)[which]
    for text in SURROGATE_TEXTS:
        counter = enc.interval_counter(text)
        n = len(text)
        edges = [None, *range(-n - 3, n + 4)] if n < 40 else [None, -n - 1, -1, 0, 1, 63, 64, 65, 130, n, n + 5]
        for start in edges:
            for end in edges:
                assert counter.count(start, end) == enc.count(text[start:end]), (enc.name, text[:8], start, end)
    counter = enc.interval_counter("\ud83d\ude00" * 2)
    assert counter.count(-(10**30), 10**30) == enc.count("\ud83d\ude00" * 2)
    with pytest.raises(TypeError):
        counter.count(0.5, 2)


@pytest.mark.parametrize("which", range(4))
def test_appendable_joins_a_surrogate_pair_pushed_apart(trained, which):
    enc = encodings(trained)[which]
    parts = ["x\ud83d", "\ude00y", "\ud83d", "", "\ud83d", "\ude00", "\ud83d\ude00\ud83d", "\ud83d", "\ude00 z\ud83d"]
    app = enc.appendable()
    pushed = ""
    for part in parts:
        pushed += part
        assert app.push(part) == app.count == enc.count(pushed), (enc.name, pushed)


def test_appendable_shared_by_threads():
    """Four threads pushing into one encoder: no crash, and the count of everything pushed
    (the pushes are all the same text, so their order does not change it). In a child
    process, so that a crash fails this test only."""
    assert run_child("""
        import threading
        from bpetrain import Encoding
        ranks = {bytes([i]): i for i in range(256)}
        ranks.update({b"ab": 256, b"abab": 257, b" a": 258, b"\\xc3\\xa9": 259})
        for pat in ("cl100k", None):
            enc = Encoding("t", pat_str=pat, mergeable_ranks=ranks)
            app = enc.appendable()
            part = "abab é ab" * 30
            def run():
                for _ in range(1500):
                    app.push(part)
                    app.count
            threads = [threading.Thread(target=run) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert app.count == enc.count(part * 6000), (pat, app.count)
            counter = enc.interval_counter(part * 50)
            def slices():
                for i in range(3000):
                    assert counter.count(i % 97, 5 * i % 9000) == enc.count((part * 50)[i % 97 : 5 * i % 9000])
            threads = [threading.Thread(target=slices) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        print("ok")
    """) == "ok\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the resident set size from /proc")
def test_interval_counter_memory_per_character():
    """The counter of 4 M characters of prose, with cl100k's pattern, keeps about 4 bytes a
    character and peaks at not much more (it kept 23 and peaked near 60 when it held its pieces
    as Python tuples and an 8-byte offset for every character). In a child process, the resident
    set size read every millisecond while the counter is built (the kernel lets go of the GIL)."""
    found = run_child("""
        import resource, threading
        from helpers import MULTILINGUAL, stdlib_text
        from bpetrain import Encoding
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * resource.getpagesize()
        ranks = {bytes([i]): i for i in range(256)}
        ranks.update({b" t": 256, b"he": 257, b" the": 258})
        enc = Encoding("t", pat_str="cl100k", mergeable_ranks=ranks)
        text = (stdlib_text(1_000_000).decode("utf-8") + MULTILINGUAL) * 4
        enc.interval_counter("warm up")
        before, peak, done = rss(), [0], threading.Event()
        def sample():
            while not done.wait(0.001):
                peak[0] = max(peak[0], rss())
        sampler = threading.Thread(target=sample)
        sampler.start()
        counter = enc.interval_counter(text)
        done.set()
        sampler.join()
        kept = rss() - before
        print(len(text), kept, max(peak[0], rss()) - before)
    """)
    n_chars, kept, peak = map(int, found.split())
    assert kept < 8 * n_chars, kept / n_chars
    assert peak < 12 * n_chars, peak / n_chars
