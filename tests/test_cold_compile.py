"""A first process's compile of a split pattern: built without numpy, equal to numpy's
formulation of the same tables; compiled once (a pattern is checked without a second
program); and read from the programs the build ships instead of compiled."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pattern_strategies import split_patterns

import bpetrain
from bpetrain.splitting import _charsets, _compiler, _dfa, pattern
from bpetrain.splitting._compiler import Unsupported, compile_program
from bpetrain.splitting.names import PATTERNS, SHIPPED
from bpetrain.splitting.unicode import resolve_unicode

#: Patterns with case-insensitive sets, lookaheads, $, possessive runs and scripts beside the named ones.
EXTRA = (r"(?i:'s|'t)|\p{Greek}+|[^\s\p{L}]++|\s+$|\s+(?!\S)|\s", r"\d{1,3}(?=\D)|\w+|.", r"(?i:'s|'t)|[^ss]")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_charsets, "SHIPPED_DIR", str(tmp_path / "no shipped programs"))


# ---------------------------------------------------------------- numpy's formulation of the tables


def numpy_two_stage(memberships: list[bytes]):
    """The two-stage table as numpy builds it: every block's packed bits, spelled out."""
    n_blocks = _charsets.N_CODE_POINTS // 256
    bits = np.stack([np.frombuffer(m, dtype=np.uint8) for m in memberships]) if memberships else \
        np.zeros((0, _charsets.N_CODE_POINTS // 8), dtype=np.uint8)
    rows = np.ascontiguousarray(bits.reshape(len(memberships), n_blocks, 32).transpose(1, 0, 2)).reshape(n_blocks, -1)
    blocks: dict[bytes, int] = {}
    stage1, first = np.empty(n_blocks, dtype=np.uint16), []
    for b, row in enumerate(rows):
        stage1[b] = blocks.setdefault(row.tobytes(), len(blocks))
        if stage1[b] == len(first):
            first.append(b)
    member = np.unpackbits(rows[first].reshape(len(first), len(memberships), 32), axis=2)
    weights = np.uint64(1) << np.arange(len(memberships), dtype=np.uint64)
    distinct = (member.astype(np.uint64) * weights[None, :, None]).sum(axis=1, dtype=np.uint64).reshape(-1)
    signatures, index = np.unique(distinct, return_inverse=True)
    return stage1, index.astype(np.uint16).reshape(-1), signatures


def numpy_pair_table(trans: np.ndarray, ascii_class: np.ndarray):
    """:func:`bpetrain.splitting._dfa.pair_table` with numpy's indexing."""
    n_states, width = trans.shape
    present = np.unique(ascii_class)
    size = max(8, 1 << len(present).bit_length())
    codes = np.full(256, len(present), dtype=np.uint8)
    codes[:128] = np.searchsorted(present, ascii_class)
    if n_states * size * size * 4 > _dfa.MAX_PAIR_BYTES:
        return np.zeros(0, dtype=np.uint32), codes
    first = trans[:, present].astype(np.int64)
    second = trans[((first & ~7) // width)[:, :, None], present[None, None, :]].astype(np.int64)
    out = np.zeros((n_states, size, size), dtype=np.int64)
    block = out[:, : len(present), : len(present)]
    block[...] = ((second & ~7) // width) * size * size
    block |= (first[:, :, None] & 1) * _dfa.PAIR_CUT0 | (second & 1) * _dfa.PAIR_CUT1
    block |= (first[:, :, None] >> 1 & 1) * _dfa.PAIR_MATCH0 | (second >> 1 & 1) * _dfa.PAIR_MATCH1
    block[((first[:, :, None] & 4) != 0) | ((second & 4) != 0)] = _dfa.PAIR_SLOW
    out[:, len(present):, :] = _dfa.PAIR_SLOW
    out[:, :, len(present):] = _dfa.PAIR_SLOW
    out[0] = _dfa.PAIR_SLOW
    return out.reshape(n_states, size * size).astype(np.uint32), codes


def check_numpy_formulation(pat_str: str, unicode) -> None:
    """The program's two-stage table, pair table and shuffle pairs equal numpy's."""
    parser = _compiler._Parser(pat_str)
    _compiler._fill_eol(parser.parse(), parser)  # as compile_program: $ reads the set \n
    sources = sorted(parser.sets, key=parser.sets.__getitem__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memberships = list(dict.fromkeys(_compiler.class_members(s, f, unicode) for s, f in sources))
        arrays = {name: np.asarray(view) for name, view in compile_program(pat_str, unicode).items()}
    stage1, stage2, signatures = _compiler._two_stage(memberships)
    want = numpy_two_stage(memberships)
    assert stage1 == want[0].tolist() and list(stage2) == want[1].tolist() and signatures == want[2].tolist()
    assert np.array_equal(arrays["stage1"], want[0]) and np.array_equal(arrays["sig_mask"], want[2])
    if len(arrays["dfa_reason"]):
        return
    pairs, codes = numpy_pair_table(arrays["dfa_trans"], arrays["dfa_class"])
    assert np.array_equal(arrays["dfa_pairs"].reshape(pairs.shape), pairs)
    assert np.array_equal(arrays["dfa_codes"], codes)
    if not len(arrays["shuffle_reason"]) and len(arrays["shuffle_pairs"]):
        rows = arrays["shuffle_rows"]
        n = len(rows)
        want_pairs = rows[np.arange(n)[None, :, None], (rows & 63)[:, None, :]].reshape(n * n, 64)
        assert np.array_equal(arrays["shuffle_pairs"], want_pairs)


@pytest.mark.parametrize("version", ["regex", "tiktoken"])
@pytest.mark.parametrize("pat_str", [*PATTERNS.values(), *EXTRA])
def test_tables_equal_numpys_formulation(pat_str, version):
    check_numpy_formulation(pat_str, resolve_unicode(version))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_patterns_tables_equal_numpys_formulation(data):
    example = data.draw(split_patterns, label="pattern")
    try:
        pattern.compile_regex(example.pat_str)
        check_numpy_formulation(example.pat_str, None)
    except (Unsupported, ValueError):
        pass  # the regex module splits it (or refuses it): no tables


def test_joint_classes_equal_numpys():
    """first_difference walks the pairs of classes code points have in two programs (per pair of
    blocks), each with a code point of that pair: printable ASCII where the pair has one (those
    pairs first), else its lowest."""
    programs = [{k: np.asarray(v) for k, v in compile_program(p).items()} for p in (*PATTERNS.values(), *EXTRA)]
    for a, b in zip(programs, programs[1:] + programs[:1]):
        classes = [x["stage2"][(x["stage1"].astype(np.int64)[:, None] * 256 + np.arange(256)).reshape(-1)]
                   for x in (a, b)]
        codes = (classes[0].astype(np.int64) << 16) | classes[1]
        joint = np.unique(codes)
        members = _dfa._joint_classes(a, b)
        assert sorted(members) == list(zip((joint >> 16).tolist(), (joint & 0xFFFF).tolist()))
        printable = np.arange(0x20, 0x7F)
        for (k_a, k_b), cp in members.items():
            among = np.flatnonzero(codes == (k_a << 16 | k_b))
            in_ascii = np.intersect1d(among, printable)
            assert cp == (in_ascii[0] if len(in_ascii) else among[0]), (k_a, k_b, cp)
        ascii_first = [0x20 <= cp < 0x7F for cp in members.values()]
        assert ascii_first == sorted(ascii_first, reverse=True)


def test_a_case_sensitive_set_beside_a_case_insensitive_one_is_refused():
    """_check_case_mix (on the sets' bits as Python ints): "S" is in [^ss] but not in (?i:[^ss])."""
    for pat_str in (r"[^ss]|(?i:x)", r"(?i:')|[^ss]"):
        with pytest.raises(Unsupported, match="case-sensitive"):
            compile_program(pat_str)


def test_two_stage_of_no_sets_and_of_every_kind_of_block():
    """No sets: one block of signature 0. Sets that change inside a block, at a block's edge
    and in a run of equal blocks all give numpy's table."""
    n_blocks = _charsets.N_CODE_POINTS // 256
    assert _compiler._two_stage([]) == ([0] * n_blocks, _compiler.array.array("H", [0] * 256), [0])
    sets = [_charsets.packed([(0x41, 0x5A), (0x100, 0x1FF), (0x3000, 0x30FF)]),
            _charsets.packed([(0x61, 0x7A), (0x200, 0x10FFFF)]), _charsets.packed([(0, 0x10FFFF)])]
    stage1, stage2, signatures = _compiler._two_stage(sets)
    want = numpy_two_stage(sets)
    assert stage1 == want[0].tolist() and list(stage2) == want[1].tolist() and signatures == want[2].tolist()


def test_array_view_round_trips_through_the_cache():
    arrays = {"q": _charsets.array_view("q", [-1, 2**62, 3, 4, 5, 6], (2, 3)),
              "b": _charsets.array_view("B", b"\x01\xff"),
              "empty": _charsets.array_view("I", [], (0, 4)), "h": _charsets.array_view("H", range(5))}
    assert arrays["q"].shape == (2, 3) and arrays["empty"].shape == (0,) and np.asarray(arrays["q"]).dtype == np.int64
    _charsets.store_arrays("array view test", arrays)
    kept = _charsets.read_arrays("array view test")
    assert kept.keys() == arrays.keys()
    assert all(kept[k].format == arrays[k].format and kept[k].shape == arrays[k].shape
               and kept[k].tolist() == arrays[k].tolist() for k in arrays)
    with pytest.raises(ValueError):
        _charsets.array_view("H", range(5), (2, 3))
    with pytest.raises(OverflowError):
        _charsets.array_view("B", [256])


# ---------------------------------------------------------------- once per process


def test_resolving_a_pattern_compiles_no_program(monkeypatch):
    """resolve_pattern checks a pattern with the regex module; the Encoding's program is the only one."""
    def fail(*args):
        raise AssertionError("a program compiled to check a pattern")

    monkeypatch.setattr(pattern, "compile_and_keep", fail)
    monkeypatch.setattr(pattern, "kept_program", fail)
    assert pattern.resolve_pattern(r"\w+|[^\w\s]+|\s") == r"\w+|[^\w\s]+|\s"
    with pytest.raises(ValueError, match="matches the empty string"):
        pattern.resolve_pattern(r"\w*")
    with pytest.raises(ValueError, match="nor a valid regular expression"):
        pattern.resolve_pattern(r"(\w")
    monkeypatch.undo()
    ranks = {bytes([i]): i for i in range(256)}
    calls = []
    monkeypatch.setattr(pattern, "compile_and_keep",
                        lambda *args: calls.append(args) or _compiler.compile_and_keep(*args))
    pattern.split_pattern.cache_clear()
    enc = bpetrain.Encoding("x", pat_str=r"\w+|[^\w\s]+|\s", mergeable_ranks=ranks)
    assert enc.encode("ab, c") == [97, 98, 44, 32, 99] and len(calls) == 1


def test_a_pattern_is_looked_up_once(monkeypatch, tmp_path):
    """A SplitPattern whose program is nowhere on disk opens one file in the cache folder
    and one in the shipped folder, then compiles, reading where the references cut the
    probe text (once a process: the same two folders); one whose program is kept opens one."""
    import builtins

    _compiler.probe_cuts.cache_clear()

    opened = []

    def counting_open(path, *args, **kwargs):
        if os.path.basename(str(path)).startswith("arrays-"):
            opened.append(os.path.dirname(str(path)))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(_charsets, "open", counting_open, raising=False)  # the module's reads of entries
    pat_str = r"\p{L}+|\p{N}{1,2}|[^\s\p{L}\p{N}]+|\s+"
    assert pattern.SplitPattern(pat_str).program is not None
    assert opened == [str(tmp_path / "cache"), _charsets.SHIPPED_DIR] * 2
    opened.clear()
    assert pattern.SplitPattern(pat_str).split(b"ab 12") == [b"ab", b" ", b"12"]
    assert opened == [str(tmp_path / "cache")]


def test_a_first_compile_imports_no_numpy(tmp_path):
    """A process with an empty cache and no shipped programs compiles the named patterns
    (and one whose DFA has no shuffle table, and one with a script) and splits with them
    without importing numpy."""
    code = ("import sys\nfrom bpetrain.splitting import _charsets\n_charsets.SHIPPED_DIR = sys.argv[1]\n"
            "from bpetrain.splitting.pattern import SplitPattern, PATTERNS\n"
            "for p in [*PATTERNS.values(), r'\\p{L}+|[^\\s\\p{L}]+|\\s']:\n"
            "    for version in ('regex', 'tiktoken'):\n"
            "        assert SplitPattern(p, unicode_version=version).split(b'Hello world, 123') != []\n"
            "han = r'[\\p{Han}]+|(?!\\p{Han})[\\p{L}\\p{M}]+|\\p{N}{1,3}|\\s+|.'\n"  # Kimi K2's script class
            "assert SplitPattern(han).split('\u4e2d\u6587 text'.encode()) == ['\u4e2d\u6587'.encode(), b' ', b'text']\n"
            "assert 'numpy' not in sys.modules, 'numpy imported'")
    env = {**os.environ, "BPETRAIN_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "none")], check=True, env=env,
                   cwd=pathlib.Path(bpetrain.__file__).parents[1])


# ---------------------------------------------------------------- shipped programs


def test_shipped_programs_are_read_instead_of_compiled(tmp_path, monkeypatch):
    """ship_patterns fills a folder that a first process reads (the programs then kept in
    its cache), equal to a compile; programs of other modules' contents are not read."""
    shipped = tmp_path / "shipped"
    pattern.ship_patterns(str(shipped), ("cl100k",))
    # two programs, the tiktoken table's digest and whether it is regex's, the hand-written
    # matchers' flags under each table and their folds, the references' cuts of the probe text
    assert len(list(shipped.glob("arrays-*.bin"))) == 8
    monkeypatch.setattr(_charsets, "SHIPPED_DIR", str(shipped))
    expected = {v: {k: np.asarray(a) for k, a in _compiler._compile_like(PATTERNS["cl100k"], resolve_unicode(v),
                                                                           pattern._REFERENCES)[0].items()}
                for v in ("regex", "tiktoken")}

    def fail(*args):
        raise AssertionError("compiled although shipped")

    monkeypatch.setattr(_compiler, "compile_program", fail)
    monkeypatch.setattr(_charsets, "parse_ranges", fail)  # nor the tiktoken table parsed (its digest shipped)
    resolve_unicode.__globals__["tiktoken_table"].cache_clear()
    for version in ("regex", "tiktoken"):
        got = _compiler.stored_program(PATTERNS["cl100k"], resolve_unicode(version), pattern._REFERENCES)
        assert got.keys() == expected[version].keys()
        assert all(np.array_equal(np.asarray(got[k]).reshape(-1), expected[version][k].reshape(-1)) for k in got)
    monkeypatch.undo()
    resolve_unicode.__globals__["tiktoken_table"].cache_clear()
    monkeypatch.setattr(_charsets, "SHIPPED_DIR", str(shipped))
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_compiler, "_contents_key", lambda: "other contents")
    monkeypatch.setattr(_compiler, "_program_tag", lambda: "0123456789abcdef")  # another build
    calls = []
    monkeypatch.setattr(_compiler, "compile_program", lambda *args: calls.append(args) or compile_program(*args))
    _compiler.stored_program(PATTERNS["cl100k"], None, pattern._REFERENCES)
    assert len(calls) == 1


def test_the_shipped_patterns_are_the_registrys():
    from bpetrain.registry import ENCODINGS

    assert set(SHIPPED) == {spec.pattern for spec in ENCODINGS.values()}


def test_hand_written_matchers_tables_are_kept_and_read_back(tmp_path, monkeypatch):
    """The hand-written matchers' two-stage flags (each Unicode table) and folds equal the
    classes read over every code point; a later process reads them instead (or the build's
    shipped ones); a damaged file is computed again."""
    from bpetrain.splitting import _blocks

    for version in ("regex", "tiktoken"):
        table = resolve_unicode(version)
        flat = _blocks._class_flags(table)
        stage1, stage2 = _blocks._flag_tables(table)
        assert all(stage2[256 * stage1[b] : 256 * stage1[b] + 256] == flat[256 * b : 256 * b + 256]
                   for b in range(len(stage1)))
    cps, letters = _blocks._folds()
    want = [(cp, ord(letter)) for letter in _blocks._FOLD_LETTERS for cp in
            np.flatnonzero(np.unpackbits(np.frombuffer(_blocks._packed_members(letter, "i", None), np.uint8))).tolist()]
    assert list(zip(cps, letters)) == want and (ord("S"), ord("s")) in want and (0x17F, ord("s")) in want

    def fail(*args):
        raise AssertionError("computed although kept")

    monkeypatch.setattr(_blocks, "_class_flags", fail)
    monkeypatch.setattr(_blocks, "_packed_members", fail)
    kept = _blocks._flag_tables(None)
    again = _blocks._flag_tables(None)
    assert kept[0].tolist() == list(again[0]) and bytes(kept[1]) == bytes(again[1])
    assert list(zip(*_blocks._folds())) == want
    shipped = tmp_path / "shipped"
    _blocks.ship_tables(None, str(shipped))
    monkeypatch.setattr(_charsets, "SHIPPED_DIR", str(shipped))
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "another cache"))
    assert bytes(_blocks._flag_tables(None)[1]) == bytes(kept[1]) and list(zip(*_blocks._folds())) == want
    monkeypatch.undo()
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "cache"))
    for path in (tmp_path / "cache").glob("arrays-*.bin"):
        path.write_bytes(path.read_bytes()[:-3])
    assert bytes(_blocks._flag_tables(None)[1]) == bytes(kept[1]) and list(zip(*_blocks._folds())) == want
