"""The compiled splitter gives exactly the regex module's pieces, and its safe cuts are safe.

Every pattern is run two ways: by the compiled program alone (the engine), and as
``SplitPattern`` runs it (for the three named patterns, the hand-written matchers of
``_pretok``; for minbpe's, nanochat's and Llama 3's strings, the program with their ASCII
text read 64 bytes at a time). The grammar-wide checks (generated patterns) are in test_pattern_engine.py.
"""
from __future__ import annotations

import functools
import itertools
import random
import sys

import pytest
import regex
from helpers import KIMI_K2, MULTILINGUAL, SPLIT_PATTERNS, stdlib_text
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from bpetrain.splitting import _blocks
from bpetrain.splitting._compiler import compile_program
from bpetrain.splitting._matcher import Program, _py_bytes_by_blocks
from bpetrain.splitting.pattern import _DIGITS, _HAND_WRITTEN, _contractions, _rules_references, split_pattern

NAMED = ("gpt2", "cl100k", "o200k")
NAMED_BLOCKS_ONLY = ("minbpe", "nanochat", "llama3")  # blocks (_ascii_blocks.h), then the program
#: The variants of the block rules (_blocks.cl100k_rules, o200k_rules, gpt2_rules) that every
#: block test reads: every combination of one to three digits a piece with the other parameters,
#: and four digits, a run of any length, no contractions, contractions in lower case alone, a
#: space alone before letters, (o200k's) whole runs of whitespace and (cl100k's) combining marks as
#: letters or in runs with some of them (the digits field is one mask of every k-th digit whatever k is);
#: test_every_reference_splits_by_its_rules reads the rest of bpetrain.splitting.pattern's references.
TESTED_RULES = {
    *(_blocks.cl100k_rules(digits, end, after) for digits in (1, 2, 3) for end in (False, True) for after in (False, True)),
    *(_blocks.o200k_rules(digits, contractions) for digits in (1, 2, 3) for contractions in ("either", None)),
    _blocks.gpt2_rules(True),
    _blocks.cl100k_rules(3, True, True, None), _blocks.cl100k_rules(1, False, False, None),
    _blocks.cl100k_rules(3, True, True, "lower"), _blocks.cl100k_rules(1, False, True, "lower"),
    _blocks.o200k_rules(3, "lower"), _blocks.o200k_rules(2, "lower"),
    _blocks.cl100k_rules(3, True, True, "either", True), _blocks.cl100k_rules(1, False, False, None, True),
    _blocks.o200k_rules(3, "either", True), _blocks.o200k_rules(1, None, True),
    _blocks.o200k_rules(3, "either", False, True), _blocks.o200k_rules(2, "lower", True, True),
    *(rules for digits in (4, None) for rules in (_blocks.cl100k_rules(digits, True, True), _blocks.o200k_rules(digits))),
    _blocks.cl100k_rules(1, False, True, "either", False, "letters"),
    _blocks.cl100k_rules(3, True, False, None, True, "letters"),
    _blocks.cl100k_rules(3, True, True, "either", False, "runs"), _blocks.cl100k_rules(1, False, False, None, True, "runs"),
}
#: A pattern for each of those that none of the named patterns splits by, named by its rules:
#: the first that bpetrain.splitting.pattern writes for it (contractions folded by (?i)), of
#: its fixed references or those of combining marks as letters or in runs (found beside them).
RULE_VARIANTS = {}
_NAMED_RULES = {split_pattern(SPLIT_PATTERNS[name]).program.blocks for name in NAMED_BLOCKS_ONLY}
for _pat_str, _, _rules in (*_HAND_WRITTEN, *_rules_references(_DIGITS, marks="letters"),
                             *_rules_references(_DIGITS, marks="runs")):
    if _rules in TESTED_RULES and _rules not in _NAMED_RULES:
        RULE_VARIANTS.setdefault(f"rules-{_rules}", _pat_str)
#: The patterns it writes with contractions in ASCII's two cases alone (GLM-4's way), for the
#: rules above: they split as the ones above where the blocks read (which leave the letters'
#: other case variants to the program), and not at those variants.
ASCII_CASE = {f"ascii-case-{k}": pat_str for k, (pat_str, _, blocks) in enumerate(_HAND_WRITTEN)
              if blocks in TESTED_RULES and _contractions("ascii") in pat_str and pat_str not in RULE_VARIANTS.values()}


#: The classes of letters in the references' patterns, each with what follows it there: o200k's
#: two case classes, and ``\p{L}`` before a ``+`` (cl100k's and gpt2's runs of letters; never so
#: in a class).
_LETTER_CLASSES = ((r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", ""), (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", ""), (r"\p{L}", "+"))


def letters_apart(pat_str: str, apart: str, where: str = "first") -> str:
    """``pat_str`` (a block rules' reference) with the letters of the class ``apart`` out of
    its runs of letters, as Kimi K2's has Han: a run of ``apart``'s characters is a piece by an
    alternative of its own, first or last (``where``), or (``"none"``) no piece at all where
    no other alternative takes them."""
    for letters, after in _LETTER_CLASSES:
        pat_str = pat_str.replace(letters + after, f"(?:(?!{apart}){letters}){after}")
    own = f"(?:{apart})+"
    return {"first": f"{own}|{pat_str}", "last": f"{pat_str}|{own}", "none": pat_str}[where]


#: Patterns that cut as some rules but on some characters, which the blocks leave to the DFA
#: (a program's ``blocks_without``): Kimi K2's (Han, of three bytes: the blocks read those only
#: with AVX-512 VBMI), and cl100k's with Cyrillic apart (two bytes: read by every code).
APART = {"kimi_k2": KIMI_K2, "cl100k-cyrillic-apart": letters_apart(SPLIT_PATTERNS["cl100k"], r"\p{Cyrillic}")}
PATTERNS_HERE = {**SPLIT_PATTERNS, **RULE_VARIANTS, **ASCII_CASE, **APART}
BLOCKS_ONLY = NAMED_BLOCKS_ONLY + tuple(RULE_VARIANTS) + tuple(APART)
#: Patterns the DFA cannot express, and why (the backtracking program runs them).
NO_DFA = {"superbpe-original": "a match held while one held at an earlier character is undecided (one"
                                 " register keeps a held match's position)"}
# engine: the backtracking program alone; dfa: the program's DFA alone (bpetrain.splitting._dfa)
SPLITTERS = [(name, how) for name in SPLIT_PATTERNS
             for how in ("engine", "dfa" if name not in NO_DFA else None,
                         "native" if name in NAMED else "blocks" if name in BLOCKS_ONLY else None)
             if how] + [(name, "blocks") for name in (*RULE_VARIANTS, *APART)]


@pytest.mark.parametrize("name", sorted(NO_DFA))
def test_patterns_without_a_dfa_say_why(name):
    assert split_pattern(PATTERNS_HERE[name]).program.dfa_reason == NO_DFA[name]


def program(name: str, how: str) -> Program:
    pat_str = PATTERNS_HERE[name]
    if how == "native":
        found = split_pattern(pat_str).program
        assert found.native, f"{name} has no hand-written matcher"
        return found
    if how == "blocks":
        found = split_pattern(pat_str).program
        assert found.blocks and not found.native, f"{name} is not read by blocks and the program"
        return found
    if how == "dfa":
        return _dfa(pat_str)
    return _engine(pat_str)


_ENGINES: dict[tuple[str, bool], Program] = {}


def _engine(pat_str: str, dfa: bool = False) -> Program:
    """The program without hand-written code: the backtracking matcher, or with ``dfa`` its DFA."""
    if (pat_str, dfa) not in _ENGINES:
        _ENGINES[pat_str, dfa] = Program(pat_str, compile_program(pat_str), dfa=dfa)
        assert _ENGINES[pat_str, dfa].has_dfa == dfa, _ENGINES[pat_str, dfa].dfa_reason
    return _ENGINES[pat_str, dfa]


def _dfa(pat_str: str) -> Program:
    return _engine(pat_str, dfa=True)


