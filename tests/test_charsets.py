"""Character sets derived from the ``regex`` module's classes (bpetrain.splitting._charsets.set_bits)
against the ``regex`` module asked about every code point (compute_members), for the regex
module's own classes and under another Unicode table; the classes themselves (regex_facts)
against the module, and the file the build writes."""
from __future__ import annotations

import json
import warnings
import zlib

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from pattern_strategies import simple_atoms

from bpetrain.splitting import _charsets, unicode
from bpetrain.splitting._compiler import _Parser
from bpetrain.splitting.names import PATTERNS

FLAGS = ("", "i", "s", "is")

#: Sets where a reading of the classes could go wrong: case-insensitive letters with more
#: than two cases (s, k: the long s, the Kelvin sign), negations, double negations, groups
#: of categories, ``.`` with and without ``s``, escapes, the whole range of code points.
ADVERSARIAL = (
    r"[^\r\n\p{L}\p{N}]", r"\p{Lu}", r"[\p{L&}x-z]", r"\P{^N}", r"[^\s\S]", ".", r"\d", r"[\d\w]", r"\W", r"\S",
    r"[a-z]", r"[^a-z]", "k", "s", "\u017f", "\u212a", r"[^ks]", r"[\u0100-\u017f]", "ß", r"\xe9", r"\N{DIGIT ONE}",
    r"[\x00-\U0010ffff]", r"[^\x00-\U0010ffff\s]", r"\p{Cn}", r"\p{Assigned}", r"[\p{C}\p{Z}]", r"\p{Letter}",
    r"\p{gc=Nd}", r"\p{General_Category=Punctuation}", r"[^\p{Ll}\p{Lu}]", r"\p{LC}", r"[\p{Zs}\t]", r"\0", r"[\s\p{M}]", r"\p{White_Space}",
)
#: Scripts and script extensions, by every spelling, negated, beside other classes; the
#: scripts whose code points are not one run (Common, Inherited), and Unknown (unassigned).
SCRIPTS = (
    r"\p{Han}", r"[\p{Greek}a]", r"\P{Han}", r"[^\p{Han}\p{L}]", r"\p{scx=Hani}", r"\p{Script=Latin}", r"\p{sc=Arab}",
    r"\p{Script_Extensions=Arabic}", r"\p{IsCyrillic}", r"\p{Common}", r"\p{Zinh}", r"\p{Unknown}", r"\p{scx=Zyyy}",
    r"[\p{Han}\p{Hiragana}\p{Katakana}]", r"[^\p{Latin}\s]", r"\p{^Greek}",
)
#: Sets the classes cannot give: blocks, binary and POSIX properties.
UNDERIVED = (r"\p{InBasicLatin}", r"\p{Alphabetic}", r"[[:alpha:]]")


def _pattern_sets() -> set[tuple[str, str]]:
    found = set()
    for pat_str in PATTERNS.values():
        if pat_str is not None:
            parser = _Parser(pat_str)
            parser.parse()
            found |= set(parser.sets)
    return found


@pytest.mark.parametrize(("source", "flags"),
                         sorted(_pattern_sets() | {(s, f) for s in ADVERSARIAL + SCRIPTS for f in FLAGS}))
def test_derived_sets_are_the_regex_modules(source, flags):
    derived = _charsets.set_bits(source, flags)
    expected = _charsets.compute_members(source, flags)
    if derived is None:  # a case-insensitive property: asked of the module
        assert "i" in flags and regex.search(r"\\[pPdDsSwW]", source), source
    else:
        assert derived == expected
    assert _charsets.members.__wrapped__(source, flags) == expected


@pytest.mark.parametrize("source", UNDERIVED)
def test_sets_the_classes_cannot_give_are_asked(source):
    assert _charsets.set_bits(source, "") is None
    assert _charsets.members.__wrapped__(source, "") == _charsets.compute_members(source, "")


