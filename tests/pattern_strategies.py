"""Hypothesis strategies for split patterns (pre-tokenization regexes) and the texts they split.

:data:`split_patterns` draws patterns from the grammar the compiled split-pattern engine
runs: literals and escapes, ``.``, classes (ranges, negation, ``\\p{..}``/``\\P{..}``,
``\\s \\d \\w`` and their negations), alternation, non-capturing, capturing, atomic and
scoped-flag groups, greedy/lazy/possessive and counted quantifiers, the anchors
``^ $ \\A \\Z`` and lookaheads. Half are shaped like published tokenizer patterns (a
top-level alternation of contractions, letter runs, numbers, punctuation and whitespace),
half are random nestings. :func:`documents` draws texts aimed at where such patterns cut:
strings the pattern is likely to match, the characters it names and their case variants,
every Unicode category, CR/LF runs, Unicode spaces, contractions, and invalid UTF-8.
"""
from __future__ import annotations

import random
import string
from typing import NamedTuple

import regex
from hypothesis import strategies as st


class Part(NamedTuple):
    """A regex fragment that can be concatenated as it is (an atom, a group or a sequence)."""

    source: str
    #: Whether some match of the fragment can be empty. Zero-width assertions count as
    #: empty, so this over-approximates: ``(?=a)(?!a)`` is "nullable" and never matches.
    nullable: bool
    #: Characters the fragment names (literals, range ends, samples of its properties).
    chars: frozenset
    #: A few strings the fragment is likely to match (ignoring its assertions).
    samples: tuple
    #: Whether the fragment holds a quantifier that can repeat (then quantifying it again
    #: is limited to at most two times, to keep backtracking polynomial and small).
    repeats: bool = False


class SplitPatternExample(NamedTuple):
    """A generated ``pat_str``, and what the tests and the text strategy need to know of it."""

    pat_str: str
    #: Some match can be empty in some context (so the engine may fall back).
    may_match_empty: bool
    #: Characters the pattern names, with their case variants.
    chars: tuple
    #: Strings the pattern is likely to match.
    samples: tuple


# --- characters ---------------------------------------------------------------------------

#: Letters whose case variants are not just ``upper``/``lower`` of each other:
#: ``(?i:s)`` matches U+017F, ``(?i:k)`` the Kelvin sign, ``(?i:i)`` U+0130 (but ``(?i:İ)``
#: does not match ``I``), and so on.
CASE_GROUPS = (
    "sS\u017f",
    "kK\u212a",
    "iI\u0130\u0131",
    "\u00b5\u03bc\u039c",
    "\u00df\u1e9e",
    "\u03c3\u03c2\u03a3",
    "\u03c9\u03a9\u2126",
    "\u00e5\u00c5\u212b",
    "\u03b8\u03d1\u0398\u03f4",
    "\u01c4\u01c5\u01c6",
    "\u01c7\u01c8\u01c9",
    "\u0432\u0412\u1c80",
    "\u1e61\u1e60\u1e9b",
    "\u03b9\u0399\u0345\u1fbe",
    "\ufb00",
)
_CASE_GROUP_OF = {c: group for group in CASE_GROUPS for c in group}

