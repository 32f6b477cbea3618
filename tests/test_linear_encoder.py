"""The linear (backtracking) encoder against the heap encoder, the reference rule and tiktoken.

Each piece is encoded on every path of the kernel directly (``_py_encode_bytes``: no
whole-token shortcut), so a path cannot hide behind another.
"""
from __future__ import annotations

import random
import warnings

import pytest
from helpers import VOCABS, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer
from bpetrain.encoding._encoder import BytePairEncoder
from bpetrain._reference import encode_piece_ranks
from bpetrain.formats.tiktoken import read_tiktoken
from bpetrain.training.trainer import VocabSizeNotReachedWarning

#: Longest piece the "small" path takes (``_heap.SMALL_PIECE``).
SMALL_PIECE = 32

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")


def adversarial_pieces(seed: int, max_length: int = 300) -> list[bytes]:
    """Repeats of one to three letters and random letters and bytes, every length to ``max_length``."""
    rng = random.Random(seed)
    pieces = []
    for length in range(1, max_length + 1):
        pieces += [b"a" * length, (b"ab" * length)[:length], (b"aab" * length)[:length]]
        pieces.append(bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=length)))
        pieces.append(bytes(rng.choices(b"abc", k=length)))
        pieces.append(bytes(rng.getrandbits(8) for _ in range(length)))
    return pieces


def trained_ranks(alphabet: str, vocab_size: int, seed: int = 0) -> dict[bytes, int]:
    """A vocabulary trained on random text of ``alphabet`` with long runs (many ties)."""
    rng = random.Random(seed)
    texts = ["".join(rng.choices(alphabet, k=3000)) for _ in range(4)] + [alphabet[0] * 700]
    tok = BpeTrainer(vocab_size, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(texts)
    return tok.mergeable_ranks


def check_paths(bpe: BytePairEncoder, piece: bytes, oracle) -> None:
    expected = oracle(piece)
    assert bpe._py_encode_bytes(piece, "linear") == expected, piece[:60]
    assert bpe._py_encode_bytes(piece, "heap") == expected, piece[:60]
    if len(piece) <= SMALL_PIECE:  # tiktoken's loop, where ties (runs of one pair) pick the leftmost
        assert bpe._py_encode_bytes(piece, "small") == expected, piece[:60]
    assert bpe.encode_bytes(piece, as_list=True) == expected, piece[:60]


@pytest.mark.parametrize(("alphabet", "vocab_size"), [("abc", 256 + 300), ("ab", 256 + 120), ("a", 256 + 12)])
def test_linear_equals_heap_and_reference_on_trained_vocabularies(alphabet, vocab_size):
    ranks = trained_ranks(alphabet, vocab_size)
    bpe = BytePairEncoder(ranks)
    assert bpe.linear, "a vocabulary bpetrain trained merges in rank order"
    theirs = tiktoken.Encoding("t", pat_str=r"\S+", mergeable_ranks=ranks, special_tokens={})
    for piece in adversarial_pieces(len(alphabet), 120):
        check_paths(bpe, piece, theirs._encode_single_piece)
    for piece in adversarial_pieces(7, 60)[::7]:
        assert bpe._py_encode_bytes(piece, "linear") == encode_piece_ranks(piece, ranks)


def test_linear_on_real_text_pieces(prose):
    text = prose[:400_000].decode("utf-8", "ignore")
    tok = BpeTrainer(256 + 2000, pat_str="cl100k", min_frequency=1, show_progress=False).train_from_iterator([text])
    bpe = BytePairEncoder(tok.mergeable_ranks)
    assert bpe.linear
    theirs = tiktoken.Encoding("t", pat_str=r"\S+", mergeable_ranks=tok.mergeable_ranks, special_tokens={})
    rng = random.Random(3)
    for _ in range(400):  # slices that cut across pieces, words and characters
        start = rng.randrange(len(prose) - 2000)
        check_paths(bpe, prose[start : start + rng.randint(1, 1500)], theirs._encode_single_piece)
    check_paths(bpe, prose[:200_000], theirs._encode_single_piece)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(alphabet="abcd é", min_size=1, max_size=300), min_size=1, max_size=6),
       extra=st.integers(1, 200), piece=st.binary(min_size=1, max_size=400))
