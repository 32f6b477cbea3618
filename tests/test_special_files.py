"""Inputs and loaders given what is not a regular file, or a file too large to read.

Named pipes, sockets, devices, symbolic links that loop or point nowhere, folders and files
without read permission, in a corpus folder, matched by a glob, named as an input, as a
model file of each format and as a counts file: each is read (a pipe or device named as an
input is a stream), left out with a warning naming it, or refused with a ``ValueError`` or
``OSError`` naming it. Never a hang, a crash or a ``MemoryError``: every case runs in a
forked child with a time and memory limit (:func:`test_fuzz_readers.run_isolated`).
"""
from __future__ import annotations

import gzip
import lzma
import os
import socket
import stat
import threading
import warnings

import pytest
from helpers import run_bpetrain, stdlib_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_readers import FUZZ_EXAMPLES, _flip, run_isolated

from bpetrain import BpeTrainer, PieceTable, Tokenizer
from bpetrain.counting.inputs import SkippedInputWarning, expand_inputs
from bpetrain.counting.parallel import count_sources
from bpetrain.formats import load

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not hasattr(os, "fork"),
                                reason="named pipes and forked children with limits are POSIX")

SECONDS = 60  # per case: a hang fails the test here, not the run
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534
TEXT = stdlib_text(20_000)


def isolated(function, *, unprivileged: bool = False) -> None:
    """Run ``function`` in a forked child with limits; ``unprivileged``: as the user nobody
    when the tests run as root (root reads files whatever their permissions), so a file
    without read permission is one (its folder must be one nobody can enter: :func:`folder`)."""

    def child():
        if unprivileged and ROOT:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        function()

    run_isolated(child, SECONDS)


