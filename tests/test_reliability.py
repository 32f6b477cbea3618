"""Nothing lost, nothing crashes (issue 13): damaged files, interrupted exports, unreadable inputs."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import stdlib_text

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.inputs import SkippedInputWarning, expand_inputs

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


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads folders without read permission")
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
    from bpetrain import _atomic

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_atomic.os, "fsync", disk_full)
    with pytest.raises(OSError, match="cannot write .*gpt2.*No space left"):
        trained.export(tmp_path / "gpt2", format="gpt2")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- the CLI


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpetrain.cli", *args], check=False, capture_output=True, text=True, timeout=120)
