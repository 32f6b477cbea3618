"""The on-disk cache folder (bpetrain/_util/cache.py): its bound and trim, stale builds,
other processes' files, the environment variable, the Python API and ``bpetrain cache``."""
from __future__ import annotations

import json
import os
import time

import pytest

import bpetrain
from bpetrain._util import atomic, cache
from bpetrain.cli import main

NOW = 2_000_000_000.0  # the time the tests trim at (seconds since the epoch)


#: The build tag of an installed build (this test module, which does not change while the
#: tests run), which the entries :func:`arrays` names carry, and its record's name.
LIVE = cache.build_tag([__file__])
LIVE_RECORD = f"build-{LIVE}.json"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A cache folder of the test's own, set as BPETRAIN_CACHE_DIR, empty but for the record
    of the installed build :data:`LIVE`."""
    path = tmp_path / "cache"
    path.mkdir()
    stat = os.stat(__file__)
    (path / LIVE_RECORD).write_text(json.dumps({os.path.abspath(__file__): [stat.st_size, stat.st_mtime_ns]}))
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(path))
    monkeypatch.delenv("BPETRAIN_CACHE_MAX_BYTES", raising=False)
    return path


def put(folder, name: str, n_bytes: int, used: float) -> None:
    """A file ``name`` of ``n_bytes`` whose access and modification times are ``used``."""
    path = folder / name
    path.write_bytes(b"x" * n_bytes)
    os.utime(path, (used, used))


def names(folder) -> set[str]:
    """The files in ``folder`` but the trim's mark and the record of :data:`LIVE`."""
    return {p.name for p in folder.iterdir()} - {".last-trim", LIVE_RECORD}


def record_bytes(folder) -> int:
    """The size of the record of :data:`LIVE` in ``folder``."""
    return (folder / LIVE_RECORD).stat().st_size


def arrays(i: int) -> str:
    """The name of an entry of the installed build :data:`LIVE`."""
    return f"arrays-{LIVE}-{i:032x}.bin"