def limit_memory(extra_bytes: int) -> None:
    """Let this process (a forked child) grow by at most ``extra_bytes`` of address space."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, hard))


@pytest.fixture
def folder(tmp_path):
    """A fresh folder that the user nobody may enter and write (tmp_path's parents may be private)."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="bpetrain-special-")
    os.chmod(path, 0o777)
    yield __import__("pathlib").Path(path)
    shutil.rmtree(path, ignore_errors=True)


def make_special(kind: str, path: str) -> None:
    """Make ``path`` a ``kind`` of file that is not a plain readable file."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path)  # the file stays a socket after it is closed
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)
    elif kind == "loop":
        os.symlink(os.path.basename(path), path)
    elif kind == "dangling":
        os.symlink(path + ".missing", path)
    elif kind == "folder":
        os.mkdir(path)
    elif kind == "unreadable":
        with open(path, "wb") as f:
            f.write(TEXT)
        os.chmod(path, 0)
    else:
        raise AssertionError(kind)


KINDS = ["fifo", "socket", "dev-zero", "loop", "dangling", "folder", "unreadable"]


# ------------------------------------------------------------ in a corpus folder (finding 3)


@pytest.mark.parametrize("kind", ["fifo", "socket", "dev-zero", "loop", "dangling"])
def test_what_is_not_a_regular_file_in_a_folder_is_left_out_with_a_warning(tmp_path, kind):
    """A named pipe in a folder used to hang training forever (the binary sniffer opened it)."""
    (tmp_path / "a.txt").write_bytes(TEXT)
    make_special(kind, str(tmp_path / "b.txt"))

    def run():
        with pytest.warns(SkippedInputWarning, match=r"not regular files: .*b\.txt") as caught:
            sources = expand_inputs([tmp_path])
        assert [s.path for s in sources] == [str(tmp_path / "a.txt")]
        assert len(caught) == 1
        counter = count_sources(sources, pat_str="cl100k", show_progress=False)
        assert counter.n_input_bytes == len(TEXT)

    isolated(run)


def test_a_glob_leaves_out_what_is_not_a_regular_file(tmp_path):
    (tmp_path / "a.txt").write_bytes(TEXT)
    os.mkfifo(tmp_path / "b.txt")

    def run():
        with pytest.warns(SkippedInputWarning, match=r"b\.txt \(a named pipe\)"):
            sources = expand_inputs([str(tmp_path / "*.txt")])
        assert [s.path for s in sources] == [str(tmp_path / "a.txt")]

    isolated(run)


def test_cli_trains_on_a_folder_holding_a_named_pipe(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_bytes(TEXT)
    os.mkfifo(data / "pipe.txt")
    result = run_bpetrain(["train", str(data), "--vocab-size", "300", "-o", str(tmp_path / "m.bpe"), "-q"],
                          timeout=SECONDS, check=False)
    assert result.returncode == 0, result.stderr
    assert f"{data / 'pipe.txt'} (a named pipe)" in result.stderr
    assert Tokenizer.load(tmp_path / "m.bpe") == BpeTrainer(300, show_progress=False).train([data / "a.txt"])


def test_an_unreadable_file_in_a_folder_is_an_error_or_left_out(folder):
    """Unreadable files and folders: an error naming them, or left out with skip_unreadable
    (the documented choice: a file the user cannot read is not silently dropped)."""
    (folder / "a.txt").write_bytes(TEXT)
    make_special("unreadable", str(folder / "b.txt"))

    def run():
        with pytest.raises(PermissionError, match=r"b\.txt"):
            expand_inputs([folder])
        with pytest.warns(SkippedInputWarning, match=r"unreadable.*b\.txt"):
            assert len(expand_inputs([folder], skip_unreadable=True)) == 1

    isolated(run, unprivileged=True)


# ------------------------------------------------------------ named as an input


def _write_later(path, data: bytes) -> threading.Thread:
    """Write ``data`` into the named pipe ``path`` from a thread (its open waits for a reader)."""

    def write():
        with open(path, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_named_pipe_named_as_an_input_is_read_as_a_stream(tmp_path):
    """``bpetrain train <(zcat corpus.gz)``: the pipe is read to its end, like standard input."""
    (tmp_path / "a.txt").write_bytes(TEXT)
    os.mkfifo(tmp_path / "p")
    expected = count_sources(expand_inputs([tmp_path / "a.txt"]), pat_str="cl100k", show_progress=False).table()

    def run():
        sources = expand_inputs([tmp_path / "p"])
        assert sources[0].size is None  # a stream: no size
        writer = _write_later(tmp_path / "p", TEXT)
        counter = count_sources(sources, pat_str="cl100k", show_progress=False)
        writer.join()
        assert counter.n_input_bytes == len(TEXT)
        assert dict(_pieces(counter.table())) == dict(_pieces(expected))

    isolated(run)


def _pieces(table):
    return ((table.piece(i), int(table.counts[i])) for i in range(table.n_pieces))


@pytest.mark.parametrize("kind, error, message", [
    ("socket", ValueError, "is a socket"),
    ("loop", FileNotFoundError, "a symbolic link loop"),
    ("dangling", FileNotFoundError, "a symbolic link to .*, which does not exist"),
    ("unreadable", PermissionError, "cannot read the input"),
])
def test_a_named_input_that_cannot_be_read_is_refused_before_reading(folder, kind, error, message):
    (folder / "a.txt").write_bytes(TEXT)
    make_special(kind, str(folder / "b.txt"))

    def run():
        with pytest.raises(error, match=f"{folder / 'b.txt'}.*{message}|{message}.*{folder / 'b.txt'}"):
            expand_inputs([folder / "a.txt", folder / "b.txt"])

    isolated(run, unprivileged=True)


def test_a_file_replaced_by_a_pipe_after_listing_is_an_error_not_a_hang(tmp_path):
    (tmp_path / "a.txt").write_bytes(TEXT)
    sources = expand_inputs([tmp_path / "a.txt"])
    os.unlink(tmp_path / "a.txt")
    os.mkfifo(tmp_path / "a.txt")

    def run():
        with pytest.raises(ValueError, match="a.txt was a regular file when the inputs were listed, and is now a named"):
            count_sources(sources, pat_str="cl100k", show_progress=False)

    isolated(run)


def test_a_stream_cannot_be_counted_on_a_cluster(tmp_path):
    from bpetrain.counting.cluster import plan_count_tasks

    os.mkfifo(tmp_path / "p")
    with pytest.raises(ValueError, match="p is a pipe or device: a stream cannot be counted on a cluster"):
        plan_count_tasks([tmp_path / "p"])


# ------------------------------------------------------------ counts files (finding 4)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_counts_file_linked_to_dev_zero_is_refused_before_it_is_read(tmp_path):
    """zipfile used to read /dev/zero until memory ran out (MemoryError after ~2.6 GB)."""
    os.symlink("/dev/zero", tmp_path / "s.npz")

    def run():
        with pytest.raises(ValueError, match=r"s\.npz is a character device, not a regular file"):
            PieceTable.load(tmp_path / "s.npz")

    isolated(run)


def test_a_counts_file_larger_than_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    PieceTable.from_counts({b"ab": 3}).save(tmp_path / "s.npz", pat_str=None)
    monkeypatch.setenv("BPETRAIN_MAX_FILE_BYTES", str(os.path.getsize(tmp_path / "s.npz") - 1))
    with pytest.raises(ValueError, match=r"s\.npz: larger than \d+ bytes, too large for a counts file"):
        PieceTable.load(tmp_path / "s.npz")


# ------------------------------------------------------------ every loader, every special file


def _model_readers(tmp_path):
    """name -> a function reading the model or counts file at a path."""
    return {
        "counts": PieceTable.load,
        "auto": load,
        "bpetrain": lambda p: load(p, format="bpetrain"),
        "tiktoken": lambda p: load(p, format="tiktoken", pat_str="cl100k"),
        "hf": lambda p: load(p, format="hf"),
        "gpt2": lambda p: load(p, format="gpt2"),  # p is vocab.json; merges.txt beside it is valid
        "gpt2-merges": lambda p: load(os.path.dirname(p), format="gpt2"),  # p is merges.txt
        "minbpe": lambda p: load(p, format="minbpe"),
        "from_file": Tokenizer.from_file,
        "train_from_counts": lambda p: BpeTrainer(300, show_progress=False).train_from_counts([p]),
    }


READERS = ["counts", "auto", "bpetrain", "tiktoken", "hf", "gpt2", "gpt2-merges", "minbpe", "from_file",
           "train_from_counts"]


def _target(tmp_path, reader: str) -> str:
    """The path the special file takes for ``reader`` (GPT-2's two files: the other one valid)."""
    if reader.startswith("gpt2"):
        BpeTrainer(300, show_progress=False).train_from_iterator([TEXT.decode()]).export(tmp_path / "g", format="gpt2")
        special = "merges.txt" if reader == "gpt2-merges" else "vocab.json"
        os.unlink(tmp_path / "g" / special)
        os.unlink(tmp_path / "g" / ".bpetrain.json")
        return str(tmp_path / "g" / special)
    return str(tmp_path / "m.model")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", READERS)
def test_every_loader_refuses_special_files_without_hanging(folder, monkeypatch, reader, kind):
    """A model or counts file that is a pipe with no writer, a socket, /dev/zero, a link loop,
    a broken link, a folder or unreadable: a ValueError or OSError naming it, in seconds."""
    monkeypatch.setenv("BPETRAIN_MAX_FILE_BYTES", str(1 << 20))  # /dev/zero: refused at 1 MiB
    path = _target(folder, reader)
    make_special(kind, path)
    read = _model_readers(folder)[reader]
    name = os.path.basename(path)

    def run():
        try:
            read(path)
        except (ValueError, OSError) as exc:
            assert name in str(exc) or name in str(getattr(exc, "filename", "")), repr(exc)
        else:
            pytest.fail("read a model from nothing")

    isolated(run, unprivileged=True)


@pytest.mark.parametrize("reader", [r for r in READERS if not r.startswith("gpt2")])  # (GPT-2's: two files)
def test_a_pipe_with_a_writer_is_read_once_or_refused(tmp_path, reader):
    """A model file given through a pipe (``<(cat model.bpe)``, which is ``/dev/fd/N``): read
    once when the format is named, refused naming it when the format would need a second
    read (``auto``); never a hang."""
    trained = BpeTrainer(300, show_progress=False).train_from_iterator([TEXT.decode()])
    trained.save(tmp_path / "real.bpe")
    data = (tmp_path / "real.bpe").read_bytes()
    assert len(data) < 60_000  # fits in the pipe's buffer: the writer never waits for the reader
    read = _model_readers(tmp_path)[reader]

    def run():
        r, w = os.pipe()
        os.write(w, data)
        os.close(w)
        path = f"/dev/fd/{r}"
        try:
            model = read(path)
        except (ValueError, OSError) as exc:
            assert path in str(exc) or path in str(getattr(exc, "filename", "")), repr(exc)
            assert reader != "bpetrain", repr(exc)
        else:
            assert reader == "bpetrain" and model.merges == trained.merges

    isolated(run)


def test_a_regular_file_past_the_cap_is_refused_before_it_is_read(tmp_path):
    """A sparse 3 GiB model file: refused from its size, not after reading 1 GiB of it (the
    child may add only 256 MiB)."""
    path = tmp_path / "big.tiktoken"
    with open(path, "wb") as f:
        f.truncate(3 << 30)

    def run():
        limit_memory(256 << 20)
        for read in (lambda: load(path, pat_str="cl100k"), lambda: Tokenizer.from_file(path, pat_str="cl100k")):
            with pytest.raises(ValueError, match=r"big\.tiktoken: larger than 1073741824 bytes"):
                read()

    isolated(run)


# ------------------------------------------------------------ damaged corpus files


def _compress(name: str, data: bytes) -> bytes:
    import zstandard

    return {"gz": gzip.compress, "xz": lzma.compress, "zst": zstandard.ZstdCompressor().compress}[name](data)


@pytest.mark.parametrize("suffix", ["gz", "xz", "zst"])
def test_fuzz_damaged_compressed_inputs(tmp_path, suffix):
    """Compressed corpus files flipped and truncated anywhere: counted, or a ValueError naming
    the file; never a hang, crash or MemoryError."""
    base = _compress(suffix, TEXT)

    @settings(max_examples=FUZZ_EXAMPLES // 3, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.sampled_from(["flip", "truncate"]), st.floats(0, 1), st.integers(0, 7)),
                    min_size=1, max_size=3))
    def case(edits):
        data = base
        for kind, at, bit in edits:
            data = _flip(data, at, bit) if kind == "flip" else data[: int(len(data) * at)]
        path = tmp_path / f"c.txt.{suffix}"
        path.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedInputWarning)
            try:
                count_sources(expand_inputs([path]), pat_str="cl100k", num_threads=1, show_progress=False)
            except ValueError as exc:
                assert f"c.txt.{suffix}" in str(exc), str(exc)

    run_isolated(case, 240)


def test_special_kinds_are_what_they_say(tmp_path):
    """The fixtures above make what they claim (so the tests cannot pass by accident)."""
    for kind, check in [("fifo", stat.S_ISFIFO), ("socket", stat.S_ISSOCK), ("dev-zero", stat.S_ISCHR),
                        ("folder", stat.S_ISDIR)]:
        make_special(kind, str(tmp_path / kind))
        assert check(os.stat(tmp_path / kind).st_mode), kind
    for kind in ("loop", "dangling"):
        make_special(kind, str(tmp_path / kind))
        assert os.path.islink(tmp_path / kind) and not os.path.exists(tmp_path / kind)
