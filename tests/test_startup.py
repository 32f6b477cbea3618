"""Start-up: what ``import bpetrain`` and ``bpetrain --help`` load, ``--version``,
``python -m bpetrain``, the hint for unbuilt kernels, and the on-disk cache of
character sets (bpetrain.splitting._charsets)."""
from __future__ import annotations

import base64
import hashlib
import importlib
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import bpetrain
from bpetrain import cli, formats
from bpetrain.counting import inputs
from bpetrain.splitting import _charsets

HEAVY = ("numpy", "regex", "tqdm", "bpetrain.encoding._encoder", "bpetrain.training._merge", "bpetrain.training.trainer")


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh process has loaded after ``code``, run from the folder that holds the
    bpetrain under test (an installed one is not shadowed by the source folder)."""
    home = pathlib.Path(bpetrain.__file__).parents[1]
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True, cwd=home).stdout.split()
    return set(out)


def test_import_and_help_load_nothing_heavy():
    help_code = ("import bpetrain.cli, contextlib, io\n"
                 "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
                 "    bpetrain.cli.main(['--help'])")
    for code in ("import bpetrain", help_code):
        loaded = _loaded_after(code)
        assert not loaded.intersection(HEAVY), (code, sorted(loaded.intersection(HEAVY)))


def test_every_public_name_resolves_and_is_listed():
    assert sorted(bpetrain.__all__) == sorted(bpetrain._HOMES)
    for name, home in bpetrain._HOMES.items():
        assert getattr(bpetrain, name) is getattr(importlib.import_module(home, "bpetrain"), name)
    assert set(bpetrain.__all__) <= set(dir(bpetrain))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bpetrain.nope  # noqa: B018


def test_cli_choices_match_the_modules():
    from bpetrain.splitting import cuts
    from bpetrain.training import trainer

    assert cli.INPUT_FORMATS == inputs.INPUT_FORMATS
    assert cli.EXPORT_FORMATS == tuple(formats.FORMATS)
    assert cli.DOCUMENTS == cuts.DOCUMENTS
    assert cli.TIE_BREAKS == trainer.TIE_BREAKS


def test_version_and_python_m(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"bpetrain {bpetrain.__version__}"
    run = subprocess.run([sys.executable, "-m", "bpetrain", "--version"], capture_output=True, text=True, check=False,
                         cwd=tempfile.gettempdir())  # outside the checkout: the installed package
    assert run.returncode == 0 and run.stdout.strip() == f"bpetrain {bpetrain.__version__}"


def test_missing_kernels_get_a_hint():
    hint = bpetrain.kernels_missing(ModuleNotFoundError("No module named 'bpetrain.encoding._encoder'", name="bpetrain.encoding._encoder"))
    assert isinstance(hint, ImportError) and "build_ext --inplace" in str(hint) and "pip install ." in str(hint)
    other = ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")
    assert bpetrain.kernels_missing(other) is other


#: A set the classes cannot give (the regex module is asked): two Unicode blocks.
GREEK_BLOCKS = r"[\p{InGreek}\p{InGreekExtended}]"


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_charset_cache_round_trip_and_damage(cache, monkeypatch):
    """A set the classes cannot give (Unicode blocks) is asked of the regex module and kept."""
    members = _charsets.members.__wrapped__  # without the in-process lru_cache
    expected = _charsets.compute_members(GREEK_BLOCKS, "")
    assert members(GREEK_BLOCKS, "") == expected
    (path,) = cache.glob("charset-*.bits")
    bits = np.unpackbits(np.frombuffer(expected, dtype=np.uint8))
    assert bits[ord("Ω")] and not bits[ord("a")] and bits[ord("ά")] and bits.sum() > 300

    def fail(*args):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(_charsets, "compute_members", fail)
    assert members(GREEK_BLOCKS, "") == expected  # read back from the file
    monkeypatch.undo()
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(cache))
    for damage in (path.read_bytes()[:-3], b"", zlib.compress(b"short"), b"\x00" * 100):
        path.write_bytes(damage)
        assert members(GREEK_BLOCKS, "") == expected
        assert zlib.decompress(path.read_bytes()) == expected  # rewritten whole


def test_charset_cache_keys_on_the_regex_version(cache, monkeypatch):
    members = _charsets.members.__wrapped__
    members(GREEK_BLOCKS, "i")
    monkeypatch.setattr(_charsets.regex, "__version__", "0.0.test")
    members(GREEK_BLOCKS, "i")
    assert len(list(cache.glob("charset-*.bits"))) == 2


def test_unwritable_cache_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", os.fspath(blocker / "cache"))
    assert _charsets.members.__wrapped__(r"[\p{Greek}0-9]", "") == _charsets.compute_members(r"[\p{Greek}0-9]", "")


def test_the_decoder_is_built_on_first_decode_once_for_all_threads():
    """Encoding does not build the id -> bytes table; the first decodes, from many threads
    at once, build it once and all read the same table."""
    from concurrent.futures import ThreadPoolExecutor

    from bpetrain import Encoding

    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    enc = Encoding("lazy", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={"<|x|>": 300})
    assert enc.encode("abc") == [256, 99]
    assert "_decoder_table" not in enc.__dict__
    with ThreadPoolExecutor(8) as pool:
        tables = list(pool.map(lambda _: enc._decoder, range(64)))
    assert all(table is tables[0] for table in tables)
    assert enc.decode_bytes([256, 99, 300]) == b"abc<|x|>"


def test_compiled_programs_are_kept_and_damage_recompiles(cache, monkeypatch):
    """A compiled split pattern is read back from the cache, equal to a fresh compile; a
    damaged file is compiled again and rewritten; another compiler makes another file."""
    from bpetrain.splitting import _compiler
    from bpetrain.splitting.names import PATTERNS
    from bpetrain.splitting.unicode import tiktoken_table

    table = tiktoken_table()
    # without references to recognise, "like" is -1
    compiled = _compiler.compile_program(PATTERNS["cl100k"], table)
    expected = {**{k: np.asarray(view) for k, view in compiled.items()}, "like": np.array([-1])}

    def same(views):  # memoryviews of the arrays (an empty one flat)
        arrays = {k: np.asarray(view) for k, view in views.items()}
        return arrays.keys() == expected.keys() and all(
            arrays[k].dtype == expected[k].dtype and np.array_equal(arrays[k], expected[k].reshape(arrays[k].shape))
            and arrays[k].shape == (expected[k].shape if expected[k].size else (0,)) for k in expected)

    assert same(_compiler.stored_program(PATTERNS["cl100k"], table))
    (path,) = [p for p in cache.iterdir() if p.name.startswith("arrays-")]

    def fail(*args):
        raise AssertionError("compiled although kept")

    monkeypatch.setattr(_compiler, "compile_program", fail)
    assert same(_compiler.stored_program(PATTERNS["cl100k"], table))
    monkeypatch.undo()
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(cache))
    whole = path.read_bytes()
    for damage in (whole[:-3], b"", zlib.compress(b"[]\nextra"), zlib.compress(b'[["code", "<i8", [99, 7]]]\n')):
        path.write_bytes(damage)
        assert same(_compiler.stored_program(PATTERNS["cl100k"], table))
        assert path.read_bytes() == whole  # rewritten whole
    monkeypatch.setattr(_compiler, "_program_tag", lambda: "0123456789abcdef")  # another build
    _compiler.stored_program(PATTERNS["cl100k"], table)
    assert len([p for p in cache.iterdir() if p.name.startswith("arrays-")]) == 2


#: What a fresh process that loads a rank file and encodes a string must not import: the
#: other formats' readers, the pre-tokenizer pipeline, training, progress bars, and numpy
#: (test_loading_and_encoding_never_import_numpy).
NOT_FOR_A_RANK_FILE = ("bpetrain.formats.hf", "bpetrain.formats.gpt2", "bpetrain.formats.minbpe",
                       "bpetrain.formats.model_file", "bpetrain.splitting.pipeline", "bpetrain.tokenizer",
                       "bpetrain.training.trainer", "tqdm")


def test_loading_a_rank_file_loads_no_other_format(tmp_path):
    path = tmp_path / "small.tiktoken"
    tokens = [bytes([i]) for i in range(256)] + [b"he", b"ll", b"hell", b"hello", b" w", b" wor", b" world"]
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(tokens)))
    code = (f"import bpetrain\nenc = bpetrain.load_tiktoken({os.fspath(path)!r}, pat_str='cl100k')\n"
            "assert enc.encode('hello world') == [259, 262], enc.encode('hello world')")
    loaded = _loaded_after(code)
    assert "bpetrain.formats.tiktoken" in loaded and not loaded.intersection(NOT_FOR_A_RANK_FILE), \
        sorted(loaded.intersection(NOT_FOR_A_RANK_FILE))


def test_loading_and_encoding_never_import_numpy(tmp_path):
    """Loading a rank file or making an Encoding (the registry's module imported too), then
    encode, encode_ordinary, decode and the special-token paths, import no numpy, whether
    the cache holds the compiled pattern or not (the first process compiles it, or reads the
    programs the build shipped: test_cold_compile.py), nor do batches of lists (on two threads: the texts cut into chunks); encode_to_numpy does, and
    gives the same ids."""
    path = tmp_path / "small.tiktoken"
    tokens = [bytes([i]) for i in range(256)] + [b"he", b"ll", b"hell", b"hello", b" w", b" wor", b" world"]
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(tokens)))
    code = (
        "import sys, bpetrain, bpetrain.registry  # get_encoding's module: GPT-2's reader only when used\n"
        f"enc = bpetrain.load_tiktoken({os.fspath(path)!r}, pat_str='cl100k', special_tokens={{'<|end|>': 300}})\n"
        "ranks = {bytes([i]): i for i in range(256)} | {b'he': 256}\n"
        "other = bpetrain.Encoding('x', pat_str='o200k', mergeable_ranks=ranks, special_tokens={'<|e|>': 257})\n"
        "ids = enc.encode('hello world <|end|>', allowed_special='all')\n"
        "assert ids == [259, 262, 32, 300], ids\n"
        "assert enc.encode_ordinary('hello world') == [259, 262] and enc.decode(ids) == 'hello world <|end|>'\n"
        "assert enc.decode_bytes([259]) == b'hello' and enc.encode('hello', disallowed_special=()) == [259]\n"
        "assert other.encode('he<|e|>', allowed_special={'<|e|>'}) == [256, 257]\n"
        "assert enc.encode_ordinary_batch(['hello', 'world'] * 3000, num_threads=2)[-2:] == [[259], [119, 111, 114, 108, 100]]\n"
        "assert enc.encode_batch(['hello <|end|>'], allowed_special='all') == [[259, 32, 300]]\n"
        "print('numpy' in sys.modules)\n"
        "assert enc.encode_to_numpy('hello world').tolist() == [259, 262] and 'numpy' in sys.modules\n")
    home = pathlib.Path(bpetrain.__file__).parents[1]
    env = {**os.environ, "BPETRAIN_CACHE_DIR": os.fspath(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=home,
                           env=env).stdout.split() for _ in range(2)]
    assert runs == [["False"], ["False"]], runs  # the second process reads the compiled patterns back


def _vocabulary(seed: int) -> dict[bytes, int]:
    """256 bytes and 3000 tokens of the letters a-h (some after a space), each joined from
    two earlier tokens: every token a merge."""
    rng = random.Random(seed)
    tokens = [bytes([i]) for i in range(256)]
    parts = [bytes([c]) for c in b" abcdefgh"]
    known = set(tokens)
    while len(tokens) < 3256:
        token = rng.choice(parts) + rng.choice(parts[1:])
        if token not in known and len(token) <= 12:
            known.add(token)
            tokens.append(token)
            parts.append(token)
    return {token: rank for rank, token in enumerate(tokens)}


def test_pair_tables_are_kept_and_damage_rebuilds(cache, monkeypatch):
    """A large vocabulary's pair table is written to the cache and read back by the next
    Encoding (which then gives the ids of one built afresh); a file that is cut short,
    altered or foreign is ignored and written again whole, never read."""
    from bpetrain import Encoding
    from bpetrain.encoding import _table_cache

    ranks = _vocabulary(7)
    texts = ["".join(random.Random(k).choices("abcdefgh  ", k=300)) for k in range(20)]
    fresh = Encoding("fresh", pat_str="cl100k", mergeable_ranks=ranks)  # below MIN_SPLITS: kept nowhere
    expected = [fresh.encode(text) for text in texts]
    assert not cache.exists() or not list(cache.glob("pairs-*"))
    monkeypatch.setattr(_table_cache, "MIN_SPLITS", 1)
    assert [Encoding("a", pat_str="cl100k", mergeable_ranks=ranks).encode(t) for t in texts] == expected
    (path,) = cache.glob("pairs-*.bin")
    whole = path.read_bytes()
    head = len(_table_cache.MAGIC) + 32
    assert whole.startswith(_table_cache.MAGIC) and (len(whole) - head) // 8 & ((len(whole) - head) // 8 - 1) == 0

    # read back: a table of empty slots, correctly signed (its key, then its body), is used as
    # it is (no pair joins)
    empty = b"\xff" * (len(whole) - head)
    key = path.name.removeprefix("pairs-").removesuffix(".bin")
    path.write_bytes(_table_cache.MAGIC + hashlib.sha256(f"{key}\0".encode() + empty).digest() + empty)
    assert Encoding("b", pat_str="cl100k", mergeable_ranks=ranks).encode(texts[0]) != expected[0]

    altered = bytearray(whole)
    altered[head + 8 * 5] ^= 0x10
    foreign = _table_cache.MAGIC + hashlib.sha256(b"another key\0" + empty).digest() + empty  # renamed
    for damage in (whole[:-8], whole[:head], b"", bytes(altered), b"x" + whole[1:], foreign):
        path.write_bytes(damage)
        assert [Encoding("c", pat_str="cl100k", mergeable_ranks=ranks).encode(t) for t in texts] == expected
        assert path.read_bytes() == whole  # rewritten whole
    other = _vocabulary(8)
    Encoding("d", pat_str="cl100k", mergeable_ranks=other)
    assert len(list(cache.glob("pairs-*.bin"))) == 2  # another vocabulary, another file


def _trained_vocabulary() -> dict[bytes, int]:
    """1,500 tokens trained on random text of the letters a-h and spaces, with long runs
    (ties): merges run in rank order, so the linear encoder applies."""
    from bpetrain import BpeTrainer

    rng = random.Random(0)
    texts = ["".join(rng.choices("abcdefgh ", k=3000)) for _ in range(4)] + ["a" * 700]
    return BpeTrainer(1500, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(texts).mergeable_ranks


def _linear_state(bpe, ranks: dict[bytes, int], pieces: list[bytes]):
    """What an encoder's linear tables decide, read once :meth:`build_linear` has run: whether
    the linear encoder applies, the trie's nodes, each piece's ids by the linear encoder (if
    it applies) and by the heap's (which reads the split pair table once they are built), and
    the rank of every split of the first 400 tokens (None unless it is the token's own split)."""
    bpe.build_linear()
    tokens = sorted(ranks, key=ranks.get)[256:656]
    splits = [(ranks[t[:k]], ranks[t[k:]]) for t in tokens for k in range(1, len(t)) if t[:k] in ranks and t[k:] in ranks]
    return (bpe.linear, bpe.n_nodes, bpe.linear and [bpe._py_encode_bytes(p, "linear") for p in pieces],
            [bpe._py_encode_bytes(p, "heap") for p in pieces], [bpe._py_pair_rank(a, b) for a, b in splits])


@pytest.mark.parametrize("linear", [True, False])
def test_linear_tables_are_kept_and_damage_rebuilds(cache, monkeypatch, linear):
    """A large vocabulary's linear tables (trie, splits, span filter, split pair table, and
    whether the linear encoder applies: a trained vocabulary, or random merges where it does
    not) are written to the cache when first built and read back by the next encoder (once,
    when threads ask at once), which then decides and encodes as one that built them; a file
    cut short, altered, of another kind, another key or another vocabulary is ignored and
    written again whole; an unwritable cache is ignored."""
    from bpetrain.encoding import _table_cache
    from bpetrain.encoding._encoder import BytePairEncoder

    ranks = _trained_vocabulary() if linear else _vocabulary(7)
    rng = random.Random(3)
    pieces = [bytes(rng.choices(b" abcdefgh", k=rng.randrange(33, 200))) for _ in range(60)]
    expected = _linear_state(BytePairEncoder(ranks), ranks, pieces)  # below MIN_SPLITS: kept nowhere
    assert expected[0] == linear and not list(cache.glob("linear-*"))
    monkeypatch.setattr(_table_cache, "MIN_SPLITS", 1)
    assert _linear_state(BytePairEncoder(ranks), ranks, pieces) == expected  # cold: built, written
    (path,) = cache.glob("linear-*.bin")
    whole = path.read_bytes()
    assert whole.startswith(_table_cache.LINEAR_MAGIC)
    stamp = path.stat().st_mtime_ns
    assert _linear_state(BytePairEncoder(ranks), ranks, pieces) == expected  # warm: read back
    assert path.stat().st_mtime_ns == stamp and path.read_bytes() == whole  # not written again
    shared = BytePairEncoder(ranks)  # four threads ask at once: read once, under the lock
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda _: _linear_state(shared, ranks, pieces), range(4))) == [expected] * 4
    assert path.stat().st_mtime_ns == stamp

    head = len(_table_cache.LINEAR_MAGIC) + 32
    key = path.name.removeprefix("linear-").removesuffix(".bin")
    # correctly signed: a body whose layout does not fit this vocabulary is ignored too
    short = whole[head:-4]
    misfit = _table_cache.LINEAR_MAGIC + hashlib.sha256(f"{key}\0".encode() + short).digest() + short
    other_ranks = dict(ranks)
    other_ranks[b"hgfedcba"] = len(ranks)
    BytePairEncoder(other_ranks).build_linear()
    (other_path,) = set(cache.glob("linear-*.bin")) - {path}
    other = other_path.read_bytes()  # another vocabulary's tables (one rank more), signed with its key
    resigned = _table_cache.LINEAR_MAGIC + hashlib.sha256(f"{key}\0".encode() + other[head:]).digest() + other[head:]
    altered = bytearray(whole)
    altered[head + 8 * 9] ^= 0x10
    for damage in (whole[:-8], whole[:head], b"", bytes(altered), b"x" + whole[1:], other, misfit, resigned,
                   _table_cache.MAGIC + whole[len(_table_cache.MAGIC):]):
        path.write_bytes(damage)
        assert _linear_state(BytePairEncoder(ranks), ranks, pieces) == expected
        assert path.read_bytes() == whole  # rewritten whole

    blocker = cache.parent / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", os.fspath(blocker / "cache"))
    assert _linear_state(BytePairEncoder(ranks), ranks, pieces) == expected


