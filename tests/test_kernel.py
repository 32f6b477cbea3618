"""The compiled trainer against the pure-Python reference: whole merge lists must agree."""
from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import MULTILINGUAL, random_corpus, stdlib_text

from bpetrain import PATTERNS, BpeTrainer, PieceTable, _reference
from bpetrain.training._merge import PairMerger


def train(texts, vocab_size, pattern, min_frequency=1, special_tokens=()):
    trainer = BpeTrainer(vocab_size, pat_str=pattern, special_tokens=special_tokens,
                         min_frequency=min_frequency, show_progress=False)
    return trainer.train_from_iterator(texts).merges


def reference(texts, vocab_size, pattern, min_frequency=1, special_tokens=()):
    pat_str = None if pattern is None else PATTERNS.get(pattern, pattern)
    return _reference.train(texts, vocab_size - 256 - len(special_tokens), pat_str,
                            special_tokens, min_frequency)


def agree(texts, vocab_size, pattern, min_frequency=1, special_tokens=()):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # early stops are compared, not reported
        ours = train(texts, vocab_size, pattern, min_frequency, special_tokens)
    expected = reference(texts, vocab_size, pattern, min_frequency, special_tokens)
    assert ours == expected
    return ours


def test_seed_example_bcdedede():
    assert agree(["BCDEDEDE"], 258, None) == [(ord("D"), ord("E")), (256, 256)]


def test_seed_example_aaabdaaabac():
    merges = agree(["aaabdaaabac"], 259, None)
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    assert [vocab[256 + i] for i in range(3)] == [b"aa", b"ab", b"aaab"]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("pattern", [None, "cl100k", "gpt2"])
def test_random_ties(seed, pattern):
    alphabet = ["ab", "abc", "ab ", "a b\n1"][seed % 4]
    texts = random_corpus(seed, 40, alphabet, 30)
    agree(texts, 256 + 80, pattern, min_frequency=random.Random(seed).choice([1, 2, 3]))


@pytest.mark.parametrize("text", ["a" * 10**4, "ab" * 10**4, "aab" * 3000 + "a" * 777, "abc" * 5 + "a" * 1023])
@pytest.mark.parametrize("pattern", [None, "cl100k"])
def test_repetitive(text, pattern):
    agree([text, text[:-3]], 256 + 60, pattern)


@pytest.mark.parametrize("pattern", [None, "cl100k", "o200k", "gpt2"])
def test_multilingual_with_emoji(pattern):
    texts = [MULTILINGUAL, MULTILINGUAL[::-1], MULTILINGUAL * 3]
    agree(texts, 256 + 150, pattern, min_frequency=2)


def test_invalid_utf8_and_special_tokens():
    texts = [b"caf\xc3\xa9 \xff\xfe abc<|eot|>ab\x80\x80\x80c", "abab<|eot|>cab", b"\xed\xa0\x80 ab" * 5]
    for pattern in (None, "cl100k"):
        agree(texts, 256 + 1 + 40, pattern, special_tokens=["<|eot|>"])


def test_real_prose_pattern_mode(prose):
    agree([prose], 256 + 1500, "cl100k", min_frequency=2)


def test_real_prose_raw_mode():
    lines = stdlib_text(1_000_000).splitlines(keepends=True)
    merges = agree(lines, 256 + 500, None, min_frequency=2)
    # the same run straight on the kernel: it must have compacted stale occurrence lists
    table = PieceTable.from_counts(_reference.count_pieces(lines, None))
    merger = PairMerger(table.data, table.offsets, table.counts, 500, 2)
    merger.merge(500)
    assert [tuple(p) for p in merger.merges.tolist()] == merges
    assert merger.n_compactions > 0


def test_count_above_int32():
    """Counts are int64 all the way: a piece seen 3 * 2**31 times outweighs one seen 2**32 times."""
    table = PieceTable.from_counts({b"xy": 3 * 2**31, b"ab": 2**32, b"abab": 2**31 + 7})
    merger = PairMerger(table.data, table.offsets, table.counts, 4, 1)
    merger.merge(10)
    assert [tuple(p) for p in merger.merges.tolist()] == [(97, 98), (120, 121), (256, 256)]
    # (a, b): 2**32 + 2 * (2**31 + 7) = 2**33 + 14; (x, y): 3 * 2**31
    assert merger.merge_counts.tolist() == [2**33 + 14, 3 * 2**31, 2**31 + 7]


def test_ten_million_equal_bytes():
    """One piece of 10**7 equal bytes: every merge that is possible, identical to the reference."""
    agree([b"a" * 10**7], 256 + 64, None, min_frequency=1)


def test_kernel_rejects_bad_tables():
    data = np.frombuffer(b"abc", dtype=np.uint8)
    with pytest.raises(ValueError, match="n_pieces \\+ 1"):
        PairMerger(data, np.array([0, 3], dtype=np.int64), np.array([1, 1], dtype=np.int64), 5, 1)
    with pytest.raises(ValueError, match="counts must be >= 0"):
        PairMerger(data, np.array([0, 3], dtype=np.int64), np.array([-1], dtype=np.int64), 5, 1)
    with pytest.raises(ValueError, match="nondecreasing"):
        PairMerger(data, np.array([0, 2, 1, 3], dtype=np.int64), np.array([1, 1, 1], dtype=np.int64), 5, 1)


def test_huge_max_merges_is_capped_by_the_text():
    """No more merges than tokens fit: buffers are sized by the text, not by vocab_size."""
    table = PieceTable.from_counts({b"abc": 1})
    merger = PairMerger(table.data, table.offsets, table.counts, 2**31 - 257, 1)
    assert merger.max_merges <= 5
    merger.merge(10)
    assert merger.finished and merger.merges.tolist() == [[97, 98], [256, 99]]