def numpy_members(source: str, flags: str) -> bytes:
    """The regex module asked about every code point, counted with numpy: the reference of
    compute_members, which counts without it."""
    every = np.arange(_charsets.N_CODE_POINTS, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    member = np.zeros(_charsets.N_CODE_POINTS + 1, dtype=np.int8)
    for m in regex.finditer((f"(?{flags}:" if flags else "(?:") + source + ")+", every):
        member[m.start()] += 1
        member[m.end()] -= 1
    return np.packbits(np.cumsum(member[:-1], dtype=np.int8).astype(bool)).tobytes()


@pytest.mark.parametrize("source", (*UNDERIVED, *SCRIPTS[:4], ".", r"[^\s\S]", r"[\x00-\U0010ffff]", "k", r"\p{L}"))
def test_asking_the_module_needs_no_numpy(source):
    assert _charsets._every_code_point() == "".join(map(chr, range(_charsets.N_CODE_POINTS)))
    for flags in FLAGS:
        assert _charsets.compute_members(source, flags) == numpy_members(source, flags), (source, flags)


@settings(max_examples=80, deadline=None)
@given(simple_atoms, st.sampled_from(FLAGS))
def test_derived_sets_of_generated_atoms(atom, flags):
    derived = _charsets.set_bits(atom.source, flags)
    if derived is not None:
        assert derived == _charsets.compute_members(atom.source, flags), atom.source


def _check_under_table(source: str, flags: str) -> None:
    """Under tiktoken's table, the derived set is what rewriting the set with the table's
    ranges and asking the regex module gives (class_members without the derivation)."""
    table = unicode.tiktoken_table()
    derived = unicode._derived(source, flags, table)
    real = unicode._derived
    unicode._derived = lambda *args: None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", unicode.UnicodeVersionWarning)  # a property the table lacks
            expected = unicode.class_members(source, flags, table)
    finally:
        unicode._derived = real
    if derived is not None:
        assert derived == expected, source


@pytest.mark.parametrize(("source", "flags"),
                         sorted(_pattern_sets() | {(s, f) for s in ADVERSARIAL + SCRIPTS for f in FLAGS}))
def test_derived_sets_under_another_table(source, flags):
    _check_under_table(source, flags)


@settings(max_examples=60, deadline=None)
@given(simple_atoms, st.sampled_from(FLAGS))
def test_derived_sets_of_generated_atoms_under_another_table(atom, flags):
    _check_under_table(atom.source, flags)


def test_packed_is_numpys_packbits():
    rng = np.random.default_rng(7)
    for _ in range(200):
        member = np.zeros(_charsets.N_CODE_POINTS, dtype=bool)
        for start in rng.integers(0, _charsets.N_CODE_POINTS, rng.integers(0, 30)):
            member[start : start + rng.choice([1, 2, 7, 8, 9, 16, 1000])] = True
        member[: rng.integers(0, 20)] = True
        member[_charsets.N_CODE_POINTS - rng.integers(0, 20) :] = True
        ranges = _charsets.ranges_of(member)
        assert _charsets.packed(ranges) == np.packbits(member).tobytes()
        assert _charsets.parse_ranges(_charsets.ranges_text(ranges), "x") == ranges


def test_ranges_are_merged_and_checked():
    assert _charsets.parse_ranges("62-63 41 61 42-45 64", "x") == [(0x41, 0x45), (0x61, 0x64)]
    for bad in ("4g", "45-41", "110000", "-", "-41"):
        with pytest.raises(ValueError, match="class x"):
            _charsets.parse_ranges(f"20 {bad}", "x")


def test_regex_classes_are_the_modules():
    """The classes the build writes are the regex module's, class by class, and the code
    points with other cases are those regex's own case table gives."""
    facts = _charsets.regex_facts()
    assert facts.version == regex.__version__
    computed = _charsets.compute_facts()
    assert computed.classes == facts.classes and computed.cased == facts.cased
    assert computed.scripts == facts.scripts
    with open(_charsets.FACTS_FILE, "rb") as f:  # written by the build (setup.py) for this regex
        shipped = _charsets.Facts.from_bytes(f.read())
    assert shipped is not None and shipped.classes == computed.classes and shipped.cased == computed.cased
    assert shipped.scripts == computed.scripts
    for name in _charsets.GENERAL_CATEGORIES:
        assert _charsets.packed(facts.classes[name]) == _charsets.compute_members(rf"\p{{{name}}}", ""), name
    for name in _charsets.ESCAPES:
        assert _charsets.packed(facts.classes[name]) == _charsets.compute_members(name, ""), name
    from regex import _regex

    cased = [c for c in range(_charsets.N_CODE_POINTS)
             if len(_regex.get_all_cases(regex.IGNORECASE | regex.UNICODE, c)) > 1]
    assert _charsets.parse_ranges(" ".join(f"{c:x}" for c in cased), "cased") == facts.cased


def test_regex_classes_of_another_version_or_damaged_are_not_read(monkeypatch):
    facts = _charsets.regex_facts()
    data = facts.to_bytes()
    again = _charsets.Facts.from_bytes(data)
    assert again.classes == facts.classes and again.cased == facts.cased
    kept = json.loads(zlib.decompress(data))
    for damage in (data[:-3], b"", zlib.compress(b"{}"),
                   zlib.compress(json.dumps({**kept, "regex": "0.0.test"}).encode()),
                   zlib.compress(json.dumps({**kept, "cased": [5, 3]}).encode()),
                   zlib.compress(json.dumps({**kept, "format": "other"}).encode())):
        assert _charsets.Facts.from_bytes(damage) is None
    monkeypatch.setattr(_charsets.regex, "__version__", "0.0.test")
    assert _charsets.Facts.from_bytes(data) is None


def test_regex_classes_are_asked_and_kept_without_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_charsets, "FACTS_FILE", str(tmp_path / "missing.bin"))
    expected = _charsets.regex_facts()
    _charsets.regex_facts.cache_clear()
    try:
        asked = _charsets.regex_facts()
        assert asked.classes == expected.classes and len(list((tmp_path / "cache").glob("arrays-*.bin"))) == 1
        _charsets.regex_facts.cache_clear()
        monkeypatch.setattr(_charsets, "compute_facts", lambda: pytest.fail("asked again although kept"))
        assert _charsets.regex_facts().classes == expected.classes
    finally:
        _charsets.regex_facts.cache_clear()


