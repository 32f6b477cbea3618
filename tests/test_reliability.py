"""Nothing lost, nothing crashes: damaged files, interrupted exports, unreadable inputs."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
from helpers import stdlib_text

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.counting.inputs import SkippedInputWarning, expand_inputs

SPECIALS = ["<|endoftext|>", "<|fim_middle|>"]


@pytest.fixture(scope="module")
def trained() -> Tokenizer:
    return BpeTrainer(600, pat_str="cl100k", special_tokens=SPECIALS).train_from_iterator(
        [stdlib_text(200_000).decode("utf-8", "replace")]
    )


@pytest.fixture(scope="module")
def other() -> Tokenizer:
    return BpeTrainer(500, pat_str="gpt2", special_tokens=["<|x|>"]).train_from_iterator(
        [stdlib_text(100_000).decode("utf-8", "replace")[::-1]]
    )


# ---------------------------------------------------------------- finding 1


@pytest.mark.parametrize("keep", [100, 0, -1], ids=["cut to 100 merges", "emptied", "no header"])
def test_truncated_gpt2_merges_are_refused(trained, tmp_path, keep):
    """A truncated merges.txt used to load, its missing merges turned into special tokens."""
    directory = tmp_path / "gpt2"
    trained.export(directory, format="gpt2")
    (directory / ".bpetrain.json").unlink()  # files as other tools write them: no record
    lines = (directory / "merges.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    (directory / "merges.txt").write_text("".join(lines[: 1 + keep] if keep >= 0 else []), encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges.txt: holds \d+ merges, but \d+ entries .* merges are missing"):
        Tokenizer.from_file(directory)


def test_gpt2_files_of_other_tools_still_load(trained, tmp_path):
    directory = tmp_path / "gpt2"
    trained.export(directory, format="gpt2")
    (directory / ".bpetrain.json").unlink()
    assert Tokenizer.from_file(directory, pat_str="cl100k") == trained


def test_gpt2_record_refuses_an_edited_file(trained, tmp_path):
    directory = tmp_path / "gpt2"
    trained.export(directory, format="gpt2")
    lines = (directory / "merges.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    (directory / "merges.txt").write_text("".join(lines[:101]), encoding="utf-8")
    with pytest.raises(ValueError, match="merges.txt .* is not the file .*.bpetrain.json was written with"):
        Tokenizer.from_file(directory)


# ---------------------------------------------------------------- finding 2


@pytest.fixture
def corpus_dir(tmp_path):
    root = tmp_path / "corpus"
    (root / "closed").mkdir(parents=True)
    (root / "a.txt").write_text("hello world\n")
    (root / "closed" / "b.txt").write_text("more text\n")
    return root


def refuse_listing(monkeypatch, folder):
    """Make ``folder`` unreadable to os.walk (the tests may run as root, who reads any folder)."""
    scandir = os.scandir

    def fake(path="."):
        if os.fspath(path) == os.fspath(folder):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", fake)


def test_unreadable_folder_is_an_error(corpus_dir, monkeypatch):
    """An unreadable subfolder used to be left out in silence."""
    refuse_listing(monkeypatch, corpus_dir / "closed")
    with pytest.raises(PermissionError, match=f"cannot read the folder {corpus_dir / 'closed'}.*--skip-unreadable"):
        expand_inputs([corpus_dir])


def test_skip_unreadable_warns_naming_the_folder(corpus_dir, monkeypatch):
    refuse_listing(monkeypatch, corpus_dir / "closed")
    with pytest.warns(SkippedInputWarning, match=f"unreadable .*{corpus_dir / 'closed'}"):
        sources = expand_inputs([corpus_dir], skip_unreadable=True)
    assert [s.path for s in sources] == [str(corpus_dir / "a.txt")]


@pytest.mark.skipif(getattr(os, "geteuid", lambda: -1)() == 0, reason="root reads folders without read permission")
def test_cli_refuses_an_unreadable_folder(corpus_dir, tmp_path):
    (corpus_dir / "closed").chmod(0)
    try:
        run = cli("train", str(corpus_dir), "--vocab-size", "260", "-o", str(tmp_path / "m.bpe"), "-q")
    finally:
        (corpus_dir / "closed").chmod(0o755)
    assert run.returncode == 2 and "--skip-unreadable" in run.stderr and len(run.stderr.splitlines()) == 1


def test_binary_files_in_a_folder_are_left_out_with_a_warning(corpus_dir):
    """Issue 14 item 6: a .npz and a .so in a folder were read as text."""
    (corpus_dir / "counts.npz").write_bytes(b"PK\x03\x04\x00\x00binary")
    (corpus_dir / "lib.so").write_bytes(b"\x7fELF\x02\x01\x01\x00")
    (corpus_dir / "text.txt.gz").write_bytes(b"\x1f\x8b\x08\x00")  # compressed: read, not sniffed
    with pytest.warns(SkippedInputWarning, match=r"2 binary file\(s\) .*counts.npz, .*lib.so"):
        sources = expand_inputs([corpus_dir])
    assert sorted(os.path.basename(s.path) for s in sources) == ["a.txt", "b.txt", "text.txt.gz"]
    named = expand_inputs([corpus_dir / "lib.so"])  # named directly: read as asked
    assert [s.path for s in named] == [str(corpus_dir / "lib.so")]


# ---------------------------------------------------------------- finding 3


def test_rank_file_from_another_export_is_refused(trained, other, tmp_path):
    """A new rank file beside an old sidecar used to load with the old pattern and specials."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    trained.export(old / "r.tiktoken", format="tiktoken")
    other.export(new / "r.tiktoken", format="tiktoken")
    os.replace(new / "r.tiktoken", old / "r.tiktoken")
    with pytest.raises(ValueError, match="r.tiktoken .* is not the file .*r.tiktoken.json was written with"):
        Tokenizer.from_file(old / "r.tiktoken")
    import bpetrain

    with pytest.raises(ValueError, match="is not the file"):
        bpetrain.load_tiktoken(old / "r.tiktoken")