def test_a_second_process_reads_the_linear_tables_back_without_numpy(tmp_path):
    """A process that encodes past LINEAR_AFTER bytes builds the linear tables and keeps them;
    the next one reads them back (it fails if it builds or writes them again; the file is
    untouched) and gives the same ids; neither imports numpy."""
    ranks_path = tmp_path / "ranks.tiktoken"
    ranks_path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in _trained_vocabulary().items()))
    code = (
        "import sys, random, bpetrain\n"
        "from bpetrain.encoding import _table_cache\n"
        "_table_cache.MIN_SPLITS = 1\n"
        "if sys.argv[2] == 'read':\n"
        "    def fail(*args):\n"
        "        raise AssertionError('written again')\n"
        "    _table_cache.store_tables = fail\n"
        "enc = bpetrain.load_tiktoken(sys.argv[1], pat_str='cl100k')\n"
        "rng = random.Random(5)\n"
        "ids = [enc.encode(''.join(rng.choices(' abcdefgh', k=1000))) for _ in range(100)]\n"
        "assert enc._bpe._py_linear_built and enc._bpe.linear\n"
        "print('numpy' in sys.modules, hash(str(ids)))\n")
    home = pathlib.Path(bpetrain.__file__).parents[1]
    env = {**os.environ, "BPETRAIN_CACHE_DIR": os.fspath(tmp_path / "cache"), "PYTHONHASHSEED": "0"}
    first = subprocess.run([sys.executable, "-c", code, os.fspath(ranks_path), "write"], capture_output=True,
                           text=True, check=True, cwd=home, env=env).stdout.split()
    (path,) = (tmp_path / "cache").glob("linear-*.bin")
    stamp = path.stat().st_mtime_ns, path.stat().st_ino
    second = subprocess.run([sys.executable, "-c", code, os.fspath(ranks_path), "read"], capture_output=True,
                            text=True, check=True, cwd=home, env=env).stdout.split()
    assert first == second and first[0] == "False", (first, second)
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == stamp