def test_regex_scripts_are_the_modules():
    """Every value of Script and Script_Extensions the module's parser knows is in the facts;
    Script gives every code point one value; and at both ends of every range, and beside
    them, the module's own lookup (has_property_value) agrees."""
    from regex import _regex
    from regex import _regex_core as core

    scripts = _charsets.regex_facts().scripts
    for prop in ("SC", "SCX"):
        number, values = core.PROPERTIES[prop]
        assert {number << 16 | value for value in values.values()} <= scripts.keys()
    sc = core.PROPERTIES["SC"][0]
    partition = _charsets._union(r for value, ranges in scripts.items() if value >> 16 == sc for r in ranges)
    assert partition == [(0, _charsets.N_CODE_POINTS - 1)]
    assert sum(b - a + 1 for value, ranges in scripts.items() if value >> 16 == sc for a, b in ranges) \
        == _charsets.N_CODE_POINTS  # and no code point twice
    for value, ranges in scripts.items():
        inside = {c for a, b in ranges for c in (a, b)}
        outside = {c for a, b in ranges for c in (a - 1, b + 1) if 0 <= c < _charsets.N_CODE_POINTS} - inside
        assert all(_regex.has_property_value(value, c) for c in inside), value
        assert not any(_regex.has_property_value(value, c) for c in outside), value


def test_damaged_scripts_are_asked_of_the_module():
    facts = _charsets.regex_facts()
    kept = json.loads(zlib.decompress(facts.to_bytes()))
    damaged = _charsets.Facts.from_bytes(zlib.compress(json.dumps({**kept, "scripts": "[1, 2"}).encode()))
    assert damaged is not None and damaged.classes == facts.classes and damaged.scripts == {}
