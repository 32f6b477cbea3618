"""Differential fuzzing: every way bpetrain encodes or counts a text against tiktoken (OpenAI's
cl100k_base, when VOCABS has it) and against the plain reference (a vocabulary trained here),
on text with every Unicode category, surrogate pairs and lone halves, CRLF runs and special
token strings.

Each example drives: ``encode``, ``encode_ordinary``, ``encode_batch``, ``count``,
``encode_stream`` cut anywhere, the appendable encoder pushed in any parts, the interval
counter on random slices (out-of-range and pair-cutting indices included), and
``split_into_chunks`` (its chunks join to the text, each has at most the limit's tokens, and
each is the longest prefix that does, found by trying every prefix). CI runs a few hundred
examples, also on the debug build (bounds checks on, ``.ci/run``); ``-m slow`` runs thousands.
"""
from __future__ import annotations

import numpy as np
import pytest
import regex
from helpers import ASSIGNED, MULTILINGUAL, VOCABS, openai_encodings, stdlib_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Encoding
from bpetrain._reference import encode_piece_ranks

SPECIALS = {"<|endoftext|>": 700, "<|fim_prefix|>": 701}
FRAGMENTS = [
    "\ud83d\ude00",  # a surrogate pair as two code units (what UTF-16 sources and json.loads give)
    "\ud83d", "\ude00", "\udbff\udfff", "\ud800",  # halves alone
    "\r\n", "\r\n\r\n\r\n", "\r", "\n\n", "   ", "\t", " \u3000",
    "<|endoftext|>", "<|fim_prefix|>", "<|endoftext", "|>",
    " 命", "命", "é", "🙂", "👨‍👩‍👧", "x", "abc", " the", "123456", "'s", "!!", "\x00", "\u202e",
]


