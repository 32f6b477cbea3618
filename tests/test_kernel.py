"""The compiled trainer against the pure-Python reference: whole merge lists must agree."""
from __future__ import annotations

import random
import sys

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


@pytest.mark.parametrize("n_merges", [1000, pytest.param(1500, marks=pytest.mark.slow)])
def test_real_prose_pattern_mode(prose, n_merges):
    agree([prose], 256 + n_merges, "cl100k", min_frequency=2)


@pytest.mark.parametrize(("n_bytes", "n_merges"), [(400_000, 300), pytest.param(1_000_000, 500, marks=pytest.mark.slow)])
def test_real_prose_raw_mode(n_bytes, n_merges):
    lines = stdlib_text(n_bytes).splitlines(keepends=True)
    merges = agree(lines, 256 + n_merges, None, min_frequency=2)
    # the same run straight on the kernel: it must have compacted stale occurrence lists
    table = PieceTable.from_counts(_reference.count_pieces(lines, None))
    merger = PairMerger(table.data, table.offsets, table.counts, n_merges, 2)
    merger.merge(n_merges)
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


def kernel_merges(table, max_merges, min_frequency=1, n_base=None):
    """The kernel's merges on ``table`` from its bytes, every merged id numbered as if the
    vocabulary started at 256 (``n_base``: start from a vocabulary of that many ids whose
    first 256 are the bytes, so that merges get ids ``n_base + i``)."""
    if n_base is None:
        merger = PairMerger(table.data, table.offsets, table.counts, max_merges, min_frequency)
    else:
        lengths = np.ones(n_base, dtype=np.int32)
        merger = PairMerger(table.data, table.offsets, table.counts, max_merges, min_frequency,
                            token_lengths=lengths, initial=table.data.astype(np.int32))
    merger.merge(max_merges)
    shift = 0 if n_base is None else n_base - 256
    merges = merger.merges.astype(np.int64)
    merges[merges >= 256 + shift] -= shift
    return merger, [tuple(pair) for pair in merges.tolist()]


@pytest.mark.parametrize("n_base, bytes_per_slot", [(256, 2), (65535 - 300, 2), (65535 - 299, 4), (70000, 4)])
def test_ids_past_16_bits(n_base, bytes_per_slot):
    """Ids are 16 bits a slot while every id and the sentinel (0xFFFF) fit, 32 bits (a
    second array) from the first id that does not: the merges are the same either way
    and the reference's. 300 merges: the last one's id is ``n_base + 299``."""
    texts = [stdlib_text(30_000).decode("utf-8", "replace"), "a" * 5000, "ab" * 700]
    table = PieceTable.from_counts(_reference.count_pieces(texts, None))
    merger, merges = kernel_merges(table, 300, 2, n_base)
    assert merger.bytes_per_slot == bytes_per_slot
    assert merges == reference(texts, 256 + 300, None, min_frequency=2)


def test_more_than_65535_ids_from_the_bytes():
    """Training from the bytes past id 65535 switches to 32-bit slots; the first merges are
    those of a run that stays below."""
    rng = random.Random(5)
    text = bytes(rng.randrange(56, 256) for _ in range(400_000)) + b"x" * 3000
    table = PieceTable.from_counts({text: 1, text[:20_000]: 3})
    narrow, merges = kernel_merges(table, 65279)
    wide, more = kernel_merges(table, 70000)
    assert (narrow.bytes_per_slot, wide.bytes_per_slot) == (2, 4)
    assert len(merges) == 65279 and len(more) == 70000 and more[:65279] == merges


def test_long_distances_in_occurrence_lists():
    """Positions far apart (varints of 1 to 4 bytes) and pairs at the very ends of pieces."""
    far = bytes(range(32, 127)) * 25_000  # about 2.4 MB without a repeated pair nearby
    texts = [b"xy" + far[:100] + b"xy" + far[:20_000] + b"xy" + far + b"xy" + far[:3] + b"xyxy"]
    table = PieceTable.from_counts(_reference.count_pieces(texts, None))
    assert kernel_merges(table, 3, 2)[1] == reference(texts, 256 + 3, None, min_frequency=2)


def test_varint_codec():
    from bpetrain.training._pairs import _py_varints

    positions = [1, 2, 129, 130, 130 + 2**14, 2**21 + 131, 2**28 + 2**21, 2**31 - 2]
    encoded, decoded = _py_varints(positions)
    assert decoded == positions
    deltas = np.diff([0] + positions)
    assert len(encoded) == sum(1 + (d >= 2**7) + (d >= 2**14) + (d >= 2**21) + (d >= 2**28) for d in deltas)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a sparse file (2 GiB of zeros on NTFS)")
def test_pieces_past_int32_positions_are_refused(tmp_path):
    """More bytes than int32 positions address: a ValueError before anything is copied
    (the bytes are a sparse file that is never read)."""
    n_bytes = 2**31
    data = np.memmap(tmp_path / "big", dtype=np.uint8, mode="w+", shape=(n_bytes,))
    with pytest.raises(ValueError, match="int32 positions can address"):
        PairMerger(data, np.array([0, n_bytes], dtype=np.int64), np.array([1], dtype=np.int64), 10, 2)
    del data


def test_merge_pair_past_the_16_bit_ids_widens_the_slots():
    """Ids made by merge_pair (parity-aware training) may outgrow a merger built with
    16-bit slots; it widens them, and merges on as it would have with small ids."""
    data = np.frombuffer(b"abcabcabd" * 3 + b"xyxyxy", dtype=np.uint8).copy()
    offsets = np.array([0, 27, len(data)], dtype=np.int64)
    counts = np.array([2, 1], dtype=np.int64)
    filled, plain = PairMerger(data, offsets, counts, 10, 1), PairMerger(data, offsets, counts, 10, 1)
    n_fill = 0xFFFF - 256 + 5  # ids that occur nowhere, past the 16-bit sentinel
    for _ in range(n_fill):
        filled.merge_pair(0, 0)
    assert filled.bytes_per_slot == 4 and plain.bytes_per_slot == 2
    for merger in (filled, plain):
        assert merger.merge_pair(ord("a"), ord("b")) == 2 * 9
        merger.merge(20)
    shift = np.vectorize(lambda t: t + n_fill if t >= 256 else t)
    assert filled.merges[n_fill:].tolist() == shift(plain.merges).tolist()
    assert len(plain.merges) > 5