#: Samples of each general category, one-letter group and script the strategy names.
PROPERTY_SAMPLES = {
    "L": "aZ\u00e9\u4e2d\u01c5\u02b0",
    "Lu": "AZ\u00c9\u0416\u03a3\u0130\u212a\u1e9e",
    "Ll": "az\u00e9\u0436\u03c2\u0131\u017f\u00df",
    "Lt": "\u01c5\u01c8\u01cb\u01f2\u1f88",
    "Lm": "\u02b0\u02c6\u30fc\u3005\uff70",
    "Lo": "\u4e2d\u05d0\u0915\u3042\u00aa\uac00",
    "M": "\u0301\u0308\u093f\u0903\u20dd",
    "Mn": "\u0301\u0308\u0345\u094d\u302a",
    "Mc": "\u0903\u093f\u0bbe",
    "Me": "\u20dd\u0488",
    "N": "09\u0663\u0969\u00b2\u00bd\u2167\u3007",
    "Nd": "09\u0663\u0969\uff10\U0001d7d8",
    "Nl": "\u2167\u3007\u16ee",
    "No": "\u00b2\u00bd\u2460\U0001f100",
    "P": "!.,'\"-_()\u3001\u3002\u00bf\u2019",
    "Pc": "_\u203f\ufe33",
    "Pd": "-\u2013\u2014",
    "Ps": "([{\u300c",
    "Pe": ")]}\u300d",
    "Pi": "\u00ab\u2018\u201c",
    "Pf": "\u00bb\u2019\u201d",
    "Po": "!.,'\"\u3001\u3002\u061f\u0964",
    "S": "+<$^`\u00a9\U0001f600",
    "Sm": "+<=|~\u2211",
    "Sc": "$\u20ac\u00a5",
    "Sk": "^`\u00a8\u02c2",
    "So": "\u00a9\u00b0\u2318\U0001f600",
    "Z": " \u00a0\u3000\u2028\u2029",
    "Zs": " \u00a0\u2009\u3000\u1680",
    "Zl": "\u2028",
    "Zp": "\u2029",
    "C": "\x00\t\x7f\u200b\ue000\u0378\udcff",
    "Cc": "\x00\t\n\r\x1c\x7f\x85",
    "Cf": "\u00ad\u200b\u200d\ufeff",
    "Co": "\ue000\U000f0000",
    "Cs": "\udc80\udcff",
    "Cn": "\u0378\ufdd0\uffff\U000e0080",
    "Han": "\u4e2d\u6587\u3005\u3007",
    "Latin": "aZ\u00e9\u0131\u1e9e\u212a",
    "Cyrillic": "\u0436\u0416\u0451\u1c80",
    "Greek": "\u03bb\u03a3\u03c2\u1f88",
    "Arabic": "\u0639\u0663\u060c\u064b",
    "Devanagari": "\u0915\u093f\u094d\u0969\u0964",
    "Hiragana": "\u3042\u3093",
    "Katakana": "\u30a2\u30f3\u30fc",
    "Hangul": "\ud55c\u1100",
    "Thai": "\u0e01\u0e53",
    "Hebrew": "\u05d0\u05b0",
    "Common": " 1.\u3001\u30fc",
    "Inherited": "\u0301\u064b",
}

SHORTHAND_SAMPLES = {
    "s": " \t\n\r\x0b\x0c\x85\xa0\u2028\u3000\x1c",  # \x1c is str.isspace() but not \s
    "d": "09\u0663\u0969\u00b2",
    "w": "aZ_\u00e9\u0301\u200d\u00b2\u2167\u203f",
}

#: Unicode spaces and line breaks, including some ``\s`` does not match.
SPACES = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u180e\u2000\u2007\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: Characters tokenizer patterns turn on.
SPECIAL_CHARS = (
    SPACES
    + "aAsSdDmMtTlLvVrReE'\u2019\u02bc\u017f\u212a\u0130\u0131/.,!?-_\"#0123\u0663\u00b2\u2167\u0301\u0308\u02b0"
    + "\u01c5\u00e9\u4e2d\u0915\u093f\u3002\U0001f600\U0001d400"
)
#: Short sequences: CR/LF mixes and contractions in all cases.
SEQUENCES = (
    "\r\n", "\n\n", "\r\r\n", "\n\r", " \n", "\n ", " \r\n ", "\t\n", "\u3000\n", "\n\n\n", "  ", "   x",
    "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D",
    "'\u017f", "'\u212a", "'\u0130", "\u2019s", "n't", "N'T", " 's", "''s", "'s'", "1'2",
    "ss", "SS", "\u017fs", "ff", "st", "i\u0307", "\u03b9\u0308\u0301",  # full case foldings (not in VERSION0)
)  # fmt: skip
#: Words, numbers and runs tokenizer patterns split.
TOKENIZER_SAMPLES = (
    "can't", " Hello", "WORLD's", "HeLLo", " \u00c9t\u00e9", "\u0416\u0443\u043a", " \u4e2d\u6587", "\u0915\u093f\u0924",
    "e\u0301", "12345", " 3.14", "\u0663\u0664", "...", " ?!\n", "//\n", "  \n\n", " \t ", "\r\n\r\n", "a_b",
    "\U0001f600\U0001f600", " \u3002\u3001",
)  # fmt: skip
#: Invalid UTF-8, as the lone surrogates ``surrogateescape`` decodes each byte to:
#: stray continuation bytes, bytes that never occur, overlong forms, an encoded
#: surrogate, a code point above U+10FFFF, and truncated sequences.
INVALID_UTF8 = tuple(
    b.decode("utf-8", "surrogateescape")
    for b in (
        b"\x80", b"\xbf", b"\xff", b"\xfe", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xc3", b"\xe4\xb8", b"\xf0\x9f\x98", b"\xe2\x80",
    )
)  # fmt: skip