def test_the_folder_and_its_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == str(tmp_path / "mine")
    monkeypatch.delenv("BPETRAIN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == os.path.join(str(tmp_path / "xdg"), "bpetrain")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == os.path.join(str(tmp_path / "home"), ".cache", "bpetrain")


@pytest.mark.parametrize("text, n_bytes", [
    ("300000000", 300_000_000), ("500M", 500_000_000), ("500MB", 500_000_000), ("1.5G", 1_500_000_000),
    ("512Mi", 512 << 20), ("2GiB", 2 << 30), ("64k", 64_000), (" 10 ", 10), ("0", None), ("none", None),
    ("None", None),
])
def test_sizes_are_read_as_ccache_reads_them(text, n_bytes, monkeypatch):
    assert cache.parse_size(text) == n_bytes
    monkeypatch.setenv("BPETRAIN_CACHE_MAX_BYTES", text)
    assert cache.max_bytes() == n_bytes


def test_the_default_bound(monkeypatch):
    monkeypatch.delenv("BPETRAIN_CACHE_MAX_BYTES", raising=False)
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES == 256 << 20
    monkeypatch.setenv("BPETRAIN_CACHE_MAX_BYTES", "")
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES


@pytest.mark.parametrize("text", ["-1", "lots", "5X", "1e9", "M", "5 G G", "unbounded", "1,000"])
def test_a_bad_bound_is_a_clear_error(text, folder, monkeypatch):
    monkeypatch.setenv("BPETRAIN_CACHE_MAX_BYTES", text)
    with pytest.raises(ValueError, match=r"BPETRAIN_CACHE_MAX_BYTES must be a number of bytes.*'none'.*got "):
        cache.max_bytes()
    with pytest.raises(ValueError, match="BPETRAIN_CACHE_MAX_BYTES"), cache.write_entry(folder / arrays(1)) as f:
        f.write(b"x")  # a write says so, not a silent miss


def test_least_recently_used_entries_go_first_until_the_rest_fit(folder):
    for i in range(6):
        put(folder, arrays(i), 100, NOW - 1000 + 10 * i)  # arrays(0) used longest ago
    put(folder, f"charset-{LIVE}-" + "a" * 32 + ".bits", 100, NOW - 1)
    assert cache.trim(folder, bound=450, now=NOW) == (3, 300)
    assert names(folder) == {arrays(3), arrays(4), arrays(5), f"charset-{LIVE}-" + "a" * 32 + ".bits"}
    assert cache.trim(folder, bound=450, now=NOW) == (0, 0)  # within the bound: nothing more
    assert cache.trim(folder, bound=None, now=NOW) == (0, 0)
    assert cache.trim(folder, bound=0, now=NOW) == (4, 400)  # a bound of 0 bytes: nothing fits
    assert names(folder) == set()


def test_the_later_of_access_and_modification_time_is_the_last_use(folder):
    put(folder, arrays(1), 100, NOW - 500)
    put(folder, arrays(2), 100, NOW - 400)
    os.utime(folder / arrays(1), (NOW - 10, NOW - 500))  # read since (its access time)
    assert cache.trim(folder, bound=100, now=NOW) == (1, 100)
    assert names(folder) == {arrays(1)}


def test_a_read_refreshes_the_modification_time_at_most_once_an_hour(folder):
    put(folder, arrays(1), 10, time.time() - 2 * cache.USE_RESOLUTION)
    with open(folder / arrays(1), "rb") as f:
        cache.note_use(f)
    refreshed = (folder / arrays(1)).stat().st_mtime
    assert time.time() - refreshed < 60
    recent = time.time() - cache.USE_RESOLUTION / 2
    os.utime(folder / arrays(1), (recent, recent))
    with open(folder / arrays(1), "rb") as f:
        cache.note_use(f)
    assert (folder / arrays(1)).stat().st_mtime == pytest.approx(recent)


def fake_build(tmp_path, name="_tables.so"):
    module = tmp_path / name
    module.write_bytes(b"compiled")
    os.utime(module, (NOW - 10**6, NOW - 10**6))
    return module


def write_tagged(folder, tag: str, key: str, n_bytes: int) -> str:
    name = f"pairs-{tag}-{key}.bin"
    with cache.write_entry(folder / name) as f:
        f.write(b"p" * n_bytes)
    return name


def test_entries_of_a_build_no_longer_installed_go_first(folder, tmp_path):
    module = fake_build(tmp_path)
    old_tag = cache.build_tag([module])
    old = write_tagged(folder, old_tag, "1" * 40, 50)
    assert json.loads((folder / f"build-{old_tag}.json").read_text()) == {
        str(module): [module.stat().st_size, module.stat().st_mtime_ns]}
    assert cache.scan_cache().kinds["pairs"] == cache.KindInfo(1, 50, 0)
    os.utime(module, (NOW - 10, NOW - 10))  # reinstalled: the same module, a new modification time
    new_tag = cache.build_tag([module])
    assert new_tag != old_tag
    new = write_tagged(folder, new_tag, "1" * 40, 50)
    for name in (old, new):
        os.utime(folder / name, (NOW - 100, NOW - 100))
    os.utime(folder / old, (NOW - 1, NOW - 1))  # the stale one was used last
    put(folder, arrays(1), 10, NOW - 5000)
    put(folder, "pairs-" + "2" * 40 + ".bin", 10, NOW)  # a table of an older bpetrain (no build tag)
    assert cache.scan_cache().kinds["pairs"] == cache.KindInfo(3, 110, 2)
    assert cache.trim(folder, bound=None, now=NOW)[0] == 3  # stale: removed whatever the bound, with their record
    assert names(folder) == {new, f"build-{new_tag}.json", arrays(1)}
    module.unlink()  # uninstalled
    assert cache.trim(folder, bound=None, now=NOW)[0] == 2
    assert names(folder) == {arrays(1)}


def test_a_tagged_entry_without_its_record_is_stale(folder):
    put(folder, "pairs-" + "3" * 16 + "-" + "4" * 40 + ".bin", 10, NOW)
    assert cache.scan_cache().kinds["pairs"].n_stale == 1
    assert cache.trim(folder, bound=None, now=NOW) == (1, 10)


def test_temporary_files_of_other_processes_are_left_while_young(folder):
    young = "." + arrays(1) + ".ab12cd_9.tmp"
    old = "." + arrays(2) + ".zz99yy00.tmp"
    put(folder, young, 100, NOW - cache.TEMPORARY_MAX_AGE / 2)
    put(folder, old, 100, NOW - cache.TEMPORARY_MAX_AGE - 1)
    assert cache.scan_cache().n_temporary == 2
    assert cache.trim(folder, bound=0, now=NOW) == (1, 100)
    assert names(folder) == {young}
    assert cache.trim(folder, bound=0, now=NOW + cache.TEMPORARY_MAX_AGE) == (1, 100)
    assert names(folder) == set()


def test_clearing_leaves_a_write_in_progress(folder):
    young = "." + arrays(1) + ".ab12cd_9.tmp"
    put(folder, young, 100, time.time())
    put(folder, "." + arrays(2) + ".ab12cd_9.tmp", 100, time.time() - cache.TEMPORARY_MAX_AGE - 1)
    put(folder, arrays(3), 100, time.time())
    assert (3, 200 + record_bytes(folder)) == cache.clear_cache_dir()  # the build record too
    assert names(folder) == {young}


def test_files_that_are_not_the_caches_are_never_touched(folder):
    others = ["notes.txt", "arrays-xyz.bin", "pairs-ABC.bin", "model.bpe", ".notes.txt.abc.tmp", "arrays-12.bin.bak",
              "unknownkind-" + "1" * 32 + ".bin"]
    for name in others:
        put(folder, name, 100, NOW - 10**7)
    (folder / "sub").mkdir()
    assert cache.trim(folder, bound=0, now=NOW) == (0, 0)
    assert (1, record_bytes(folder)) == cache.clear_cache_dir(folder)  # the build record only
    assert names(folder) == {*others, "sub"}
    assert cache.scan_cache().n_files == 0


def test_a_file_removed_between_listing_and_removing_is_skipped(folder, monkeypatch):
    """Another process's trim removes a file this one has listed: no error, not counted."""
    for i in range(3):
        put(folder, arrays(i), 100, NOW - 100 + i)
    listing = cache._listing

    def listed_then_removed(path):
        found = listing(path)
        os.unlink(os.path.join(path, arrays(0)))
        return found

    monkeypatch.setattr(cache, "_listing", listed_then_removed)
    assert cache.trim(folder, bound=100, now=NOW) == (1, 100)  # arrays(0) was already gone
    assert names(folder) == {arrays(2)}


def test_a_file_removed_while_the_folder_is_listed_is_left_out(folder, monkeypatch):
    put(folder, arrays(1), 100, NOW)
    put(folder, arrays(2), 100, NOW)
    scandir = os.scandir

    class Vanishing:
        def __init__(self, path):
            self.inner = scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

        def __iter__(self):
            for entry in self.inner:
                if entry.name == arrays(1):
                    os.unlink(entry.path)
                yield entry

    monkeypatch.setattr(cache.os, "scandir", Vanishing)
    assert [f.name for f in cache._listing(str(folder)) if f.name != LIVE_RECORD] == [arrays(2)]


def test_readers_see_a_removed_entry_as_a_miss(folder):
    """A reader that looks for an entry another process's trim has removed makes it again."""
    from bpetrain.encoding import _table_cache
    from bpetrain.splitting import _charsets

    _charsets.store_arrays("a removed entry", {"x": b"abc"})
    assert bytes(_charsets.read_arrays("a removed entry")["x"]) == b"abc"
    key = "0" * 16 + "-" + "1" * 40
    _table_cache.store_pairs(key, memoryview(b"\x07" * 64))
    assert bytes(_table_cache.read_pairs(key, 8)) == b"\x07" * 64
    assert cache.clear_cache_dir()[0] >= 2
    assert _charsets.read_arrays("a removed entry") is None
    assert _table_cache.read_pairs(key, 8) is None


@pytest.mark.skipif(os.name == "nt", reason="Windows does not remove a file another handle has open")
def test_a_reader_with_the_file_open_reads_it_whole_while_it_is_trimmed(folder):
    put(folder, arrays(1), 1 << 16, NOW - 10**5)
    with open(folder / arrays(1), "rb") as f:
        assert cache.trim(folder, bound=0, now=NOW) == (1, 1 << 16)
        assert f.read() == b"x" * (1 << 16)


def test_a_process_trims_at_most_once_after_a_write(folder, monkeypatch):
    trims = []
    real = cache.trim
    monkeypatch.setattr(cache, "trim", lambda *a, **k: trims.append(a) or real(*a, **k))
    for i in range(3):
        with cache.write_entry(folder / arrays(i)) as f:
            f.write(b"x")
    assert len(trims) == 1 and (folder / ".last-trim").exists()  # no mark yet: the first write trims


def test_entries_written_elsewhere_trim_nothing(folder, tmp_path, monkeypatch):
    """An entry written into another folder (one a build fills) neither trims nor marks it."""
    trims = []
    monkeypatch.setattr(cache, "trim", lambda *a, **k: trims.append(a) or (0, 0))
    other = tmp_path / "shipped"
    with cache.write_entry(other / arrays(1)) as f:
        f.write(b"x")
    assert (other / arrays(1)).read_bytes() == b"x"
    assert trims == [] and not (other / ".last-trim").exists()


def test_a_recent_trim_by_another_process_is_not_repeated(folder, monkeypatch):
    (folder / ".last-trim").write_bytes(b"")  # marked now
    monkeypatch.setenv("BPETRAIN_CACHE_MAX_BYTES", "800")
    trims = []
    monkeypatch.setattr(cache, "trim", lambda *a, **k: trims.append(a) or (0, 0))
    with cache.write_entry(folder / arrays(1)) as f:
        f.write(b"x" * 50)
    assert trims == []
    with cache.write_entry(folder / arrays(2)) as f:  # this process has now written an eighth of the bound
        f.write(b"x" * 50)
    assert len(trims) == 1
    with cache.write_entry(folder / arrays(3)) as f:
        f.write(b"x" * 500)
    assert len(trims) == 1


def test_an_old_mark_is_trimmed_after_the_first_write(folder):
    put(folder, ".last-trim", 0, time.time() - cache.TRIM_INTERVAL - 10)
    put(folder, arrays(1), 100, time.time() - 10**5)
    put(folder, "." + arrays(7) + ".abcdefgh.tmp", 100, time.time() - cache.TEMPORARY_MAX_AGE - 10)
    os.environ["BPETRAIN_CACHE_MAX_BYTES"] = "150"
    try:
        with cache.write_entry(folder / arrays(2)) as f:
            f.write(b"y" * 100)
    finally:
        del os.environ["BPETRAIN_CACHE_MAX_BYTES"]
    assert names(folder) == {arrays(2)}  # the leftover and the least recently used entry are gone


def test_cache_writes_do_not_list_the_folder_and_leave_no_partial_entry(folder, monkeypatch):
    def listing(*args):
        raise AssertionError("the folder was listed")

    monkeypatch.setattr(atomic, "remove_leftovers", listing)
    (folder / ".last-trim").write_bytes(b"")
    with cache.write_entry(folder / arrays(1)) as f:
        f.write(b"whole")
    assert (folder / arrays(1)).read_bytes() == b"whole"
    with pytest.raises(RuntimeError, match="interrupted"), cache.write_entry(folder / arrays(2)) as f:
        f.write(b"half")
        assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]  # written under another name
        raise RuntimeError("interrupted")
    assert names(folder) == {arrays(1)}