def test_unicode_tables_are_kept_and_read_when_used(cache, monkeypatch):
    """A Unicode table is read from its ranges without numpy; made from its text again it
    reads its digest from the cache and its classes only when they are used, equal to the
    table built afresh; a damaged digest is computed from the text again. A text that
    writes the same classes another way (ranges out of order, split, repeated) gives an
    equal table; the regex module's own classes are recognised by their digest."""
    from bpetrain.splitting import unicode

    classes = unicode.tiktoken_table().classes
    built = unicode.UnicodeTable("kept test", classes)
    assert "_ranges" in built.__dict__

    def fail(*args):
        raise AssertionError("parsed although kept")

    monkeypatch.setattr(unicode, "parse_ranges", fail)
    kept = unicode.UnicodeTable("kept test", classes)
    assert kept.digest == built.digest and "_ranges" not in kept.__dict__
    monkeypatch.undo()
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(cache))
    assert all(np.array_equal(kept.member(name), built.member(name)) for name in unicode._NAMES)
    for path in cache.glob("arrays-*.bin"):
        path.write_bytes(path.read_bytes()[:-5])  # the digest damaged: built from the text again
    again = unicode.UnicodeTable("kept test", classes)
    assert "_ranges" in again.__dict__ and again == built
    words = classes["Lu"].split()
    first, _, last = words[0].partition("-")
    reordered = dict(classes, Lu=" ".join([*reversed(words[1:]), first, f"{first}-{last or first}"]))
    other = unicode.UnicodeTable("another test", reordered)
    assert other == built and other.digest == built.digest and other.classes == classes
    assert not unicode._is_regex_table(built) and not unicode._is_regex_table(again)
    assert unicode._is_regex_table(unicode.UnicodeTable("a copy", unicode.regex_table().classes))
    code = ("from bpetrain.splitting import unicode; import sys\n"
            "t = unicode.UnicodeTable('x', unicode.tiktoken_table().classes)\n"
            "assert unicode._is_regex_table(unicode.regex_table()) and not unicode._is_regex_table(t)\n"
            "assert 'numpy' not in sys.modules, 'numpy imported'")
    for _ in range(2):  # the cache empty, then filled
        subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(bpetrain.__file__).parents[1])
