"""The compiled splitter gives exactly the regex module's pieces, and its safe cuts are safe."""
from __future__ import annotations

import random
import sys

import pytest
import regex
from helpers import MULTILINGUAL, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import _pretok
from bpetrain.patterns import PATTERNS

NAMED = {"gpt2": _pretok.GPT2, "cl100k": _pretok.CL100K, "o200k": _pretok.O200K}


def regex_pieces(data: bytes, name: str) -> list[bytes]:
    """The reference: regex.finditer on the text decoded with surrogateescape."""
    text = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(PATTERNS[name], text)]


def check(data: bytes, name: str) -> None:
    got = _pretok.split_bytes(data, NAMED[name])
    want = regex_pieces(data, name)
    if got != want:
        first = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
        raise AssertionError(f"{name}: piece {first} differs: {got[first:first + 3]} != {want[first:first + 3]}")


# Characters that exercise every branch: each class of the patterns, case variants of
# the contraction letters (including U+017F, which matches (?i:s)), marks, digits of
# other scripts, Unicode spaces, CR/LF, and the characters the patterns name.
SPECIAL_CHARS = (
    "aAsSdDmMtTlLvVrReE'\u017f\u212a/ \t\r\n\x0b\x0c\x85\xa0\u2028\u3000\u1680\u200b"
    "0123\u0663\u00b2\u2167\u0301\u0308\u02b0\u01c5\u00e9\u4e2d\u0915\u093f!?.,-_\"#\U0001f600\U0001d400"
)
chars = st.one_of(
    st.sampled_from(SPECIAL_CHARS),
    st.characters(codec="utf-8"),  # every category, surrogates excluded
)
texts = st.lists(chars, max_size=60).map("".join)
invalid = st.binary(max_size=6).filter(lambda b: not _is_utf8(b))


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


documents = st.lists(st.one_of(texts.map(lambda t: t.encode("utf-8")), invalid), max_size=6).map(b"".join)


@pytest.mark.parametrize("name", NAMED)
@settings(max_examples=600, deadline=None)
@given(data=documents)
def test_pieces_identical_to_regex_hypothesis(name, data):
    check(data, name)


@pytest.mark.parametrize("name", NAMED)
def test_pieces_identical_to_regex_real_text(name, prose):
    check(MULTILINGUAL.encode("utf-8") * 3, name)
    check(prose[:1_000_000], name)


@pytest.mark.parametrize("name", NAMED)
def test_pieces_identical_to_regex_adversarial(name):
    rng = random.Random(7)
    cases = [
        b"",
        b"a" * 10**5,
        b" " * 1000 + b"x",
        b"\n" * 100 + b" " * 10,
        b"1" * 1001,
        b"'s's'S'll'LL'\xc5\xbf'\xe2\x84\xaa",  # ſ matches (?i:s); the Kelvin sign is no contraction
        bytes(rng.randrange(256) for _ in range(20000)),  # mostly invalid UTF-8
        b"\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf\xe0\x80\xaf\xf0\x8f\xbf\xbf",  # surrogates, overlong, > U+10FFFF
        b"abc\xe2\x82",  # truncated at the end
        "".join(rng.choice("aA'sS \r\n\t.1/\u0301\u02b0") for _ in range(20000)).encode("utf-8"),
    ]
    for data in cases:
        check(data, name)


@pytest.mark.skipif(sys.maxunicode < 0x10FFFF, reason="needs a wide Python build")
@pytest.mark.parametrize("name", NAMED)
def test_every_code_point(name):
    """Every code point, alone and between letters, spaces and digits."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    for sep in ("", "a", " ", "1", "\n", "'"):
        check(sep.join(every[i : i + 500] for i in range(0, len(every), 500)).encode("utf-8"), name)


@pytest.mark.parametrize("name", NAMED)
def test_safe_cuts_split_like_the_whole(name):
    """Cutting at any safe cut and splitting both sides gives the pieces of the whole.

    The left side is split with the character after the cut as context (what the
    lookaheads see), as the counting kernel does; it must end exactly at the cut.
    """
    data = (
        MULTILINGUAL.encode("utf-8")
        + stdlib_text(20_000)
        + b"x.\n/y \n\nA\r\nB  \n\xff\nC \n\n\nD can't 's a 'S b \xc5\xbf e\xcc\x81 \xc3\x89 x"
        + "中文。文字，中3文abc123 कित aʰ'́b\tc,d_e".encode()
        + b"word\xffword\xe2\x82word"
    )
    whole = _pretok.split_bytes(data, NAMED[name])
    hi, n_cuts = len(data), 0
    while (cut := _pretok.safe_cut(data, 0, hi)) > 0:
        left = _pretok.split_bytes(data[: cut + 4], NAMED[name], stop=cut)
        right = _pretok.split_bytes(data[cut:], NAMED[name])
        assert left + right == whole, f"cut at {cut} is not safe"
        if name != "gpt2":  # cl100k and o200k: safe even with the text ending at the cut
            assert _pretok.split_bytes(data[:cut], NAMED[name]) == left
        hi, n_cuts = cut, n_cuts + 1
    assert n_cuts > 100


def test_safe_cut_kinds():
    """A newline then a letter, or a letter then neither a letter, a mark nor '."""
    assert _pretok.safe_cut(b".\n/b") == -1  # o200k keeps ".\n/" together
    assert _pretok.safe_cut(b".\n b") == -1
    assert _pretok.safe_cut(b".\nb") == 2
    assert _pretok.safe_cut(b"a\n/b") == 1
    assert _pretok.safe_cut(b". b") == -1
    assert _pretok.safe_cut(b"ab'") == -1  # o200k: a contraction may follow
    assert _pretok.safe_cut("a\u0301".encode()) == -1  # o200k: marks continue the piece
    assert _pretok.safe_cut("\u4e2d\u3002x".encode()) == 3
    assert _pretok.safe_cut(b"a1") == 1
    assert _pretok.safe_cut(b"a\xe3\x80") == -1  # a character cut off by the end is not known
    assert _pretok.safe_cut(b".\n\xc3") == -1
    assert _pretok.safe_cut(b".\n\xc3\xa9") == 2
    assert _pretok.safe_cut(b"a\nb\nc", 0, 3) == 2
    assert _pretok.safe_cut(b"\nb", 1) == -1  # the cut must leave text on both sides