def case_variants(c: str) -> set:
    """``c`` and the characters that may match it case-insensitively."""
    out = {c} | set(_CASE_GROUP_OF.get(c, ""))
    for variant in (c.lower(), c.upper(), c.casefold(), c.swapcase()):
        if len(variant) == 1:
            out.add(variant)
    return out


_HEX_ESCAPE = regex.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")
_PROPERTY = regex.compile(r"\\[pP]\{(\w+)\}")


def _compile(pat_str: str) -> regex.Pattern:
    """``regex.compile``, leaving the global ``random`` as it was.

    When its cache is full, the regex module evicts entries with ``random.sample``, and
    Hypothesis forbids strategies to touch the global ``random`` (the tests fill the cache).
    """
    state = random.getstate()
    try:
        return regex.compile(pat_str, cache_pattern=False)
    finally:
        random.setstate(state)


def chars_named_in(pat_str: str) -> tuple:
    """The characters a published pattern names, with case variants and property samples.

    Rough on purpose: every character of the source, the escapes ``\\r \\n \\t`` and
    ``\\xhh``/``\\uhhhh``/``\\Uhhhhhhhh``, and samples of the properties it names.
    """
    out = {"\r", "\n", "\t"}
    for c in pat_str:
        out |= case_variants(c)
    for m in _HEX_ESCAPE.finditer(pat_str):
        out.add(chr(int(m.group(m.lastindex), 16)))
    for m in _PROPERTY.finditer(pat_str):
        out |= set(PROPERTY_SAMPLES.get(m.group(1), ""))
    return tuple(sorted(out))


def _one_of_table(table: tuple) -> st.SearchStrategy:
    """``sampled_from(table)`` with a short repr (Hypothesis warns about long ones)."""
    return st.integers(0, len(table) - 1).map(table.__getitem__)


# --- texts --------------------------------------------------------------------------------


def documents(named=(), samples=(), max_chunks: int = 60) -> st.SearchStrategy:
    """UTF-8 bytes, with invalid bytes spliced in, built from chunks.

    Parameters
    ----------
    named : sequence of str
        Characters to favour: those the pattern under test names.
    samples : sequence of str
        Strings to favour: those the pattern under test is likely to match.
    max_chunks : int
        At most this many chunks (a character, a run of one character, a sample, a short
        sequence or an invalid byte sequence); the documents are mostly under 200 bytes.
    """
    char = st.one_of(
        *([_one_of_table(tuple(sorted(set(named))))] * 3 if named else []),
        _one_of_table(tuple(SPECIAL_CHARS)),
        _one_of_table(tuple("".join(PROPERTY_SAMPLES.values()))),
        st.characters(codec="utf-8"),  # every category; surrogates come from INVALID_UTF8
        st.characters(codec="utf-8", min_codepoint=0x80),
    )
    chunk = st.one_of(
        char,
        char,
        *([_one_of_table(tuple(sorted(set(samples))))] * 4 if samples else []),
        st.tuples(char, st.integers(2, 12)).map(lambda t: t[0] * t[1]),
        _one_of_table(SEQUENCES),
        _one_of_table(TOKENIZER_SAMPLES),
        _one_of_table(INVALID_UTF8),
    )
    chunks = st.one_of(st.lists(chunk, max_size=8), st.lists(chunk, min_size=10, max_size=max_chunks))
    ending = st.sampled_from(["", "", "", "\n", "\r\n", " \n", "\n\n"])  # where $ differs from \Z
    return st.builds(lambda parts, end: ("".join(parts) + end).encode("utf-8", "surrogateescape"), chunks, ending)


