"""The compiled split-pattern engine gives exactly the regex module's pieces.

``SplitPattern(pat_str).split(data)`` must equal ``regex.finditer(pat_str, text)`` on
``data`` decoded with ``errors="surrogateescape"`` (each invalid byte one lone surrogate),
the pieces re-encoded the same way. Patterns inside the engine's grammar must run
compiled (``sp.program is not None``) unless they can match the empty string somewhere;
the others fall back to the ``regex`` module and say why (``sp.fallback_reason``).

The patterns come from published tokenizers and from the grammar itself
(:mod:`pattern_strategies`); every expected result is computed by the ``regex`` module.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
import regex
from helpers import DEEPSEEK_V3, KIMI_K2, MULTILINGUAL
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from pattern_strategies import chars_named_in, documents, regex_fails_on, split_patterns

from bpetrain import PATTERNS
from bpetrain.splitting._compiler import stored_program
from bpetrain.splitting._dfa import MAX_PAIR_BYTES
from bpetrain.splitting._matcher import (
    SHUFFLE_VARIANTS,
    BacktrackLimitExceeded,
    Program,
    _py_pshufb_coded,
    _py_pshufb_quarters,
    _py_split_in_one_buffer,
    _steer_by_chance,
    shuffle_variants,
)
from bpetrain.splitting.pattern import SplitPattern, split_pattern


def _ranges(*spans: tuple) -> str:
    """Class items from code point spans ``(lo, hi)`` or ``(c,)``, as raw characters.

    Written with code points because the published classes hold characters that Unicode
    normalization would change (U+1F7D, U+2126 Ohm, U+212A Kelvin...), and a normalized
    copy has reversed ranges.
    """
    return "".join(chr(s[0]) if len(s) == 1 else f"{chr(s[0])}-{chr(s[1])}" for s in spans)


#: DeepSeek LLM's cased-letter class (its tokenizer.json, as llama.cpp's llama-vocab.cpp
#: copies it, with 𐐀-𐑏 written as \U escapes).
_DEEPSEEK_LETTERS = _ranges(
    (0x41, 0x5A), (0x61, 0x7A), (0xB5,), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x1BA), (0x1BC, 0x1BF),
    (0x1C4, 0x293), (0x295, 0x2AF), (0x370, 0x373), (0x376,), (0x377,), (0x37B, 0x37D), (0x37F,), (0x386,),
    (0x388, 0x38A), (0x38C,), (0x38E, 0x3A1), (0x3A3, 0x3F5), (0x3F7, 0x481), (0x48A, 0x52F), (0x531, 0x556),
    (0x10A0, 0x10C5), (0x13A0, 0x13F5), (0x13F8, 0x13FD), (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF), (0x1D00, 0x1D2B),
    (0x1D6B, 0x1D77), (0x1D79, 0x1D9A), (0x1E00, 0x1F15), (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D),
    (0x1F50, 0x1F57), (0x1F59,), (0x1F5B,), (0x1F5D,), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FBC),
    (0x1FBE,), (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB), (0x1FE0, 0x1FEC),
    (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x2102,), (0x2107,), (0x210A, 0x2113), (0x2115,), (0x2119, 0x211D),
    (0x2124,), (0x2126,), (0x2128,), (0x212A, 0x212D), (0x212F, 0x2134), (0x2139,), (0x213C, 0x213F),
    (0x2145, 0x2149), (0x214E,), (0x2183,), (0x2184,), (0x2C00, 0x2C7B), (0x2C7E, 0x2CE4), (0x2CEB, 0x2CEE),
    (0x2CF2,), (0x2CF3,), (0xA640, 0xA66D), (0xA680, 0xA69B), (0xA722, 0xA76F), (0xA771, 0xA787),
    (0xA78B, 0xA78E), (0xAB70, 0xABBF), (0xFB00, 0xFB06), (0xFB13, 0xFB17), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A),
) + r"\U00010400-\U0001044f" + _ranges(
    (0x104B0, 0x104D3), (0x104D8, 0x104FB), (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x118A0, 0x118DF),
    (0x1E900, 0x1E943),
)  # fmt: skip

_LLAMA3 = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
    r"""|\s+(?!\S)|\s+"""
)
_MINBPE_GPT4 = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)"""
    r"""|\s+"""
)
_O200K_CASES = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"""
    r"""[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
)
_CASES_BY_LOOKAHEAD = (  # llama.cpp's rewrite of o200k's case classes
    r"""[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+<c>|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+"""
    r"""((?=[\p{L}])([^A-Z]))*<c>"""
)
_CONTRACTIONS_BY_CLASS = r"""(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"""

#: Split patterns of published vocabularies, as their tokenizer files or the libraries that
#: train them write them. Several tokenizers apply a sequence of regexes (Hugging Face
#: ``Split`` pre-tokenizers); each of those is a pattern here on its own.
PUBLISHED = {
    **{name: PATTERNS[name] for name in ("gpt2", "cl100k", "o200k")},  # tiktoken
    "cl100k_minbpe": _MINBPE_GPT4,  # minbpe's GPT4_SPLIT_PATTERN, rustbpe
    "nanochat": _MINBPE_GPT4.replace(r"\p{N}{1,3}", r"\p{N}{1,2}"),
    "llama3": _LLAMA3,  # also tiktoken's first cl100k_base, GLM-4, DBRX
    "gpt2_hf": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",  # ByteLevel
    "qwen2": _LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}"),  # Qwen2/2.5/3, StableLM 2, Grok-2
    # Qwen3.5 (Qwen/Qwen3.5-0.8B's tokenizer.json): Qwen2's with combining marks as letters
    "qwen35": _LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}").replace(r"?\p{L}+", r"?[\p{L}\p{M}]+")
    .replace(r"[^\s\p{L}\p{N}]", r"[^\s\p{L}\p{M}\p{N}]"),
    "tekken": (  # Mistral (Nemo, Pixtral)
        _O200K_CASES + r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
    ),
    "tekken_llamacpp": (
        _CASES_BY_LOOKAHEAD.replace("<c>", "") + r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
    ),
    "o200k_llamacpp": (
        _CASES_BY_LOOKAHEAD.replace("<c>", _CONTRACTIONS_BY_CLASS + "?")
        + r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
    ),
    "deepseek_v3": DEEPSEEK_V3,  # DeepSeek V3/R1, the third of its three splits
    "deepseek_v3_cjk": "[" + _ranges((0x4E00, 0x9FA5), (0x3040, 0x309F), (0x30A0, 0x30FF)) + "]+",
    "deepseek_llm_letters": r"\s?[" + _DEEPSEEK_LETTERS + "]+",
    "deepseek_llm_punct": r"\s?["
    + _ranges((0x21, 0x2F), (0x3A, 0x7E), (0xFF01, 0xFF0F), (0xFF1A, 0xFF5E), (0x2018, 0x201F), (0x3000, 0x3002))
    + "]+",
    "deepseek_llm_trailing_space": r"\s+$",
    "deepseek_llm_cjk": "[" + _ranges((0x4E00, 0x9FA5), (0x800, 0x4E00), (0xAC00, 0xD7FF)) + "]+",
    "falcon": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)""",  # drops some spaces
    "falcon_punct": r"[\p{P}\$\+<=>\^~\|`]+",
    "bailingmoe": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
    ),
    "seed_coder": (
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+"""
        r"""|\s+(?!\S)|\s+"""
    ),
    "chameleon_image": r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "chameleon_punct": r"[\p{P}!-/:-@\[-`{-~]",
    "chameleon_spaces": "([\\t\\n]|    |  )",
    "afmoe_cjk": "["
    + _ranges(
        (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xFF65, 0xFF9F),
        (0x2F00, 0x2FDF), (0xE00, 0xE7F), (0xE80, 0xEFF), (0x1780, 0x17FF), (0x1000, 0x109F), (0xAA60, 0xAA7F),
        (0xA9E0, 0xA9FF), (0xAC00, 0xD7AF), (0x1100, 0x11FF),
    )
    + "]+",
    # BLOOM's tokenizer.json has ` ?[^(\s|[.,!?…。，、।۔،])]+`, which the regex module does not
    # compile (unbalanced parenthesis: a nested class is V1 syntax); llama.cpp's form:
    "bloom_llamacpp": " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+",
    "kimi_k2": KIMI_K2,  # Kimi K2: o200k's, Han apart from the letters, no / after punctuation
}


def reference(pat_str: str, data: bytes, timeout: float | None = None) -> list[bytes]:
    """The pieces ``regex.finditer`` gives on ``data`` decoded with surrogateescape."""
    text = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text, timeout=timeout)]


def check(sp, pat_str: str, data: bytes, want: list[bytes] | None = None) -> None:
    """``sp.split(data)`` equals the reference, with a message that shows where it does not."""
    got = sp.split(data)
    if want is None:
        want = reference(pat_str, data)
    if got != want:
        at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        how = "compiled" if sp.program is not None else f"fallback ({sp.fallback_reason})"
        raise AssertionError(
            f"pattern {pat_str!r}, {how}, on {data[:300]!r} ({len(data)} bytes): piece {at} differs: "
            f"got {got[at:at + 3]!r}, regex gives {want[at:at + 3]!r} ({len(got)} vs {len(want)} pieces)"
        )


def check_reports_fallback_consistently(sp) -> None:
    assert (sp.program is None) == (sp.fallback_reason is not None), (sp.program, sp.fallback_reason)
    if sp.fallback_reason is not None:
        assert isinstance(sp.fallback_reason, str) and sp.fallback_reason.strip()


# --- published patterns -------------------------------------------------------------------

_CHARS = {name: chars_named_in(pat_str) for name, pat_str in PUBLISHED.items()}
#: Strings for the patterns that random text would hardly ever match.
_SAMPLES = {"chameleon_image": ("IMGIMGABZ", "IMGIMGIIIIZ", "IMGIMGABCDEZ", "IMGIMGZ", "IMGIMG")}


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_pattern_runs_compiled(name):
    sp = SplitPattern(PUBLISHED[name])
    check_reports_fallback_consistently(sp)
    assert sp.program is not None, f"{name}: {PUBLISHED[name]!r} falls back: {sp.fallback_reason}"
    assert sp.dfa_reason is None and sp.program.has_dfa, f"{name}: no DFA: {sp.dfa_reason}"


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_pattern_every_code_point(name):
    """Every code point (surrogates as the invalid bytes they stand for: one escaped byte
    each), between ASCII letters, spaces and digits, so each is read at a piece start and
    inside pieces."""
    sp = split_pattern(PUBLISHED[name])
    every = "".join(map(chr, range(0x110000))).encode("utf-8", "surrogatepass")
    seps = [b" ", b"a", b"1", b"\n", b"'s "]
    data = b"".join(every[i : i + 331] + seps[i % 5] for i in range(0, len(every), 331))
    check(sp, PUBLISHED[name], data)


@pytest.mark.parametrize("name", PUBLISHED)
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_published_pattern_hypothesis(name, data):
    pat_str = PUBLISHED[name]
    sp = split_pattern(pat_str)  # compiled once, not per example
    docs = data.draw(
        st.lists(documents(_CHARS[name], _SAMPLES.get(name, ())), min_size=1, max_size=3), label="documents"
    )
    for doc in [*docs, b"".join(docs)]:
        check(sp, pat_str, doc)


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_pattern_real_text(name, prose):
    sp = SplitPattern(PUBLISHED[name])
    check(sp, PUBLISHED[name], MULTILINGUAL.encode("utf-8") * 3)
    check(sp, PUBLISHED[name], prose[:200_000])


def _adversarial() -> list[bytes]:
    rng = random.Random(11)
    return [
        b"",
        b"a" * 10**5,
        b" " * 1000 + b"x",
        b" " * 1000,
        b"x" + b" \t" * 500 + b"\n",
        b"\r\n" * 1000,
        b"\n \r\n\r \x0b\x0c" * 200 + b"end",
        b"1" * 1001,
        "\u0663".encode() * 1001,
        b"'s" * 1000 + b"'" + b"'LL" * 500,
        b"." * 1000 + b"\n" * 3 + b"/" * 100,
        "\u4e2d".encode() * 3000 + "\u3002".encode() * 100,
        b"\xff" * 1000,  # invalid bytes only
        bytes(rng.randrange(256) for _ in range(20_000)),  # mostly invalid UTF-8
        b"\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf\xe0\x80\xaf\xf0\x8f\xbf\xbf",  # surrogate, > U+10FFFF, overlong
        b"abc\xe2\x82",  # cut off at the end
        "".join(rng.choice("aA'sS\u017f\u212a \r\n\t.1/\u0301\u02b0\u4e2d\u00a0") for _ in range(20_000)).encode(),
    ]


ADVERSARIAL = _adversarial()


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_pattern_adversarial(name):
    sp = SplitPattern(PUBLISHED[name])
    for data in ADVERSARIAL:
        check(sp, PUBLISHED[name], data)


# --- patterns from the grammar ------------------------------------------------------------


