"""The bpetrain command line, run in-process."""
from __future__ import annotations

import pytest
from helpers import KIMI_K2

from bpetrain import PATTERNS, Tokenizer
from bpetrain.cli import main
from bpetrain.splitting.pattern import split_pattern


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
    assert main(["train", str(corpus), "--vocab-size", "260", "--pat-str", "none", "--format", "tiktoken", "-o", str(out), "-q"]) == 0
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
        (["--pat-str", "[bad"], "valid regular expression"),
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


@pytest.fixture
def model(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog 12345\n" * 200, encoding="utf-8")
    path = tmp_path / "model.bpe"
    assert main(["train", str(corpus), "--vocab-size", "300", "--special-token", "<|endoftext|>", "-o", str(path), "-q"]) == 0
    return path


@pytest.mark.parametrize("format, output, read", [
    ("tiktoken", "out.tiktoken", "out.tiktoken"),
    ("hf", "tokenizer.json", "tokenizer.json"),
    ("gpt2", "gpt2", "gpt2"),
    ("minbpe", "out", "out.model"),
])
def test_export_then_export_back(model, tmp_path, capsys, format, output, read):
    assert main(["export", str(model), "--format", format, "-o", str(tmp_path / output)]) == 0
    err = capsys.readouterr().err
    assert f"wrote {format} files for {Tokenizer.load(model).n_vocab} tokens" in err
    assert ("do not carry the split pattern" in err) == (format == "gpt2")
    # any written format reads back as MODEL (gpt2 files need the pattern)
    back = tmp_path / "back.tiktoken"
    pattern = ["--pat-str", "cl100k"] if format == "gpt2" else []
    assert main(["export", str(tmp_path / read), *pattern, "--format", "tiktoken", "-o", str(back)]) == 0
    assert Tokenizer.from_file(back) == Tokenizer.load(model)


def test_inspect_shows_the_model_plainly_when_not_a_tty(model, capsys):
    assert main(["inspect", str(model), "--text", "the lazy dog<|endoftext|>", "--longest", "2"]) == 0
    out = capsys.readouterr().out
    tok = Tokenizer.load(model)
    assert f"vocab size: {tok.n_vocab} (256 bytes, {len(tok.merges)} merges, 1 special tokens)" in out
    assert f"special tokens: {{'<|endoftext|>': {tok.n_vocab - 1}}}" in out and "longest tokens (2):" in out
    ids = tok.encode("the lazy dog<|endoftext|>", allowed_special="all")
    assert "|" + "|".join(tok.decode([i]) for i in ids) + "|" in out and f"ids: {ids}" in out
    assert "\x1b[" not in out
    assert "splitter: " + split_pattern(tok.pat_str).splitter in out


def test_inspect_says_why_the_blocks_do_not_read_a_pattern(tmp_path, capsys):
    """``bpetrain inspect`` of a model whose pattern the 64-byte blocks do not read says
    what splits it and why (``SplitPattern.blocks_reason``); of one they read, neither; of one
    they read but for some characters (Kimi K2's: Han), how many and the first of them."""
    pattern = r"\p{L}+|\p{N}|\s+(?!\S)|\s+|[^\s\p{L}\p{N}]+"
    for pat_str, why in ((pattern, True), (PATTERNS["cl100k"], False), (KIMI_K2, False)):
        path = tmp_path / "m.model"
        Tokenizer([(104, 105)], pat_str=pat_str).save(path)
        assert main(["inspect", str(path), "--text", "hi there"]) == 0
        out = capsys.readouterr().out
        split = split_pattern(pat_str)
        assert f"splitter: {split.splitter}\n" in out
        assert (f"  not by the 64-byte blocks: {split.blocks_reason}\n" in out) == why == (split.blocks_reason is not None)
        without = split.program.blocks_without
        assert ("the blocks leave" in out) == bool(without)
        if without:
            n = sum(last - first + 1 for first, last in without)
            assert f"the blocks leave {n:,} characters to the DFA" in out and f"U+{without[0][0]:04X}-" in out


def test_export_errors_exit_2(model, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(tmp_path / "ranks.tiktoken"), "--format", "hf", "-o", str(tmp_path / "t.json")])
    assert exit_info.value.code == 2 and "ranks.tiktoken: no such file or folder" in capsys.readouterr().err
    (tmp_path / "ranks.tiktoken").write_bytes(b"YQ== 0\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(tmp_path / "ranks.tiktoken"), "--format", "hf", "-o", str(tmp_path / "t.json")])
    assert exit_info.value.code == 2 and "does not say its split pattern" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["inspect", str(model), "--pat-str", "gpt2"])
    assert exit_info.value.code == 2 and "pat_str apply to tiktoken and gpt2 files only" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_token_borders_are_colours_in_a_terminal():
    from bpetrain.cli import _show_tokens

    shown = _show_tokens([b"ab", b"\n", b"\xff"], color=True)
    assert shown == "\x1b[48;5;24mab\x1b[48;5;94m\\n\x1b[48;5;24m\ufffd\x1b[0m"
    assert _show_tokens([b"ab", b"\t"], color=False) == "|ab|\\t|"