def test_hypothesis_vocabularies(texts, extra, piece):
    """Vocabularies trained on generated text; pieces of bytes and of the same text."""
    with warnings.catch_warnings():  # short texts run out of pairs before vocab_size
        warnings.simplefilter("ignore", VocabSizeNotReachedWarning)
        tok = BpeTrainer(256 + extra, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(texts)
    bpe = BytePairEncoder(tok.mergeable_ranks)
    assert bpe.linear
    for data in [piece, "".join(texts).encode("utf-8")]:
        expected = encode_piece_ranks(data, tok.mergeable_ranks)
        assert bpe._py_encode_bytes(data, "linear") == expected
        assert bpe._py_encode_bytes(data, "heap") == expected


def test_out_of_order_ranks_keep_the_heap():
    """"abc" (rank 256) is made from a + "bc" (rank 257): tiktoken's rule reaches it, merges
    in rank order do not, so the linear encoder must stay off and the heap decide."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"abc": 256, b"bc": 257, b"ab": 258})
    bpe = BytePairEncoder(ranks)
    assert not bpe.linear
    with pytest.raises(ValueError, match="does not apply"):
        bpe._py_encode_bytes(b"abc", "linear")
    for piece in [b"abc" * 30, b"xabcabc" * 10, b"ab" * 50 + b"c"]:
        assert bpe.encode_bytes(piece, as_list=True) == encode_piece_ranks(piece, ranks)


def test_unreachable_token_only_as_a_whole_piece():
    """No merge makes "abc" (neither "ab" nor "bc" is a token), yet tiktoken gives it to the
    piece that is exactly "abc": the linear encoder applies and must never emit it inside
    a longer piece."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"abc": 256, b"aa": 257, b"aaa": 258})
    bpe = BytePairEncoder(ranks)
    assert bpe.linear
    theirs = tiktoken.Encoding("t", pat_str=r"\S+", mergeable_ranks=ranks, special_tokens={})
    assert bpe.encode_bytes(b"abc", as_list=True) == theirs._encode_single_piece(b"abc") == [256]
    for piece in [b"abc" * 10, b"aabc" * 9, b"a" * 40 + b"bc"]:
        check_paths(bpe, piece, theirs._encode_single_piece)
        assert 256 not in bpe._py_encode_bytes(piece, "linear")


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_linear_with_openai_ranks(name):
    path = VOCABS / f"{name}.tiktoken"
    if not path.exists():
        pytest.skip(f"{path} is absent: OpenAI's ranks for the linear encoder's tests")
    ranks = read_tiktoken(path)
    bpe = BytePairEncoder(ranks)
    assert bpe.linear
    theirs = tiktoken.Encoding(name, pat_str=r"\S+", mergeable_ranks=ranks, special_tokens={})
    for piece in adversarial_pieces(11):
        check_paths(bpe, piece, theirs._encode_single_piece)
    rng = random.Random(5)
    for piece in [b"a" * 10**6, bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=10**6)),
                  stdlib_text(10**6)]:
        expected = bpe._py_encode_bytes(piece, "heap")  # tiktoken is quadratic here
        assert bpe._py_encode_bytes(piece, "linear") == expected
    assert bpe._py_encode_bytes(b"ab" * 2000, "linear") == theirs._encode_single_piece(b"ab" * 2000)


