"""Encoding.encode_stream: a text in parts, cut at safe cuts and special tokens, gives the
ids of the whole text: those of Encoding.encode, and of tiktoken where its special tokens
are not ambiguous (tiktoken tries overlapping special tokens in hash order; bpetrain the
longest first)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import ASSIGNED, MULTILINGUAL, stdlib_text
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Encoding
from bpetrain.splitting.pattern import resolve_pattern

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")

SPECIALS = {"<|endoftext|>": 1300, "<|end|>": 1301, "<|e": 1302}  # one is a prefix of the others
PATTERNS = {
    "cl100k": "cl100k",
    "o200k": "o200k",
    "anchors": r"^\s+|\s+$|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "raw": None,
    "regex module": r"(?<=a)b|\w+|\s+|[^\w\s]+",  # lookbehind: split by the regex module, held whole
}


@pytest.fixture(scope="module")
def ranks():
    text = stdlib_text(60_000).decode("utf-8") + MULTILINGUAL * 3
    return BpeTrainer(1300, pat_str="cl100k", min_frequency=1, show_progress=False).train_from_iterator([text]).mergeable_ranks


def encodings(ranks, name, specials=SPECIALS):
    pat = resolve_pattern(PATTERNS[name])
    # the regex module splits a lookbehind with its own classes: the option says so (no warning)
    unicode_version = "regex" if name == "regex module" else "tiktoken"
    ours = Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens=specials, unicode_version=unicode_version)
    theirs = tiktoken.Encoding(name, pat_str=r"[\s\S]+" if pat is None else pat, mergeable_ranks=ranks,
                               special_tokens=specials)
    return ours, theirs


parts = st.sampled_from(["the", " kernel", "  ", "\n", "\n\n  ", "<|endoftext|>", "<|end|>", "<|e", "|>", "<",
                         "12345", " Straße", " 東京", "🙂", "a", "b", " ab", "!!", "\t"])
texts = st.lists(st.one_of(parts, st.text(ASSIGNED, max_size=6)), max_size=80).map("".join)


@pytest.mark.parametrize("name", list(PATTERNS))
@settings(max_examples=150, deadline=None)
@given(text=texts, cuts=st.lists(st.integers(0, 400), max_size=8), block=st.integers(1, 40))
@example(text="000\u0c05\U00020000the", cuts=[7], block=1)  # a search for a cut began inside a character
def test_stream_equals_whole_text(ranks, name, text, cuts, block):
    ours, theirs = encodings(ranks, name)
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    chunks = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    for options in ({"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {"<|end|>"},
                                                                            "disallowed_special": ()}):
        expected = ours.encode(text, **options)
        if "<|e" not in text:
            assert expected == theirs.encode(text, **options)
        got = list(ours.encode_stream(iter(chunks), block_chars=block, **options))
        assert np.concatenate([np.zeros(0, np.uint32), *got]).tolist() == expected


def test_long_real_text_in_blocks(ranks):
    ours, theirs = encodings(ranks, "anchors", {"<|endoftext|>": 1300, "<|end|>": 1301})
    text = "  \n" + stdlib_text(400_000).decode("utf-8") + "<|end|>" + MULTILINGUAL + "   \n  "
    chunks = [text[i : i + 7919] for i in range(0, len(text), 7919)]
    got = list(ours.encode_stream(chunks, block_chars=50_000, allowed_special="all"))
    assert len(got) > 5  # it did stream
    assert np.concatenate(got).tolist() == theirs.encode(text, allowed_special="all")


def test_disallowed_special_and_bad_block(ranks):
    ours, _ = encodings(ranks, "cl100k")
    with pytest.raises(ValueError, match="disallowed special token '<|end|>'"):
        list(ours.encode_stream(["abc <|en", "d|> x"], block_chars=1))
    with pytest.raises(ValueError, match="block_chars must be at least 1"):
        list(ours.encode_stream(["abc"], block_chars=0))
    assert np.concatenate(list(ours.encode_stream([]))).tolist() == []


@pytest.mark.parametrize("name", list(PATTERNS))
def test_surrogate_pair_split_across_parts(ranks, name):
    """A pair given as two code units is one character in the joined text, wherever the parts are cut."""
    ours, theirs = encodings(ranks, name)
    text = "ab \ud83d\ude00 c\ud83d\ude00\ud83d x\ude00 \ud83d"
    expected = ours.encode(text)
    assert expected == theirs.encode(text)  # tiktoken's fix-up joins the pair
    for cut in range(len(text) + 1):
        for block in (1, 2, 3, len(text)):
            got = list(ours.encode_stream([text[:cut], text[cut:]], block_chars=block))
            assert np.concatenate([np.zeros(0, np.uint32), *got]).tolist() == expected, (cut, block)
    one_by_one = list(ours.encode_stream(list(text), block_chars=1))
    assert np.concatenate(one_by_one).tolist() == expected
