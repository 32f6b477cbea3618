"""The Unicode version of the character classes: tiktoken's engine's, or the regex module's.

tiktoken's Rust engine and the installed ``regex`` module class some code points apart
(letters, digits and marks of recent Unicode versions; U+0295, Ll in one and Lo in the
other). ``unicode_version="tiktoken"`` (an Encoding's default) must split as tiktoken does.
The vocabulary of every byte pair (:func:`pair_ranks`) makes the ids show the pieces: a
pair of bytes merges wherever it stands inside a piece, never across two.
"""
from __future__ import annotations

import functools
import importlib.util
import pathlib
import pickle
import random
import warnings

import numpy as np
import pytest
from helpers import MULTILINGUAL, VOCABS, require
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpetrain import PATTERNS, BpeTrainer, Encoding, Tokenizer
from bpetrain.formats.model_file import write_model
from bpetrain.splitting import unicode
from bpetrain.splitting.pattern import SplitPattern
from bpetrain.splitting.unicode import GENERAL_CATEGORIES, UnicodeTable, UnicodeVersionWarning

TOOL = pathlib.Path(__file__).resolve().parents[1] / "tools" / "unicode_tables.py"
#: Every code point but the surrogates, which a str given to tiktoken cannot carry.
EVERY = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
PAIR_PATTERNS = ["gpt2", "cl100k", "o200k", r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+", r"\w+|\W"]
CONTEXTS = ["a{}", "{}1", " {}{}", "A{}b\u0295A"]


def tiktoken_module():
    return pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")


@functools.cache
def pair_ranks() -> dict[bytes, int]:
    """The 256 bytes, then every pair of bytes (rank 256 + 256 * first + second)."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({bytes([x, y]): 256 + 256 * x + y for x in range(256) for y in range(256)})
    return ranks


@functools.cache
def differing() -> list[int]:
    """The code points tiktoken's table and the installed regex module class apart."""
    return [int(c) for c in unicode._differences(unicode.tiktoken_table())]


def test_the_shipped_table_is_what_the_installed_tiktoken_gives():
    tiktoken_module()
    if not TOOL.exists():
        pytest.skip("tools/unicode_tables.py is not here (an installed copy of the tests)")
    spec = importlib.util.spec_from_file_location("unicode_tables", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    version, found = tool.probe_tiktoken()
    table = unicode.tiktoken_table()
    assert table.source == f"tiktoken {version}", "tiktoken changed: run python tools/unicode_tables.py"
    for name, member in found.items():
        assert np.array_equal(table.member(name), member), name
    assert tool.module_text(version, found) == tool.TARGET.read_text(encoding="utf-8")


def test_the_tables_hold_what_is_known():
    table = unicode.tiktoken_table()
    category = table.general_category
    assert GENERAL_CATEGORIES[category[ord("A")]] == "Lu" and GENERAL_CATEGORIES[category[0x295]] == "Ll"
    assert GENERAL_CATEGORIES[category[0xD800]] == "Cs" and GENERAL_CATEGORIES[category[0x10FFFF]] == "Cn"
    assert UnicodeTable.from_json(table.to_json()) == table and pickle.loads(pickle.dumps(table)) == table
    live = unicode.regex_table()
    assert live.source.startswith("regex ") and UnicodeTable.from_json(live.to_json()) == live
    with pytest.raises(ValueError, match="exactly one"):
        UnicodeTable("x", {**table.classes, "Lu": table.classes["Lu"] + " 61"})
    with pytest.raises(ValueError, match="is not a hex code point"):
        UnicodeTable("x", {**table.classes, "Lu": "41-zz"})


def test_every_code_point_encodes_as_tiktoken_with_cl100k():
    tiktoken = tiktoken_module()
    from tiktoken.load import load_tiktoken_bpe

    path = require(VOCABS / "cl100k_base.tiktoken", "OpenAI's cl100k_base (set BPETRAIN_VOCABS)")
    ranks = load_tiktoken_bpe(str(path))
    ours = Encoding("cl100k_base", pat_str="cl100k", mergeable_ranks=ranks)
    theirs = tiktoken.Encoding("cl100k_base", pat_str=PATTERNS["cl100k"], mergeable_ranks=ranks, special_tokens={})
    # each code point alone between two line feeds: every one is its own piece, or joins a line feed
    for sep in ("\n", " ", "a"):
        text = sep.join(map(chr, EVERY))
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), repr(sep)
    rng = random.Random(31)
    pool = differing() + [ord(c) for c in MULTILINGUAL] + [0x295, 0x1C89]
    texts = ["".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 8))) for _ in range(20_000)]
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)