def test_other_atomic_writes_still_remove_their_own_leftovers(tmp_path):
    leftover = tmp_path / ".model.bpe.abc123.tmp"
    other = tmp_path / ".other.bpe.abc123.tmp"
    leftover.write_bytes(b"half")
    other.write_bytes(b"half")
    with atomic.atomic_write(tmp_path / "model.bpe") as f:
        f.write("whole")
    assert not leftover.exists() and other.exists()


def test_scan_and_clear(folder):
    put(folder, arrays(1), 300, NOW)
    put(folder, "charset-" + "c" * 32 + ".bits", 40, NOW)
    put(folder, "pairs-" + "9" * 40 + ".bin", 1000, NOW)
    put(folder, "linear-" + "7" * 40 + ".bin", 2000, NOW)
    put(folder, "build-" + "8" * 16 + ".json", 10, NOW)
    put(folder, "readme.txt", 10, NOW)
    info = bpetrain.scan_cache()
    assert info.folder == str(folder) and info.max_bytes == 256 << 20
    assert list(info.kinds) == ["pairs", "arrays", "charset", "linear"]
    assert info.kinds["arrays"] == cache.KindInfo(1, 300, 0) and info.kinds["pairs"] == cache.KindInfo(1, 1000, 1)
    assert info.kinds["linear"] == cache.KindInfo(1, 2000, 1)
    assert (info.n_files, info.n_bytes) == (4, 3340)
    assert (6, 3350 + record_bytes(folder)) == bpetrain.clear_cache_dir()
    assert names(folder) == {"readme.txt"}
    assert bpetrain.scan_cache().n_files == 0