def regex_pieces(data: bytes, name: str) -> list[bytes]:
    """The reference: regex.finditer on the text decoded with surrogateescape."""
    return regex_pieces_of(data, PATTERNS_HERE[name])


def regex_pieces_of(data: bytes, pat_str: str) -> list[bytes]:
    """:func:`regex_pieces` of a pattern given by its string."""
    text = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text)]


def check(data: bytes, name: str, how: str) -> None:
    got = program(name, how).split(data)
    want = regex_pieces(data, name)
    if got != want:
        first = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
        raise AssertionError(f"{name} ({how}): piece {first} differs: {got[first:first + 3]} != {want[first:first + 3]}")


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


#: Examples a hypothesis test of every splitter or block rule draws in the default run (the same
#: ones each run: these tests are most of this file's time), and with ``-m slow`` (from a seed of its own).
EXAMPLES, EXAMPLES_SLOW = 150, 1000


@pytest.mark.parametrize(("name", "how"), SPLITTERS)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(data=documents)
def test_pieces_identical_to_regex_hypothesis(name, how, data):
    check(data, name, how)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "how"), SPLITTERS)
@hypothesis_seed(1)
@settings(max_examples=EXAMPLES_SLOW, deadline=None, database=None)
@given(data=documents)
def test_pieces_identical_to_regex_hypothesis_many(name, how, data):
    check(data, name, how)


@pytest.mark.parametrize(("name", "how"), SPLITTERS)
def test_pieces_identical_to_regex_real_text(name, how, prose):
    check(MULTILINGUAL.encode("utf-8") * 3, name, how)
    check(prose[:1_000_000], name, how)


@pytest.mark.parametrize(("name", "how"), SPLITTERS)
def test_pieces_identical_to_regex_adversarial(name, how):
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
        check(data, name, how)


@pytest.mark.parametrize(("name", "how"), SPLITTERS)
def test_letter_runs_every_byte_at_every_offset(name, how):
    """The hand-written matchers read runs of ASCII letters eight bytes at a time: every
    ASCII byte, some other characters and invalid bytes at each offset of a run (both
    cases), and runs that end the text."""
    rng = random.Random(11)
    stops = [bytes([b]) for b in range(128)] + [c.encode("utf-8") for c in "\u00e9\u0301\u4e2d\u02b0\u00aa\u0130"]
    parts = []
    for stop in stops + [b"\xff", b"\xc3"]:
        for k in range(18):
            word = "".join(rng.choice("aAzZmMqQ") for _ in range(k)).encode("ascii")
            parts.append(b" " + word + stop + word[::-1] + stop.lower())
    check(b"".join(parts), name, how)
    for k in range(20):
        check(b"x " + b"Ab" * k, name, how)
        check(b"AB" * k + b"cd" * k, name, how)


@pytest.fixture(params=_blocks.block_isas())
def block_isa(request):
    """Each code that can class a block's bytes on this CPU (_ascii_blocks.h), in
    ``_blocks.block_ends``; the widest again afterwards."""
    _blocks.use_block_isa(request.param)
    yield request.param
    _blocks.use_block_isa(_blocks.block_isas()[-1])


BLOCK_PATTERNS = ("gpt2", "cl100k", "o200k")


def only_widest_for_programs(block_isa: str, name: str) -> None:
    if name in BLOCKS_ONLY and block_isa != _blocks.block_isas()[-1]:
        pytest.skip("a program's blocks use the widest code (use_block_isa sets _pretok's alone); run once")


def check_blocks(data: bytes, name: str) -> None:
    """The pieces read block by block equal the regex module's: the named patterns through
    ``_blocks.block_ends`` (the code ``block_isa`` chose), the others through their program
    (the widest code)."""
    if name in BLOCKS_ONLY:
        got = program(name, "blocks").split(data)
    else:
        ends = [int(e) for e in _blocks.block_ends(data, name)]
        got = [data[a:b] for a, b in zip([0] + ends, ends)]
    want = regex_pieces(data, name)
    if got != want:
        first = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
        raise AssertionError(f"{name} blocks: piece {first} differs: {got[first:first + 3]} != {want[first:first + 3]}")


# ASCII text that is all cl100k's blocks see: the contraction letters in both cases,
# every kind of whitespace, digits, punctuation; now and then a character that is not
# ASCII (a letter, a space, a digit) or an invalid byte, where the matcher takes over.
ASCII_CHARS = "aAsSdDmMtTlLvVrReExyzXYZ'' \t\r\n\x0b\x0c\x01019.,-//?(\""
ascii_runs = st.lists(st.sampled_from(ASCII_CHARS), max_size=40).map("".join)
ascii_documents = st.lists(
    st.one_of(ascii_runs, ascii_runs.map(lambda t: t * 3), st.sampled_from(["\u00e9", "\u00a0", "\u2028", "\u0663", "\u4e2d"])),
    max_size=12,
).map(lambda parts: "".join(parts).encode("utf-8"))


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(ascii_documents, documents))
def test_blocks_identical_to_regex_hypothesis(block_isa, name, data):
    """The pieces found 64 bytes at a time (where the text is ASCII) are the regex
    module's, whichever code classes the bytes."""
    only_widest_for_programs(block_isa, name)
    check_blocks(data, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
@hypothesis_seed(1)
@settings(max_examples=EXAMPLES_SLOW, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(ascii_documents, documents))
def test_blocks_identical_to_regex_hypothesis_many(block_isa, name, data):
    only_widest_for_programs(block_isa, name)
    check_blocks(data, name)


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_at_every_offset_of_a_block(block_isa, name):
    """Runs of whitespace, newlines, digits, letters and contractions starting at every
    offset of the first two blocks, so that they cross a block's end (where a run of
    whitespace is left to the next block), and texts that end in them."""
    only_widest_for_programs(block_isa, name)
    runs = [b" " * m for m in (1, 2, 3, 60, 61, 62, 63, 64, 65, 130)]
    runs += [b"\n" * m for m in (1, 2, 61, 64, 70)] + [b"\t" * 70, b" \n" * 40, b"\r\n" * 35]
    runs += [b" \t\n\r \x0b\x0c  ", b"?\n\n  \n x", b".\n", b"1" * 100, b"12345", b"a" * 70, b"'s", b"'LL", b"''s"]
    runs += [b"x 's", b" 'reve", b"'\xc5\xbf", b"\xc2\xa0 ", b" \xe2\x80\xa8"]
    runs += [b"don't", b"DON'T", b"they'RE", b"x's's's", b"aBcD", b"ABCdef", b"?\n/\n/x", b"//\n\n/", b"a'll'", b"'s"]
    runs += [b"x'll'lLa", b"x'll'sAb"]  # a chain of contractions whose first is behind the block's start
    for run in runs:
        for k in range(70):
            lead = b"ab " * (k // 3) + b"q" * (k % 3)
            for tail in (b"", b"x", b" y", b"\n", b" \n  ", b"'s", b"\xc3\xa9"):
                check_blocks(lead + run + tail, name)


@pytest.mark.parametrize("digits", [0, -1, True, 2.5, "3"])
def test_rules_refuse_digits_that_are_no_count(digits):
    """The rules' digits are a positive int or None (a run of any length), or a clear error."""
    with pytest.raises(ValueError, match="digits must be a positive int or None"):
        _blocks.cl100k_rules(digits, True, True)
    with pytest.raises(ValueError, match="digits must be a positive int or None"):
        _blocks.o200k_rules(digits)


def test_rules_of_64_digits_or_more_are_those_of_any_run():
    """From 64 digits a piece on the blocks cut the runs they read as a run of any length (a
    block holds at most 61 digits), and the rules say so; fewer are each their own."""
    assert _blocks.cl100k_rules(64, True, True) == _blocks.cl100k_rules(1000, True, True) == _blocks.cl100k_rules(
        None, True, True)
    assert len({_blocks.o200k_rules(digits, None) for digits in (*range(1, 64), None)}) == 64
    assert {_blocks.cl100k_rules(digits, end, after, contractions) for digits in (*range(1, 64), None)
            for end in (False, True) for after in (False, True) for contractions in _blocks.CONTRACTIONS} <= _blocks.RULES


@pytest.mark.parametrize("marks", [True, False, "letter", "RUNS", 0])
def test_rules_refuse_marks_of_no_kind(marks):
    """The rules' marks are None, "letters" or "runs", or a clear error."""
    with pytest.raises(ValueError, match="marks must be None, 'letters' or 'runs'"):
        _blocks.cl100k_rules(3, True, True, "either", False, marks)
    with pytest.raises(ValueError, match="marks must be None, 'letters' or 'runs'"):
        _blocks._char_codes(*_blocks._flag_tables(None), groups=False, marks=marks)


@pytest.mark.parametrize("contractions", [True, False, "folded", "LOWER", 0])
def test_rules_refuse_contractions_of_no_kind(contractions):
    """The rules' contractions are "either", "lower" or None, or a clear error."""
    with pytest.raises(ValueError, match="contractions must be 'either', 'lower' or None"):
        _blocks.cl100k_rules(3, True, True, contractions)
    with pytest.raises(ValueError, match="contractions must be 'either', 'lower' or None"):
        _blocks.o200k_rules(3, contractions)


def _smear_reference(seed: int, within: int, up: bool) -> int:
    """Each bit of ``seed`` that is in ``within`` spread bit by bit to the higher (``up``) or
    lower bits of its run in ``within``: what the blocks' smears compute at once."""
    out = 0
    for i in range(64):
        j = i
        while (seed >> i) & 1 and 0 <= j < 64 and (within >> j) & 1:
            out |= 1 << j
            j += 1 if up else -1
    return out


_MASKS = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**64 - 1, 1, 2**63, 2**63 - 1, 0x5555555555555555]),
                   st.lists(st.integers(0, 63), max_size=12).map(lambda bits: sum({1 << b for b in bits})))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(seed=_MASKS, within=_MASKS, up=st.booleans())
