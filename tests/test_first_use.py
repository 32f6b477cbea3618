"""What a new user hit, tried as a new user would: each case fails on the code before its fix."""
from __future__ import annotations

import ast
import json
import re
import sys

import pytest
from helpers import MULTILINGUAL, run_bpetrain, stdlib_text

import bpetrain
from bpetrain import PATTERNS, BpeTrainer, Encoding, Tokenizer
from bpetrain.cli import main
from bpetrain.report import build_report
from bpetrain.splitting.pattern import SplitPattern


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("first-use")
    text = stdlib_text(150_000).decode("utf-8", "replace") + MULTILINGUAL
    (root / "corpus.txt").write_text(text, encoding="utf-8")
    return root, text


# ------------------------------------------------------- extending with --base


def test_extending_reports_the_extended_models_compression(corpus, tmp_path, capsys):
    """The summary, --json and the report's curve start from the text as the base encodes it
    (they started from its bytes: 1.016 bytes/token for a model that gives 3.95)."""
    root, text = corpus
    base = BpeTrainer(256 + 600, show_progress=False).train_from_iterator([text])
    base.save(tmp_path / "base.bpe")
    assert main(["train", str(root / "corpus.txt"), "--base", str(tmp_path / "base.bpe"), "--vocab-size",
                 str(256 + 650), "-o", str(tmp_path / "ext.bpe"), "-q", "--json"]) == 0
    out, err = capsys.readouterr()
    stats = json.loads(out)
    extended = Tokenizer.load(tmp_path / "ext.bpe")
    n_bytes = len(text.encode("utf-8"))
    assert stats["n_start_tokens"] == len(base.encode_ordinary(text))
    assert stats["n_tokens"] == len(extended.encode_ordinary(text))
    assert stats["bytes_per_token"] == pytest.approx(n_bytes / len(extended.encode_ordinary(text)))
    assert f"compression {n_bytes / len(extended.encode_ordinary(text)):.3f} bytes/token" in err
    trainer = BpeTrainer(256 + 650, show_progress=False)
    trainer.train_from_iterator([text], base=base)
    curve = build_report(extended, stats=trainer.stats)["models"][0]["training"]["curve"]
    assert curve["n_vocab"][0] == 256 + 600 and curve["n_vocab"][-1] == 256 + 650  # the axis: the base's size on
    assert curve["bytes_per_token"][0] == pytest.approx(n_bytes / len(base.encode_ordinary(text)))
    assert curve["bytes_per_token"][-1] == pytest.approx(trainer.stats.bytes_per_token)


# ------------------------------------------------------------------ counts files


def test_a_counts_file_given_as_text_points_to_counts(corpus, tmp_path, capsys):
    root, _ = corpus
    assert main(["count", str(root / "corpus.txt"), "-o", str(tmp_path / "part1.npz"), "-q"]) == 0
    with pytest.raises(SystemExit) as exit_info:
        main(["train", str(tmp_path / "part1.npz"), "--vocab-size", "300", "-o", str(tmp_path / "m.bpe"), "-q"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "part1.npz is a counts file" in err and "bpetrain train --counts" in err
    assert not (tmp_path / "m.bpe").exists()
    with pytest.raises(ValueError, match=r"part1.npz is a counts file .* train_from_counts \(bpetrain train --counts"):
        BpeTrainer(300).train([tmp_path / "part1.npz"])


def test_train_counts_takes_the_pattern_and_special_tokens_of_the_counts_file(corpus, tmp_path, capsys):
    root, text = corpus
    assert main(["count", str(root / "corpus.txt"), "--pat-str", "gpt2", "--special-token", "<|endoftext|>",
                 "-o", str(tmp_path / "c.npz"), "-q"]) == 0
    assert main(["train", "--counts", str(tmp_path / "c.npz"), "--vocab-size", "400", "-o", str(tmp_path / "m.bpe"),
                 "-q"]) == 0
    model = Tokenizer.load(tmp_path / "m.bpe")
    assert model.pat_str == PATTERNS["gpt2"] and model.special_tokens == {"<|endoftext|>": 399}
    expected = BpeTrainer(400, pat_str="gpt2", special_tokens=["<|endoftext|>"], show_progress=False)
    assert model == expected.train([root / "corpus.txt"])
    capsys.readouterr()
    # told otherwise: the mismatch names the two patterns, not two regexes
    with pytest.raises(SystemExit):
        main(["train", "--counts", str(tmp_path / "c.npz"), "--vocab-size", "400", "--pat-str", "cl100k",
              "-o", str(tmp_path / "m2.bpe"), "-q"])
    err = capsys.readouterr().err
    assert "was counted with pat_str='gpt2', but this trainer has pat_str='cl100k'" in err
    assert PATTERNS["gpt2"] not in err and not (tmp_path / "m2.bpe").exists()


# ------------------------------------------------------------------ pattern names


@pytest.mark.parametrize("name", ["minbpe", "nanochat", "llama3"])
def test_every_pattern_the_package_knows_is_a_name_everywhere(name, corpus, tmp_path):
    root, text = corpus
    assert name in PATTERNS
    pat_str = PATTERNS[name]
    assert BpeTrainer(300, pat_str=name).pat_str == pat_str
    assert Tokenizer([], pat_str=name).pat_str == pat_str
    assert Encoding("e", pat_str=name, mergeable_ranks={bytes([b]): b for b in range(256)})._pat_str == pat_str
    assert main(["train", str(root / "corpus.txt"), "--pat-str", name, "--vocab-size", "300",
                 "-o", str(tmp_path / "m.bpe"), "-q"]) == 0
    assert Tokenizer.load(tmp_path / "m.bpe").pat_str == pat_str


def test_the_benchmarks_use_the_packages_pattern_names():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "benchmarks"))
    try:
        pytest.importorskip("regex")
        from splitting import SPLIT_PATTERNS
    finally:
        sys.path.pop(0)
    assert all(PATTERNS[name] == pat_str for name, pat_str in SPLIT_PATTERNS.items())


