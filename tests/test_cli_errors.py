"""The command line when its surroundings fail: closed standard streams, running out of
memory, and line ends of ``--documents line``.

Each failure is the documented one line on standard error and exit status 2, with no
output file; the closed-stream cases run the real program in a shell (``<&-``, ``>&-``).
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import stdlib_text

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.cli import main

TEXT = "the quick brown fox jumps over the lazy dog, naïve café 東京 12345\n" * 100 + stdlib_text(30_000).decode()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    tok = BpeTrainer(300, pat_str="cl100k", show_progress=False).train_from_iterator([TEXT])
    tok.save(folder / "m.bpe")
    (folder / "c.txt").write_text(TEXT, encoding="utf-8")
    return tok, folder


def shell(command: str, cwd) -> subprocess.CompletedProcess:
    """Run ``bpetrain`` with ``command``'s arguments and redirections in sh."""
    return subprocess.run(f"'{sys.executable}' -m bpetrain {command}", shell=True, capture_output=True, text=True,
                          check=False, cwd=cwd, timeout=120)


@pytest.mark.skipif(sys.platform == "win32", reason="closes standard streams with sh's <&- and >&-")
@pytest.mark.parametrize("command, message", [
    ("encode m.bpe - <&-", "standard input ('-') is closed"),
    ("encode m.bpe <&-", "standard input ('-') is closed"),
    ("train - --vocab-size 300 -o out.bpe -q <&-", "standard input ('-') is closed"),
    ("encode m.bpe c.txt >&-", "standard output is closed"),
    ("encode m.bpe c.txt --count >&-", "standard output is closed"),
    ("inspect m.bpe >&-", "standard output is closed"),
    ("train c.txt --vocab-size 300 -o out.bpe -q --json >&-", "standard output is closed"),
    ("count c.txt -o out.bpe -q --json >&-", "standard output is closed"),
])
def test_a_closed_standard_stream_is_one_line_and_status_2(model, command, message):
    """These printed a traceback ('NoneType' object has no attribute 'buffer') and exited 1."""
    _, folder = model
    run = shell(command, folder)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr and len(run.stderr.splitlines()) == 1, run.stderr
    assert not (folder / "out.bpe").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="closes standard error with sh's 2>&-")
def test_a_closed_standard_error_keeps_standard_output_clean(model):
    """Messages for a closed standard error go nowhere, not into the ids on standard output."""
    tok, folder = model
    run = shell("encode m.bpe c.txt 2>&-", folder)
    assert run.returncode == 0 and [int(i) for i in run.stdout.split()] == tok.encode(TEXT)


def test_memory_error_is_one_line_and_status_2_with_no_output(model, tmp_path, capsys, monkeypatch):
    """A MemoryError (a memory limit, ulimit -v) printed a bare traceback."""
    _, folder = model

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(BpeTrainer, "count", out_of_memory)
    with pytest.raises(SystemExit) as stop:
        main(["train", str(folder / "c.txt"), "--vocab-size", "300", "-o", str(tmp_path / "m.bpe"), "-q"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("bpetrain train: error: out of memory") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no model, no temporary file


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a memory limit with RLIMIT_AS and /dev/zero (Linux)")
def test_running_out_of_memory_under_a_limit_is_one_line(tmp_path):
    """The real thing: /dev/zero as the corpus (one endless piece) under ``ulimit -v`` of 1 GiB
    (room over the interpreter's and the imports' ~300 MB; filled in seconds)."""
    run = subprocess.run(
        [sys.executable, "-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
         "from bpetrain.cli import main; sys.exit(main(sys.argv[1:]))",
         "train", "/dev/zero", "--vocab-size", "300", "-o", "m.bpe", "-q"],
        capture_output=True, text=True, check=False, cwd=tmp_path, timeout=300,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.startswith("bpetrain train: error: out of memory") and len(run.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_documents_line_drops_crlf_line_ends_as_training_reads_lines(model, tmp_path, capsysbinary):
    """``--documents line`` kept the \\r of CRLF line ends (one more token per line). A line
    ends at \\n or \\r\\n; a lone \\r is text, in encoding and in training alike."""
    import orjson

    from bpetrain.counting.counts import PieceCounter

    tok, folder = model
    lines = ["hello world", "naïve café\r", "", "a\rb", "last"]  # a lone \r inside a line, and one at its end
    (tmp_path / "crlf.txt").write_bytes("\r\n".join(lines).encode() + b"\r\n")
    assert main(["encode", str(folder / "m.bpe"), str(tmp_path / "crlf.txt"), "--documents", "line", "--json"]) == 0
    found = [orjson.loads(line)["ids"] for line in capsysbinary.readouterr().out.splitlines()]
    assert found == [tok.encode(line) for line in lines]
    counter = PieceCounter(tok.pat_str, documents="line")
    counter.update([(tmp_path / "crlf.txt").read_bytes()])
    assert counter.n_documents == len(lines)  # the same lines: a lone \r does not end one
    (tmp_path / "no-end.txt").write_bytes(b"one\r\ntwo\r")  # a \r at the end of the file is text
    assert main(["encode", str(folder / "m.bpe"), str(tmp_path / "no-end.txt"), "--documents", "line", "--json"]) == 0
    found = [orjson.loads(line)["ids"] for line in capsysbinary.readouterr().out.splitlines()]
    assert found == [tok.encode("one"), tok.encode("two\r")]


def test_a_named_pipe_named_on_the_command_line_is_read_as_a_stream(model, tmp_path):
    """``bpetrain train <(cat corpus)``: the pipe is read to its end, like standard input."""
    tok, folder = model
    run = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' -m bpetrain train <(cat c.txt) --vocab-size 300 -o '{tmp_path}/m.bpe' -q"],
        capture_output=True, text=True, check=False, cwd=folder, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert Tokenizer.load(tmp_path / "m.bpe") == BpeTrainer(300, show_progress=False).train([folder / "c.txt"])
