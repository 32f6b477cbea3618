"""Pieces of other scripts encoded in parts, cut where no token spans a character boundary.

Each test makes the encoder take the cutting path (``build_linear``: it needs the splits
and the span filter) and compares with tiktoken's rule on the whole piece
(``_reference.encode_piece_ranks``), on vocabularies whose tokens span character
boundaries, hold parts of characters, or are never made by merging.
"""
from __future__ import annotations

import random

import pytest
from helpers import VOCABS

from bpetrain import BpeTrainer
from bpetrain._reference import encode_piece_ranks
from bpetrain.encoding._encoder import BytePairEncoder
from bpetrain.formats.tiktoken import read_tiktoken

HAN = "中国人的大学生"


def short_entries(bpe: BytePairEncoder) -> int:
    """Pieces of 3 to 8 bytes the spare piece table holds (the call's parts among them)."""
    (_, used), = bpe._py_spare_shorts
    return used


def han_ranks(vocab_size: int, seed: int) -> dict[bytes, int]:
    """A vocabulary trained on random Han text as one piece: tokens of whole characters,
    of several, and of the bytes across two characters."""
    rng = random.Random(seed)
    texts = ["".join(rng.choices(HAN + "a ", k=2000)) for _ in range(3)]
    tok = BpeTrainer(vocab_size, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(texts)
    return tok.mergeable_ranks


@pytest.mark.parametrize(("vocab_size", "seed"), [(256 + 12, 0), (256 + 40, 1), (256 + 150, 2)])
def test_cut_pieces_equal_the_rule_on_trained_vocabularies(vocab_size, seed):
    ranks = han_ranks(vocab_size, seed)
    spanning = [t for t in ranks if len(t) > 1 and any(b >= 0xC0 for b in t[1:])]
    assert spanning or vocab_size < 256 + 20  # the larger vocabularies hold tokens across characters
    bpe = BytePairEncoder(ranks)
    assert bpe.linear
    for token, rank in ranks.items():  # a piece that is a token is that token, never cut
        assert bpe.encode_bytes(token, as_list=True) == [rank], token
    rng = random.Random(seed)
    for _ in range(1500):
        piece = "".join(rng.choices(HAN + "a", k=rng.randrange(2, 30))).encode()
        assert bpe.encode_bytes(piece, as_list=True) == encode_piece_ranks(piece, ranks), piece.decode()


def test_a_token_across_characters_keeps_them_together():
    """"中国" is a token (and "国\\xe4" a token of a character and a byte): a piece is not
    cut where either spans, and is cut between other characters (the parts then sit in
    the piece table)."""
    ranks = {bytes([b]): b for b in range(256)}
    for token in ["中", "国", "人"]:
        data = token.encode()
        ranks.setdefault(data[:2], len(ranks))
        ranks[data] = len(ranks)
    ranks["中国".encode()] = len(ranks)
    ranks["国".encode() + b"\xe4"] = len(ranks)
    bpe = BytePairEncoder(ranks)
    assert bpe.linear
    for text in ["中国中国", "国中国人", "人人中国人", "国中中国国人中", "中人国人中人国"]:
        piece = text.encode()
        assert bpe.encode_bytes(piece, as_list=True) == encode_piece_ranks(piece, ranks), text
    fresh = BytePairEncoder(ranks)
    fresh.build_linear()
    fresh.encode_bytes("人人中国".encode())
    assert short_entries(fresh) == 2  # "人" and "中国", not the piece (12 bytes)


def test_a_part_that_merging_never_makes_is_merged():
    """"中" is a token that no merge makes (no token of two of its bytes): a piece of it
    alone is that token, as in tiktoken, but a part "中" of a cut piece is its three bytes."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks["中".encode()] = 256
    ranks["国".encode()[:2]] = 257
    ranks["国".encode()] = 258
    bpe = BytePairEncoder(ranks)
    assert bpe.linear
    assert bpe.encode_bytes("中".encode(), as_list=True) == [256]
    for text in ["中中", "国中国", "中国中国中", "中" * 12]:
        piece = text.encode()
        expected = encode_piece_ranks(piece, ranks)
        assert 256 not in expected
        assert bpe.encode_bytes(piece, as_list=True) == expected, text


def test_without_the_linear_tables_no_piece_is_cut():
    ranks = han_ranks(256 + 40, 1)
    bpe = BytePairEncoder(ranks)
    piece = (HAN * 2).encode()
    bpe.encode_bytes(piece)
    assert not bpe._py_linear_built and short_entries(bpe) == 0
    bpe.build_linear()
    bpe.cache_size = bpe.cache_size  # a new table
    assert bpe.encode_bytes(piece, as_list=True) == encode_piece_ranks(piece, ranks)
    assert short_entries(bpe) > 0  # the parts


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_cut_pieces_of_openai_vocabularies(name):
    """Han, Japanese, Korean, Cyrillic, Thai and mixed runs as one piece, every length to
    90 bytes, and invalid UTF-8 (cut characters, lone continuation bytes)."""
    path = VOCABS / f"{name}.tiktoken"
    if not path.exists():
        pytest.skip(f"{path} is absent: OpenAI's ranks for the cutting tests")
    ranks = read_tiktoken(path)
    bpe = BytePairEncoder(ranks)
    bpe.build_linear()
    rng = random.Random(11)
    sources = [
        "".join(chr(rng.randrange(0x4E00, 0x9FA6)) for _ in range(40)),
        "我们今天去公园玩了一个下午的时候天气很好",
        "東京都の天気はどうですかカタカナひらがな", "대한민국의수도는서울입니다", "ภาษาไทยเป็นภาษาราชการ",
        "достопримечательностями", "中文English混合русский",
    ]
    for source in sources:
        data = source.encode()
        for length in range(1, min(len(data), 90) + 1):
            piece = data[:length]
            assert bpe.encode_bytes(piece, as_list=True) == encode_piece_ranks(piece, ranks), (name, piece)
    for _ in range(300):
        piece = bytes(rng.choice([0x80, 0xA0, 0xBF, 0xE4, 0xB8, 0xAD, 0xE5, 0x9B, 0xBD, 0x61]) for _ in range(40))
        assert bpe.encode_bytes(piece, as_list=True) == encode_piece_ranks(piece, ranks), (name, piece)