def test_old_sidecars_without_a_record_still_load(trained, tmp_path):
    import json

    path = tmp_path / "r.tiktoken"
    trained.export(path, format="tiktoken")
    sidecar = json.loads((tmp_path / "r.tiktoken.json").read_text(encoding="utf-8"))
    del sidecar["rank_file"]
    (tmp_path / "r.tiktoken.json").write_text(json.dumps(sidecar), encoding="utf-8")
    assert Tokenizer.from_file(path) == trained


@pytest.mark.parametrize("format, name", [("tiktoken", "r.tiktoken"), ("hf", "t.json"), ("minbpe", "m")])
def test_leftover_temporary_files_are_removed_by_the_next_write(trained, tmp_path, format, name):
    target = {"minbpe": "m.model"}.get(format, name)
    leftover = tmp_path / f".{target}.x1y2z3.tmp"
    leftover.write_bytes(b"half a file")
    trained.export(tmp_path / name, format=format)
    assert not leftover.exists()
    assert not [f for f in os.listdir(tmp_path) if f.endswith((".tmp", ".pending"))]


def test_failed_gpt2_export_leaves_no_empty_folder(trained, tmp_path, monkeypatch):
    from bpetrain._util import atomic as _atomic

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_atomic.os, "fsync", disk_full)
    with pytest.raises(OSError, match="cannot write .*gpt2.*No space left"):
        trained.export(tmp_path / "gpt2", format="gpt2")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- the CLI


def cli(*args: str) -> subprocess.CompletedProcess:
    """The installed command line in a child process, run outside the checkout (whose
    unbuilt source folder would be imported instead)."""
    return subprocess.run([sys.executable, "-m", "bpetrain.cli", *args], check=False, capture_output=True, text=True,
                          timeout=120, cwd=tempfile.gettempdir())


# ---------------------------------------------------------------- finding 4


def small_counts_file(path) -> None:
    from bpetrain import PieceTable

    PieceTable.from_counts({b"ab": 3, b" cd": 2, b"e": 7}).save(path, pat_str=None)