def _check_generated(data) -> None:
    example = data.draw(split_patterns, label="pattern")
    if regex_fails_on(example.pat_str):  # no reference: bpetrain must refuse the pattern, saying why
        with pytest.raises(ValueError, match="fails to compile"):
            SplitPattern(example.pat_str)
        return
    sp = SplitPattern(example.pat_str)
    check_reports_fallback_consistently(sp)
    docs = data.draw(st.lists(documents(example.chars, example.samples), min_size=1, max_size=3), label="documents")
    for doc in [*docs, b"".join(docs)]:
        try:
            want = reference(example.pat_str, doc, timeout=2.0)
        except TimeoutError:  # the regex module backtracks for too long: nothing to compare
            reject()
        check(sp, example.pat_str, doc, want)
    if not example.may_match_empty and not (sp.fallback_reason or "").startswith(ALLOWED_FALLBACK):
        assert sp.program is not None, (
            f"{example.pat_str!r} is in the engine's grammar and cannot match the empty string, "
            f"but falls back: {sp.fallback_reason}"
        )
    if sp.program is not None:
        # both compiled splitters: the DFA (which sp used if the pattern has one) and the
        # backtracking program
        assert sp.program.has_dfa or sp.dfa_reason.startswith(ALLOWED_NO_DFA), sp.dfa_reason
        engine = Program(example.pat_str, stored_program(example.pat_str), dfa=False)
        # the DFA by its own tables, and by each vector shuffle code of this CPU but the one sp's uses
        others = [Program(example.pat_str, stored_program(example.pat_str), shuffle=shuffle)
                  for shuffle in SHUFFLES if shuffle != sp.program.shuffle_variant]
        # and with the marks of where a match can start from the first failed attempt, and without them
        others += [Program(example.pat_str, stored_program(example.pat_str), reverse=reverse) for reverse in (True, False)]
        for doc in [*docs, b"".join(docs)]:
            try:
                check(engine, example.pat_str, doc)
            except BacktrackLimitExceeded:
                # the program may give up on a pattern that backtracks exponentially (such as
                # (?:\P{Mc}|\S)*s before a run with no s); SplitPattern then splits with the regex
                # module (test_pretok's test_catastrophic_backtracking_raises_and_falls_back_to_regex)
                assert sp.program.has_dfa or sp.split(doc) == reference(example.pat_str, doc)
            if sp.program.has_dfa:
                check_interleaved(sp.program, example.pat_str, doc)
                for program in others:
                    check_interleaved(program, example.pat_str, doc)


# --- the DFA's two interleaved readings -----------------------------------------------------

#: Spans (bytes each reading covers) small enough that the two readings of the DFA meet, or
#: fail to, many times in a short text; odd ones start the second reading at odd places.
SPANS = (8, 9, 16, 61)


def check_interleaved(program, pat_str: str, data: bytes, *, stop=None, at_start=True, want=None) -> None:
    """The DFA's pieces read by two interleaved readings, for every span of :data:`SPANS`,
    are those of one reading (``span=0``), which are ``want`` or else those of
    ``regex.finditer``."""
    one = program.split(data, stop, at_start=at_start, span=0)
    if want is not None:
        assert one == want, (pat_str, data[:200])
    elif stop is None and at_start:
        assert one == reference(pat_str, data), (pat_str, data[:200])
    for span in SPANS:
        got = program.split(data, stop, at_start=at_start, span=span)
        if got != one:
            at = next((i for i, (a, b) in enumerate(zip(got, one)) if a != b), min(len(got), len(one)))
            raise AssertionError(f"pattern {pat_str!r}, span {span}, on {data[:200]!r} ({len(data)} bytes): piece "
                                 f"{at} differs: got {got[at:at + 3]!r}, one reading gives {one[at:at + 3]!r}")


_DFA_PUBLISHED = [name for name in PUBLISHED if SplitPattern(PUBLISHED[name]).program.has_dfa]
#: How the DFA may read ASCII text: by its own tables (False), by each vector shuffle code this
#: CPU runs (``_dfa_shuffle.h``).
SHUFFLES = [False, *shuffle_variants()]


@pytest.mark.parametrize("name", _DFA_PUBLISHED)
@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_interleaved_readings_published_hypothesis(name, data):
    pat_str = PUBLISHED[name]
    # the DFA alone, no hand-written code: by its own tables (two readings), and by each code of shuffles (one)
    docs = data.draw(st.lists(documents(_CHARS[name], _SAMPLES.get(name, ())), min_size=1, max_size=4))
    for shuffle in SHUFFLES:
        check_interleaved(Program(pat_str, stored_program(pat_str), shuffle=shuffle), pat_str, b"".join(docs))


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("name", ["qwen2", "tekken", "gpt2", "deepseek_v3", "bloom_llamacpp", "o200k", "llama3"])
def test_interleaved_readings_real_and_adversarial_text(name, shuffle, prose):
    pat_str = PUBLISHED[name]
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    check_interleaved(program, pat_str, prose[:60_000])
    check_interleaved(program, pat_str, MULTILINGUAL.encode("utf-8") * 2)
    for data in ADVERSARIAL:
        check_interleaved(program, pat_str, data[:20_000])
    for stop in (0, 1, 999, 5000, 20_000):  # pieces that start before stop, the rest as context
        check_interleaved(program, pat_str, prose[:20_000], stop=stop, at_start=False)


@pytest.mark.parametrize(
    ("pat_str", "data", "want"),
    [
        (r"(?s:..)", b"ab" * 700, None),  # odd spans: the second reading is always a byte off
        (r"(?s:..)", "\u00e9".encode() * 700, None),  # and inside characters
        (r"\s+(?!\S)|\s+|\S+", b" " * 3000 + b"x" + b"\n" * 3000, None),  # one long piece past both readings
        (r"\s+(?!\S)|\s+|\S+", (b" " * 37 + b"x") * 80, None),
        (r"\w+(?=\s)|\s", b"word " * 200 + b"end", None),  # gaps that no piece covers
        # the regex module backtracks exponentially on these: the pieces are given
        (r"(a|aa)+$", b"a" * 1500, [b"a" * 1500]),  # one piece: the whole text
        (r"(a|aa)+$", b"a" * 1000 + b"b", []),  # no piece at all
        (r"(a|aa)+$|b", b"a" * 700 + b"b" + b"a" * 700, [b"b", b"a" * 700]),
    ],
)
def test_interleaved_readings_that_meet_late_or_never(pat_str, data, want):
    for shuffle in SHUFFLES:
        program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
        assert program.has_dfa, program.dfa_reason
        check_interleaved(program, pat_str, data, want=want)


# --- the DFA on ASCII text by vector shuffles -----------------------------------------------


@pytest.mark.parametrize("name", _DFA_PUBLISHED)
def test_shuffles_read_the_published_patterns(name):
    program = split_pattern(PUBLISHED[name]).program
    if not (program.native or program.blocks):  # the DFA splits
        assert program.shuffle_reason in ("", "this CPU (or build) has neither AVX-512 VBMI nor AVX2"), \
            program.shuffle_reason
        assert split_pattern(PUBLISHED[name]).shuffle_reason == (program.shuffle_reason or None)
        # the widest code this CPU runs, and a name for it exactly when one runs
        assert program.shuffle_variant == (shuffle_variants()[0] if shuffle_variants() else "")
        assert bool(program.shuffle_variant) != bool(program.shuffle_reason)


#: Patterns whose shuffle tables have up to 16 lanes (falcon_punct), 32 (qwen2, deepseek_v3, llama3,
#: gpt2_hf), 48 (o200k, (?:ab){18}) and 64 (the last): pshufb reads one to four quarters of a row,
#: o200k's two once its lanes that no ASCII text tells apart are merged; llama3's are exactly 33.
SHUFFLE_WIDTHS = [*(PUBLISHED[name] for name in ("falcon_punct", "qwen2", "deepseek_v3", "llama3", "gpt2_hf", "o200k")),
                  r"(?:ab){18}|\s+|.", r"(?:ab){24}|\s+|."]


def _shuffle_lanes(pat_str: str) -> int:
    """The highest lane of ``pat_str``'s shuffle table as stored (before pshufb merges any)."""
    arrays = stored_program(pat_str)
    return max(*(entry & 63 for entry in bytes(arrays["shuffle_rows"])), *bytes(arrays["shuffle_special"]),
               *bytes(arrays["shuffle_lane"]))