def test_scanning_a_folder_that_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("BPETRAIN_CACHE_DIR", str(tmp_path / "never made"))
    assert bpetrain.scan_cache().n_bytes == 0
    assert bpetrain.clear_cache_dir() == (0, 0)
    assert cache.trim() == (0, 0)
    assert not (tmp_path / "never made").exists()


def test_the_cache_command(folder, capsys, monkeypatch):
    put(folder, arrays(1), 3000, NOW)
    put(folder, "pairs-" + "9" * 40 + ".bin", 2 << 20, NOW)
    assert main(["cache"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"folder: {folder}"
    assert out[1] == "size: 2.0 MiB in 2 files (bound 256.0 MiB; BPETRAIN_CACHE_MAX_BYTES sets it)"
    assert out[2].split() == ["pairs", "1", "files", "2.0", "MiB,", "1", "stale", *cache.KINDS["pairs"].split()]
    assert out[3].split() == ["arrays", "1", "files", "2.9", "KiB", *cache.KINDS["arrays"].split()]
    assert main(["cache", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["n_bytes"] == 3000 + (2 << 20) and record["kinds"]["arrays"] == {"n_files": 1, "n_bytes": 3000,
                                                                                   "n_stale": 0}
    monkeypatch.setenv("BPETRAIN_CACHE_MAX_BYTES", "none")
    assert main(["cache"]) == 0
    assert "(no bound;" in capsys.readouterr().out
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out == f"removed 3 files (2.0 MiB) from {folder}\n"  # and the build record
    assert names(folder) == set()
    put(folder, arrays(2), 10, NOW)
    assert main(["cache", "--clear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"folder": str(folder), "n_files_removed": 1, "n_bytes_removed": 10}
    monkeypatch.setenv("BPETRAIN_CACHE_MAX_BYTES", "lots")
    with pytest.raises(SystemExit) as exit_:
        main(["cache"])
    assert exit_.value.code == 2
    assert "bpetrain cache: error: BPETRAIN_CACHE_MAX_BYTES must be" in capsys.readouterr().err


def test_pair_tables_are_tagged_with_their_build(folder, tmp_path):
    """The key of a pair table starts with the build tag of the module that builds it, so
    a rebuilt module's tables are stale."""
    from bpetrain.encoding import _table_cache

    module = fake_build(tmp_path)
    key = _table_cache.vocabulary_key(memoryview(b"\1\0\0\0"), b"a", str(module))
    tag, digest = key.split("-")
    assert tag == cache.build_tag([module]) and len(digest) == 40
    _table_cache.store_pairs(key, memoryview(b"\0" * 8))
    assert _table_cache.read_pairs(key, 1) is not None
    os.utime(module, (NOW, NOW))
    assert _table_cache.vocabulary_key(memoryview(b"\1\0\0\0"), b"a", str(module)) != key
    assert cache.trim(folder, bound=None, now=time.time())[0] == 2  # the table and its record
    assert _table_cache.read_pairs(key, 1) is None


def test_readers_and_writers_while_another_thread_trims_everything(folder):
    """Entries written, read and removed at once (a trim with a bound of 0 bytes, as another
    process's could run): every read gives the value written or a miss, never an error or
    another value."""
    import threading

    from bpetrain.splitting import _charsets

    stop = threading.Event()
    trims = []

    def trim_everything():
        while not stop.is_set():
            trims.append(cache.trim(folder, bound=0))

    trimmer = threading.Thread(target=trim_everything)
    trimmer.start()
    try:
        for i in range(300):
            value = bytes([i % 256]) * (1 + i)
            _charsets.store_arrays(f"concurrent {i}", {"v": value})
            kept = _charsets.read_arrays(f"concurrent {i}")
            assert kept is None or bytes(kept["v"]) == value
    finally:
        stop.set()
        trimmer.join()
    assert len(trims) > 1 and sum(n for n, _ in trims) > 0  # the trims did remove entries meanwhile


def test_reading_a_compiled_pattern_or_a_character_set_records_its_use(folder):
    """Every kind of entry records a read in its modification time (an entry's last use, on a
    ``noatime`` mount too); a file the build shipped is read, not touched."""
    from bpetrain.splitting import _charsets

    _charsets.store_arrays("a test's arrays", {"a": b"\x01\x02"})
    assert _charsets.cached("a test's set", lambda: bytes(_charsets._PACKED_BYTES)) == bytes(_charsets._PACKED_BYTES)
    old = time.time() - 2 * cache.USE_RESOLUTION
    for path in folder.iterdir():
        os.utime(path, (old, old))
    assert bytes(_charsets.read_arrays("a test's arrays")["a"]) == b"\x01\x02"
    assert _charsets.cached("a test's set", lambda: pytest.fail("not read back")) == bytes(_charsets._PACKED_BYTES)
    entries = [p for p in folder.iterdir() if p.name != ".last-trim" and not p.name.startswith("build-")]
    assert {p.name.split("-")[0] for p in entries} == {"arrays", "charset"}
    assert all(time.time() - p.stat().st_mtime < 60 for p in entries)


def test_a_shipped_program_is_not_touched_when_read(tmp_path, folder, monkeypatch):
    from bpetrain.splitting import _charsets

    shipped = tmp_path / "shipped"
    _charsets.store_arrays("a shipped one", {"a": b"\x03"}, folder=str(shipped))
    monkeypatch.setattr(_charsets, "SHIPPED_DIR", str(shipped))
    old = time.time() - 2 * cache.USE_RESOLUTION
    (path,) = shipped.iterdir()
    os.utime(path, (old, old))
    assert bytes(_charsets.read_arrays("a shipped one")["a"]) == b"\x03"
    assert path.stat().st_mtime == pytest.approx(old)


@pytest.fixture
def fake_modules(tmp_path, monkeypatch):
    """The compiler's modules and the regex module replaced by one file each, which a test
    may 'reinstall' (a new modification time); the tags of the real ones afterwards."""
    from bpetrain.splitting import _charsets, _compiler

    compiler, regex_module = fake_build(tmp_path, "_matcher.so"), fake_build(tmp_path, "_regex.so")
    monkeypatch.setattr(_compiler, "_compiler_modules", lambda: [str(compiler)])
    for module in (_charsets, _compiler):
        monkeypatch.setattr(module, "regex_modules", lambda: [str(regex_module)])
    for cached_tag in (_compiler._program_tag, _compiler._contents_key, _charsets.regex_tag):
        cached_tag.cache_clear()
    yield compiler, regex_module
    monkeypatch.undo()
    for cached_tag in (_compiler._program_tag, _compiler._contents_key, _charsets.regex_tag):
        cached_tag.cache_clear()


def reinstall(module, when: float) -> None:
    """``module`` as a reinstall leaves it: the same bytes, a new modification time."""
    from bpetrain.splitting import _charsets, _compiler

    os.utime(module, (when, when))
    for cached_tag in (_compiler._program_tag, _charsets.regex_tag):
        cached_tag.cache_clear()  # a new process


def test_compiled_patterns_are_tagged_with_their_build_and_trimmed_once_it_is_gone(folder, fake_modules):
    """A compiled pattern in the cache carries the build tag of the compiler's modules and
    the regex module; once either is reinstalled, the pattern is stale: the trim removes it
    (and the build's record), and the next process compiles it again."""
    from bpetrain.splitting import _compiler

    compiler, regex_module = fake_modules
    pat_str = r"\w+|\s+"
    tag = _compiler._program_tag()
    assert tag == cache.build_tag([compiler, regex_module])
    _compiler.stored_program(pat_str)
    programs = sorted(p.name for p in folder.glob(f"arrays-{tag}-*.bin"))
    assert len(programs) == 1
    assert json.loads((folder / f"build-{tag}.json").read_text()) == {
        str(m): [m.stat().st_size, m.stat().st_mtime_ns] for m in (compiler, regex_module)}
    assert cache.trim(folder, bound=None, now=time.time()) == (0, 0)  # installed: live
    for module, when in ((compiler, NOW - 5), (regex_module, NOW - 4)):
        reinstall(module, when)
        assert _compiler.kept_program(pat_str) is None  # the new build does not read it
        assert cache.scan_cache().kinds["arrays"].n_stale >= 1
        n_files, _ = cache.trim(folder, bound=None, now=time.time())
        assert n_files >= 2 and not (folder / programs[0]).exists()  # the program and its build's record
        assert not (folder / f"build-{tag}.json").exists()
        _compiler.stored_program(pat_str)
        tag = _compiler._program_tag()
        programs = sorted(p.name for p in folder.glob(f"arrays-{tag}-*.bin"))
        assert len(programs) == 1


def test_character_sets_and_tables_are_tagged_with_the_regex_build(folder, fake_modules):
    """A character set asked of the regex module, and a table derived from its classes, are
    tagged with the regex module's build: stale once it is reinstalled, and not before."""
    from bpetrain.splitting import _charsets

    _, regex_module = fake_modules
    tag = _charsets.regex_tag()
    empty = bytes(_charsets._PACKED_BYTES)
    assert _charsets.cached("a test's set", lambda: empty) == empty
    _charsets.store_arrays("a test's table", {"a": b"\x01"})
    entries = {p.name for p in folder.iterdir() if p.name.startswith(("charset-", "arrays-"))}
    assert len(entries) == 2 and all(name.split("-")[1] == tag for name in entries)
    assert cache.trim(folder, bound=None, now=time.time()) == (0, 0)
    reinstall(regex_module, NOW)
    assert _charsets.read_arrays("a test's table") is None
    assert cache.trim(folder, bound=None, now=time.time())[0] == 3  # the two and the record
    assert _charsets.cached("a test's set", lambda: empty) == empty  # made again


def test_entries_without_a_tag_are_of_an_older_bpetrain_and_stale(folder):
    for name in ("arrays-" + "1" * 32 + ".bin", "charset-" + "2" * 32 + ".bits", "pairs-" + "3" * 40 + ".bin"):
        put(folder, name, 10, NOW)
    info = cache.scan_cache()
    assert [info.kinds[kind].n_stale for kind in ("pairs", "arrays", "charset")] == [1, 1, 1]
    assert cache.trim(folder, bound=None, now=NOW) == (3, 30)