def test_linear_tables_are_built_when_first_needed_and_change_no_id():
    """A new encoder builds only the merging encoders' tables; the linear encoder's come
    once LINEAR_AFTER bytes were read (or when asked for), from any of many threads at
    once, and the ids before and after are the same (the heap's and the linear encoder's)."""
    from concurrent.futures import ThreadPoolExecutor

    from bpetrain.encoding._encoder import LINEAR_AFTER

    ranks = trained_ranks("abc ", 400)
    pieces = adversarial_pieces(7)
    expected = [encode_piece_ranks(piece, ranks) for piece in pieces]
    bpe = BytePairEncoder(ranks)
    assert not bpe._py_linear_built
    assert [bpe.encode_bytes(piece, True) for piece in pieces[:5]] == expected[:5]
    assert not bpe._py_linear_built
    with ThreadPoolExecutor(4) as pool:
        rounds = list(pool.map(lambda _: [bpe.encode_bytes(piece, True) for piece in pieces],
                               range(4 * LINEAR_AFTER // sum(map(len, pieces)) + 4)))
    assert bpe._py_linear_built and bpe.linear
    assert all(got == expected for got in rounds)
    fresh = BytePairEncoder(ranks)
    assert fresh.linear and fresh._py_linear_built  # asking builds them


def test_pair_rank_dense_and_hashed():
    """``pair_rank`` gives the rank of two tokens' bytes joined, or None, for pairs of ids
    below 512 (its dense table) and above (the pair table behind its filter) alike."""
    ranks = trained_ranks("abcdefgh", 1500)
    tokens = sorted(ranks, key=ranks.get)
    assert len(tokens) > 1024
    bpe = BytePairEncoder(ranks)
    rng = random.Random(0)
    ids = list(range(len(tokens)))
    pairs = [(a, b) for a in range(250, 520) for b in range(250, 520)]
    pairs += [(rng.choice(ids), rng.choice(ids)) for _ in range(20000)]
    pairs += [(ranks[token[:k]], ranks[token[k:]]) for token in tokens for k in range(1, len(token))
              if token[:k] in ranks and token[k:] in ranks]  # every split of every token
    found = {True: 0, False: 0}  # pairs that join into a token, by whether both ids are below 512
    for left, right in pairs:
        expected = ranks.get(tokens[left] + tokens[right])
        assert bpe._py_pair_rank(left, right) == expected, (left, right)
        found[max(left, right) < 512] += expected is not None
    assert min(found.values()) > 20, found  # both tables answer with a rank, not only None
    with pytest.raises(ValueError, match="ranks must be in"):
        bpe._py_pair_rank(-1, 0)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_other_scripts_of_every_length_on_every_route(name):
    """Pieces with bytes above 0x7F, every length to 64 (up to 32 bytes go to tiktoken's
    loop, 33 to 48 to the heap encoder instead of the linear one), before and after the
    linear encoder's tables: Han text, Cyrillic words, box drawing, runs of one character
    (ties), and invalid UTF-8 (lone continuation bytes, cut characters)."""
    path = VOCABS / f"{name}.tiktoken"
    if not path.exists():
        pytest.skip(f"{path} is absent: OpenAI's ranks for the routes' tests")
    ranks = read_tiktoken(path)
    bpe = BytePairEncoder(ranks)
    theirs = tiktoken.Encoding(name, pat_str=r"\S+", mergeable_ranks=ranks, special_tokens={})
    rng = random.Random(7)
    han = "".join(chr(rng.randrange(0x4E00, 0x9FA6)) for _ in range(40)).encode()
    cyrillic = "".join(chr(rng.randrange(0x430, 0x450)) for _ in range(40)).encode()
    sources = [han, cyrillic, "достопримечательностями".encode(), " переосвидетельствование".encode(),
               "的的的的的的的的的的的的的的的的的的的的的的".encode(), ("─" * 30).encode(),
               ("│mc      │V:65,   │1434 │文本模式的全屏文件管理器").encode(),
               bytes(rng.choice([0x80, 0xA0, 0xBF, 0xE4, 0xB8]) for _ in range(80)), han[1:] + b"\xe4\xb8"]
    for built in (False, True):
        if built:
            bpe.build_linear()
        for source in sources:
            for length in range(1, 65):
                piece = source[:length]
                assert bpe.encode_bytes(piece, as_list=True) == theirs._encode_single_piece(piece), (name, piece)


def last_merge(ranks: dict[bytes, int], token: bytes) -> tuple[bytes, bytes] | None:
    """The two parts tiktoken's rule joins last when merging ``token``'s bytes alone, if it
    makes ``token``; else None."""
    parts, last = [bytes([b]) for b in token], None
    while len(parts) > 1:
        joined = [ranks.get(parts[i] + parts[i + 1]) for i in range(len(parts) - 1)]
        best = min((rank, i) for i, rank in enumerate(joined) if rank is not None) if any(
            rank is not None for rank in joined) else None
        if best is None:
            break
        i = best[1]
        last = (parts[i], parts[i + 1])
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return last if parts == [token] else None


@pytest.mark.parametrize(("alphabet", "vocab_size"), [("abcdefgh", 1500), ("ab", 256 + 120)])
def test_split_pairs_after_the_linear_tables(alphabet, vocab_size):
    """Before the linear encoder's tables, ``pair_rank`` answers for every split of every
    token; after, only for each token's own split (the pair merging its bytes alone joins
    last), and every path still gives tiktoken's ids."""
    ranks = trained_ranks(alphabet, vocab_size)
    tokens = sorted(ranks, key=ranks.get)
    bpe = BytePairEncoder(ranks)
    splits = [(token[:k], token[k:], token) for token in tokens for k in range(1, len(token))
              if token[:k] in ranks and token[k:] in ranks]
    for left, right, token in splits:
        assert bpe._py_pair_rank(ranks[left], ranks[right]) == ranks[token]
    bpe.build_linear()
    assert bpe.linear
    others = 0
    for left, right, token in splits:
        own = last_merge(ranks, token) == (left, right)
        others += not own
        assert bpe._py_pair_rank(ranks[left], ranks[right]) == (ranks[token] if own else None), (left, right)
    assert others > 20  # the tokens with more than one split lost all but their own
    theirs = tiktoken.Encoding("t", pat_str=r"\S+", mergeable_ranks=ranks, special_tokens={})
    for piece in adversarial_pieces(3, 120) + [alphabet.encode() * 40, alphabet[0].encode() * 200]:
        check_paths(bpe, piece, theirs._encode_single_piece)