def test_shuffle_widths_take_one_to_four_pshufb():
    """SHUFFLE_WIDTHS holds a table for each number of pshufb a step (_dfa_shuffle.h) and each
    step: one by lane minus 16 per quarter, two by the two-quarter code of the lane (up to 32
    lanes) or by lane minus 16 per quarter (llama3's 33), three or four by pshufb's own code of
    the lane; o200k's 41 lanes go to pshufb as 31 (bpetrain_shuffle_merge), each (?:ab){n}'s as
    they are (each of its states tells a count apart)."""
    widths = [-(-_shuffle_lanes(pat_str) // 16) for pat_str in SHUFFLE_WIDTHS]
    assert widths == [1, 2, 2, 2, 2, 3, 3, 4]
    if "pshufb" not in shuffle_variants():
        pytest.skip("this CPU (or build) has no AVX2")
    programs = [Program(pat_str, stored_program(pat_str), shuffle="pshufb") for pat_str in SHUFFLE_WIDTHS]
    assert [_py_pshufb_quarters(program) for program in programs] == [1, 2, 2, 2, 2, 2, 3, 4]
    assert [_py_pshufb_coded(program) for program in programs] == [False, True, True, False, True, True, True, True]
    assert _py_pshufb_quarters(Program(PUBLISHED["o200k"], stored_program(PUBLISHED["o200k"]), shuffle=False)) == 0


#: A table whose lanes ASCII text does not tell apart but bytes >= 0x80 do: a word that starts
#: with "a" reads on as one that starts with "b" does, until "\u00c0" (which only the first
#: takes), and the start state at the string's start as the one after it, but for "\u00ff";
#: "...y" goes back to the last match two bytes back, and the loop starts again in that start
#: state. pshufb merges its 54 lanes to 9 (four quarters to one).
MERGED_BY_ASCII = (r"^\u00ff|" + "|".join(f"{chr(97 + i)}[a-z]*{chr(0xC0 + i)}" for i in range(20))
                   + r"|\.\.\.x|[a-z]+|\s+|(?s:.)")


def test_pshufb_finds_merged_lanes_again_before_non_ascii():
    """The lane pshufb's loop gives back where it stops before a byte >= 0x80 in a merged lane is
    the one the rows before merging reach from the last lane it knew, a start state it went back
    to included (not another of its part, nor the part's number): the word's first letter decides
    whether the non-ASCII letter after it ends its piece."""
    if "pshufb" not in shuffle_variants():
        pytest.skip("this CPU (or build) has no AVX2")
    program = Program(MERGED_BY_ASCII, stored_program(MERGED_BY_ASCII), shuffle="pshufb")
    assert _shuffle_lanes(MERGED_BY_ASCII) > 48
    assert _py_pshufb_quarters(program) == 1
    rnd = random.Random(5)
    words = []
    for _ in range(600):
        first = rnd.randrange(20)
        last = first if rnd.random() < 0.5 else rnd.randrange(20)
        words.append(" " * rnd.randrange(1, 3) + "...y " * rnd.randrange(2) + chr(97 + first)
                     + "".join(rnd.choice("abxyz") for _ in range(rnd.randrange(90))) + chr(0xC0 + last))
    data = "".join(words).encode()
    check(program, MERGED_BY_ASCII, data)
    check_interleaved(program, MERGED_BY_ASCII, data)


#: Published patterns whose lanes pshufb merges (bpetrain_shuffle_merge): 35 to 29 and 41 to 31
#: (lanes 17 to 32 take two pshufb a step, up to 48 three).
MERGED = ("falcon", "o200k")


@pytest.mark.parametrize("name", MERGED)
def test_pshufb_finds_the_lane_of_merged_lanes_again(name, prose):
    """Where pshufb reads merged lanes, the loop stops in a merged lane before a byte >= 0x80
    put at each place of ASCII text, at the end of the text and where its room runs out, and
    gives back the lane it is in (its part's one lane, or the rows before merging from the last
    lane it knew); the pieces after it are regex's."""
    if "pshufb" not in shuffle_variants():
        pytest.skip("this CPU (or build) has no AVX2")
    pat_str = PUBLISHED[name]
    assert -(-_shuffle_lanes(pat_str) // 16) > 2
    program = Program(pat_str, stored_program(pat_str), shuffle="pshufb")
    assert _py_pshufb_quarters(program) == 2
    ascii_text = bytes(b for b in prose[:3000] if b < 0x80) + SHUFFLE_EDGES[:1500].replace("\u00e9".encode(), b"")
    for at in range(0, 400):
        for mark in ("\u00e9".encode(), "\u3000".encode(), b"\xff"):
            data = ascii_text[at : at + 300] + mark + ascii_text[at + 300 : at + 420]
            check(program, pat_str, data)
            check(program, pat_str, data[: 300 - at % 97])
    check_interleaved(program, pat_str, ascii_text)


@pytest.mark.parametrize("shuffle", shuffle_variants())
@pytest.mark.parametrize("pat_str", SHUFFLE_WIDTHS)
def test_shuffles_every_code_point(pat_str, shuffle):
    """Each shuffle code, on tables of every width, on every code point between ASCII
    letters, spaces and digits: the loop stops before each non-ASCII byte and starts again
    after it."""
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.shuffle_variant == shuffle, program.shuffle_reason
    every = "".join(map(chr, range(0x110000))).encode("utf-8", "surrogatepass")
    seps = [b" ", b"a", b"1", b"\n", b"'s "]
    check(program, pat_str, b"".join(every[i : i + 331] + seps[i % 5] for i in range(0, len(every), 331)))


def test_shuffle_codes_are_named_and_checked():
    """``shuffle`` takes a bool or the name of a code this CPU runs; anything else says what it takes."""
    pat_str = PUBLISHED["qwen2"]
    assert set(shuffle_variants()) <= set(SHUFFLE_VARIANTS)
    assert Program(pat_str, stored_program(pat_str), shuffle=False).shuffle_variant == ""
    for name in set(SHUFFLE_VARIANTS) - set(shuffle_variants()):
        with pytest.raises(ValueError, match="not one of this CPU's shuffle codes"):
            Program(pat_str, stored_program(pat_str), shuffle=name)
    with pytest.raises(ValueError, match="not one of this CPU's shuffle codes"):
        Program(pat_str, stored_program(pat_str), shuffle="sse2")
    with pytest.raises(TypeError, match="shuffle must be a bool"):
        Program(pat_str, stored_program(pat_str), shuffle=1)


#: Text where the shuffle loop stops and starts again: runs of spaces and newlines of every
#: length before words (the DFA goes back to its last match), bytes no piece takes (the gap),
#: bytes >= 0x80, across its groups of 16 and blocks of 64 bytes.
SHUFFLE_EDGES = b"".join(
    b" " * k + b"x" + b"\n" * (k % 5) + b"  " * (k % 3) + b"y." + b"7" * (k % 4) + b"(" * (k % 2) + b"\t\n z"
    + ("\u00e9" * (k % 3)).encode() + b"'s" for k in range(1, 90)
)


@pytest.mark.parametrize("pat_str", [
    *(PUBLISHED[name] for name in ("qwen2", "deepseek_v3", "gpt2_hf", "bloom_llamacpp", "falcon_punct",
                                   "seed_coder")),
    r"\s+(?!\S)|\s+|\S+", r"\w+(?=\s)|\s", r"[a-z]+|\d", r"(?:ab){24}|\s+|.", PUBLISHED["o200k"],
    r"(?:\P{Nd}{0,}?\S{2})",  # the start state again after a byte: not a piece's first byte
])
def test_shuffles_stop_and_start_again(pat_str):
    programs = [Program(pat_str, stored_program(pat_str), shuffle=shuffle) for shuffle in SHUFFLES]
    for cut in range(0, 130, 7):  # every alignment of the groups
        data = SHUFFLE_EDGES[cut:]
        want = reference(pat_str, data)
        for program in programs:
            check_interleaved(program, pat_str, data, want=want)


@pytest.mark.parametrize("pat_str", [r"(?s:.)", r"\D", r".", r"[^x]|x+", r"(?s:.)(?!\d)|\d+"])
def test_shuffles_write_a_piece_a_byte(pat_str):
    """Blocks where each piece starts where the one before ends, a byte each or more, are written
    two pieces a store or piece by piece (_dfa_shuffle_run.h): every count of them, cut anywhere
    by the room left (the spans), and between gaps (newlines for ``.``) and other characters."""
    programs = [Program(pat_str, stored_program(pat_str), shuffle=shuffle) for shuffle in SHUFFLES]
    texts = [bytes(range(32, 127)) * 3, b"ab\ncd\n\nxx9" * 40 + b"x" * 70 + b"12345" * 30,
             ("z" * 61 + "\u00e9" + "q" * 66 + "\n").encode() * 3]
    for text in texts:
        for length in (*range(0, 8), 63, 64, 65, 127, 128, 129, 200, len(text)):
            data = text[:length]
            want = reference(pat_str, data)
            for program in programs:
                check_interleaved(program, pat_str, data, want=want)


def test_shuffles_know_where_the_piece_started():
    """A state the DFA starts in is also reached inside a piece (a lazy loop back to it): a piece
    that fails there started further back than a byte (found by the generated patterns)."""
    pat_str = r"(?:\P{Nd}{0,}?\S{2})"
    for data in (b"\t0\tcan't", b"x\t0\tca", b"\t0\tcan" * 9):
        for shuffle in SHUFFLES:
            check_interleaved(Program(pat_str, stored_program(pat_str), shuffle=shuffle), pat_str, data)


#: Patterns with a state that only a byte >= 0x80 leads to and that ASCII bytes then keep the
#: DFA in (a run after a non-ASCII letter or symbol), and one without that ("a" from the start).
ENTERED_PAST_ASCII = [r"\u00e9[a-z]{3,}|[a-z]|\s", r"(?i-s:\p{So}{1,3}?\P{Lo}{8,}m{0,})", r"\u00e9[^\n]+|\n"]


@pytest.mark.parametrize("pat_str", ENTERED_PAST_ASCII)
def test_shuffles_enter_states_that_only_non_ascii_reaches(pat_str):
    """Every state on a cycle of ASCII steps (a run that ASCII bytes can keep going) has a lane
    to enter the shuffle loop by after a byte >= 0x80 (_dfa.shuffle_table, row _LATER of
    ``shuffle_lane``), though no ASCII text from a start state reaches it; the pieces through
    such runs, broken by bytes >= 0x80 anywhere, are regex's."""
    arrays = stored_program(pat_str)
    width = arrays["dfa_trans"].shape[1]
    trans = [list(row) for row in arrays["dfa_trans"].tolist()]
    classes = set(bytes(arrays["dfa_class"]) if arrays["dfa_class"].itemsize == 1 else arrays["dfa_class"].tolist())
    row_later = bytes(arrays["shuffle_lane"])[: len(trans)]
    looping = [state for state in range(1, len(trans))
               if any(not trans[state][k] & 4 and (trans[state][k] & ~7) // width == state for k in classes)]
    assert looping and all(row_later[state] for state in looping)
    rnd = random.Random(3)
    parts = []
    for _ in range(300):
        parts.append(rnd.choice(["\u00e9", "\u2603", "", "", "m"]) + "".join(
            rnd.choice("abcxyz \n.,") for _ in range(rnd.randrange(0, 120))))
    data = "".join(parts).encode()
    for shuffle in SHUFFLES:
        check_interleaved(Program(pat_str, stored_program(pat_str), shuffle=shuffle), pat_str, data)


#: ASCII text with words, spaces, digits and punctuation in every 16 bytes.
DEAD_STEP_TEXT = b"if (x == 42) return foo_bar;\n\t// it's 7 o'clock  ok\n" * 5


@pytest.mark.parametrize("pat_str", [*SHUFFLE_WIDTHS, r"\w+(?=\s)|\s", r"[a-z]+(?= )|\d|  "])
def test_shuffles_find_the_first_dead_step_anywhere(pat_str):
    """The shuffle loop takes several steps before it looks for a dead one (a byte >= 0x80, or
    no thread left: a word the last two patterns fail on): vpermb a group (8, then 16), pshufb two
    pairs where the dead lane stays dead (one pair with three quarters, where it does not):
    the first must be found at every place of a group and of a block of 64, with dead steps
    after it in the group, and where the text ends inside a group."""
    programs = [Program(pat_str, stored_program(pat_str), shuffle=shuffle) for shuffle in shuffle_variants()]
    texts = [DEAD_STEP_TEXT[:at] + mark + DEAD_STEP_TEXT[at : at + 80]  # a byte >= 0x80 at every place
             for at in range(140) for mark in ("\u00e9".encode(), "\u4e2d\u00e9".encode())]
    texts += [DEAD_STEP_TEXT[cut:] for cut in range(64)]  # the failed words at every place of a block
    texts += [DEAD_STEP_TEXT[cut : cut + end] for cut in range(0, 64, 9) for end in range(1, 70)]  # ends early
    for data in texts:
        want = reference(pat_str, data)
        for program in programs:
            check_interleaved(program, pat_str, data, want=want)


def test_shuffles_refuse_too_many_states():
    """A DFA that ASCII text takes through more states than a vector has lanes keeps its own tables."""
    pat_str = r"(?:ab){40}|."
    program = Program(pat_str, stored_program(pat_str))
    assert program.has_dfa and "states" in program.shuffle_reason, program.shuffle_reason
    assert program.shuffle_variant == ""
    check_interleaved(program, pat_str, b"ab" * 100 + b"a" + b"ab" * 45)
    assert Program(pat_str, stored_program(pat_str), dfa=False).shuffle_reason == "not asked for"


#: Patterns whose attempt from each character of a run reads the run to its end and fails,
#: which a reading reads once, keeping its states, and checks the next attempts against
#: (``_dfa_record``, ``_dfa_guarded``); some attempts end at a match further back, meet the
#: failed one in a state it had, or never meet it.
REREAD = [
    r"\p{L}+\p{Pf}|\d",
    r"\p{L}{1,}+(?:\p{Pf}|\d)|.",
    r"\s*\n|\S+",
    r"\s*\r?\n|[^\s\p{L}]+?",
    r"(?:ab)+c|b|\s",
    r"\w+;|\w\w",
    r"x\w*y|\w{3}",
    r"\w{2,9}!|[a-c]",
    # where the failed attempt's states cover the attempts after it (_dfa._cover_table): all of
    # the run, part of it (b\w starts where \w+! cannot cover it), a lazy optional run, $
    r"(?:\p{L}+)??\p{Pf}\w|\d",
    r"\w+!|b\w|\s",
    r"[^\r\n]+$|\s|\d",
    r"\p{L}{2,}+\p{Pf}|\s\p{L}|\d",
]
#: Runs of every kind those patterns read: ASCII and longer characters, longer than the states
#: a reading keeps, and around the 64 pieces one call returns.
REREAD_WORDS = ["abcdefghij" * k for k in (1, 3, 12, 120)] + [
    "\u00e9\u4e2d\U0001f600x" * 9, "ab" * 40 + "c", "ab" * 3, "x" + "a" * 30 + "y", "xaay", "a!" * 70, "1" * 9]


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", REREAD)
def test_failed_attempts_are_read_once(pat_str, shuffle):
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.has_dfa
    for sep in (" ", "; ", "\n", "  \t \n", "\u00bb", "1"):
        data = sep.join(REREAD_WORDS + REREAD_WORDS[::-1]).encode()
        check_interleaved(program, pat_str, data)
        check_interleaved(program, pat_str, data[7:], at_start=False, want=reference(pat_str, data[7:]))
        for stop in (len(data) // 3, len(data) // 2 + 1, len(data) - 5):
            check_interleaved(program, pat_str, data, stop=stop)


#: Patterns whose failed attempts the guards meet (a run read to its end from every byte of it,
#: counted at first: ``\S{8,}``) or never meet (counted to the end: ``\w{2,9}!``), for
#: :func:`test_guards_after_short_failed_attempts`.
GUARDED = [r"\S{8,}\D*+\S{2}|\s", r".?\S{8,}(?:\D*+\S{2}){2}|\s", r"\w{2,9}!|[a-c]", r"\p{L}+\p{Pf}|\d"]


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", GUARDED)
def test_guards_after_short_failed_attempts(pat_str, shuffle):
    """Many short failed attempts that never meet a guard (the reading then keeps guards of
    longer ones only, ``_dfa_review_guards``), then long ones (up to 2 KB, longer than the
    guards a reading kept before) ended by a lone digit (``\\S{8,}\\D*+\\S{2}`` fails there),
    and short ones again. (The regex module takes cubic time on long words here.)"""
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.has_dfa
    short = " ".join(["ab", "cde", "fghij1 k", "lmnopq", "7 rs"] * 300)
    long = " ".join(["abcdefghi " * k + "1 x" for k in (1, 30, 120, 200)] + ["abcdefghi!" * 40 + " 2"])
    for data in ((short + " " + long + " " + short).encode(), (long + "\n" + short + long).encode()):
        want = reference(pat_str, data)
        check_interleaved(program, pat_str, data, want=want)
        check_interleaved(program, pat_str, data, stop=len(data) // 2)


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", [r"[^\u00c0-\u00ff]*\p{Cyrillic}{1,2}?\s", r"\p{L}+\p{Pf}|\d", r"\w+!|b\Z|\s"])
def test_failed_attempts_at_the_end(pat_str, shuffle):
    """An attempt that reads to the end of the text without a match: the attempts it covers
    fail too (``_dfa_retry`` at the end), where one from a later character may still match."""
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.has_dfa
    for tail in ("", "b", " b", "\u00e9ab", "\u0416 x", "ab\u00bb", "a1b", "\u0416\u0416 "):
        for head in ("", "x\u00e9y ", "\u0416 "):
            data = (head + "abc de fghij klm" * 20 + tail).encode()
            check_interleaved(program, pat_str, data)


def _reference_before(pat_str: str, data: bytes, stop: int) -> list[bytes]:
    """The pieces ``regex.finditer`` gives on ``data`` (decoded with surrogateescape) that start
    before byte ``stop``."""
    text = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text)
            if len(text[: m.start()].encode("utf-8", "surrogateescape")) < stop]


def check_stops(program, pat_str: str, data: bytes, stops) -> None:
    """:func:`check_interleaved` with the reading stopped at each of ``stops`` that falls between
    characters, against the pieces regex gives that start before it."""
    for stop in stops:
        if (data[stop] & 0xC0) != 0x80:
            check_interleaved(program, pat_str, data, stop=stop, want=_reference_before(pat_str, data, stop))


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", [r"[^\u00c0-\u00ff]*\p{Cyrillic}{1,2}?\s", r"\p{L}+\p{Pf}|\d", r"\w+!|b\d|\s"])
def test_failed_attempts_past_stop(pat_str, shuffle):
    """A reading that stops before the text's end (the first of two interleaved readings, a
    block of a counted text): an attempt that reads past ``stop`` without a match skips the
    attempts it covers, before ``stop`` and past it, where one from a later character may
    still match (``b1`` after ``xxab1``, which ``\\w+!`` reads and fails on)."""
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.has_dfa
    for tail in ("ab1 ", "ab1b2 x", "\u00e9ab1", "\u0416 x", "ab\u00bb", "a1b", "\u0416\u0416 ", "\u00e9 ab!"):
        for head in ("", "x\u00e9y ", "\u0416 "):
            # a run longer than the spans (8 to 61 bytes), then the tail, far from the end
            before = head + "abc de fghij klm" * 20 + "x" * 70
            data = (before + tail + "cd e!" * 30).encode()
            check_interleaved(program, pat_str, data, want=reference(pat_str, data))
            middle = len(before.encode())
            stops = [*range(middle - 3, middle + len(tail.encode()) + 3), len(data) // 2, len(data) - 1]
            check_stops(program, pat_str, data, stops)


def _cover_bit(arrays, text: str) -> bool:
    """Whether the cover table says that an attempt that failed after reading ``text[:-1]``
    fails the attempt from its last character too (``_dfa._cover_table``)."""
    import numpy as np

    trans, cover = np.asarray(arrays["dfa_trans"]), np.asarray(arrays["dfa_cover"])
    width, classes = trans.shape[1], np.asarray(arrays["dfa_class"])
    off = int(arrays["dfa_start"][0])
    for ch in text[:-1]:
        off = int(trans.flat[off + classes[ord(ch)]]) & ~7
    k = int(classes[ord(text[-1])])
    return bool(cover[off // width, k // 8] >> (k % 8) & 1)


def test_failed_attempts_cover_the_next():
    """The cover table marks where a failed attempt's threads hold all the threads of the
    attempt from the next character (a letter inside \\p{L}+ before \\p{Pf}), and nowhere an
    attempt from there could do more (a space, from which ` ?\\p{N}{3}` may match)."""
    arrays = stored_program(r"\p{L}+\p{Pf}|\d")
    assert len(arrays["dfa_cover"]), "no cover table"
    assert _cover_bit(arrays, "ab") and _cover_bit(arrays, "abc") and _cover_bit(arrays, "a ")
    assert not _cover_bit(arrays, "a1")  # \d matches there
    arrays = stored_program(r"\s*\r?\n| ?\p{N}{3}|[^\s\d]")
    assert not _cover_bit(arrays, "  ")
    arrays = stored_program(r"\w+!|b\w|\s")
    assert _cover_bit(arrays, "ac") and not _cover_bit(arrays, "ab")
    # nothing to gain: no table
    assert not len(stored_program(r"\d+|\s")["dfa_cover"])


@pytest.mark.parametrize("name", ["dfa_cover", "dfa_dominate"])
def test_dfa_bit_tables_of_another_shape_are_refused(name):
    """A cover or dominance table whose rows are not the DFA's states is refused, and a
    program without one (compiled before it was) still splits as the pattern does."""
    import numpy as np

    pat_str = r"\p{L}+\p{Pf}|\d"
    arrays = stored_program(pat_str)
    assert len(arrays[name]), f"no {name}"
    text = "déjà» vu 12 «x»"
    want = [m.group().encode() for m in regex.finditer(pat_str, text)]
    for bad in (np.asarray(arrays[name])[:-1], np.asarray(arrays[name])[:, :-1], np.zeros(4, np.uint8)):
        with pytest.raises(ValueError, match="not a DFA"):
            Program(pat_str, {**arrays, name: np.ascontiguousarray(bad)})
    assert Program(pat_str, {**arrays, name: np.zeros((0, 0), np.uint8)}).split(text.encode()) == want


def test_held_matches_table_is_checked():
    """A DFA that holds matches has a ``dfa_held`` table with the DFA's shape, reads no vector
    shuffles (and says why), and a table of another shape, or an end-of-text answer 3 (the
    held match) without one, is refused."""
    import numpy as np

    pat_str = r"\p{L}+(?!\s\d)|\S+|\s"  # (at the end of "ab ", "ab" is held, and stands)
    arrays = stored_program(pat_str)
    program = Program(pat_str, arrays)
    assert program.has_dfa and "holds matches" in program.shuffle_reason, program.shuffle_reason
    held = np.asarray(arrays["dfa_held"])
    assert held.shape == np.asarray(arrays["dfa_trans"]).shape and held.any()
    for bad in (held[:-1], held[:, :-1]):
        with pytest.raises(ValueError, match="not a DFA"):
            Program(pat_str, {**arrays, "dfa_held": np.ascontiguousarray(bad)})
    assert (np.asarray(arrays["dfa_eot"]) == 3).any()
    with pytest.raises(ValueError, match="not a DFA"):
        Program(pat_str, {k: v for k, v in arrays.items() if k != "dfa_held"})
    for text in ("ab 1 cd 2x éé 3 z", "ab "):
        assert program.split(text.encode()) == [m.group().encode() for m in regex.finditer(pat_str, text)]


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", REREAD[-4:])
def test_failed_attempts_every_code_point(pat_str, shuffle):
    """The attempts that failed attempts cover, on every code point between letters, spaces
    and final punctuation: the shuffle loop's bytes and the tables' characters."""
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    every = "".join(map(chr, range(0x110000))).encode("utf-8", "surrogatepass")
    seps = [b" abc", b"ab\xc2\xbb", b"1", b"\n", b"b"]
    check(program, pat_str, b"".join(every[i : i + 331] + seps[i % 5] for i in range(0, len(every), 331)))


@pytest.mark.parametrize("pat_str", REREAD[-4:])
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_failed_attempts_hypothesis(pat_str, data):
    check_drawn_text(pat_str, data, "abcb1 \n\u00bb\u00e9!")


def check_drawn_text(pat_str: str, data, alphabet: str) -> None:
    """The pieces of a text drawn from ``alphabet`` through every shuffle code and reading
    (:func:`check_interleaved`) are those of ``regex.finditer``."""
    programs = [Program(pat_str, stored_program(pat_str), shuffle=shuffle) for shuffle in SHUFFLES]
    text = data.draw(st.text(st.sampled_from(alphabet), max_size=300), label="text").encode()
    want = reference(pat_str, text)
    for program in programs:
        check_interleaved(program, pat_str, text, want=want)


#: Patterns whose attempts read on far past their last match (a long alternative ahead of, or
#: between, short ones) or fail far on, from each character, counting as they go: the reading
#: keeps the states of one such attempt past its last match (``_dfa_record``), and the next
#: attempts stop where they reach a state it had or one it dominates (``_dfa_meets``,
#: ``_dfa._dominance_table``), or are ruled out by it (``_dfa_ruled_out``).
LONG_TAILS = [
    r"\P{Po}{8,}@\P{Po}{8,}|\w+|[ \t]+|\s",
    r"\w++|\P{Po}{8,}(?i:@{1,})[^#]{8,20}?|[ \t]+|\s|.",
    r"(?=.)(?i:.{3,}?6{2}+L{0,1}?)",
    r"[^\r\n]+$|\s|\d{1,2}|\s?\p{P}+",
    r"\S{3,}!|\w|\s",
    r".{8}x|\w{1,3}|\s",
]
#: Text for them: words and spaces up to a full stop, an ``@``, a ``!``, ``66``, an ``x`` at
#: many distances, ASCII and longer characters.
LONG_TAIL_TEXT = [
    "ab cd efg h", "The quick brown fox jumps over the lazy dog", "a@b", "x @ y", "66L", "ab66", "word!",
    "\u00e9t\u00e9 \u4e2d\u6587 \U0001f600", "1 23 456", "\t", "abcdefgx", "a" * 70, "b c" * 40,
]


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", LONG_TAILS)
def test_attempts_past_the_last_match(pat_str, shuffle):
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.has_dfa
    rng = random.Random(7)
    for end in (".", ",", "\n", ""):
        for _ in range(4):
            words = [rng.choice(LONG_TAIL_TEXT) for _ in range(rng.randrange(1, 60))]
            data = (" ".join(words) + end + " " + " ".join(words[::-1])).encode()
            check_interleaved(program, pat_str, data)
            check_interleaved(program, pat_str, data[3:], at_start=False, want=reference(pat_str, data[3:]))
            check_stops(program, pat_str, data, [len(data) // 3, len(data) // 2 + 1, len(data) - 2])


@pytest.mark.parametrize("pat_str", LONG_TAILS)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_attempts_past_the_last_match_hypothesis(pat_str, data):
    check_drawn_text(pat_str, data, "ab 6L@!x.\n\t\u00e9")


def _dominated_pairs(arrays) -> list[tuple[int, int]]:
    """The pairs (X, Y), X != Y, that ``dfa_dominate`` marks."""
    import numpy as np

    dominate = np.asarray(arrays["dfa_dominate"])
    return [(x, y) for x in range(dominate.shape[0]) for y in range(dominate.shape[0])
            if x != y and dominate[x, y // 8] >> (y % 8) & 1]


def _dominates(arrays, x: int, y: int) -> bool:
    """Whether, on every sequence of classes that state ``y`` reads without a match until it
    has no thread left (or the text ends), state ``x`` has no match either and no thread left
    by then (or no match at the end): the pairs
    reachable from (x, y) on ``y``'s transitions without a match, read forward from the fast
    table (an implementation apart from ``_dfa._dominance_table``'s backward search)."""
    import numpy as np

    trans, eot = np.asarray(arrays["dfa_trans"]), np.asarray(arrays["dfa_eot"])
    width = trans.shape[1]
    seen, todo = {(x, y)}, [(x, y)]
    while todo:
        a, b = todo.pop()
        if eot[a] and not eot[b]:  # the text ends: x matches there, y does not
            return False
        for k in range(width):
            ea, eb = int(trans[a, k]), int(trans[b, k])
            if eb & 3:  # y records a match: y's kept attempts never read it
                continue
            if ea & 3:  # x records one where y does not
                return False
            if eb & 4:  # y has no thread left: x must have none
                if not ea & 4:
                    return False
                continue
            if ea & 4:
                continue
            pair = (ea // width, eb // width)
            if pair not in seen:
                seen.add(pair)
                todo.append(pair)
    return True


@pytest.mark.parametrize("pat_str", [*LONG_TAILS, *REREAD, *GUARDED, r"\p{L}+|\s+(?!\S)|\s+", r"\w+!|b\Z|\s"])
def test_dominance_table(pat_str):
    """Every pair the dominance table marks dominates, read forward over the classes."""
    arrays = stored_program(pat_str)
    for x, y in _dominated_pairs(arrays) if len(arrays["dfa_dominate"]) else ():
        assert _dominates(arrays, x, y), (pat_str, x, y)


def test_dominance_table_finds_counted_runs():
    """A run counted to 8 (``\\P{Po}{8,}``) from one character in is dominated by the same run
    counted past 8, and a state that can still match is never dominated by one that cannot."""
    arrays = stored_program(LONG_TAILS[0])
    pairs = _dominated_pairs(arrays)
    assert len(pairs) > 5
    assert all(_dominates(arrays, x, y) for x, y in pairs)
    import numpy as np

    trans, classes = np.asarray(arrays["dfa_trans"]), np.asarray(arrays["dfa_class"])
    width = trans.shape[1]

    def state(text: str) -> int:
        off = int(arrays["dfa_start"][0])
        for ch in text:
            off = int(trans.flat[off + classes[ord(ch)]]) & ~7
        return off // width

    one, many = state(" b"), state(" bcdefghijk")  # ([ \t]+ has matched; \P{Po} counts on)
    assert (one, many) in pairs and (many, one) not in pairs


#: Patterns whose backtracking program reads a run to its end from each of its characters and
#: gives it back, looking for where the next instruction can start (``_run_end``,
#: ``_give_back``: what one attempt learnt of the run serves the next ones).
RUN_MEMO = [
    r"(?>\P{Sm}{3,}\u2028{2}\w{1,2}|\p{L}{0,0}+)D{8,}\D{2,}?",
    r"(?>\S{2,}!\w|x)y?|\s",
    r"(?=\w)(?>[^\s!]{2,}!{2}|a)|\d",
    r"(?>\w{1,}+|\W{2,}\n{2})+?z|\s",
]
#: Text for them: long runs with the characters they look for at many places, spaces,
#: characters of 2-4 bytes and bytes that are not UTF-8.
RUN_MEMO_TEXT = ["abc", "a" * 40, "DDDDDDDDxx", "de!", "!!", "z", "1", "\u2028\u2028w", "\u00e9t\u00e9", "\u4e2d" * 9,
                 "\U0001f600", "+", "\n\n", "x", "y"]


def _run_memo_texts(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(12):
        words = [rng.choice(RUN_MEMO_TEXT) for _ in range(rng.randrange(1, 80))]
        data = rng.choice(["", " "]).join(words).encode()
        if rng.random() < 0.3:
            i = rng.randrange(len(data) + 1)
            data = data[:i] + rng.choice([b"\xff", b"\xc3", b"\xe2\x80"]) + data[i:]
        out.append(data)
    return out


@pytest.mark.parametrize("pat_str", RUN_MEMO)
def test_runs_read_once_by_the_program(pat_str):
    program = Program(pat_str, stored_program(pat_str), dfa=False)
    for data in _run_memo_texts(3):
        text = data.decode("utf-8", "surrogateescape")
        want = [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text)]
        assert program.split(data) == want, data
        assert program.n_pieces(data) == len(want)


@pytest.mark.parametrize("by_reader", [False, True])
@pytest.mark.parametrize("pat_str", RUN_MEMO)
def test_runs_of_one_text_do_not_serve_the_next(pat_str, by_reader):
    """Texts of one length split in turn in one buffer with one stack: each gives its own
    pieces, whatever the matcher learnt of the runs of the one before."""
    program = Program(pat_str, stored_program(pat_str), dfa=False)
    # a run read from each of its characters, then one that ends sooner, with a ``!`` further
    # on than the attempts that learnt the first one started
    texts = [b"a" * 40 + b" ", b" " * 28 + b"aaaa!ab" + b" " * 6, b"D" * 40 + b" ", b" " * 20 + b"D" * 12 + b"+" * 9]
    for data in _run_memo_texts(5):
        texts += [data, data[::-1].decode("utf-8", "replace").encode()[: len(data)].ljust(len(data), b"a"), data]
    got = _py_split_in_one_buffer(program, texts, by_reader)
    for data, pieces in zip(texts, got):
        text = data.decode("utf-8", "surrogateescape")
        assert pieces == [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text)], data


@pytest.mark.parametrize("pat_str", RUN_MEMO)
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_runs_read_once_hypothesis(pat_str, data):
    program = Program(pat_str, stored_program(pat_str), dfa=False)
    text = data.draw(st.text(st.sampled_from("aD!xyz \n\u2028\u00e9+"), max_size=300), label="text")
    want = [m.group().encode() for m in regex.finditer(pat_str, text)]
    assert program.split(text.encode()) == want


#: Patterns whose attempts need a byte of a small set some characters on before a match can
#: end (the DFA's probes, ``_dfa_probe.h``): ``+`` three on from a word character, ``x`` eight
#: on (not from ``e``, which matches alone), a digit three on, a run read to its end, two of
#: ``!-/`` after a counted run.
PROBED = [r"\w.{2}\+{2}|\s", r".{8}x|e", r"[a-z]{3}\d|\s", r"\p{L}{2,}+\p{Pf}|\s|\d", r"[^*-4]{8}+\d{0,3}[!-/]{2}+|\s"]
#: Texts around the probed byte: at the distance, a byte short or past it, after characters of
#: two bytes or more (the byte at the distance is then another character's), at the text's end.
PROBE_WORDS = ["ab++", "abc++", "a\u00e9b++", "\u00e9ab++", "ab\u00e9++", "a+++", "abcdefghx", "abcdefgx", "e",
               "eeeeeeeex", "a\u00e9cdefghx", "\u4e2dbcdefghx", "abcdefg\u00e9x", "abc1", "ab1", "a\u00e9c1",
               "abcd1", "abcdefghij" * 5 + "\u00bb", "abcdefgh!!", "abcdefgh12!/", "ab" * 40, "1" * 9]


def test_probes_come_from_the_dfa():
    """Each probed pattern has probes where its attempts need a byte further on, and none
    where a match can end first (``e`` in ``.{8}x|e``) or before two characters on."""
    probes = Program(PROBED[0], stored_program(PROBED[0]))._py_probes()
    assert (3, b"+") in probes[ord("a")] and ord(" ") not in probes
    probes = Program(PROBED[1], stored_program(PROBED[1]))._py_probes()
    assert (8, b"x") in probes[ord("a")] and ord("e") not in probes
    probes = Program(PROBED[2], stored_program(PROBED[2]))._py_probes()
    assert (3, b"0123456789") in probes[ord("q")] and ord("1") not in probes
    for pat_str in PROBED:
        assert Program(pat_str, stored_program(pat_str))._py_probes(), pat_str
    # a pattern whose attempts fail on the byte after their first has none (the loops take those)
    assert Program(r"\p{L}\Z", stored_program(r"\p{L}\Z"))._py_probes() is None


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", PROBED)
def test_probes_skip_failed_attempts_only(pat_str, shuffle):
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program.has_dfa and program._py_probes()
    for sep in (" ", "", "\n", "\u00bb", "+"):
        for words in (PROBE_WORDS, PROBE_WORDS[::-1]):
            data = sep.join(words).encode()
            check_interleaved(program, pat_str, data)
            check_interleaved(program, pat_str, data[5:], at_start=False, want=reference(pat_str, data[5:]))
            check_stops(program, pat_str, data, [len(data) // 3, len(data) // 2 + 1, len(data) - 3])
        for word in PROBE_WORDS:  # each at the text's end
            data = ("zz " * 30 + sep + word).encode()
            check_interleaved(program, pat_str, data)


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", PROBED)
def test_probes_every_code_point(pat_str, shuffle):
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    every = "".join(map(chr, range(0x110000))).encode("utf-8", "surrogatepass")
    seps = [b" ab++", b"abcdefghx", b"a\xc3\xa9c1", b"\n", b"e!!"]
    check(program, pat_str, b"".join(every[i : i + 331] + seps[i % 5] for i in range(0, len(every), 331)))


@pytest.mark.parametrize("shuffle", SHUFFLES)
def test_probes_left_where_they_do_not_pay(shuffle):
    r"""Where the probes rule out no attempt after the short failed ones that the shuffle loop
    leaves to them (``ab `` in ``[a-z]{3}\d|\s`` fails on the space, and the ``b`` after
    ``a`` on the byte after it: no probe reads), a reading leaves them only longer ones
    (_dfa_review_probes); where they rule out every attempt (``abcdefghij``), all of them.
    The pieces are the same either way, the probed words after the switch included."""
    pat_str = PROBED[2]
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    assert program._py_probe_reread(b"ab " * 300) > 2
    assert program._py_probe_reread(b"abcdefghij" * 300) == 2
    for sep in (" ", "", "\u00bb"):
        check_interleaved(program, pat_str, ("ab " * 300 + sep.join(PROBE_WORDS) + "abcdefghij" * 30).encode())


@pytest.mark.parametrize("pat_str", PROBED)
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_probes_hypothesis(pat_str, data):
    check_drawn_text(pat_str, data, "abex1+! \n\u00e9\u00bb\u4e2d")


#: Patterns whose DFA holds matches (decided after the character that follows them,
#: ``dfa_held``) and whose attempts have probes: ``y`` four on from ``x`` and the ``a`` that
#: the held match needs after it; ``+`` three on from a word character beside a held run of
#: letters; ``x`` eight on.
HELD_PROBED = [r"x.{3}y(?=ab)|\s", r"\w.{2}\+{2}|[a-z]+(?=\s\d)|\s", r".{8}x(?=ab)|e"]
#: Words around a held match and the probed bytes: the lookahead's bytes in the probe's
#: window, one short, one past it, after a character of two bytes, and invalid UTF-8.
HELD_WORDS = [b"x123yab", b"x123ya", b"x123yb", b"x12yab", b"x1234yab", b"x\xc3\xa9\xc3\xa9yab", b"ab1++", b"abc 1",
              b"abc 1x", b"ab\xff++", b"abcdefghxab", b"abcdefghxa", b"eeeeeeeexab", b"\xed\xa0\x80x123yab"]


def test_held_matches_have_probes():
    """The probes stop where a transition keeps or commits a held match: ``a`` five on from
    ``x`` in ``x.{3}y(?=ab)`` (where the held match is kept), not the ``b`` after it."""
    for pat_str in HELD_PROBED:
        arrays = stored_program(pat_str)
        assert "dfa_held" in arrays, pat_str
        assert Program(pat_str, arrays)._py_probes(), pat_str
    assert Program(HELD_PROBED[0], stored_program(HELD_PROBED[0]))._py_probes()[ord("x")] == ((4, b"y"), (5, b"a"))


@pytest.mark.parametrize("pat_str", HELD_PROBED)
def test_probes_keep_held_matches(pat_str):
    program = Program(pat_str, stored_program(pat_str))
    for sep in (b" ", b"", b"\n", b"\xc2\xbb", b"\xff"):
        for words in (HELD_WORDS, HELD_WORDS[::-1]):
            data = sep.join(words)
            check_interleaved(program, pat_str, data)
            check_stops(program, pat_str, data, [len(data) // 3, len(data) // 2 + 1, len(data) - 3])
        for word in HELD_WORDS:  # each at the text's end, and alone
            check_interleaved(program, pat_str, b"zz " * 30 + sep + word)
            check_interleaved(program, pat_str, word)
    check_interleaved(program, pat_str, b"")


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("pat_str", PROBED + HELD_PROBED)
def test_block_probe_places(pat_str, shuffle):
    """The block probe (_dfa_probe.h, bpetrain_probe_blocks) tests 32 places at a time: a
    match, a byte >= 0x80 or the text's end at each place of a run of ruled-out attempts,
    inside a block, at its edges and past its last probed byte."""
    program = Program(pat_str, stored_program(pat_str), shuffle=shuffle)
    if "pshufb" not in shuffle_variants():
        pytest.skip("no block probe: this CPU has no AVX2 (or the build no x86-64 GNU builtins)")
    # (where the CPU has AVX2, a build that left the block probe out of _matcher.c fails here)
    assert program._py_probe_blocks(), f"{pat_str!r}: no block probe on a CPU with AVX2"
    for filler in (b"a", b"x"):
        for word in (b"ab++", b"abcdefghx", b"abc1", b"abcdefgh!!", b"x123yab", b"abc 1", b"\xc3\xa9", b"\xff", b" "):
            for i in range(0, 75):
                check_interleaved(program, pat_str, filler * i + word + filler * (75 - i))
                check_interleaved(program, pat_str, filler * i + word)
            data = (filler * 40 + word) * 6
            check_stops(program, pat_str, data, range(len(data) - 70, len(data)))


@pytest.mark.parametrize("pat_str", HELD_PROBED)
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_held_probes_hypothesis(pat_str, data):
    check_drawn_text(pat_str, data, "axyb123+e \n\u00e9\u00bb")


#: Patterns whose attempts fail from most places, soon or a long way on, which read the marks of
#: where a match can start (``_dfa._reverse_table``, ``_rev_fill``): lookaheads and counted runs,
#: a held match, a run that only a far digit ends (marks a window's end leaves loose), and
#: patterns whose attempts succeed from most places.
REVERSED = [
    r".(?=\Ws)\p{L}{2}|\d{3}",
    r"[a-z]{8,20}\d|\s\d",
    r"\S{3}\w{8,}\P{C}|\u00e9",
    r"(?=.{8,20}x)\w|_(?=.{2,})",
    r"[^\d]*\"{0,3}?[^\d(]{3}\d",
    r"\w+;|\s\d",
    r"x\w*y|\d",
    r"\p{L}+\p{Pf}|\d",
    r"\w+|\s",
]
#: Text for them: words, digits, long runs, every kind of character, around the windows' size.
REVERSED_TEXT = [
    "ab cd;", "The quick brown fox 123 jumps", "abcdefghij1 x", "a  s", "été 中文 😀 »",
    "x" + "a" * 40 + "y", "longwordwithoutdigits " * 3, "_ab", "abcdefghijx", "\"\"q 7", "\n\n",
]


def _attempt_matches(arrays, classes: list[int], i: int, at_end: bool) -> bool:
    """Whether the DFA's attempt from the class at ``i`` of ``classes`` records a match (the
    text ends after the classes where ``at_end``): one transition a class, from the start
    state away from the string's start (a pure-Python walk of ``dfa_trans``)."""
    trans, eot, held = arrays["dfa_trans"], arrays["dfa_eot"], arrays.get("dfa_held")
    width = trans.shape[1]
    off = int(arrays["dfa_start"][0])
    for k in classes[i:]:
        e = int(trans[off // width, k])
        if e & 3 or (held is not None and len(held) and held[off // width, k] & 2):  # CUT, MATCH; COMMIT
            return True
        if e & 4:  # no thread left
            return False
        off = e & ~7
    return at_end and eot[off // width] != 0


def _marks(arrays, classes: list[int], at_end: bool) -> list[bool]:
    """The reverse automaton's marks over ``classes``, read backwards from their end."""
    rev = arrays["dfa_rev"]
    width = rev.shape[1]
    e = int(arrays["dfa_rev_start"][1 if at_end else 0])
    out = []
    for k in reversed(classes):
        e = int(rev[(e & ~1) // width, k])
        out.append(bool(e & 1))
    return out[::-1]


@pytest.mark.parametrize("pat_str", REVERSED)
def test_reverse_marks_are_where_attempts_match(pat_str):
    """At the end of the text the marks are exactly the places whose attempt records a match;
    read from a window's end that is not the text's end, they hold those places (and may hold
    more)."""
    arrays = {k: np.asarray(v) for k, v in stored_program(pat_str).items()}
    assert len(arrays["dfa_rev"]), f"{pat_str!r} has no reverse automaton"
    rng = random.Random(5)
    n_classes = int(max(arrays["dfa_class"].max(), 1)) + 1
    for _ in range(300):
        classes = [rng.randrange(n_classes) for _ in range(rng.randrange(0, 40))]
        want = [_attempt_matches(arrays, classes, i, True) for i in range(len(classes))]
        assert _marks(arrays, classes, True) == want, (pat_str, classes)
        loose = _marks(arrays, classes, False)
        assert all(m or not w for m, w in zip(loose, [_attempt_matches(arrays, classes, i, False)
                                                      for i in range(len(classes))])), (pat_str, classes)


@pytest.mark.parametrize("pat_str", REVERSED)
def test_reverse_pairs_are_two_steps(pat_str):
    """The reverse automaton on two ASCII bytes at once (``dfa_rev_pairs``) goes where two of
    its steps go, with both steps' marks: a's where a match starts before the byte read first
    (bit 1), b's before the byte read second (bit 0)."""
    arrays = {k: np.asarray(v) for k, v in stored_program(pat_str).items()}
    rev, pairs, codes = arrays["dfa_rev"], arrays["dfa_rev_pairs"], arrays["dfa_codes"]
    ascii_class = arrays["dfa_class"]
    if not len(pairs):  # only where it would be too large
        size = max(8, 1 << len(set(ascii_class.tolist())).bit_length())
        assert rev.shape[0] * size * size * 4 > MAX_PAIR_BYTES, pat_str
        return
    width, size = rev.shape[1], round(pairs.shape[1] ** 0.5)
    rev, pairs, codes = rev.astype(np.int64), pairs.astype(np.int64), codes[:128].astype(np.int64)
    first = rev[:, ascii_class]  # [state, a]
    second = rev[(first // width)[:, :, None], ascii_class[None, None, :]]  # [state, a, b]
    got = pairs[np.arange(len(rev))[:, None, None], codes[None, :, None] * size + codes[None, None, :]]
    want = (second // width) * size * size | ((first & 1) << 1)[:, :, None] | second & 1
    wrong = np.argwhere(got != want)
    assert not len(wrong), (pat_str, "state, a, b:", wrong[0].tolist(), got[tuple(wrong[0])], want[tuple(wrong[0])])


def test_reverse_automaton_is_left_out_where_it_marks_every_place():
    """A pattern whose attempt matches from every character has no reverse automaton: no
    place to skip."""
    assert not len(stored_program(r"(?s:.)")["dfa_rev"])
    assert len(stored_program(r"\d")["dfa_rev"])


@pytest.mark.parametrize("shuffle", [False, *shuffle_variants()[:1]])
@pytest.mark.parametrize("reverse", [True, None])
@pytest.mark.parametrize("pat_str", REVERSED)
def test_reverse_marks_give_the_pieces(pat_str, reverse, shuffle):
    """With the marks from a text's first failed attempt (True) or once failed attempts cost
    enough (None), the pieces are ``regex.finditer``'s: on words, adversarial text, texts around
    a window's end (a call's 1 KB, a text's 8 KB), longer texts whose windows follow one another,
    readings that stop anywhere, and a text not at the string's start."""
    program = Program(pat_str, stored_program(pat_str), reverse=reverse, shuffle=shuffle)
    assert program.has_dfa
    rng = random.Random(3)
    for n_words in (3, 100, 300):
        words = [rng.choice(REVERSED_TEXT) for _ in range(n_words)]
        data = " ".join(words).encode()
        check_interleaved(program, pat_str, data)
        check_interleaved(program, pat_str, data[5:], at_start=False, want=reference(pat_str, data[5:]))
        check_stops(program, pat_str, data, [len(data) // 3, len(data) // 2 + 1, len(data) - 2])
    for data in ADVERSARIAL:
        check_interleaved(program, pat_str, data[:3000])  # (the regex module is quadratic on some)
    for size in (1023, 1024, 1025, 1088, 1093, 2200, 9300, 10_300):  # around a window's end
        check_interleaved(program, pat_str, (b"ab cd " * 2000)[:size - 1] + b"1")
    # longer than a window, where windows of a text follow one another: random bytes, every
    # kind of character, and words
    for data in (ADVERSARIAL[13], ADVERSARIAL[16], " ".join(rng.choice(REVERSED_TEXT) for _ in range(2500)).encode()):
        check_interleaved(program, pat_str, data)


@pytest.mark.parametrize("pat_str", REVERSED)
def test_reverse_marks_taken_up_and_put_aside_give_the_pieces(pat_str):
    """With Program(reverse=None) a whole text's reading is timed stretch by stretch and the
    marks are taken up or put aside by which way took less time (``_rev_steer``): timed by a
    clock that goes on by chance (``_steer_by_chance``), so that they are at places that
    depend on the seed, not on the machine, the pieces are still ``regex.finditer``'s, on
    texts of many stretches (words, mostly invalid UTF-8, every kind of character)."""
    program = Program(pat_str, stored_program(pat_str), reverse=None)
    rng = random.Random(7)
    texts = [" ".join(rng.choice(REVERSED_TEXT) for _ in range(8000)).encode(),
             ADVERSARIAL[13] * 3, ADVERSARIAL[16] * 3]
    try:
        for seed in (1, 2, 3):
            _steer_by_chance(seed)
            for data in texts:
                check_interleaved(program, pat_str, data)
    finally:
        _steer_by_chance(0)


def test_reverse_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="reverse must be None, True or False"):
        Program(r"\d", stored_program(r"\d"), reverse=1)


def test_reverse_automaton_of_another_shape_is_refused():
    arrays = dict(stored_program(r"\d+x|\s"))
    rev = np.asarray(arrays["dfa_rev"])
    arrays["dfa_rev"] = np.ascontiguousarray(rev[:, : rev.shape[1] // 2])
    with pytest.raises(ValueError, match="not a DFA"):
        Program(r"\d+x|\s", arrays)
    arrays["dfa_rev"] = np.full_like(rev, rev.size * 2)
    with pytest.raises(ValueError, match="not a DFA"):
        Program(r"\d+x|\s", arrays)
    arrays["dfa_rev"] = rev
    pairs = np.asarray(arrays["dfa_rev_pairs"])
    for bad in (np.ascontiguousarray(pairs[:, : pairs.shape[1] // 2]), np.full_like(pairs, pairs.size * 4)):
        arrays["dfa_rev_pairs"] = bad
        with pytest.raises(ValueError, match="not a DFA"):
            Program(r"\d+x|\s", arrays)


def test_interleaved_readings_reject_a_negative_span():
    program = Program(r"\w+|\W", stored_program(r"\w+|\W"))
    with pytest.raises(ValueError, match="span must be >= 0"):
        program.split(b"abc", span=-1)


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_patterns(data):
    """250 generated patterns, the same ones each run (the suite's largest single test: about
    30 s on a quiet Zen 3); ``-m slow`` draws 5,000 more (test_generated_patterns_many)."""
    _check_generated(data)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(10))
def test_generated_patterns_many(shard):
    """5000 generated patterns in ten shards of 500, each drawn from a seed of its own, so
    that ``pytest -n`` workers share them (compiling is most of the time: about 0.3 s a
    pattern)."""

    @hypothesis_seed(shard)
    @settings(max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def run(data):
        _check_generated(data)

    run()


#: Cases where the regex module does something an engine author might not expect; each
#: is checked against the regex module, not against a written-down answer.
EDGE_CASES = [
    # a factored-out caseless (?i:') leaves [^ss] case-sensitive: compiled
    (r"(?i:'s|'t)|[^ss]|\s", "S 's 'T x"),
    # the regex module drops {1}: possessive or not, (?:...){1}+ is not atomic
    (r"(?:\p{L}*){1}+\p{L}|(?:a|ab){1,1}+b|\s", "A ab aaa"),
    # two first sets with the same members ('.' and (?i:.)) that start one alternative
    (r"(?:^|.)(?i:.)|x", "\tab\tx"),
    (r"(?i:i)+", "iI\u0130\u0131"),  # matches U+0130 but not U+0131
    (r"(?i:\u0130)+", "iI\u0130\u0131"),  # matches i but not I
    (r"(?i:\u0131)+", "iI\u0130\u0131"),  # matches I but not i
    (r"(?i:s)+|(?i:k)+", "sS\u017f kK\u212a"),
    (r"(?i:\u00df)|(?i:\ufb00)|(?i:\u0130)|\S", "ss SS \u00df\u1e9e \u017fs ff \ufb00 i\u0307"),  # no full case folding
    (r"(?i:[a-z])+", "az\u017f\u212a\u0130\u0131"),
    (r"(?i:[^k])+", "abk\u212aKcd"),  # a negated class excludes every case variant
    (r"(?i:\p{Greek})+|.", "\u00b5\u03bc\u2126\u03c9K\u212a"),  # but scripts are not case-closed
    (r"(?i:\u03c3)+|(?i:\u00b5)+|(?i:\u03b8)+", "\u03c3\u03c2\u03a3 \u00b5\u03bc\u039c \u03b8\u03d1\u03f4"),
    (r"\s+", " \t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u180e\u200b\u2028\u3000\ufeff"),  # \x1c-\x1f are not \s
    (r".+", "a\rb\nc\x85d\u2028e"),  # . stops at \n only
    (r"(?s:.)+", "a\rb\nc"),
    (r"\d+|\w+|\W", "0\u0663\u00b2\u2167\u0301_\u200d\u203f\U00010d40"),  # \d is Nd of regex's Unicode
    (r"\p{Han}+|\p{Hiragana}+|\p{Common}+", "\u4e2d\u3001\u3005\u30fc\u3042"),  # Script, not Script_Extensions
    (r"\p{Cn}+|\p{Cs}+|\p{Co}+|.", "\u0378\ue000\udcff\U000e0080\U00010d40"),
    (r"[\udc80-\udcff]+|\p{L}+", "ab\udcff\udc80cd"),  # an invalid byte is a lone surrogate
    (r"x$|y\Z", "x\n"),  # $ also matches before a final \n, \Z does not
    (r"x$|y\Z", "y\n"),
    (r"x$|x\Z", "x\r\n"),  # but not before a final \r\n
    (r"\s+$|\S+|\s+", "a \n\n"),
    (r"^.|\A.|.", "abc"),  # ^ and \A only at the start of the text
    (r"\s++$|\s", "a  \n"),
    (r"(?:ab)+?|a", "ababa"),
    (r"a++a|a+", "aaaa"),  # possessive: never gives back
    (r"(?>a+)a|a", "aaaa"),
    (r"(?:a|ab)(?:c|bcd)", "abcd"),  # leftmost, first alternative, not longest
    (r"\s+(?!\S)|\s+", "a   b  \n c \n"),
    (r"(?:(?=\p{L})[^a-z])+|[a-z]+", "ABCdefGH\u00c9\u00e9"),
]


@pytest.mark.parametrize(("pat_str", "text"), EDGE_CASES)
def test_edge_cases(pat_str, text):
    sp = SplitPattern(pat_str)
    check_reports_fallback_consistently(sp)
    data = text.encode("utf-8", "surrogateescape")
    check(sp, pat_str, data)
    check(sp, pat_str, data * 3)
    assert sp.program is not None, f"{pat_str!r} falls back: {sp.fallback_reason}"


# --- fallback, empty matches, invalid patterns -------------------------------------------

#: Patterns outside the engine's grammar: the regex module splits, and says why.
FALLBACK = [
    r"(?<=\s)\p{L}+|\S+|\s+",  # lookbehind
    r"(?<!\p{L})\p{N}{1,3}|\p{L}+|\s",  # negative lookbehind
    r"\b\w+\b|\s+|\W",  # word boundaries
    r"\B.|\s",
    r"(\p{L})\1*|\s+|\S",  # backreference
    r"(?P<q>['\"]).*?(?P=q)|\S",  # named backreference
    r"(?m)^\s+$|\S+|\s",  # multiline
    r"(?x) \p{L}+ | \s+ | \S",  # verbose
    r"\X",  # grapheme clusters
    # a case-insensitive property: the regex module matches "a" with (?i:\p{Lt})+ alone but
    # not beside other alternatives, so the engine leaves such sets to it
    r"(?i:\p{Lt})+|(?i:\P{Ll})+|\s",
    r"(?i:\p{Lu})+|\s",
    r"(?i:[^\p{Lu}])+|.",
    # the regex module tests the first character of [^ss] case-insensitively beside (?i:d),
    # after a case-insensitive anchor group, and beside a caseless (?i:')
    r"^[^ss]|(?i:d\r)",
    r"(?i:^|\u4e2d)[^ss]",
    r"(?i:')|[^ss]",
]

#: Why a pattern of the grammar may still fall back (documented in bpetrain.splitting._compiler).
ALLOWED_FALLBACK = ("the case-insensitive property", "the case-sensitive")
#: Why a compiled pattern may have no DFA (documented in bpetrain.splitting._dfa).
ALLOWED_NO_DFA = ("a match held while one held at an earlier character is undecided",
                  "an atomic group left while a lookahead or an atomic group inside it is undecided",
                  "the automaton would need more than", "more than ")

#: Patterns the backtracking program runs but the DFA does not express: they say why and
#: split as the regex module does.
NO_DFA = [
    r"ab(?=cd)|a(?=bc)|.",  # "ab" held before "c" while "a" held before "b" is undecided: two registers
    r"(?>(?=ab)a|a)c|.",  # the group is left before the lookahead inside it is decided
    r"[ab]*a[ab]{13}c|.",  # too many states (the DFA remembers the last 14 characters)
    # states of too many NFA threads (the atomic group's instances, one per place it was
    # entered at): the slow test drew a longer pattern like it that took more than ten
    # minutes to build before MAX_THREADS
    r"[^a]+(?>[^b\d]+|.|.{3}\p{Me}{2,5}+\P{Inherited}*){1,2}",
]


@pytest.mark.parametrize("pat_str", NO_DFA)
def test_patterns_without_dfa(pat_str):
    sp = split_pattern(pat_str)
    assert sp.program is not None and not sp.program.has_dfa and sp.dfa_reason.startswith(ALLOWED_NO_DFA)
    for data in (b"ab aab abc ababc x\ny 1 2 3", b"a" * 950 + b"c" + b"ab" * 500 + b"c", MULTILINGUAL.encode()):
        check(sp, pat_str, data)


def test_states_of_too_many_threads_in_all_are_refused(monkeypatch):
    """Beside a bound on one state's NFA threads (NO_DFA), one on all the states' together:
    each state costs about the square of its threads to build."""
    from bpetrain.splitting import _dfa
    from bpetrain.splitting._compiler import compile_program

    pat_str = PATTERNS["o200k"]
    assert not bytes(compile_program(pat_str)["dfa_reason"])
    monkeypatch.setattr(_dfa, "MAX_THREADS_IN_ALL", 100)
    reason = bytes(compile_program(pat_str)["dfa_reason"]).decode()
    assert reason == "the automaton would need more than 100 NFA threads in all its states", reason


#: Patterns the DFA expresses by reading what a construct it refuses elsewhere does here: a
#: lookahead whose match the next character decides (a run of at least one of a set, a tail
#: that matches everywhere, an alternative covered by the exact ones), ``(?=^)``, an optional
#: part that can match nothing, a possessive run inside a possessive or atomic group, and
#: parts that can never match (an empty set, ``^`` after a character, ``$`` or ``\Z``
#: before a character that is not a final newline), which are dropped.
DFA_BY_READING = [
    r".(?=\W{1,}+)|\p{L}+",
    r"\w(?!\s+\d*)|\s|\w",
    r"a(?=b|bc|b{2}\w)|\w|\s",
    r"\w(?=\s{1,3}?(?:x|y)*+)|.",
    r"x(?=\Z)|.",
    r"(?=^)\w+|.",
    r"(?>%{0,30}+)??\p{P}|\p{L}+?|\s",
    r"(?:\s*+\S{2}+){2}+|.",
    r"(?>a++b)|\w|\s",
    r"[^\s\S]+x|\w+",
    r"x$y|\S+|\s",
    r"x\Zy|\S+|\s",
    r"\d+\A(?:a?)+|\s|\S+",
    r"\W(?!^^)|\w+",
    r"\w+(?=^x)|\w|\s",
    # a lookahead whose first character the part after it can never read, (?!X) where X
    # matches everywhere, and X{0} (possessive or not) of what the DFA refuses: never match
    r"(?=D{8,})\s{2,}?(?i:\w{8,})?|\w+|\s",
    r"(?=(?-i:T{0,1}){2}d+)[\p{Z}\u0370-\u03ff]{2}|\S+|\s",
    r"x(?!(?:\s*+|y){2})y|\w+|\s",
    r"a(?>b|bc){0}+c|\w+|\s",
]


#: Patterns whose atomic groups (possessive loops of groups) and lookaheads at more than one
#: character run as tagged threads (bpetrain.splitting._dfa, _Builder.step), and ``$`` before
#: more of the pattern, as the end or (?=\n\Z); the DFA refused each before it did.
DFA_BY_TAGGED_THREADS = [
    r"(?>a|ab)c|.",  # the first way out cuts off the second: "abc" is three pieces
    r"(?>ab|a)b?|\w|\s",  # the second way out waits on the first: "ab" takes "ab", "ac" the "a"
    r"(?>\s|\s\d)x|.",
    r"(?:ab|a)++c|\w|\s",  # possessive loops of groups: (?>(?:ab|a)+)c
    r"(?:a\s|\w)*+\d|\w+|\s",
    r"(?:\p{L}{2})++\d|\p{L}+|\s|.",
    r"(?:^s){0,}+.{2,5}|\s",
    r"(?:(?:ab|a){2}+c|a)\w*|\s",
    r"a(?=bc)\w+|\w|\s",  # lookaheads that the characters after them decide
    r"a(?!bc)\w+|\w|\s",
    r"(?!\d\d)\w\w|.",
    r"\s(?!\s*\d)\w+|\S+|\s",
    r"(?=(?>a|ab)b)\w+|.",  # an atomic group inside a lookahead
    r"(?=a\Z|ab)\w+|.",  # a lookahead's body that matches on some next characters and runs on
    r"x$\n|\w+|\s",  # $ before more of the pattern
    r"a$(?:\n|x)|\S+|\s",
]
#: Patterns with loops whose body can match the empty string: an optional iteration that reads
#: nothing leaves the loop (bpetrain.splitting._dfa, _MARK and _CHECK); the DFA refused each
#: before it did. ``(?:|a)*a`` on "aa" is "a", "a" (an automaton that looped on would take "aa").
DFA_BY_EMPTY_ITERATIONS = [
    r"(?:|a)*a|.",
    r"(?:a?)+b|.",
    r"(?:a??)+b|\s|.",
    r"(?:|ab){2,}a\w|\s|.",
    r"(?:(?=\d)|a)+\w|.",
    r"(?>(?:|a)*)a|.",
]
#: Patterns with a match that later characters decide (held: bpetrain.splitting._dfa,
#: _Builder.step); the DFA refused each before it held matches.
DFA_BY_HELD_MATCHES = [
    r"\p{L}+(?=\s\d)|\S+|\s",  # a match that a lookahead decides two characters after it
    r"(?:ab)++|.",  # a match that the next iteration's "b" decides (whether "a" starts one)
    r"\w+(?=\s\s\d)|.",
    r"a(?=bcd)|ab(?=c)|.",  # a match after the held one (held "a", then "ab" if "a" fails)
    r"(?>ab|a)(?=bc)|.",
    r".(?!$$)|'s|\d{1,3}",  # decided by the end of the text after a newline
    r"(?=ab\s|a\w\d)\w+|\s",  # a lookahead that holds on some next characters only
    r"\p{L}+(?!\s\d)|\S+|\s",  # the held match stands at the end of the text
]
#: What the tagged-thread patterns are checked on: every code point between the characters
#: they name (surrogates as the invalid bytes they stand for), so each construct is read at a
#: piece start and inside pieces.
_TAGGED_SEPS = [b"ab", b"a", b"abc", b" ", b"a\n", b"s", b"12", b"x\n", b"aab", b"bc", b"  1", b"ab\n"]


@pytest.mark.parametrize("pat_str", DFA_BY_TAGGED_THREADS + DFA_BY_EMPTY_ITERATIONS + DFA_BY_HELD_MATCHES)
def test_dfa_by_tagged_threads_every_code_point(pat_str):
    """Every code point, through the DFA's own tables (one and two readings) and each shuffle code."""
    sp = split_pattern(pat_str)
    assert sp.program is not None and sp.program.has_dfa, sp.dfa_reason
    every = "".join(map(chr, range(0x110000))).encode("utf-8", "surrogatepass")
    data = b"".join(every[i : i + 97] + _TAGGED_SEPS[i % 12] for i in range(0, len(every), 97))
    want = reference(pat_str, data)
    arrays = stored_program(pat_str)
    for shuffle in SHUFFLES:
        program = Program(pat_str, arrays, shuffle=shuffle)
        check(program, pat_str, data, want)
        for tail in _TAGGED_SEPS:  # (at the end of the text too)
            check(program, pat_str, b" " + tail)
    check_interleaved(Program(pat_str, arrays, shuffle=False), pat_str, data[:300_000])


@pytest.mark.parametrize("pat_str", DFA_BY_TAGGED_THREADS + DFA_BY_EMPTY_ITERATIONS + DFA_BY_HELD_MATCHES)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_dfa_by_tagged_threads_hypothesis(pat_str, data):
    arrays = stored_program(pat_str)
    samples = ("ab", "abc", "aab", "a\n", "x\n", " 1", "  a", "s")
    doc = b"".join(data.draw(st.lists(documents(chars_named_in(pat_str), samples), min_size=1, max_size=4)))
    for shuffle in SHUFFLES:
        check_interleaved(Program(pat_str, arrays, shuffle=shuffle), pat_str, doc)


@pytest.mark.parametrize("pat_str", DFA_BY_READING)
def test_dfa_by_reading_the_pattern(pat_str):
    sp = split_pattern(pat_str)
    assert sp.program is not None and sp.program.has_dfa, sp.dfa_reason
    arrays = stored_program(pat_str)
    for data in (b"ab aab abc ababc x\ny 1 2 3\n", b"a" * 950 + b"c" + b"ab" * 500 + b"c", MULTILINGUAL.encode(),
                 b"%%% x, y; abb  acd bb\tx\n\n 12 x", b"x"):
        check(sp, pat_str, data)
        # 2 KB or more, dozens of spans: regex takes time quadratic in a run's length on some
        # of these patterns (\w+(?=^x) tries every end of a word run from every place in it)
        check_interleaved(Program(pat_str, arrays), pat_str, data * -(-2048 // len(data)))


#: Patterns with a run after which no match can end (``^`` and ``\\A`` never hold after a
#: character; a possessive run or a lookahead leaves no character the set after it can read),
#: and a pattern that splits alike without it: the DFA keeps no thread of the run (it would
#: read every run of text to its end from every place, for nothing).
RUNS_THAT_CANNOT_MATCH = [
    (r".{8,}+\p{Mn}+|\w+", r"\w+"),
    (r"a+(?=b)c|.", r"."),
    (r"\s++\S{0,30}|\s*+ |x", r"\s++\S{0,30}|x"),
    (r".+^|\p{L}+", r"\p{L}+"),
    (r"[^\r\n]+\A|\s", r"\s"),
    (r"(?i:.{2,2}+|[^\u0915-\U0001f600]+).?^(?s:.{1,2}+)|\d", r"\d"),
    (r"\p{L}+(?:x|^)y|\p{L}", r"\p{L}+xy|\p{L}"),
    (r"(?:\w+|^)^x|\w", r"^x|\w"),  # at the start of the text the run is not read
]


@pytest.mark.parametrize(("pat_str", "same_as"), RUNS_THAT_CANNOT_MATCH)
def test_dfa_keeps_no_thread_that_cannot_match(pat_str, same_as):
    import numpy as np

    from bpetrain.splitting._dfa import same_pieces

    arrays = stored_program(pat_str)
    a, b = ({name: np.asarray(view) for name, view in stored_program(p).items()} for p in (pat_str, same_as))
    assert len(a["dfa_reason"]) == 0, bytes(a["dfa_reason"]).decode()
    assert a["dfa_trans"].shape[0] == b["dfa_trans"].shape[0]
    assert same_pieces(a, b)
    sp = split_pattern(pat_str)
    for data in (b"xy ab1 x\nxy\n", b"abc xy " * 40, MULTILINGUAL.encode(), "\u0915x\U0001f600 12".encode()):
        check(sp, pat_str, data)
        check_interleaved(Program(pat_str, arrays), pat_str, data * 20)


def test_hand_written_code_by_what_the_pattern_does():
    """A pattern gets the hand-written matchers when its DFA splits every text as a named
    pattern's does, however it is written; a pattern that differs on one character does not."""
    cl100k = PATTERNS["cl100k"]
    rewritten = "(?:" + cl100k.replace(r"\p{N}{1,3}", r"\p{N}{1,2}\p{N}?").replace("[sdmt]", "[tmds]") + ")"
    assert rewritten != cl100k and split_pattern(rewritten).program.native == split_pattern(cl100k).program.native != 0
    check(split_pattern(rewritten), rewritten, MULTILINGUAL.encode() + ADVERSARIAL[-1])
    for other in (cl100k.replace(r"\p{N}{1,3}", r"\p{N}{1,4}"), cl100k.replace("[sdmt]", "[sdm]"), PUBLISHED["qwen2"],
                  PUBLISHED["llama3"].replace("(?i:", "(?:").replace("'s", "'[sS]")):
        program = split_pattern(other).program
        assert program.native == 0 and program.has_dfa, other


@pytest.mark.parametrize("pat_str", FALLBACK)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(data=st.data())
def test_fallback_patterns(pat_str, data):
    sp = split_pattern(pat_str)  # compiled once, not per example
    check_reports_fallback_consistently(sp)
    assert sp.program is None and sp.fallback_reason, (pat_str, sp.program, sp.fallback_reason)
    check(sp, pat_str, MULTILINGUAL.encode("utf-8"))
    check(sp, pat_str, data.draw(documents(chars_named_in(pat_str)), label="document"))


#: Patterns that do not match the empty string as a whole but do match it in some contexts
#: (the engine may run them compiled or fall back, but the pieces, empty ones included,
#: must be the regex module's).
EMPTY_IN_CONTEXT = [
    r"(?=(\d{3})+(?!\d))",  # SuperBPE's digit grouping: only empty pieces
    r"a|(?=b)",
    r"\p{L}*(?=\p{N})|\s+",
    r"\d*(?=x)|x|\s",
    r"(?:'s)?(?=\s)|\S+",
    r"(?<=a)\s*|\S",  # and out of the grammar (lookbehind)
]


@pytest.mark.parametrize("pat_str", EMPTY_IN_CONTEXT)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_patterns_empty_in_context(pat_str, data):
    assert regex.fullmatch(pat_str, "") is None, "the case must not match the empty string as a whole"
    sp = SplitPattern(pat_str)
    check_reports_fallback_consistently(sp)
    check(sp, pat_str, b"12345 ab1 x'sx 1x\n's b 1234567 x")
    check(sp, pat_str, data.draw(documents(chars_named_in(pat_str) + tuple("0123x'b \n")), label="document"))


@pytest.mark.parametrize(
    "pat_str",
    ["", "a*", "$", r"\s*", "(?:)", "a|", r"(?!x)", r"\Z", r"(?=a)*", r"x{0}",  # match the empty string
     "(", "[a", "a{2,1}", r"\p{NoSuchProperty}", "*a", "(?<n>a"],  # do not compile
)  # fmt: skip
def test_rejects_patterns_that_match_empty_or_do_not_compile(pat_str):
    with pytest.raises(ValueError):
        SplitPattern(pat_str)


def test_a_failure_of_the_regex_module_is_a_value_error(monkeypatch):
    """An exception other than ``regex.error`` from ``regex.compile`` (a bug of the regex module) becomes a ValueError."""

    def failing_compile(pattern, *args, **kwargs):
        raise AttributeError("'AnyAll' object has no attribute 'rebuild'")

    monkeypatch.setattr(regex, "compile", failing_compile)
    with pytest.raises(ValueError, match=r"regex module \S+ fails to compile pattern .*AttributeError: 'AnyAll'"):
        SplitPattern(r"(?i:[^\s\S])|\s")


@pytest.mark.parametrize("pat_str", [r"(?i:[^\s\S])|\s", r"[^\s\S]|\s", r"(?i:[^\d\D]x)|\w+"])
def test_negated_class_of_every_character(pat_str):
    """Some releases of regex fail on these (2026.1.15, the newest for Python 3.9, on the
    case-insensitive ones): then bpetrain says so; else it splits as the regex module does."""
    if regex_fails_on(pat_str):
        with pytest.raises(ValueError, match="fails to compile"):
            SplitPattern(pat_str)
    else:
        check(SplitPattern(pat_str), pat_str, b"a b\tc (?i) 12\n")


# --- the DFA in the encoder and the pipeline ----------------------------------------------

_ENCODED = ("qwen2", "tekken", "deepseek_v3", "o200k_llamacpp", "deepseek_llm_trailing_space", "chameleon_punct")


def _random_ranks(seed: int) -> dict[bytes, int]:
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    while len(ranks) < 400:
        ranks.setdefault("".join(rng.choices("ab \n'.1\u00e9", k=rng.randint(2, 4))).encode(), len(ranks))
    return ranks


@pytest.mark.parametrize("name", _ENCODED)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_encoder_reads_the_dfa_pieces(name, data):
    """The encoder reads pieces through the DFA (a few pieces ahead, ``next_piece_end``), in one
    call, in a batch and in a stream: the ids are those of each regex piece encoded alone."""
    from bpetrain import Encoding

    pat_str = PUBLISHED[name]
    enc = Encoding(name, pat_str=pat_str, mergeable_ranks=_random_ranks(len(name)), unicode_version="regex")
    assert enc._pattern.has_dfa and not enc._pattern.native
    doc = data.draw(documents(_CHARS[name] + tuple("ab '.1\u00e9\n")), label="document")
    text = doc.decode("utf-8", "replace")
    want = [t for piece in reference(pat_str, text.encode()) for t in enc._encode_single_piece(piece)]
    assert enc.encode_ordinary(text) == want
    assert enc.encode_ordinary_batch([text, text], num_threads=2) == [want, want]
    if "$" not in pat_str:  # see test_stream_encodes_a_block_before_dollar
        assert [int(t) for chunk in enc.encode_stream([text]) for t in chunk] == want


def test_stream_encodes_a_block_before_dollar():
    """A block of a stream is encoded with what follows its cut in view: \\t before $ is a
    safe cut of \\s+$, but $ does not hold there."""
    from bpetrain import Encoding

    enc = Encoding("dollar", pat_str=r"\s+$", mergeable_ranks={bytes([b]): b for b in range(256)})
    assert enc.encode_ordinary("\t$") == []
    assert [int(t) for chunk in enc.encode_stream(["\t$"]) for t in chunk] == []


@pytest.mark.parametrize("pat_str", [r"\s+$", r"[ \t]+$|\S+|\s", r"a+$|.", r"\s+(?!\S)|\s|\S+", r"\s+\Z|\S+|\s"])
def test_stream_equals_encode_with_end_anchors(pat_str):
    """encode_stream in blocks of a few characters gives encode_ordinary's ids for patterns
    whose pieces depend on what follows (``$``, ``\\Z``, lookaheads), on small random texts."""
    from bpetrain import Encoding

    enc = Encoding("anchors", pat_str=pat_str, mergeable_ranks={bytes([b]): b for b in range(256)})
    rng = random.Random(pat_str)
    for _ in range(300):
        text = "".join(rng.choice(" \t\na$b") for _ in range(rng.randrange(0, 30)))
        want = enc.encode_ordinary(text)
        for block_chars in (1, 2, 5):
            chunks = [text[i:i + 3] for i in range(0, len(text), 3)]
            got = [int(t) for chunk in enc.encode_stream(chunks, block_chars=block_chars) for t in chunk]
            assert got == want, (text, block_chars)


def test_first_difference_is_a_text_the_patterns_cut_apart():
    """Where two references of the block rules differ, ``first_difference`` gives a text on
    which their DFAs part, from which ``_text_cut_apart`` finds one the ``regex`` module cuts
    into other pieces with the two (a difference it reports is one); a pattern written
    otherwise than a reference it splits as has none (``same_pieces``), and the text found is
    a shortest one (no shorter text of the characters it was drawn from parts the DFAs)."""
    import itertools

    from bpetrain.splitting._dfa import first_difference, same_pieces
    from bpetrain.splitting.pattern import _REFERENCES, _regex_pieces, _text_cut_apart

    references = [PATTERNS["cl100k"], PATTERNS["o200k"], PATTERNS["gpt2"], *_REFERENCES[3:40:6], *_REFERENCES[-40::9]]
    programs = {p: stored_program(p) for p in references}
    for a, b in itertools.combinations(references, 2):
        parting = first_difference(programs[a], programs[b])
        assert parting and not same_pieces(programs[a], programs[b]), (a, b)
        text, pieces_a, pieces_b = _text_cut_apart(a, b, parting)
        assert pieces_a == _regex_pieces(a, text) != _regex_pieces(b, text) == pieces_b, (a, b, parting)
    for deep, shallow in ((r"\d+|[a-z]+|\s", r"\d{1,5}|[a-z]|\s"), (r"[a-z]+|\d+|\s", r"[a-z]{1,5}|\d|\s")):
        # (they part on six digits or letters, and on two of the other: the two come first)
        parting = first_difference(stored_program(deep), stored_program(shallow))
        assert len(parting) == 2 and _regex_pieces(deep, parting) != _regex_pieces(shallow, parting), parting
    rewritten = "(?:" + PATTERNS["cl100k"].replace(r"\p{N}{1,3}", r"\p{N}{1,2}\p{N}?") + ")"
    assert first_difference(stored_program(rewritten), programs[PATTERNS["cl100k"]]) is None


def test_rules_alphabet_leaves_out_where_a_pattern_parts_from_the_rules():
    """``rules_alphabet`` of Kimi K2's pattern and the reference of o200k's rules without a
    slash after punctuation: every Han character the blocks could read, and nothing else. Of
    o200k's with a Han character after an apostrophe in its contractions: None, though the two
    differ on Han alone (after ``ab'`` the Han character decides where ``ab`` ends, and the
    blocks give that piece). Of DeepSeek V3's and cl100k's: None (they part on ASCII)."""
    from bpetrain.splitting import _blocks
    from bpetrain.splitting._dfa import first_difference, rules_alphabet
    from bpetrain.splitting.pattern import _o200k_rules_pattern, _regex_pieces

    readable = _blocks.readable(None)
    no_slash = _o200k_rules_pattern(3, "folded", False, False, slash=False)
    without = rules_alphabet(stored_program(PUBLISHED["kimi_k2"]), stored_program(no_slash), readable)
    han = regex.compile(r"\p{Han}")
    assert ([cp for first, last in without for cp in range(first, last + 1)]
            == [cp for cp in range(0x10000) if readable[cp] and han.match(chr(cp))])
    assert first_difference(stored_program(PUBLISHED["kimi_k2"]), stored_program(no_slash)) is not None
    han_contraction = PATTERNS["o200k"].replace("'d)?", r"'d|'\p{Han})?")
    assert _regex_pieces(han_contraction, "ab'\u4e2d") != _regex_pieces(PATTERNS["o200k"], "ab'\u4e2d")
    assert rules_alphabet(stored_program(han_contraction), stored_program(PATTERNS["o200k"]), readable) is None
    assert rules_alphabet(stored_program(PUBLISHED["deepseek_v3"]), stored_program(PATTERNS["cl100k"]), readable) is None


#: Patterns that get no block rules, for each reason: one the regex module splits (a
#: backreference), one without a DFA, and edits of published patterns the DFA splits.
NO_BLOCKS = [r"(a)\1|.", r"ab(?=cd)|a(?=bc)|.", PUBLISHED["deepseek_v3"], PUBLISHED["tekken"].replace(r"[\r\n/]", r"[\r\n/a]"),
             PATTERNS["gpt2"].replace(r" ?\p{N}+", r"\p{N}"), r"\p{L}+|\s+|.", r"\w+|\s+(?!\S)|\s+|[^\w\s]+",
             # o200k's but that an apostrophe after letters takes a Han character after it: that
             # character decides where the letters' piece ends, so the blocks cannot leave it alone
             PATTERNS["o200k"].replace("'d)?", r"'d|'\p{Han})?")]


@pytest.mark.parametrize("pat_str", NO_BLOCKS)
def test_blocks_reason_says_why_and_shows_a_text(pat_str):
    """A pattern the 64-byte blocks do not read says why (``blocks_reason``): the regex
    module splits it (its fallback reason), it has no DFA (with the DFA's reason), or its DFA
    differs from every reference of the rules, shown by a text the nearest cuts otherwise."""
    from bpetrain.splitting.pattern import _nearest_rules, _regex_pieces

    found = SplitPattern(pat_str)
    reason = found.blocks_reason
    assert reason, pat_str
    if found.program is None:
        assert reason == found.fallback_reason
    elif found.dfa_reason:
        assert found.dfa_reason in reason and "no DFA" in reason
    else:
        assert found.program.blocks == 0 and found.program.native == 0
        reference, (text, own, theirs) = _nearest_rules(pat_str, None)
        assert own == _regex_pieces(pat_str, text) != _regex_pieces(reference, text) == theirs
        assert repr(reference) in reason and repr(text) in reason and f"into {own} by this pattern" in reason


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2", "qwen2", "qwen35", "llama3", "tekken", "kimi_k2"])
def test_blocks_reason_is_none_where_the_blocks_read(name):
    found = SplitPattern(PUBLISHED[name])
    assert found.program.blocks or found.program.native
    assert found.blocks_reason is None


def test_text_cut_apart_gives_up_within_its_time(monkeypatch):
    """A search for a text the regex module cuts apart ends within _CUT_APART_SECONDS, with
    None, where none is found: two patterns that cut every text alike, each split taking
    10 ms (a pattern the regex module backtracks on), so that trying the thousands of
    candidates would take a minute."""
    import time

    from bpetrain.splitting import pattern

    regex_pieces = pattern._regex_pieces

    def slowly(pat_str, text, seconds=1.0):
        time.sleep(0.01)
        return regex_pieces(pat_str, text, seconds)

    monkeypatch.setattr(pattern, "_regex_pieces", slowly)
    monkeypatch.setattr(pattern, "_CUT_APART_SECONDS", 0.2)
    start = time.monotonic()
    assert pattern._text_cut_apart(r"\w+|\s", r"(?:\w)+|\s", "ab") is None
    assert time.monotonic() - start < 2.0