@pytest.mark.parametrize("pat_str", PAIR_PATTERNS)
def test_pieces_follow_tiktoken_where_the_engines_class_apart(pat_str):
    tiktoken = tiktoken_module()
    ours = Encoding("pairs", pat_str=pat_str, mergeable_ranks=pair_ranks())
    assert ours._pattern is not None and (ours._pattern.native != 0) == (pat_str in ("gpt2", "cl100k", "o200k"))
    theirs = tiktoken.Encoding("pairs", pat_str=PATTERNS.get(pat_str, pat_str), mergeable_ranks=pair_ranks(),
                               special_tokens={})
    regex_classes = Encoding("pairs", pat_str=pat_str, mergeable_ranks=pair_ranks(), unicode_version="regex")
    n_apart = 0
    for context in CONTEXTS:
        texts = [context.format(chr(c), chr(c)) for c in differing()]
        expected = theirs.encode_ordinary_batch(texts)
        assert ours.encode_ordinary_batch(texts) == expected, context
        assert [ours.count(text) for text in texts[:500]] == list(map(len, expected[:500]))
        if context == CONTEXTS[0]:
            n_apart += sum(a != b for a, b in zip(regex_classes.encode_ordinary_batch(texts), expected))
    # the check can fail: the regex module's classes split thousands of these apart
    assert n_apart > 1000 or not differing()


CLASSES = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}", r"\p{Mn}", r"\p{N}", r"\p{Nd}",
           r"\p{Nl}", r"\p{P}", r"\p{S}", r"\w", r"\s", r"\d", r"\W", r"\P{L}", r"[^\s\p{L}\p{N}]",
           r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", r"[a-z\p{Nd}]"]


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    classes=st.lists(st.sampled_from(CLASSES), min_size=1, max_size=5),
    quantifiers=st.lists(st.sampled_from(["+", "*+", "{1,3}", "", "++"]), min_size=5, max_size=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_generated_patterns_follow_tiktoken(classes, quantifiers, seed):
    tiktoken = tiktoken_module()
    pat_str = "|".join(f"{cls}{q}" if q != "*+" else f" ?{cls}+" for cls, q in zip(classes, quantifiers))
    ours = Encoding("pairs", pat_str=pat_str, mergeable_ranks=pair_ranks())
    theirs = tiktoken.Encoding("pairs", pat_str=pat_str, mergeable_ranks=pair_ranks(), special_tokens={})
    rng = random.Random(seed)
    pool = [*differing()[:: max(1, len(differing()) // 400)], *map(ord, "aZ 1_.\n")]
    texts = ["".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 12))) for _ in range(200)]
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts), pat_str


def test_a_saved_model_keeps_the_classes_it_was_trained_with(tmp_path):
    tok = BpeTrainer(300, pat_str="cl100k", show_progress=False).train_from_iterator([MULTILINGUAL * 5])
    assert tok.unicode_version == "regex" and tok.encoding()._split.unicode is None
    tok.save(tmp_path / "m.bpe")
    lines = (tmp_path / "m.bpe").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "bpetrain model v3" and lines[4].startswith('unicode: {"source": "regex ')
    loaded = Tokenizer.load(tmp_path / "m.bpe")
    assert loaded == tok and loaded.unicode_version == unicode.regex_table()
    assert loaded.encoding()._split.unicode is None  # the same classes as the installed regex module
    # a model recorded with other classes (as after the regex module moved on) splits with them
    old = UnicodeTable("regex 2024.1.1", unicode.tiktoken_table().classes)
    write_model(tmp_path / "old.bpe", merges=tok.merges, pat_str=tok.pat_str, special_tokens={},
                unicode_version=old)
    older = Tokenizer.load(tmp_path / "old.bpe")
    assert older.unicode_version == old and older.encoding()._split.unicode == unicode.resolve_unicode(old)
    tiktoken_file = Tokenizer(tok.merges, pat_str="cl100k", unicode_version="tiktoken")
    tiktoken_file.save(tmp_path / "t.bpe")
    assert 'unicode: "tiktoken"' in (tmp_path / "t.bpe").read_text(encoding="utf-8")
    assert Tokenizer.load(tmp_path / "t.bpe").unicode_version == "tiktoken"