@pytest.mark.parametrize("command", [
    ["train", "{corpus}", "--vocab-size", "300"],
    ["count", "{corpus}"],
    ["export", "{model}", "--format", "tiktoken"],
])
@pytest.mark.parametrize("bad", ["/dev/null/x.bpe", "{tmp}/missing/x.bpe", "{tmp}"])
def test_bad_output_fails_before_reading_input(tmp_path, capsys, monkeypatch, command, bad):
    import bpetrain.formats
    from bpetrain.training.trainer import BpeTrainer

    def read_nothing(*args, **kwargs):
        raise AssertionError("input was read before the output path was checked")

    for owner, name in ((BpeTrainer, "train"), (BpeTrainer, "count"), (Tokenizer, "from_file"),
                        (bpetrain.formats, "load")):
        monkeypatch.setattr(owner, name, read_nothing)
    output = bad.format(tmp=tmp_path)
    args = [a.format(corpus=tmp_path / "c.txt", model=tmp_path / "m.bpe") for a in command]
    with pytest.raises(SystemExit) as stop:
        main([*args, "-o", output, "-q"] if command[0] != "export" else [*args, "-o", output])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"cannot write {output}:" in err and ".tmp" not in err


@pytest.fixture()
def encode_setup(tmp_path):
    corpus = tmp_path / "corpus.txt"
    text = ("the quick brown fox jumps over the lazy dog, naïve café 東京 12345\n" * 300
            + "  end <|endoftext|> tail\n")
    corpus.write_text(text, encoding="utf-8")
    model = tmp_path / "m.bpe"
    assert main(["train", str(corpus), "--vocab-size", "400", "--special-token", "<|endoftext|>", "-o", str(model), "-q"]) == 0
    return Tokenizer.load(model), model, corpus, text


def test_encode_ids_count_json_equal_the_library(encode_setup, capsysbinary, monkeypatch):
    import orjson

    import bpetrain.encoding.stream

    tok, model, corpus, text = encode_setup
    expected = tok.encode(text, allowed_special="all")
    monkeypatch.setattr(bpetrain.encoding.stream, "STREAM_BLOCK", 500)  # many blocks: the cuts must not change ids
    monkeypatch.setattr("bpetrain.cli.ENCODE_BLOCK_BYTES", 777)
    assert main(["encode", str(model), str(corpus), "--allowed-special", "all", "-q"]) == 0
    assert [int(i) for i in capsysbinary.readouterr().out.split()] == expected
    assert main(["encode", str(model), "--count", str(corpus), str(corpus), "--ordinary"]) == 0
    assert capsysbinary.readouterr().out == b"%d\n" % (2 * len(tok.encode_ordinary(text)))
    assert main(["encode", str(model), str(corpus), "--json", "--allowed-special", "<|endoftext|>"]) == 0
    record = orjson.loads(capsysbinary.readouterr().out)
    assert record == {"file": str(corpus), "ids": expected, "n_tokens": len(expected)}
    assert main(["encode", str(model), str(corpus), "--documents", "line", "--json", "--ordinary"]) == 0
    lines = [orjson.loads(line) for line in capsysbinary.readouterr().out.splitlines()]
    assert [r["ids"] for r in lines] == [tok.encode_ordinary(line) for line in text.split("\n")[:-1]]
    assert [r["line"] for r in lines] == list(range(1, text.count("\n") + 1))


def test_encode_stdin_names_and_errors(encode_setup, capsysbinary, monkeypatch):
    import io
    import sys

    tok, model, corpus, _ = encode_setup
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hello \xff world")))
    assert main(["encode", str(model), "-"]) == 0
    assert [int(i) for i in capsysbinary.readouterr().out.split()] == tok.encode("hello \ufffd world")
    with pytest.raises(SystemExit) as stop:
        main(["encode", str(model), str(corpus)])
    err = capsysbinary.readouterr().err.decode()
    assert stop.value.code == 2 and "holds the special token '<|endoftext|>': pass --allowed-special" in err
    with pytest.raises(SystemExit):
        main(["encode", str(model), str(corpus), "--bogus"])
    assert b"unrecognized arguments: --bogus" in capsysbinary.readouterr().err