# -------------------------------------------------------------------------- reprs


LONG = r"""(?:\p{Lu}\p{Ll}+|\p{N}{1,4}|[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"""


@pytest.mark.parametrize("make", [
    lambda p: Tokenizer([], pat_str=p),
    lambda p: BpeTrainer(300, pat_str=p),
    lambda p: SplitPattern(PATTERNS.get(p, p)),
])
def test_reprs_name_a_named_pattern_and_never_cut_an_escape(make):
    assert "'cl100k'" in repr(make("cl100k")) and "\\p{L}" not in repr(make("cl100k"))
    shown = repr(make(LONG))
    literal = re.search(r"""('(?:[^'\\]|\\.)*')\.\.\.""", shown)
    assert literal, shown
    assert LONG.startswith(ast.literal_eval(literal.group(1)))  # a whole Python literal, cut before escaping
    assert f"({len(LONG)} characters)" in shown


# -------------------------------------------------------------------------- dir()


def test_dir_of_the_package_lists_public_names_only():
    names = dir(bpetrain)
    assert set(bpetrain.__all__) <= set(names) and "__version__" in names
    assert not {"TYPE_CHECKING", "annotations", "importlib", "kernels_missing"} & set(names)


# ----------------------------------------------------------------- progress bars


def test_progress_goes_to_logs_as_lines(corpus, tmp_path):
    """Where standard error is not a terminal, bars write whole lines, no carriage returns;
    ``report`` shows its progress too."""
    root, _ = corpus
    trained = run_bpetrain(["train", str(root / "corpus.txt"), "--vocab-size", "400", "-o", str(tmp_path / "m.bpe")],
                           check=True)
    assert "\r" not in trained.stderr
    assert re.search(r"^merging: 100%.*144/144", trained.stderr, re.M), trained.stderr
    reported = run_bpetrain(["report", str(tmp_path / "m.bpe"), "--text", str(root / "corpus.txt"),
                             "--json", str(tmp_path / "r.json")], check=True)
    assert "\r" not in reported.stderr and re.search(r"^report: \d+step", reported.stderr, re.M), reported.stderr
    quiet = run_bpetrain(["report", str(tmp_path / "m.bpe"), "--json", str(tmp_path / "r.json"), "-q"], check=True)
    assert quiet.stderr == ""


def test_train_from_shards_is_a_deprecated_spelling_of_train_from_counts():
    counts = {"hello": 5, " world": 3, " hello": 2}
    expected = BpeTrainer(262, show_progress=False).train_from_counts(counts)
    with pytest.warns(DeprecationWarning, match="use train_from_counts"):
        assert BpeTrainer(262, show_progress=False).train_from_shards(counts) == expected