def texts(characters: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Texts made of the fragments and runs of ``characters``."""
    return st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(characters, max_size=6)), max_size=14).map("".join)


#: Every category, surrogates and unassigned code points included: for the reference, which
#: classifies characters with the same ``regex`` module.
ANY = st.characters(exclude_categories=())
#: Characters Python's Unicode database assigns, and surrogates: for tiktoken, whose Rust regex
#: classifies characters assigned since Unicode 14 differently (helpers.ASSIGNED).
KNOWN = st.one_of(ASSIGNED, st.characters(categories=("Cs",)))


def fixup(text: str) -> str:
    """tiktoken's fix-up of lone surrogates (joins pairs, lone halves become U+FFFD)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class Reference:
    """The plain reference as a tiktoken-shaped encoder: split, then merge the lowest rank."""

    def __init__(self, enc: Encoding):
        self.enc = enc

    def encode_ordinary(self, text: str) -> list[int]:
        text = fixup(text)
        pieces = [text] if self.enc.pat_str is None else [m.group() for m in regex.finditer(self.enc.pat_str, text)]
        return [i for piece in pieces if piece for i in encode_piece_ranks(piece.encode(), self.enc.mergeable_ranks)]

    def encode(self, text: str, allowed_special="all") -> list[int]:
        assert allowed_special == "all"
        specials = sorted(self.enc.special_tokens, key=len, reverse=True)
        parts = regex.split(f"({'|'.join(map(regex.escape, specials))})", text)
        return [i for k, part in enumerate(parts)
                for i in ([self.enc.special_tokens[part]] if k % 2 else self.encode_ordinary(part))]


@pytest.fixture(scope="module")
def trained() -> dict[bytes, int]:
    text = stdlib_text(40_000).decode("utf-8") + MULTILINGUAL * 3 + " 命" * 20 + "\r\n" * 50 + "a" * 300
    return BpeTrainer(700, pat_str="cl100k", min_frequency=1, show_progress=False).train_from_iterator([text]).mergeable_ranks


def pairs(trained) -> dict[str, tuple[Encoding, object, st.SearchStrategy[str]]]:
    """name -> (bpetrain's encoding, the one it is compared with, the characters to draw)."""
    found = {}
    for name, pat in [("trained cl100k", "cl100k"), ("trained raw", None), ("trained o200k", "o200k")]:
        enc = Encoding(name, pat_str=pat, mergeable_ranks=trained, special_tokens=SPECIALS)
        found[name] = (enc, Reference(enc), ANY)
    if (VOCABS / "cl100k_base.tiktoken").exists():
        pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
        ours, theirs = openai_encodings("cl100k_base")
        found["cl100k_base"] = (ours, theirs, KNOWN)
    return found


NAMES = ["trained cl100k", "trained raw", "trained o200k", "cl100k_base"]


@pytest.fixture(scope="module")
def compared(trained):
    return pairs(trained)


def cuts(data, text: str) -> list[str]:
    """``text`` in consecutive parts cut at drawn code-unit offsets (pairs cut too)."""
    points = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


def longest_chunks(enc: Encoding, text: str, limit: int) -> list[str] | None:
    """Chunks of ``text`` (no lone surrogates), each the longest prefix of the rest with at
    most ``limit`` tokens, found by counting every prefix; None if a character alone has more."""
    chunks, start = [], 0
    while start < len(text):
        fits = [end for end in range(start + 1, len(text) + 1) if enc.count(text[start:end]) <= limit]
        if not fits:
            return None
        chunks.append(text[start : max(fits)])
        start = max(fits)
    return chunks


def check_example(enc: Encoding, other, characters: st.SearchStrategy[str], data) -> None:
    text = data.draw(texts(characters), label="text")
    ordinary = enc.encode_ordinary(text)
    assert ordinary == other.encode_ordinary(text)
    assert enc.encode(text, allowed_special="all") == other.encode(text, allowed_special="all")
    if any(s in text for s in enc.special_tokens):
        with pytest.raises(ValueError):
            enc.encode(text)
    else:
        assert enc.encode(text) == ordinary
    assert enc.encode_batch([text, text[::-1]], num_threads=2, allowed_special="all") == [
        other.encode(text, allowed_special="all"), other.encode(text[::-1], allowed_special="all")]
    assert enc.count(text) == len(ordinary)

    # encode_stream, cut anywhere, in blocks of any size
    block = data.draw(st.integers(1, 12), label="block_chars")
    streamed = list(enc.encode_stream(cuts(data, text), allowed_special="all", block_chars=block))
    joined = np.concatenate(streamed) if streamed else np.zeros(0, dtype=np.uint32)
    assert joined.tolist() == enc.encode(text, allowed_special="all")

    # the appendable encoder, pushed in any parts
    app = enc.appendable()
    pushed = ""
    for part in cuts(data, text):
        pushed += part
        assert app.push(part) == app.count == enc.count(pushed)

    # the interval counter on random slices, out of range and cutting pairs included
    counter = enc.interval_counter(text)
    n = len(text)
    index = st.integers(-n - 2, n + 2) | st.none()
    for start, end in data.draw(st.lists(st.tuples(index, index), max_size=8), label="slices"):
        assert counter.count(start, end) == enc.count(text[start:end]), (start, end)

    # split_into_chunks: the longest chunks within the limit, joined the text; refused only
    # when a character alone has more tokens
    limit = data.draw(st.integers(1, 6), label="max_tokens")
    try:
        chunks = enc.split_into_chunks(text, limit)
    except ValueError:
        chunks = None
    assert chunks == longest_chunks(enc, fixup(text), limit)


def differential(max_examples: int):
    """The differential test of every encoding in NAMES, ``max_examples`` texts each."""

    @pytest.mark.parametrize("name", NAMES)
    @settings(max_examples=max_examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def test(compared, name, data):
        if name not in compared:
            pytest.skip(f"{VOCABS / 'cl100k_base.tiktoken'} is absent: OpenAI's ranks for the comparison with tiktoken")
        check_example(*compared[name], data)

    return test


test_differential = differential(150)
test_differential_thousands = pytest.mark.slow(differential(1500))
