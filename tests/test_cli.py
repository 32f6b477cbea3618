"""The bpetrain command line, run in-process."""
from __future__ import annotations

import pytest

from bpetrain import Tokenizer
from bpetrain.cli import main


def test_train_writes_model_and_summary(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 200, encoding="utf-8")
    out = tmp_path / "model.bpe"
    code = main(["train", str(corpus), "--vocab-size", "270", "--special-token", "<|endoftext|>", "-o", str(out), "-q"])
    assert code == 0
    tok = Tokenizer.load(out)
    assert tok.special_tokens == {"<|endoftext|>": 269}
    err = capsys.readouterr().err
    assert len(tok.merges) == 13 and "13 merges" in err and "vocab size 270" in err
    assert "unique pieces" in err and "bytes/token" in err


def test_train_tiktoken_format_and_pattern_none(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(b"abcabcabc\xff\xff" * 10)
    out = tmp_path / "ranks.tiktoken"
    assert main(["train", str(corpus), "--vocab-size", "260", "--pattern", "none", "--format", "tiktoken", "-o", str(out), "-q"]) == 0
    assert len(out.read_bytes().splitlines()) == 260


def test_warning_is_printed(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab", encoding="utf-8")
    assert main(["train", str(corpus), "--vocab-size", "1000", "-o", str(tmp_path / "m"), "-q"]) == 0
    assert "warning: learned 0 of the 744 merges" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--vocab-size", "100"], "vocab_size=100 is below"),
        (["--pattern", "[bad"], "valid regular expression"),
    ],
)
def test_errors_exit_2_with_message(tmp_path, capsys, args, message):
    corpus = tmp_path / "c.txt"
    corpus.write_text("text", encoding="utf-8")
    argv = ["train", str(corpus), "-o", str(tmp_path / "m"), "-q", *args]
    if "--vocab-size" not in args:
        argv += ["--vocab-size", "300"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_missing_file_is_reported(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["train", str(tmp_path / "nope.txt"), "--vocab-size", "300", "-o", str(tmp_path / "m")])
    assert "no such file" in capsys.readouterr().err