def test_a_recorded_table_splits_as_it_says():
    tiktoken = tiktoken_module()
    recorded = UnicodeTable("regex 2024.1.1", unicode.tiktoken_table().classes)
    ours = Encoding("pairs", pat_str="o200k", mergeable_ranks=pair_ranks(), unicode_version=recorded)
    theirs = tiktoken.Encoding("pairs", pat_str=PATTERNS["o200k"], mergeable_ranks=pair_ranks(), special_tokens={})
    texts = ["A{}b".format(chr(c)) for c in differing()]
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)
    back = pickle.loads(pickle.dumps(ours))
    assert back.unicode_version == recorded and back.encode_ordinary_batch(texts[:50]) == ours.encode_ordinary_batch(
        texts[:50])


def test_unicode_version_is_checked():
    ranks = {bytes([b]): b for b in range(256)}
    with pytest.raises(ValueError, match="unknown unicode_version '16.0'"):
        Encoding("x", pat_str=None, mergeable_ranks=ranks, unicode_version="16.0")
    with pytest.raises(TypeError, match="unicode_version must be one of"):
        Tokenizer([], pat_str="gpt2", unicode_version=16)
    with pytest.raises(ValueError, match="unknown unicode_version"):
        SplitPattern(r"\w+", unicode_version="unicode")


def test_what_the_tables_cannot_give_is_said():
    if not differing():
        pytest.skip("the installed regex module classes every code point as tiktoken does")
    with pytest.warns(UnicodeVersionWarning, match=r"\\p\{L\} hold other characters than in tiktoken"):
        split = SplitPattern(r"(?<=a)\p{L}+|\s+|.", unicode_version="tiktoken")  # lookbehind: the regex module
    assert split.program is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SplitPattern(r"(?<=a)\s+|.", unicode_version="tiktoken")  # \s is the same in both: nothing to say
        SplitPattern(r"(?<=a)\p{L}+|.", unicode_version="regex")
    with pytest.warns(UnicodeVersionWarning, match=r"\\p\{Han\} is not in the Unicode table of tiktoken"):
        SplitPattern(r"\p{Han}+x|\p{L}+", unicode_version="tiktoken")


@pytest.mark.parametrize("pat_str", ["cl100k", r"\w+|\W"])
def test_streams_and_counters_cut_where_the_chosen_classes_allow(pat_str):
    tiktoken = tiktoken_module()
    rng = random.Random(7)
    pool = [*differing()[::40], *map(ord, "aZ 1_.\n")]
    text = "".join(chr(rng.choice(pool)) for _ in range(6000))
    theirs = tiktoken.Encoding("pairs", pat_str=PATTERNS.get(pat_str, pat_str), mergeable_ranks=pair_ranks(),
                               special_tokens={})
    ours = Encoding("pairs", pat_str=pat_str, mergeable_ranks=pair_ranks())
    expected = theirs.encode_ordinary(text)
    assert ours.encode_ordinary(text) == expected
    parts = [text[i : i + 37] for i in range(0, len(text), 37)]
    assert [int(i) for block in ours.encode_stream(parts, block_chars=64) for i in block] == expected
    counter = ours.interval_counter(text)
    assert counter.count(0, len(text)) == len(expected) == ours.count(text)
    appendable = ours.appendable()
    for part in parts:
        appendable.push(part)
    assert appendable.count == len(expected)