def test_train_and_count_json_statistics(tmp_path, capsysbinary):
    import orjson

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 200, encoding="utf-8")
    assert main(["train", str(corpus), "--vocab-size", "270", "-o", str(tmp_path / "m.bpe"), "-q", "--json"]) == 0
    stats = orjson.loads(capsysbinary.readouterr().out)
    tok = Tokenizer.load(tmp_path / "m.bpe")
    assert stats["vocab_size"] == tok.n_vocab == 270 and stats["n_merges"] == len(tok.merges)
    assert stats["n_input_bytes"] == corpus.stat().st_size and stats["n_documents"] == 1
    assert stats["n_tokens"] == len(tok.encode(corpus.read_text()))  # the encoder agrees with training
    assert stats["bytes_per_token"] == stats["n_piece_bytes"] / stats["n_tokens"]
    assert main(["count", str(corpus), "-o", str(tmp_path / "c.npz"), "-q", "--json"]) == 0
    counted = orjson.loads(capsysbinary.readouterr().out)
    assert counted["n_input_bytes"] == stats["n_input_bytes"] and counted["n_pieces"] == stats["n_pieces"]


def test_plain_text_is_not_called_a_rank_file(tmp_path, capsys):
    plain = tmp_path / "notes.txt"
    plain.write_text("just some plain text\nanother line\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        main(["inspect", str(plain)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "not a model file bpetrain can tell" in err and "--model-format" in err
    assert "tiktoken rank file does not say" not in err
    ranks = tmp_path / "ranks.txt"  # a rank file by content, whatever its name
    Tokenizer([(97, 98)], pat_str=None).save_tiktoken(tmp_path / "r.tiktoken")
    ranks.write_bytes((tmp_path / "r.tiktoken").read_bytes())
    assert main(["inspect", str(ranks), "--pat-str", "none"]) == 0


def test_broken_pipe_is_quiet(tmp_path):
    import subprocess
    import sys

    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world " * 50_000, encoding="utf-8")
    model = tmp_path / "m.bpe"
    assert main(["train", str(corpus), "--vocab-size", "300", "-o", str(model), "-q"]) == 0
    run = subprocess.run(f"'{sys.executable}' -m bpetrain encode '{model}' '{corpus}' -q | head -c 10",
                         shell=True, capture_output=True, text=True, check=False, cwd=tmp_path)  # not the checkout
    assert len(run.stdout) == 10 and run.stderr == ""


def test_options_left_out_take_the_librarys_defaults_which_the_help_states():
    """The command line passes only the options given (None: not given), so the library's
    defaults apply; the help text states them, and they are the library's."""
    import inspect

    from bpetrain import BpeTrainer
    from bpetrain.cli import build_parser

    library = {**{name: p.default for name, p in inspect.signature(BpeTrainer).parameters.items()},
               **{name: p.default for name, p in inspect.signature(BpeTrainer.train).parameters.items()}}
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    stated = {"min_frequency", "tie_break", "documents", "input_format", "text_field"}
    for action in train._actions:
        if action.dest in stated:
            assert action.default is None and f"(default: {library[action.dest]})" in action.help, action.dest
            stated.discard(action.dest)
    assert not stated
    args = train.parse_args(["x.txt", "--vocab-size", "300", "-o", "m.bpe"])
    from bpetrain.cli import _given

    assert _given(args, ("pat_str", "min_frequency", "tie_break", "documents", "text_field", "num_threads")) == {}


def test_a_disallowed_special_token_error_carries_the_token():
    """The command line reads the token from the exception, not from its message, which is
    tiktoken's word for word."""
    import pickle

    pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    from helpers import openai_encodings

    from bpetrain.encoding.errors import DisallowedSpecialTokenError

    ours, theirs = openai_encodings("cl100k_base")
    with pytest.raises(ValueError) as want:
        theirs.encode("a <|endoftext|> b")
    with pytest.raises(DisallowedSpecialTokenError) as got:
        ours.encode("a <|endoftext|> b")
    assert got.value.token == "<|endoftext|>" and str(got.value) == str(want.value)
    again = pickle.loads(pickle.dumps(got.value))
    assert (again.token, str(again)) == (got.value.token, str(got.value))