def test_smears_spread_each_seed_through_its_run(seed, within, up):
    """bpetrain_smear_up (one addition: a seed's bit carries through its run) and
    bpetrain_smear_down (shifts) are the bit-by-bit spread, runs that reach bit 0 or 63 and
    several seeds in a run included."""
    assert _blocks._py_smear(seed, within, up) == _smear_reference(seed, within, up)


#: Text for every reference: runs of one to nine digits (and 70) at each offset mod 3,
#: contractions in either case and lone apostrophes, letters after punctuation and tabs,
#: newlines after punctuation, whitespace at the end.
REFERENCE_TEXT = (b"".join(b"ab " * k + b"q" * k + b" " + b"7" * m + b"x'sy x'Sy 're don'Tt 'LL''s 'tis (x a.b \ty  \tz\n.\n\n ?\n\t x "
                           for k in range(3) for m in (*range(1, 10), 70))
                  + b"\xc3\xa9 12 \xe4\xb8\xad 'S \xc2\xabx \xc2\xa0y a  (q  .r\xc2\xa0\xc2\xa0s x  1 x\xc2\xa0y  \n \n "
                  # combining marks (U+0301) after a letter, after O, alone, before a letter
                  b"e\xcc\x81f !\xcc\x81! \xcc\x81x \xcc\x81\xcc\x81 ..\xcc\x81 x'\xcc\x81s \n")


#: The references of bpetrain.splitting.pattern with rules: the fixed ones, and those of combining
#: marks as letters or in runs (found beside the fixed ones) with one, three and any number of
#: digits a piece, which take every other variant of the rules with marks.
RULED_REFERENCES = [*(reference for reference in _HAND_WRITTEN if reference[2]),
                    *(reference for marks in ("letters", "runs") for reference in _rules_references((1, 3, None), marks))]


@pytest.mark.parametrize("k", range(len(RULED_REFERENCES)))
def test_every_reference_splits_by_its_rules(k):
    """Each reference of bpetrain.splitting.pattern gets its own rules (no two of them split
    every text alike; those with marks as letters or in runs found beside the fixed ones,
    ``_references_beside``), and its pieces are the regex module's, block by block."""
    pat_str, _, rules = RULED_REFERENCES[k]
    found = split_pattern(pat_str).program
    assert found.blocks == rules and not found.native
    for data in (REFERENCE_TEXT, REFERENCE_TEXT[7:], REFERENCE_TEXT[:-3]):
        assert found.split(data) == regex_pieces_of(data, pat_str)