# --- patterns: the pieces -----------------------------------------------------------------

_PUNCT = frozenset(string.punctuation)
#: Characters for literals: the ASCII alphabet weighted to the contraction letters,
#: letters with unusual case variants, other scripts, digits, punctuation, spaces, and
#: three invalid bytes (as lone surrogates).
_LITERAL_CHARS = (
    "sdmtlvrekiabxyz" "SDMTLVREKI"
    "\u017f\u212a\u0130\u0131\u00b5\u03bc\u00df\u1e9e\u03c3\u03c2\u03a3\u2126\u212b\u01c5"
    "\u00e9\u00c9\u0436\u0416\u03bb\u4e2d\u3042\u0915\u0663\u0301"
    "0123456789" " '\u2019.,-/\"_!?:;<>=@#%&~`$^*+|()[]{}\\"
    "\n\r\t\x0b\x0c\x85\xa0\u3000\u2028\U0001f600"
    "\udc80\udcbf\udcff"
)  # fmt: skip
_SAMPLE_LIMIT = 6  # samples kept per part
_SAMPLE_LENGTH = 40  # characters per sample at most


def _forms(c: str, *, in_class: bool) -> tuple:
    """The ways to write the character ``c`` in a pattern: raw, escaped, ``\\x``/``\\u``."""
    code = ord(c)
    if c in _PUNCT or c == " ":
        special = "\\]^-[" if in_class else "\\^$.|?*+()[]{}"
        return ("\\" + c,) if c in special else ("\\" + c, c)
    if 0xDC80 <= code <= 0xDCFF:  # an invalid byte, as surrogateescape decodes it
        return (f"\\u{code:04x}",)
    if code < 0x20 or 0x7F <= code < 0xA0:
        named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x0b": "\\v", "\x0c": "\\f"}.get(c, f"\\x{code:02x}")
        return (named, f"\\x{code:02x}") + ((c,) if c in "\n\t" else ())  # a raw control character is literal too
    if code <= 0x7F:
        return (c,)
    return (c, f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")


def _weighted(rare: st.SearchStrategy, common: st.SearchStrategy, one_in: int) -> st.SearchStrategy:
    """``rare`` one time in ``one_in``, else ``common``."""
    return st.integers(1, one_in).flatmap(lambda i: rare if i == 1 else common)


#: Characters to try as samples of classes, whatever they name.
_SAMPLE_POOL = " \n\r\taZs_1.'\u00e9\u0416\u4e2d\u0301\u0663\u00b2\u3000\U0001f600\udcff"


def _matching(source: str, candidates) -> tuple:
    """The candidates (and characters of the sample pool) that ``source`` matches."""
    compiled = _compile(source)
    found = (c for c in dict.fromkeys((*sorted(candidates), *_SAMPLE_POOL)) if compiled.fullmatch(c))
    return tuple(c for _, c in zip(range(_SAMPLE_LIMIT), found))


def _atom(source: str, chars) -> Part:
    return Part(source, False, frozenset(chars), _matching(source, chars))


#: (source, character) for each way to write each character, outside and inside a class.
_CHAR_FORMS = tuple((form, c) for c in _LITERAL_CHARS for form in _forms(c, in_class=False))
_CLASS_CHAR_FORMS = tuple((form, c) for c in _LITERAL_CHARS for form in _forms(c, in_class=True))

literals = _one_of_table(tuple(Part(form, False, frozenset(case_variants(c)), (c,)) for form, c in _CHAR_FORMS))
#: ``\p{..}`` a general category, a one-letter group or a script; ``\P{..}`` a quarter of the time.
properties = _one_of_table(
    tuple(_atom(f"\\{p}{{{name}}}", PROPERTY_SAMPLES[name]) for name in PROPERTY_SAMPLES for p in "pppP")
)
shorthands = _one_of_table(tuple(_atom("\\" + x, SHORTHAND_SAMPLES[x.lower()]) for x in "sSdDwW"))
DOT = _atom(".", "x.\n\r")
ANCHORS = tuple(Part(a, True, frozenset("\n"), ("",)) for a in ("^", "$", "\\A", "\\Z"))

#: Ranges tokenizer patterns use, and the letters around the unusual case variants.
_RANGES = (
    ("a", "z"), ("A", "Z"), ("0", "9"), ("a", "f"), ("j", "t"), ("K", "k"), ("\u00c0", "\u00ff"),
    ("\u0370", "\u03ff"), ("\u0400", "\u04ff"), ("\u4e00", "\u9fa5"), ("\u3040", "\u309f"),
    ("\u30a0", "\u30ff"), ("\uac00", "\ud7a3"), ("\u2000", "\u206f"), ("\x00", "\x1f"), ("!", "/"),
    (":", "@"), ("\uff01", "\uff5e"), ("\U0001f600", "\U0001f64f"), ("\udc80", "\udcff"), ("\u0100", "\u017f"),
)  # fmt: skip


def _range_item(lo: tuple, hi: tuple) -> tuple:
    """A class item ``lo-hi`` from two (source, character) pairs, in code point order."""
    (lo_src, lo), (hi_src, hi) = sorted((lo, hi), key=lambda x: x[1])
    mid = chr((ord(lo) + ord(hi)) // 2)
    return lo_src + "-" + hi_src, frozenset(case_variants(lo) | case_variants(hi) | {mid}), (lo, mid, hi)


_FIXED_RANGES = tuple(
    _range_item((_forms(lo, in_class=True)[-1], lo), (_forms(hi, in_class=True)[0], hi)) for lo, hi in _RANGES
)
#: Class items as (source, characters named, samples).
_class_items = st.one_of(
    _one_of_table(tuple((form, frozenset(case_variants(c)), (c,)) for form, c in _CLASS_CHAR_FORMS)),
    _one_of_table(_FIXED_RANGES),
    st.builds(_range_item, _one_of_table(_CLASS_CHAR_FORMS), _one_of_table(_CLASS_CHAR_FORMS)),
    shorthands.map(lambda p: (p.source, p.chars, p.samples[:2])),
    properties.map(lambda p: (p.source, p.chars, p.samples[:2])),
)


def _char_class(negated: bool, items: list) -> Part:
    source = "[" + ("^" if negated else "") + "".join(item[0] for item in items) + "]"
    chars = frozenset().union(*(item[1] for item in items))
    return Part(source, False, chars, _matching(source, chars.union(*(item[2] for item in items))))


#: ``[...]`` or ``[^...]`` of characters, ranges, shorthands and properties.
char_classes = st.builds(_char_class, st.booleans(), st.lists(_class_items, min_size=1, max_size=5))


def _quantifiers() -> tuple:
    """(quantifier, minimum count, maximum count or None): none (most often),
    ``? * + {n} {n,} {n,m}``, each greedy, lazy or possessive."""
    out = [("", 1, 1)] * 24
    for suffix in ("", "", "?", "+"):
        out += [("?" + suffix, 0, 1), ("*" + suffix, 0, None), ("+" + suffix, 1, None), ("+" + suffix, 1, None)]
        for n, m in ((0, 1), (1, 3), (1, 2), (2, 2), (0, 0), (3, 3), (2, 5), (0, 30), (8, 20)):
            out.append((f"{{{n},{m}}}" + suffix, n, m))
        for n in (0, 1, 2, 3, 8):
            out.append((f"{{{n}}}" + suffix, n, n))
            out.append((f"{{{n},}}" + suffix, n, None))
    return tuple(out)


QUANTIFIERS = _quantifiers()


#: The quantifiers that repeat at most twice.
BOUNDED_QUANTIFIERS = tuple(q for q in QUANTIFIERS if q[2] is not None and q[2] <= 2)


def _quantify(part: Part, quantifier: tuple, bounded: tuple) -> Part:
    suffix, low, high = bounded if part.repeats else quantifier
    counts = {low, min(low + 2, high if high is not None else low + 3)}
    samples = tuple(dict.fromkeys((s * n)[:_SAMPLE_LENGTH] for s in part.samples[:3] for n in sorted(counts)))
    repeats = part.repeats or high is None or high > 1
    return Part(part.source + suffix, part.nullable or low == 0, part.chars, samples, repeats)


def _quantified(atom: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(_quantify, atom, _one_of_table(QUANTIFIERS), _one_of_table(BOUNDED_QUANTIFIERS))


simple_atoms = st.one_of(literals, literals, char_classes, char_classes, properties, shorthands, st.just(DOT))

GROUP_OPENERS = ("(?:", "(", "(?>", "(?i:", "(?i:", "(?s:", "(?-i:", "(?is:", "(?i-s:", "(?-s:")
LOOKAHEADS = ("(?=", "(?!")


def _sequence(parts: list) -> Part:
    samples = tuple(
        dict.fromkeys(
            "".join(p.samples[i % len(p.samples)] if p.samples else "" for p in parts)[:_SAMPLE_LENGTH]
            for i in range(3)
        )
    )
    return Part(
        "".join(p.source for p in parts),
        all(p.nullable for p in parts),
        frozenset().union(*(p.chars for p in parts)),
        samples,
        any(p.repeats for p in parts),
    )


def _alternatives(branches: list) -> Part:
    return Part(
        "|".join(b.source for b in branches),
        any(b.nullable for b in branches),
        frozenset().union(*(b.chars for b in branches)),
        tuple(dict.fromkeys(s for b in branches for s in b.samples))[:_SAMPLE_LIMIT],
        any(b.repeats for b in branches),
    )


def _alternation(parts: st.SearchStrategy, max_branches: int, max_length: int) -> st.SearchStrategy:
    sequence = st.lists(parts, min_size=1, max_size=max_length).map(_sequence)
    return st.lists(sequence, min_size=1, max_size=max_branches).map(_alternatives)


def _group(opener: str, body: Part) -> Part:
    if opener in LOOKAHEADS:
        return Part(opener + body.source + ")", True, body.chars, ("",), body.repeats)
    return Part(opener + body.source + ")", body.nullable, body.chars, body.samples, body.repeats)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    body = _alternation(children, max_branches=3, max_length=3)
    group = _quantified(st.builds(_group, st.sampled_from(GROUP_OPENERS), body))
    lookahead = st.builds(_group, st.sampled_from(LOOKAHEADS), body)
    return _weighted(lookahead, group, one_in=6)


#: A unit of a random pattern: a quantified atom, an anchor, or a (quantified) group or
#: lookahead over an alternation of such units, nested a few levels.
units = st.recursive(_weighted(_one_of_table(ANCHORS), _quantified(simple_atoms), one_in=20), _extend, max_leaves=6)


def _example(part: Part) -> SplitPatternExample:
    chars = set()
    for c in part.chars:
        chars |= case_variants(c)
    return SplitPatternExample(part.source, part.nullable, tuple(sorted(chars)), tuple(s for s in part.samples if s))


#: Random patterns: an alternation of sequences of nested units.
random_patterns = _alternation(units, max_branches=4, max_length=4).map(_example)


# --- patterns: tokenizer-like shapes ------------------------------------------------------

_NOT_LETTER_NUMBER = r"[^\r\n\p{L}\p{N}]"
_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_CONTRACTIONS = (
    r"'(?i:[sdmt]|ll|ve|re)",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    r"'s|'t|'re|'ve|'m|'ll|'d",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])",
    "['\u2019](?i:[sdmt]|ll|ve|re)",
    r"(?i:'(?:s|t|re|ve|m|ll|d))(?!\p{L})",
    r"'(?:[sdmt]|ll|ve|re)",
)
_WHITESPACE = (
    r"\s*[\r\n]+", r"\s*[\r\n]", r"\s+(?!\S)", r"\s+", r"\s", r"\s++$", r"\s+$", r"[\r\n]", r"\s*\r?\n",
    r"[ \t]+", r"\n+", r"\s+(?=\s)", r"(?:\r\n|\r|\n)", r" +(?! )",
)  # fmt: skip
_OTHER = (
    r"[\u4e00-\u9fa5]+", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", r"\p{Han}+", r"[\p{Hiragana}\p{Katakana}]+",
    r"\S+", r"(?>\p{L}+)\p{M}*", r"(?s:.)", r"[^\r\n]+$", r"\p{L}+(?=\p{N})", r"[\p{P}\p{S}](?!\p{P})",
)  # fmt: skip


def _choice(draw, *choices: str) -> str:
    return draw(st.sampled_from(choices))


@st.composite
def _letters(draw) -> str:
    prefix = _choice(draw, "", " ?", _NOT_LETTER_NUMBER + "?", _NOT_LETTER_NUMBER + "?+", r"\s?", r"[^\s\p{L}\p{N}]?")
    letter = _choice(
        draw, r"\p{L}", r"\p{L}", r"[\p{L}\p{M}]", r"\p{Han}", r"[\p{Latin}\p{Greek}\p{Cyrillic}]", r"[a-zA-Z]",
        r"[\p{Arabic}\p{Devanagari}\p{M}]", r"\w", r"(?i:[a-z])",
    )  # fmt: skip
    return prefix + letter + _choice(draw, "+", "+", "++", "+?", "{1,8}")


@st.composite
def _cased_words(draw) -> str:
    prefix = _choice(draw, _NOT_LETTER_NUMBER + "?", "", " ?")
    suffix = _choice(draw, "", r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?", r"(?:'[sS]|'[tT])?")
    if draw(st.booleans()):
        return prefix + _UPPER + _choice(draw, "*", "*+") + _LOWER + "+" + suffix
    return prefix + _UPPER + "+" + _LOWER + _choice(draw, "*", "*?") + suffix


@st.composite
def _numbers(draw) -> str:
    digit = _choice(draw, r"\p{N}", r"\p{N}", r"\d", r"\p{Nd}", "[0-9]")
    count = _choice(draw, "{1,3}", "{1,3}", "{1,2}", "", "+", "{1,3}+", "{3}", "{1}")
    return _choice(draw, "", "", " ?") + digit + count


@st.composite
def _punctuation(draw) -> str:
    cls = _choice(draw, r"[^\s\p{L}\p{N}]", r"[^\s\p{L}\p{N}]", r"[\p{P}\p{S}]", r"[^\s\p{L}\p{N}\r\n]", r"\p{P}")
    run = _choice(draw, "+", "++", "+?")
    tail = _choice(draw, r"[\r\n]*", r"[\r\n]*+", r"[\r\n/]*", "", r"\n?")
    return _choice(draw, " ?", " ?", "", r"\s?") + cls + run + tail


_branches = st.one_of(
    st.sampled_from(_CONTRACTIONS), _letters(), _letters(), _cased_words(), _numbers(), _numbers(),
    _punctuation(), _punctuation(), st.sampled_from(_WHITESPACE), st.sampled_from(_WHITESPACE),
    st.sampled_from(_OTHER),
)  # fmt: skip


@st.composite
def tokenizer_like(draw) -> SplitPatternExample:
    """A top-level alternation of 2 to 8 branches shaped like published tokenizer patterns;
    one time in four, one of the branches is a random one."""
    branches = draw(st.lists(_branches, min_size=2, max_size=8, unique=True))
    may_match_empty = False  # every branch of the menu consumes a character
    samples = TOKENIZER_SAMPLES
    if draw(st.integers(0, 3)) == 0:
        extra = draw(_alternation(units, max_branches=1, max_length=3).map(_example))
        branches.insert(draw(st.integers(0, len(branches))), extra.pat_str)
        may_match_empty = extra.may_match_empty
        samples += extra.samples
    pat_str = "|".join(branches)
    return SplitPatternExample(pat_str, may_match_empty, chars_named_in(pat_str), samples)


def regex_fails_on(pat_str: str) -> bool:
    """Whether the installed ``regex`` module fails on ``pat_str`` with something other than ``regex.error``.

    Releases of regex from 2025 and early 2026 (2026.1.15, the newest for Python 3.9, among
    them) raise AttributeError on some negated classes of every character, such as
    ``(?i:[^\\s\\S])``: there is no reference to compare with, and ``SplitPattern`` must
    say so in a ValueError.
    """
    try:
        _compile(pat_str)
    except regex.error:
        raise
    except Exception:
        return True
    return False


def _does_not_match_empty(example: SplitPatternExample) -> bool:
    return regex_fails_on(example.pat_str) or _compile(example.pat_str).fullmatch("") is None


#: Split patterns from the grammar, none of which matches the empty string as a whole
#: (some can match it in context: ``example.may_match_empty`` says so).
split_patterns = st.one_of(tokenizer_like(), random_patterns).filter(_does_not_match_empty)