def npz_with(path, **members) -> None:
    """A zip holding ``name.npy`` members with the given raw bytes."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(f"{name}.npy", data)


def npy_header(descr: str, shape: tuple) -> bytes:
    import numpy as np

    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return np.lib.format.magic(1, 0) + len(header).to_bytes(2, "little") + header


@pytest.mark.parametrize("damage", ["flip", "truncate", "huge header", "plain npy", "object dtype", "2-d"])
def test_damaged_counts_files_are_value_errors_naming_the_file(tmp_path, damage):
    """Damaged counts files used to raise BadZipFile, EOFError, IndexError, MemoryError or TypeError."""
    import numpy as np

    from bpetrain import PieceTable

    path = tmp_path / "s.npz"
    small_counts_file(path)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) - 40]))
    elif damage == "huge header":
        with np.load(tmp_path / "s.npz") as z:
            members = {k: z[k] for k in z.files}
        parts = {k: np.lib.format.header_data_from_array_1_0(v) for k, v in members.items()}
        raw = {}
        for k, v in members.items():
            import io

            buffer = io.BytesIO()
            np.save(buffer, v)
            raw[k] = buffer.getvalue()
        raw["data"] = npy_header("|u1", (2**62,)) + b"\0" * 16
        assert parts
        npz_with(path, **raw)
    elif damage == "plain npy":
        np.save(path.with_suffix(".npy"), np.arange(5))
        path = path.with_suffix(".npy")
    elif damage == "object dtype":
        npz_with(path, data=npy_header("|O", (3,)), offsets=b"", counts=b"", header=b"")
    else:
        npz_with(path, data=npy_header("|u1", (2, 2)) + b"abcd", offsets=b"", counts=b"", header=b"")
    with pytest.raises(ValueError, match=f"{path.name}"):
        PieceTable.load(path)


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("target", ["tokenizer.json", "vocab.json", "sidecar", "model pat_str", "jsonl"])
def test_deep_json_is_a_value_error(trained, tmp_path, target):
    """Deeply nested JSON used to raise RecursionError in every JSON reader."""
    if target == "tokenizer.json":
        (tmp_path / "tokenizer.json").write_text(DEEP)
        load = lambda: Tokenizer.from_file(tmp_path / "tokenizer.json")
    elif target == "vocab.json":
        (tmp_path / "vocab.json").write_text(DEEP)
        (tmp_path / "merges.txt").write_text("#version: 0.2\n")
        load = lambda: Tokenizer.from_file(tmp_path)
    elif target == "sidecar":
        trained.export(tmp_path / "r.tiktoken", format="tiktoken")
        (tmp_path / "r.tiktoken.json").write_text(DEEP)
        load = lambda: Tokenizer.from_file(tmp_path / "r.tiktoken")
    elif target == "model pat_str":
        trained.save(tmp_path / "m.bpe")
        lines = (tmp_path / "m.bpe").read_text(encoding="utf-8").split("\n")
        lines[1] = "pat_str: " + DEEP
        (tmp_path / "m.bpe").write_text("\n".join(lines), encoding="utf-8")
        load = lambda: Tokenizer.load(tmp_path / "m.bpe")
    else:
        (tmp_path / "c.jsonl").write_text('{"text": "a"}\n{"text": ' + DEEP + "}\n")
        load = lambda: BpeTrainer(300, show_progress=False).train(tmp_path / "c.jsonl")
    with pytest.raises(ValueError, match="nested|recursion depth|depth limit"):
        load()


# ---------------------------------------------------------------- finding 5


# An atomic group left while a lookahead inside it is undecided: no DFA (``(a|aa)+(?=bb)`` has one, a
# held match), so the backtracking program and then the regex module run it.
HOSTILE = "(a|aa)+(?>(?=bb)b|bb)"


def test_hostile_pattern_from_a_model_file_stops_with_a_clear_error(tmp_path, monkeypatch, capsys):
    """`(a|aa)+$` in a model file used to make `bpetrain inspect` run for more than 20 s; its
    DFA now splits it in linear time, and a pattern without one stops with a clear error."""
    import time

    fast = Tokenizer([], pat_str="(a|aa)+$").encoding()
    started = time.perf_counter()
    assert fast.encode("a" * 40 + "b") == [] and fast.encode("a" * 40) == [ord("a")] * 40
    assert time.perf_counter() - started < 5

    from bpetrain import cli
    from bpetrain.splitting import pattern as pretokenize
    from bpetrain.splitting.pattern import PatternTimeoutError

    monkeypatch.setattr(pretokenize, "PATTERN_SECONDS", 0.5)
    monkeypatch.setattr(pretokenize, "PATTERN_SECONDS_PER_CHAR", 0.0)
    Tokenizer([], pat_str=HOSTILE).save(tmp_path / "m.bpe")
    model = Tokenizer.load(tmp_path / "m.bpe")
    text = "a" * 40 + "b"
    for encode in (model.encoding().encode, model.encode, model.encoding().count):
        started = time.perf_counter()
        with pytest.raises(PatternTimeoutError, match="ran past its time limit"):
            encode(text)
        assert time.perf_counter() - started < 5
    with pytest.raises(SystemExit) as exit_:
        cli.main(["inspect", str(tmp_path / "m.bpe"), "--text", text])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"{tmp_path / 'm.bpe'}: the split pattern" in err and len(err.splitlines()) == 1


def test_compressed_counts_file_cannot_make_a_huge_allocation(tmp_path, monkeypatch):
    """A 269 KB compressed counts file used to allocate 3.15 GB: declared sizes are checked first."""
    import zipfile

    import numpy as np

    from bpetrain import PieceTable

    monkeypatch.setenv("BPETRAIN_MAX_FILE_BYTES", str(1 << 20))
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("data.npy", npy_header("|u1", (8 << 20,)) + bytes(8 << 20))
        for name in ("offsets", "counts", "header"):
            z.writestr(f"{name}.npy", np.lib.format.magic(1, 0))
    assert path.stat().st_size < 100_000
    with pytest.raises(ValueError, match="bomb.npz: the counts file's arrays declare .* BPETRAIN_MAX_FILE_BYTES"):
        PieceTable.load(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("format", ["bpetrain", "tiktoken", "hf", "minbpe"])
def test_endless_file_is_refused_at_the_size_cap(monkeypatch, format):
    """A model path pointing at /dev/zero used to be read until memory ran out."""
    monkeypatch.setenv("BPETRAIN_MAX_FILE_BYTES", str(1 << 20))
    options = {"pat_str": "cl100k"} if format == "tiktoken" else {}
    with pytest.raises(ValueError, match="/dev/zero: larger than 1048576 bytes.*BPETRAIN_MAX_FILE_BYTES"):
        Tokenizer.from_file("/dev/zero", format=format, **options)


def test_a_folder_in_place_of_a_file_is_an_os_error(tmp_path):
    (tmp_path / "m.bpe").mkdir()
    with pytest.raises(IsADirectoryError):
        Tokenizer.load(tmp_path / "m.bpe")


# ---------------------------------------------------------------- finding 6


def test_special_token_ids_past_32_bits_are_refused_at_load(trained, tmp_path):
    """Ids >= 2**32 used to load, then fail in encode and be written by export --format hf."""
    trained.save(tmp_path / "m.bpe")
    lines = (tmp_path / "m.bpe").read_text(encoding="utf-8").split("\n")
    assert lines[2].startswith("special_tokens: ")
    lines[2] = 'special_tokens: {"<|endoftext|>": 4294967296}'
    (tmp_path / "m.bpe").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=r"m.bpe: special token .* has id 4294967296; ids are integers below 2\*\*32"):
        Tokenizer.load(tmp_path / "m.bpe")


def test_huge_rank_is_a_value_error(tmp_path):
    path = tmp_path / "r.tiktoken"
    path.write_bytes(b"YQ== 0\nYg== 9223372036854775808\n")
    import bpetrain

    for load in (Tokenizer.from_file, bpetrain.load_tiktoken):  # load_tiktoken raised OverflowError
        with pytest.raises(ValueError, match=r"r.tiktoken:2: rank 9223372036854775808 is out of range"):
            load(path, pat_str="none")


def test_limits_past_63_bits_mean_no_limit(trained):
    enc = trained.encoding()
    text = "hello world " * 10
    assert enc.count_till_limit(text, 2**64) == enc.count(text)
    assert enc.split_into_chunks(text, 2**70) == [text]


# ---------------------------------------------------------------- finding 7


def test_decode_refuses_non_integer_ids(trained):
    """decode([1.0]) used to return the token of id 1; tiktoken raises TypeError."""
    import numpy as np

    for decode in (trained.decode, trained.encoding().decode):
        with pytest.raises(TypeError, match="token ids must be integers"):
            decode([34.0])
        with pytest.raises(TypeError, match="token ids must be integers"):
            decode(np.array([34.0]))
        assert decode(np.array([34, 35])) == decode([34, 35])


def test_ctrl_c_exits_130_with_one_line(trained, tmp_path, monkeypatch, capsys):
    from bpetrain import cli

    trained.save(tmp_path / "m.bpe")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Tokenizer, "from_file", interrupted)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["inspect", str(tmp_path / "m.bpe")])
    assert exit_.value.code == 130 and capsys.readouterr().err == "bpetrain inspect: interrupted\n"


def test_inspect_refuses_a_negative_count(trained, tmp_path, capsys):
    from bpetrain import cli

    trained.save(tmp_path / "m.bpe")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["inspect", str(tmp_path / "m.bpe"), "--longest", "-5"])
    assert exit_.value.code == 2 and "must be a number >= 0" in capsys.readouterr().err


# ---------------------------------------------------------------- crash injection (finding 3)

EXPORTS = {"bpetrain": "m.bpe", "tiktoken": "r.tiktoken", "hf": "tokenizer.json", "gpt2": "gpt2", "minbpe": "m"}


def write_export(tokenizer: Tokenizer, format: str, path) -> None:
    if format == "bpetrain":
        tokenizer.save(path)
    else:
        tokenizer.export(path, format=format)


def read_export(format: str, path) -> tuple:
    """What an export carries in every format: the merges and the special tokens."""
    if format == "minbpe":
        path = f"{path}.model"
    loaded = Tokenizer.load(path) if format == "bpetrain" else Tokenizer.from_file(path)
    return loaded.merges, loaded.special_tokens


def export_killed_at(tokenizer: Tokenizer, format: str, path, kill_at: int) -> bool:
    """Export in a forked child that SIGKILLs itself just before its ``kill_at``-th call of
    ``os.replace`` or ``os.fsync``; True if it was killed, False if the export finished first."""
    import signal

    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            calls = [0]

            def deadly(function):
                def call(*args, **kwargs):
                    calls[0] += 1
                    if calls[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return function(*args, **kwargs)

                return call

            os.replace, os.fsync = deadly(os.replace), deadly(os.fsync)
            write_export(tokenizer, format, path)
            os._exit(0)
        finally:
            os._exit(1)  # the export raised
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "the export failed in the child"
    return False


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked writer (POSIX only)")
@pytest.mark.parametrize("format", EXPORTS)
def test_export_killed_at_every_rename_and_fsync_leaves_old_or_new(trained, other, tmp_path, format):
    """Killed between the renames of a two-file export, 9 of 33 crash points used to leave
    neither the old nor the new model (or a silent mix)."""
    old, new = read_export_of(trained, format, tmp_path / "old"), read_export_of(other, format, tmp_path / "new")
    kill_at, outcomes = 1, []
    while True:
        place = tmp_path / f"k{kill_at}"
        place.mkdir()
        write_export(trained, format, place / EXPORTS[format])  # the older export in place
        killed = export_killed_at(other, format, place / EXPORTS[format], kill_at)
        found = read_export(format, place / EXPORTS[format])
        assert found in (old, new), f"killed at call {kill_at}: neither the old nor the new export"
        outcomes.append("old" if found == old else "new")
        if not killed:
            break
        write_export(other, format, place / EXPORTS[format])  # the next export completes and cleans up
        assert read_export(format, place / EXPORTS[format]) == new
        assert not [f for f in os.listdir(place) if f.endswith((".tmp", ".pending"))], f"leftovers at {kill_at}"
        kill_at += 1
    assert outcomes[0] == "old" and outcomes[-1] == "new" and kill_at > 2


def read_export_of(tokenizer: Tokenizer, format: str, folder) -> tuple:
    folder.mkdir()
    write_export(tokenizer, format, folder / EXPORTS[format])
    return read_export(format, folder / EXPORTS[format])