@pytest.mark.parametrize("k", [7, 8, 13, 40, 63])
@pytest.mark.parametrize("kind", ["cl100k", "o200k", "cl100k-lower"])
def test_blocks_take_the_digits_a_piece_the_pattern_cuts(kind, k):
    """A pattern of cl100k's or o200k's kind with a number of digits a piece that none of the
    references has (``\\p{N}{1,k}``) gets the rules of k digits a piece, found from the pattern
    (bpetrain.splitting.pattern._references_beside), and its pieces are the regex module's,
    block by block, for runs shorter, as long as and longer than k at every offset of a block."""
    base = SPLIT_PATTERNS["o200k" if kind == "o200k" else "cl100k"]
    digits = r"\p{N}{1,3}+" if kind != "o200k" else r"\p{N}{1,3}"
    assert digits in base
    pat_str = base.replace(digits, digits.replace("3", str(k)))
    if kind == "cl100k-lower":  # cl100k's contractions in lower case alone, as gpt2's
        assert pat_str.startswith("'(?i:")
        pat_str = "'(?:" + pat_str[len("'(?i:"):]
    rules = (_blocks.o200k_rules(k) if kind == "o200k"
             else _blocks.cl100k_rules(k, True, True, "lower" if kind == "cl100k-lower" else "either"))
    found = split_pattern(pat_str).program
    assert found.blocks == rules and not found.native, pat_str
    runs = b"".join(b"x " + b"7" * m + b" y'Sx don'T 'll 12\n" for m in (1, k - 1, k, k + 1, 2 * k + 1, 70, 130))
    for j in range(0, 66, 5):
        data = b"ab " * (j // 3) + b"q" * (j % 3) + runs
        assert found.split(data) == regex_pieces_of(data, pat_str), (j, pat_str)


@pytest.mark.parametrize("name", ASCII_CASE)
def test_blocks_with_contractions_in_ascii_case_alone(name):
    """A pattern whose contractions are in ASCII's two cases alone gets the rules of the
    same pattern with (?i) contractions, and the pieces stay the regex module's where the
    two differ (U+017F, long s, which (?i) folds to s), at every offset of a block."""
    found = program(name, "blocks")
    assert found.blocks == split_pattern(PATTERNS_HERE[name].replace(_contractions("ascii"),
                                                                      _contractions("folded"))).program.blocks
    for run in (b"x'\xc5\xbf", b"'\xc5\xbfx", b"don't'S 'LL'll'\xc5\xbf're", b"'s'\xc5\xbf's"):
        for k in range(70):
            data = b"ab " * (k // 3) + b"q" * (k % 3) + run + b" tail'd"
            assert found.split(data) == regex_pieces(data, name), data


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_real_and_adversarial_text(block_isa, name, prose):
    only_widest_for_programs(block_isa, name)
    check_blocks(prose[:1_000_000], name)
    check_blocks(MULTILINGUAL.encode("utf-8") * 3, name)
    cases = (b"", b"a" * 10**5, b" " * 10**4, b"\n" * 10**4 + b"x", b"1" * 10**4, b"'s" * 5000, b"/\n" * 5000,
             b"aB" * 5000, stdlib_text(200_000))
    for data in cases:
        check_blocks(data, name)


# Two-byte characters of each class the blocks read or leave to the matcher (see
# _ascii_blocks.h, bpetrain_two_bytes): letters lower, upper and title case (é É ǅ Ж ж Ω),
# in both of o200k's case classes (ʰ Lm, א Lo), O (« ¡ §), a mark (U+0301, O in both
# case classes), a number (²), spaces (NBSP, NEL), the long s (ſ, (?i:s)).
TWO_BYTE_CHARS = "\u00e9\u00c9\u01c5\u0416\u0436\u03a9\u02b0\u05d0\u00ab\u00a1\u00a7\u0301\u00b2\u00a0\x85\u017f"
TWO_BYTE_RUNS = ["x\u00abword", "x\u00ab\u0416\u0436", "(\u00ab\u0416", " \u00abx", "\u00ab\u00bb\u00e9",
                 "a\u0301b", "\u0416\u0301", "\u00e9's", "'\u00e9", "caf\u00e9 ", "\u00e9\u00c9\u00e9", "AB\u00e9CD\u00c9",
                 "\u0436\u0416 \u0416\u0436", "1\u00b22", " \u00a0 x", "\n\u00ab\n", "?\n/\u00e9", "'\u017f"]


@pytest.mark.parametrize("marks", [None, "letters", "runs"])
def test_char_codes_follow_the_classes(marks):
    """The class the blocks give each character of two or three bytes is the one the
    pattern's classes (the regex module's) give it: letters by o200k's case classes, O,
    spaces, and 0 for the characters the rules cannot read as they read ASCII (with
    ``marks="letters"``, for the rules that take combining marks as letters, a mark is a letter
    in both case classes, as Lm and Lo are; with ``"runs"``, for those that take a mark into
    the run it is in, 0); each group of
    64 code points of three bytes has their code if they share one, else the mixed code (0
    for the surrogates, whose bytes are no character), and each eight groups (512 code points)
    that of its groups likewise; the groups and eights are left out (0) unless asked for (the
    blocks that AVX-512 VBMI classes alone read them)."""
    _blocks.ensure_tables()  # the case variants of the contractions' letters
    codes = _blocks._char_codes(*_blocks._flag_tables(None), groups=True, marks=marks)
    upper, lower = regex.compile(r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"), regex.compile(r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]")
    groups, leads = _blocks.CODES_GROUPS_AT, _blocks.CODES_LEADS_AT
    assert leads == groups + 0x10000 // 64 and len(codes) == leads + 128
    for cp in range(0x80, 0x10000):
        c = chr(cp)
        if 0xD800 <= cp < 0xE000 or regex.match(r"\p{N}", c) or regex.match(r"(?i:[sdmtlver])", c):
            want = 0
        elif regex.match(r"\s", c):
            want = _blocks.TWO_SPACE_CODE
        elif marks and regex.match(r"\p{M}", c):
            want = _blocks.TWO_LETTER_CODE if marks == "letters" else 0
        elif not regex.match(r"\p{L}", c):
            want = _blocks.TWO_O_CASED_CODE if upper.match(c) or lower.match(c) else _blocks.TWO_O_CODE
        elif upper.match(c) and lower.match(c):
            want = _blocks.TWO_LETTER_CODE
        else:
            want = _blocks.TWO_LOWER_CODE if lower.match(c) else _blocks.TWO_UPPER_CODE
        assert codes[cp] == want, (hex(cp), codes[cp], want)
    assert not any(codes[:0x80])
    check_groups(codes)
    assert codes[leads + 0x4E00 // 512] == codes[leads + 0x9E00 // 512] == _blocks.TWO_LETTER_CODE  # CJK ideographs
    assert (_blocks._char_codes(*_blocks._flag_tables(None), groups=False, marks=marks)
            == codes[:groups] + bytes(0x10000 // 64 + 128))


def check_groups(codes: bytes) -> None:
    """Each group of 64 code points of three bytes in ``codes`` (:func:`_blocks._char_codes`)
    has their code if they share one, else the mixed code (0 for the surrogates), and each
    eight groups that of its groups likewise."""
    groups, leads = _blocks.CODES_GROUPS_AT, _blocks.CODES_LEADS_AT
    for group in range(0x10000 // 64):
        members = set(codes[64 * group : 64 * group + 64])
        if group < 0x800 // 64 or 0xD800 // 64 <= group < 0xE000 // 64:
            want = 0
        else:
            want = members.pop() if len(members) == 1 else _blocks.CODES_MIXED_CODE
        assert codes[groups + group] == want, (hex(64 * group), codes[groups + group], want)
    for eight in range(128):  # groups 8k..8k+7 at entry k
        members = set(codes[groups + 8 * eight : groups + 8 * eight + 8])
        want = members.pop() if len(members) == 1 else _blocks.CODES_MIXED_CODE
        assert codes[leads + eight] == want, (hex(512 * eight), codes[leads + eight], want)


def test_char_codes_leave_out_the_code_points_they_are_told():
    """With ``without`` (a program's ``blocks_without``), those code points' codes are 0 and
    the others' as without it, and the groups and eights are worked out from those codes: a
    group with some of them left out is mixed (AVX-512 VBMI's blocks then class its characters
    one by one), one with all of them 0 (its characters go to the matcher)."""
    _blocks.ensure_tables()
    stage = _blocks._flag_tables(None)
    without = [(0x416, 0x417), (0x4E00, 0x4E3F), (0x9FFF, 0x9FFF), (0xFFF0, 0x10010)]
    plain = _blocks._char_codes(*stage, groups=True)
    codes = _blocks._char_codes(*stage, groups=True, without=without)
    left = {cp for first, last in without for cp in range(first, last + 1)}
    assert [codes[cp] for cp in range(0x10000)] == [0 if cp in left else plain[cp] for cp in range(0x10000)]
    check_groups(codes)
    assert codes[_blocks.CODES_GROUPS_AT + 0x4E00 // 64] == 0
    assert codes[_blocks.CODES_GROUPS_AT + 0x9FC0 // 64] == _blocks.CODES_MIXED_CODE != plain[_blocks.CODES_GROUPS_AT + 0x9FC0 // 64]


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_with_two_byte_characters_at_every_offset(block_isa, name):
    """Two-byte characters of every class in ASCII text, at every offset of the first two
    blocks (cut by a block's start or end), alone, in runs, as a letter's prefix, after a
    contraction; and blocks with more of them than the blocks class."""
    only_widest_for_programs(block_isa, name)
    text = "ab 'S 12 ,. \tx\n" * 10
    for insert in list(TWO_BYTE_CHARS) + TWO_BYTE_RUNS:
        for k in range(0, 140):
            check_blocks((text[:k] + insert + text[k:]).encode("utf-8"), name)
    for dense in ("\u0416\u0436\u0437 " * 30, "\u00e9t\u00e9 " * 30, "\u05d0\u05d1 \u02b0" * 30):
        check_blocks(("ab " * 20 + dense + " cd" * 20).encode("utf-8"), name)


two_byte_documents = st.lists(
    st.one_of(ascii_runs, st.sampled_from(list(TWO_BYTE_CHARS) + TWO_BYTE_RUNS), st.characters(min_codepoint=0x80,
                                                                                             max_codepoint=0x7FF)),
    max_size=30,
).map(lambda parts: "".join(parts).encode("utf-8"))


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=two_byte_documents)
def test_blocks_with_two_byte_characters_hypothesis(block_isa, name, data):
    """ASCII text with two-byte characters of any class: the blocks that class them give
    the regex module's pieces."""
    only_widest_for_programs(block_isa, name)
    check_blocks(data, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
@hypothesis_seed(1)
@settings(max_examples=EXAMPLES_SLOW, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=two_byte_documents)
def test_blocks_with_two_byte_characters_hypothesis_many(block_isa, name, data):
    only_widest_for_programs(block_isa, name)
    check_blocks(data, name)


@pytest.mark.parametrize("name", BLOCK_PATTERNS)
def test_blocks_read_nothing_before_the_string(block_isa, name):
    """A string that follows another in one buffer (as the counting kernel's segments do)
    splits as it does alone: the bytes before it are not its context."""
    rng = random.Random(5)
    for _ in range(3000):
        before = "".join(rng.choice("aA '.\n/ 1") for _ in range(rng.randrange(10))).encode()
        string = "".join(rng.choice("sS'aB .\n/\t1") for _ in range(rng.randrange(1, 80))).encode()
        alone = [int(e) for e in _blocks.block_ends(string, name)]
        after = [int(e) - len(before) for e in _blocks.block_ends(before + string, name, len(before))]
        assert after == alone, (before, string)


def test_block_isa_must_be_one_this_cpu_has():
    with pytest.raises(ValueError, match="block codes"):
        _blocks.use_block_isa("avx1024")


# English with an accented letter, a Greek or a Cyrillic word in each sentence: at most 16
# bytes >= 0x80 in any 64, which the blocks read whatever codes class their bytes
# (_ascii_blocks.h, BPETRAIN_TWO_BYTE_MOST).
LIGHTLY_ACCENTED = (
    "The caf\u00e9 on the corner opens at seven, every day. Their word for it was \u03bb\u03cc\u03b3\u03bf\u03c2,"
    " or so the notes say. In Russian, \u043c\u0438\u0440 means both peace and the world. A na\u00efve"
    " reader of Z\u00fcrich's fa\u00e7ade missed it!\n"
) * 5
DENSE = {"Cyrillic": "\u0412\u0441\u0451 \u0445\u043e\u0440\u043e\u0448\u043e, \u0441\u043f\u0430\u0441\u0438\u0431\u043e. " * 12,
         "CJK": "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u6211\u4eec\u4eca\u5929\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002" * 10}


def bytes_by_blocks(name: str, text: str) -> tuple[int, int]:
    """The bytes of ``text`` (UTF-8) that the kernels' reader gets from the blocks and
    from the matcher, with the pattern ``name`` as ``split_pattern`` runs it: together the
    bytes of its pieces (all, but for a pattern that leaves some out: gpt2's rules with gaps)."""
    data = text.encode("utf-8")
    n_blocks, n_matcher = _py_bytes_by_blocks(split_pattern(PATTERNS_HERE[name]).program, data)
    assert n_blocks + n_matcher == sum(len(piece) for piece in regex_pieces(data, name))
    return n_blocks, n_matcher


def left_out(name: str, text: str) -> int:
    """How many characters of ``text`` the blocks leave to the matcher though they could
    read them, for the pattern ``name`` (:data:`APART`'s: its program's ``blocks_without``)."""
    without = split_pattern(PATTERNS_HERE[name]).program.blocks_without
    return sum(any(first <= ord(c) <= last for first, last in without) for c in text)


#: The most bytes the matcher reads for one character the blocks leave to it: the block
#: that holds it (64 bytes), and the piece it ends in.
LEFT_OUT_BYTES = 100


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_read_text_with_a_few_two_byte_characters(name):
    """English with a few accented letters and a Greek or Cyrillic word is read by blocks
    from its first byte to its last (but near the characters a pattern takes apart, :data:`APART`)."""
    n_blocks, n_matcher = bytes_by_blocks(name, LIGHTLY_ACCENTED)
    assert n_matcher <= LEFT_OUT_BYTES * left_out(name, LIGHTLY_ACCENTED), (n_blocks, n_matcher)


#: The script each pattern of APART takes apart from the letters.
APART_SCRIPTS = {"kimi_k2": "Han", "cl100k-cyrillic-apart": "Cyrillic"}


@pytest.mark.parametrize("name", sorted(APART))
def test_blocks_leave_the_letters_a_pattern_takes_apart(name):
    """A pattern that cuts as some rules but on the letters of a script gets those rules,
    and its program leaves every letter of the script that the blocks could read to the
    DFA (``blocks_without``), and no character of another script."""
    found = split_pattern(PATTERNS_HERE[name]).program
    assert found.blocks and not found.native
    script = regex.compile(rf"\p{{{APART_SCRIPTS[name]}}}")
    readable = _blocks.readable(None)
    left = {cp for first, last in found.blocks_without for cp in range(first, last + 1)}
    letters = {cp for cp in range(0x10000) if readable[cp] and regex.match(r"\p{L}", chr(cp)) and script.match(chr(cp))}
    assert letters and letters <= left
    assert all(script.match(chr(cp)) for cp in left)


@pytest.mark.parametrize("name", sorted(APART))
def test_blocks_after_the_characters_a_pattern_takes_apart(name):
    """Letters, contractions, spaces, punctuation and new lines right after (and before) a
    character a pattern takes apart, at every offset of the first two blocks: the DFA cuts the
    text before a block otherwise than the rules would there (``'\u0416abc'`` is two pieces of
    cl100k's with Cyrillic apart, one of cl100k's), and a block is read only from a place that
    the rules start a piece at too. ASCII text is still read by the blocks."""
    c = {"Han": "\u4e2d", "Cyrillic": "\u0416"}[APART_SCRIPTS[name]]
    text = "ab 'S 12 ,. \tx\n" * 10
    inserts = [c, c + "abcdefgh ij", c + "'s", c + "'", " " + c, c * 3 + "Abc", "x" + c + "y", c + " " * 5 + "q",
               c + "!\n/x", "don" + c + "'t", c + "\u00e9t\u00e9 x"]
    for insert in inserts:
        for k in range(140):
            check_blocks((text[:k] + insert + text[k:]).encode("utf-8"), name)
    n_blocks, n_matcher = bytes_by_blocks(name, text * 20)
    assert n_matcher <= len(text), (n_blocks, n_matcher)
    n_blocks, n_matcher = bytes_by_blocks(name, (text + c) * 20)
    assert n_matcher <= 20 * LEFT_OUT_BYTES < n_blocks, (n_blocks, n_matcher)


#: What a pattern near the rules (:func:`letters_apart`) takes apart from its letters: scripts of
#: two bytes (read by every code) and of three (by AVX-512 VBMI), letters of one general
#: category, and a range of Latin letters.
APART_CLASSES = (r"\p{Cyrillic}", r"\p{Greek}", r"\p{Hebrew}", r"\p{Arabic}", r"\p{Han}", r"\p{Hiragana}",
                 r"\p{Hangul}", r"\p{Thai}", r"\p{Lo}", r"\p{Lm}", r"\p{Lt}", "[\u00c0-\u024f]")


@functools.cache
def members_below_10000(apart: str) -> tuple[str, ...]:
    """The characters below U+10000 of the class ``apart``."""
    found = regex.compile(apart)
    return tuple(chr(cp) for cp in range(0x10000) if not 0xD800 <= cp < 0xE000 and found.match(chr(cp)))


@pytest.mark.parametrize("where", ["first", "last", "none"])
@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_blocks_read_the_patterns_near_their_rules(name, where):
    """Each named pattern with the letters of each of :data:`APART_CLASSES` apart (a run of them
    a piece of its own, first or last, or no piece) is read by the blocks, which leave that
    class's characters to the DFA (and, for o200k's with a class of letters in one case apart,
    every letter in both case classes: after ``\u00aaA`` an upper-case letter of the class decides
    whether ``\u00aa`` is a piece, which the check of ``rules_alphabet`` cannot tell from a
    piece the blocks give), and its pieces of text with them are the regex module's."""
    for apart in APART_CLASSES:
        pat_str = letters_apart(SPLIT_PATTERNS[name], apart, where)
        found = split_pattern(pat_str).program
        assert found.blocks and not found.native, pat_str
        left = {cp for first, last in found.blocks_without for cp in range(first, last + 1)}
        assert {ord(c) for c in members_below_10000(apart) if ord(c) in left}, pat_str
        members = members_below_10000(apart)
        text = "".join(f"{c}ab {c}{c} 'S{c} x{c}." for c in members[:: max(1, len(members) // 64)])
        data = ("Hello, world: " * 5 + text + " don't" * 9).encode("utf-8")
        assert found.split(data) == regex_pieces_of(data, pat_str), pat_str


#: The references a pattern near the rules is drawn from: the named patterns and every tenth of
#: bpetrain.splitting.pattern's (their variants).
NEAR_REFERENCES = (*(SPLIT_PATTERNS[name] for name in NAMED), *(pat_str for pat_str, _, _ in _HAND_WRITTEN[3::10]))
#: Patterns near the rules a hypothesis test draws in the default run, and with ``-m slow``.
NEAR_EXAMPLES, NEAR_EXAMPLES_SLOW = 200, 3000


def check_near_the_rules(data) -> None:
    """A pattern drawn near the rules (a reference of :data:`NEAR_REFERENCES` with a class of
    :data:`APART_CLASSES` apart) splits text of ASCII, of that class's characters, of two-byte
    characters and of any character below U+10000 as the regex module does (by the blocks
    with codes of its own, where ``rules_alphabet`` finds them)."""
    apart = data.draw(st.sampled_from(APART_CLASSES), label="apart")
    pat_str = letters_apart(data.draw(st.sampled_from(NEAR_REFERENCES), label="reference"), apart,
                            data.draw(st.sampled_from(["first", "last", "none"]), label="where"))
    found = split_pattern(pat_str).program
    chunk = st.one_of(ascii_runs, st.sampled_from(members_below_10000(apart)),
                      st.lists(st.sampled_from(members_below_10000(apart)), max_size=5).map("".join),
                      st.sampled_from(list(TWO_BYTE_CHARS) + TWO_BYTE_RUNS),
                      st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)))
    docs = data.draw(st.lists(st.lists(chunk, max_size=40).map("".join), min_size=1, max_size=3), label="documents")
    for doc in [*docs, "".join(docs)]:
        assert found.split(doc.encode("utf-8")) == regex_pieces_of(doc.encode("utf-8"), pat_str), (pat_str, doc)


@settings(max_examples=NEAR_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_patterns_near_the_rules_hypothesis(data):
    check_near_the_rules(data)


@pytest.mark.slow
@hypothesis_seed(1)
@settings(max_examples=NEAR_EXAMPLES_SLOW, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_patterns_near_the_rules_hypothesis_many(data):
    check_near_the_rules(data)


#: Whether the kernels' blocks class two-byte characters by AVX-512 VBMI, any number a block.
VBMI = _blocks.block_isas()[-1] == "avx512vbmi"


@pytest.mark.parametrize("script", sorted(DENSE))
@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_dense_non_ascii_text(name, script):
    """A stretch of Cyrillic (more than 16 bytes >= 0x80 in a block) or CJK (three-byte
    characters) between lightly accented English is read by blocks where AVX-512 VBMI
    classes its characters, else by the matcher."""
    n_blocks, n_matcher = bytes_by_blocks(name, LIGHTLY_ACCENTED + DENSE[script] + LIGHTLY_ACCENTED)
    n_dense = len(DENSE[script].encode("utf-8"))
    extra = 2 * LEFT_OUT_BYTES * left_out(name, LIGHTLY_ACCENTED)  # (what a pattern takes apart: APART)
    if VBMI and not left_out(name, DENSE[script]):
        assert n_matcher <= extra, (n_blocks, n_matcher, n_dense)
    else:  # (a block at the stretch's edge holds 16 bytes >= 0x80 or fewer: it may read them)
        assert n_dense - 16 <= n_matcher <= n_dense + 128 + extra, (n_blocks, n_matcher, n_dense)


def dense_two_byte_text(chars: list[str]) -> str:
    """Each of ``chars`` in runs, after and before letters (both cases, two bytes and
    ASCII; a CJK ideograph), O, a space, an apostrophe and a contraction, more than 16
    bytes >= 0x80 in every block."""
    return "".join(f"{c}{c}{c} \u0436{c}\u0416{c}.{c},x{c} {c}'s{c}\u00e9 ({c}\u4e2d{c}A" for c in chars)


def dense_text(chars: list[str]) -> str:
    """Each of ``chars`` in runs after O and a space, next to no other letter."""
    return "".join(f"{c}{c} {c}.{c}, ({c} " for c in chars)


def vbmi_codes(name: str) -> bytes:
    """The codes AVX-512 VBMI's blocks class the characters of ``name``'s text by (those a
    pattern of :data:`APART` takes apart left out)."""
    return _blocks._char_codes(*_blocks._flag_tables(None), groups=True,
                               without=split_pattern(PATTERNS_HERE[name]).program.blocks_without)


def by_o200k_rules(name: str) -> bool:
    """Whether the blocks read the pattern by o200k's rules (a variant of them, or its own)."""
    return split_pattern(PATTERNS_HERE[name]).program.blocks in _blocks.O200K_RULES


def block_readable(codes: bytes, cp: int, name: str) -> bool:
    """Whether the blocks read the character ``cp`` with AVX-512 VBMI (_ascii_blocks.h's
    codes; for o200k, a letter in both case classes where no letter of one case class is
    next to it)."""
    return codes[cp] != 0 and not (name == "o200k" and codes[cp] == _blocks.TWO_O_CASED_CODE)


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_dense_two_byte_text_of_every_code_point(block_isa, name):
    """Every code point U+0080..U+07FF in dense two-byte text gives the regex module's
    pieces, whichever code classes the blocks (AVX-512 VBMI: all of them in blocks, so a
    wrong code in its table, or a wrong first byte's table, shows)."""
    only_widest_for_programs(block_isa, name)
    chars = [chr(cp) for cp in range(0x80, 0x800)]
    check_blocks(dense_two_byte_text(chars).encode("utf-8"), name)
    rng = random.Random(3)
    for _ in range(20):
        check_blocks("".join(rng.choice(chars + [" ", "a", "'"]) for _ in range(300)).encode("utf-8"), name)


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_dense_three_byte_text_of_every_code_point(block_isa, name):
    """Every code point U+0800..U+FFFF in dense text (alone, in runs, next to letters of
    each case class, ASCII and CJK), and random mixes of them with CJK, kana, punctuation and
    letters of one case, give the regex module's pieces, whichever code classes the blocks
    (AVX-512 VBMI reads them: a wrong code of a group or of a character shows)."""
    only_widest_for_programs(block_isa, name)
    chars = [chr(cp) for cp in range(0x800, 0x10000) if not 0xD800 <= cp < 0xE000]
    text = "".join(f"{c}{c} {c}a{c}\u4e2d{c}.A{c}'s" for c in chars)
    check_blocks(text.encode("utf-8"), name)
    rng = random.Random(4)
    pool = chars[::97] + list("\u4e2d\u6587\u3002\u3001\u300c\u300d\u3042\u30a2\u2014\u201c\u201d\u2026\uff0c\u0416\u0436 aA'.1")
    for _ in range(50):
        check_blocks("".join(rng.choice(pool) for _ in range(300)).encode("utf-8"), name)


@pytest.mark.skipif(not VBMI, reason="the blocks read dense two-byte text with AVX-512 VBMI, which this CPU lacks")
@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_read_dense_two_byte_text_with_vbmi(name):
    """Dense text of the two-byte characters the rules read (every one of them) is read by
    blocks from its first byte to its last; one the rules cannot read sends its blocks to
    the matcher."""
    codes = vbmi_codes(name)
    pattern = "o200k" if by_o200k_rules(name) else "cl100k"
    readable = [chr(cp) for cp in range(0x80, 0x800) if block_readable(codes, cp, pattern)]
    n_blocks, n_matcher = bytes_by_blocks(name, dense_text(readable))
    assert n_matcher == 0, (n_blocks, n_matcher)
    text = dense_two_byte_text(readable)
    unread = [chr(cp) for cp in range(0x80, 0x800) if not block_readable(codes, cp, pattern)]
    assert unread
    for c in unread[:: max(1, len(unread) // 40)]:
        n_blocks, n_matcher = bytes_by_blocks(name, text[:3000] + c + text[3000:6000])
        assert n_matcher >= len(c.encode("utf-8")), (hex(ord(c)), n_blocks, n_matcher)


@pytest.mark.skipif(not VBMI, reason="the blocks read three-byte characters with AVX-512 VBMI, which this CPU lacks")
@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_read_dense_three_byte_text_with_vbmi(name):
    """Dense text of the three-byte characters the rules read (every one of them, those of
    groups of one code and of mixed groups) is read by blocks from its first byte to its
    last, also where a letter in both of o200k's case classes is next to one of one case
    class (A\u4e2d); a character the rules cannot read sends its block to the matcher."""
    codes = vbmi_codes(name)
    pattern = "o200k" if by_o200k_rules(name) else "cl100k"
    every = [cp for cp in range(0x800, 0x10000) if not 0xD800 <= cp < 0xE000]
    readable = [chr(cp) for cp in every if block_readable(codes, cp, pattern)]
    mixed = [c for c in readable if codes[_blocks.CODES_GROUPS_AT + (ord(c) >> 6)] == _blocks.CODES_MIXED_CODE]
    assert mixed and len(mixed) < len(readable)
    n_blocks, n_matcher = bytes_by_blocks(name, dense_text(readable))
    assert n_matcher == 0, (n_blocks, n_matcher)
    text = dense_text(["\u4e2d\u6587", "\u0416\u0436", "\u3042"] * 40)
    for c in [chr(cp) for cp in every if not block_readable(codes, cp, pattern)][::500] + ["A\u4e2d", "\u4e2da"]:
        n_blocks, n_matcher = bytes_by_blocks(name, text[:100] + c + text[100:])
        if c in ("A\u4e2d", "\u4e2da"):
            assert n_matcher == 0, (c, n_blocks, n_matcher)
        else:
            assert n_matcher >= len(c.encode("utf-8")), (hex(ord(c[0])), n_blocks, n_matcher)


# The two-byte characters the block rules cannot read as they read ASCII (see
# _ascii_blocks.h, bpetrain_two_bytes), each in the middle of English text: a digit, the
# long s (?i:s); for o200k also a letter in both of its case classes (Lm, Lo), unless
# AVX-512 VBMI classes the block (bpetrain_o200k_letter_cuts).
UNREAD = {"Arabic-Indic three": "\u0663", "long s": "\u017f"}
UNREAD_BY_O200K = {"modifier letter small h (Lm)": "\u02b0", "alef (Lo)": "\u05d0"}


@pytest.mark.parametrize("char", sorted(UNREAD.items() | UNREAD_BY_O200K.items()), ids=lambda item: item[0])
@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_two_byte_characters_the_rules_cannot_read_go_to_the_matcher(name, char):
    """Such a character sends its block to the matcher; an accented letter in its place
    does not."""
    text = "The cat sat on the mat, and then it ran off to see a dog. " * 4
    n_blocks, n_matcher = bytes_by_blocks(name, text[:110] + "\u00e9" + text[110:])
    assert n_matcher == 0, (n_blocks, n_matcher)
    n_blocks, n_matcher = bytes_by_blocks(name, text[:110] + char[1] + text[110:])
    if char[1] in UNREAD_BY_O200K.values() and (not by_o200k_rules(name) or VBMI):
        assert n_matcher == 0, (n_blocks, n_matcher)
    else:
        assert n_matcher >= 2, (n_blocks, n_matcher)


#: Letters of o200k's case classes: in the upper-case one alone (U), the lower-case one
#: alone (W), both (B: Lm, Lo), of one, two and three bytes.
O200K_LETTERS = {"U": "A\u0416\u1e00", "W": "a\u0436\u1e01", "B": "\u02b0\u05d0\u4e2d\u3042"}


def o200k_letter_runs(length: int) -> list[str]:
    """Every run of ``length`` letters of the classes U, W and B (a letter of each class
    by turns), each followed by one of: the end of a run, a contraction, a letter's prefix."""
    runs = []
    for kinds in itertools.product("UWB", repeat=length):
        letters = "".join(O200K_LETTERS[k][(i + len(runs)) % len(O200K_LETTERS[k])] for i, k in enumerate(kinds))
        runs.append(letters + (" ", ".", "'s", "'S.", "\n", "1", "\u3002")[len(runs) % 7])
    return runs


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_cut_runs_of_letters_of_both_case_classes(block_isa, name):
    """Every run of up to five letters of o200k's case classes U, W and B (where [U]*[W]+
    gives back what it took up to the last B, [U]+[W]* takes the rest: \u4e2dAB. is cut
    \u4e2d|AB., \u4e2dABc. is not), longer runs of B before U, after a contraction, at every
    offset of the first two blocks and across a block's end: the blocks give the regex
    module's pieces."""
    only_widest_for_programs(block_isa, name)
    runs = [r for k in range(1, 6) for r in o200k_letter_runs(k)]
    for start in range(0, len(runs), 120):
        check_blocks(" ".join(runs[start : start + 120]).encode("utf-8"), name)
    rng = random.Random(6)
    pool = "".join(O200K_LETTERS.values()) + " .'s\n"
    tails = [b * k + u + end for k in (1, 2, 9) for b in ("\u4e2d", "a\u4e2d", "'s\u4e2d") for end in (".", "e", "\u3042", "'s")
             for u in ("ABCD", "A\u0416B", "\u1e00\u1e00", "Ab", "A")]
    for k in range(0, 140):
        check_blocks(("x" * k + " " + " ".join(tails[k % 5 :: 5])).encode("utf-8"), name)
        check_blocks("".join(rng.choice(pool) for _ in range(200)).encode("utf-8"), name)


@pytest.mark.skipif(not VBMI, reason="the blocks read o200k's letters of both case classes with AVX-512 VBMI, which this CPU lacks")
def test_o200k_blocks_read_letters_of_both_case_classes_next_to_others():
    """Chinese text with Latin words in it (\u7528dm-crypt, \u7684Linux\u7cfb\u7edf,
    \u7528GNU\u3002) is read by o200k's blocks from its first byte to its last."""
    text = "\u7528dm-crypt\u52a0\u5bc6\u7684Linux\u7cfb\u7edf\u7528GNU\u3002\u6216ext4\uff0cABCd\u4e2d\u6587\n" * 20
    n_blocks, n_matcher = bytes_by_blocks("o200k", text)
    assert n_matcher == 0, (n_blocks, n_matcher)


#: Every space (\s) of two or three bytes in UTF-8 (NEL, NBSP, U+2000..U+200A, U+2028,
#: U+3000 ...), from the regex module's classes.
WIDE_SPACES = [chr(cp) for cp in range(0x80, 0x10000) if not 0xD800 <= cp < 0xE000 and regex.match(r"\s", chr(cp))]


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_cut_runs_of_spaces_of_more_than_one_byte(block_isa, name):
    """Every space of two or three bytes, alone and in runs with ASCII spaces, tabs and
    newlines, before a letter (its prefix), O, a digit, a newline and the end of the string,
    after O and its newlines, at every offset of the first two blocks, in English and in
    CJK text: the blocks (every code that classes their bytes) cut the runs as the regex
    module does (the last character's piece starts at its first byte)."""
    only_widest_for_programs(block_isa, name)
    assert "\u00a0" in WIDE_SPACES and "\u3000" in WIDE_SPACES and "\x85" in WIDE_SPACES
    runs = []
    for c in WIDE_SPACES:
        runs += [c, f"{c}x", f"  {c}a", f"{c}{c} b", f"{c}\n{c}", f".\n{c}{c}", f"\t{c},", f" {c}1", f"{c} \r\n", f"{c}\u4e2d"]
    for base in ("ab 'S 12 ,. \tx\n" * 10, "\u4e2d\u6587\uff0c\u3042 \u4e2d\u3002\n" * 10):
        for k in range(0, 140, 3):
            check_blocks("".join(base[:k] + r + base[k:] for r in runs[k % 7 :: 7]).encode("utf-8"), name)
    for c in WIDE_SPACES:
        for end in ("", "\n", "x", " "):
            check_blocks(("ab " * 21 + f"x {c}{c}" + end).encode("utf-8"), name)


@pytest.mark.parametrize("name", BLOCK_PATTERNS + BLOCKS_ONLY)
def test_blocks_read_spaces_of_more_than_one_byte(name):
    """A no-break space or a next line in English text is read by blocks (on every CPU);
    an ideographic space and the other spaces of three bytes in CJK text too where AVX-512
    VBMI classes its characters."""
    text = "The cat sat on the mat, and\u00a0then it ran off to see\x85a dog. " * 4
    n_blocks, n_matcher = bytes_by_blocks(name, text)
    assert n_matcher == 0, (n_blocks, n_matcher)
    cjk = "".join(f"\u4e2d\u6587{c}\u3042\uff0c{c}{c}\u4e16\u754c\u3002\n" for c in WIDE_SPACES)
    n_blocks, n_matcher = bytes_by_blocks(name, cjk)
    if VBMI:
        assert n_matcher == 0, (n_blocks, n_matcher)
    else:
        assert n_blocks < len(cjk.encode("utf-8")) // 2, (n_blocks, n_matcher)


@pytest.mark.skipif(sys.maxunicode < 0x10FFFF, reason="needs a wide Python build")
@pytest.mark.parametrize(("name", "how"), SPLITTERS)
def test_every_code_point(name, how):
    """Every code point, alone and between letters, spaces and digits."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    for sep in ("", "a", " ", "1", "\n", "'"):
        check(sep.join(every[i : i + 500] for i in range(0, len(every), 500)).encode("utf-8"), name, how)


@pytest.mark.parametrize("name", SPLIT_PATTERNS)
def test_safe_cuts_split_like_the_whole(name):
    """Cutting at any safe cut and splitting both sides gives the pieces of the whole.

    The left side is split with the character after the cut as context (what the
    lookaheads see), as the counting kernel does; the right side does not start the
    string (for ``^``). The cuts come from the program's analysis, for every pattern.
    """
    data = (
        MULTILINGUAL.encode("utf-8")
        + stdlib_text(10_000)
        + b"x.\n/y \n\nA\r\nB  \n\xff\nC \n\n\nD can't 's a 'S b \xc5\xbf e\xcc\x81 \xc3\x89 x"
        + "中文。文字，中3文abc123 कित aʰ'́b\tc,d_e".encode()
        + b"word\xffword\xe2\x82word"
    )
    engine = _engine(SPLIT_PATTERNS[name])
    whole = engine.split(data)
    hi, n_cuts = len(data), 0
    while (cut := engine.safe_cut(data, 0, hi)) > 0:
        left = engine.split(data[: cut + 4], stop=cut)
        right = engine.split(data[cut:], at_start=False)
        assert left + right == whole, f"cut at {cut} is not safe"
        hi, n_cuts = cut, n_cuts + 1
    assert n_cuts > 100


@pytest.mark.parametrize("pat_str", [SPLIT_PATTERNS["cl100k"], SPLIT_PATTERNS["o200k"],
                                     r"^\s+|\s+$|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"])
def test_safe_cut_from_inside_a_character(pat_str):
    """``lo`` only bounds the cuts: from any byte offset, even one inside a character
    (callers pass byte offsets), the answer is the cut found from 0 if it lies past ``lo``,
    never a place between two letters that a continuation byte read as a character of its
    own would make look safe."""
    engine = _engine(pat_str)
    data = ("000\u0c05\U00020000the \u4e2d\u6587\u3002\u0915\u093f\u0924 Stra\u00dfe "
            "\U0001f642\U0001f642 \u0416\u0416\u0416 12\u0663 ").encode()
    for hi in range(len(data) + 1):
        from_start = engine.safe_cut(data, 0, hi)
        for lo in range(hi + 1):
            assert engine.safe_cut(data, lo, hi) == (from_start if from_start > lo else -1), (lo, hi)


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_safe_cut_over_runs_of_one_byte(name):
    """Runs of one byte (which the search passes over once a pair of them is unsafe) give the
    last cut that a search of each place alone gives, and a file of zeros none."""
    engine = _engine(SPLIT_PATTERNS[name])
    data = b"aaaa----    \n\n\n\n0000'''' .. ab  ab\t\t\t\rx" + "\u00e9\u00e9\u00e9".encode() + b"zz"
    alone = [p for p in range(1, len(data)) if engine.safe_cut(data, p - 1, p + 1) == p]
    assert len(alone) > 5
    for hi in range(len(data) + 1):
        assert engine.safe_cut(data, 0, hi) == max((p for p in alone if p < hi), default=-1), hi
    assert engine.safe_cut(bytes(10**6)) == -1


def test_safe_cut_kinds():
    """Where o200k can and cannot be cut: the program's follow sets decide."""
    cut = _engine(SPLIT_PATTERNS["o200k"]).safe_cut
    assert cut(b".\n/b") == -1  # o200k keeps ".\n/" together
    assert cut(b". b") == 1  # a space never follows punctuation inside a piece
    assert cut(b" .") == -1  # " ." is one piece
    assert cut(b"ab'") == -1  # o200k: a contraction may follow
    assert cut("a\u0301".encode()) == -1  # o200k: marks continue the piece
    assert cut("\u4e2d\u3002x".encode()) == 3
    assert cut(b"a1") == 1
    assert cut(b"a\xe3\x80") == -1  # a character cut off by the end is not known
    assert cut("a\u3002".encode()) == 1
    assert cut(b"a b c", 0, 3) == 1
    assert cut(b"a.", 1) == -1  # the cut must leave text on both sides
    cl100k = _engine(SPLIT_PATTERNS["cl100k"]).safe_cut
    assert cl100k(b"ab'") == 2  # cl100k's contractions do not follow letters
    assert cl100k(b"a\n") == 1


def test_catastrophic_backtracking_raises_and_falls_back_to_regex():
    """A pattern that backtracks exponentially ((a|a)+ before a part that fails, on a's) stops the compiled matcher
    with BacktrackLimitExceeded instead of hanging; SplitPattern and Encoding then split with
    the regex module, whose answer they give (with special tokens allowed too)."""
    from bpetrain import Encoding
    from bpetrain.splitting._matcher import BacktrackLimitExceeded

    # the DFA never backtracks: a pattern with one takes linear time
    assert split_pattern(r"(?:a|a)+y|.").program.has_dfa
    assert _dfa(r"(?:a|a)+y|.").split(b"a" * 10**5 + b"y") == [b"a" * 10**5 + b"y"]
    # (a|a)+(?=yy) has a DFA (it holds the match the lookahead decides); a group left before
    # the lookahead inside it is decided has none
    assert split_pattern(r"(?:a|a)+(?=yy)|.").program.has_dfa
    pat_str, text = r"(?:a|a)+(?>(?=yy)y|y)|.", "a" * 20
    assert not split_pattern(pat_str).program.has_dfa
    engine = _engine(pat_str)
    with pytest.raises(BacktrackLimitExceeded, match="backtracked more than"):
        engine.split(text.encode())
    want = [m.group().encode() for m in regex.finditer(pat_str, text)]
    assert split_pattern(pat_str).split(text.encode()) == want
    enc = Encoding("x", pat_str=pat_str, mergeable_ranks={bytes([b]): b for b in range(256)} | {b"aa": 256})
    assert enc.encode_ordinary(text) == [ord("a")] * 20  # every piece is one character
    assert enc.encode_ordinary_batch([text] * 3, num_threads=2) == [[ord("a")] * 20] * 3
    # With special tokens allowed, the kernel's segments fall back the same way.
    enc = Encoding("x", pat_str=pat_str, mergeable_ranks={bytes([b]): b for b in range(256)} | {b"aa": 256},
                   special_tokens={"<s>": 257})
    want = [ord("a")] * 20 + [257] + [ord("a")] * 20
    assert enc.encode(text + "<s>" + text, allowed_special="all") == want
    assert enc.encode(text + "<s>", disallowed_special=()) == [ord("a")] * 20 + list(b"<s>")
    assert enc.encode_batch([text + "<s>" + text] * 3, num_threads=2, allowed_special="all") == [want] * 3
