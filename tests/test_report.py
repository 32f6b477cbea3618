"""bpetrain report: the JSON numbers against independent encodes, the HTML page, the CLI checks."""
from __future__ import annotations

import html
import json
import re
import sys

import numpy as np
import pytest
from helpers import stdlib_text

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.cli import main
from bpetrain.report import build_report, read_texts, readable_token

#: Text with tokens that need escaping: HTML characters, control bytes, a special token string.
TRICKY = "<b>&amp;</b> \x01\x02\x01\x02 \"q\" 'a' <|endoftext|> \\\\ tab\tend\r\n"
REPORT_KEYS = {"bpetrain_version", "texts", "models"}
MODEL_KEYS = {"name", "n_vocab", "n_merges", "pat_str", "pattern_name", "special_tokens", "token_lengths",
              "longest_tokens", "compression", "compression_curve", "rarest_tokens", "training"}


@pytest.fixture(scope="module")
def corpus() -> str:
    return stdlib_text(40_000).decode("utf-8", "replace") + TRICKY * 40


@pytest.fixture(scope="module")
def files(corpus, tmp_path_factory):
    """A trained model (bpetrain file), a second one (tiktoken rank file without sidecar), two texts."""
    root = tmp_path_factory.mktemp("report")
    trainer = BpeTrainer(420, pat_str="cl100k", special_tokens=["<|endoftext|>"], show_progress=False)
    tokenizer = trainer.train_from_iterator([corpus])
    tokenizer.save(root / "model.bpe")
    other = BpeTrainer(330, pat_str="gpt2", show_progress=False).train_from_iterator([corpus[::-1]])
    ranks = root / "other.tiktoken"
    other.save_tiktoken(ranks)
    (root / "other.tiktoken.json").unlink()
    half = len(corpus) // 2
    (root / "a.txt").write_text(corpus[:half], encoding="utf-8")
    (root / "b.txt").write_text(corpus[half:], encoding="utf-8")
    return {"root": root, "model": root / "model.bpe", "compare": ranks, "texts": [root / "a.txt", root / "b.txt"],
            "tokenizer": tokenizer, "other": other, "stats": trainer.stats}


def _report_json(files, capsys, *extra) -> dict:
    argv = ["report", str(files["model"]), "--text", *map(str, files["texts"]), "--json", "-", *extra]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_and_numbers_agree_with_the_reference_encoder(files, capsys):
    report = _report_json(files, capsys, "--compare", str(files["compare"]), "--compare-pat-str", "gpt2")
    assert set(report) == REPORT_KEYS
    assert [set(m) for m in report["models"]] == [MODEL_KEYS, MODEL_KEYS]
    texts = [p.read_bytes().decode("utf-8") for p in files["texts"]]  # no newline translation
    for model, tokenizer in zip(report["models"], (files["tokenizer"], files["other"])):
        # the pure-Python reference encoder, independent of the compiled one the report uses
        n_tokens = [len(tokenizer.encode_ordinary(t)) for t in texts]
        n_bytes = sum(len(t.encode("utf-8")) for t in texts)
        n_words = sum(len(t.split()) for t in texts)
        c = model["compression"]
        assert (c["n_bytes"], c["n_words"], c["n_tokens"]) == (n_bytes, n_words, sum(n_tokens))
        assert c["bytes_per_token"] == pytest.approx(n_bytes / sum(n_tokens))
        assert c["tokens_per_word"] == pytest.approx(sum(n_tokens) / n_words)
        assert [t["n_tokens"] for t in c["per_text"]] == n_tokens
        assert model["n_merges"] == len(tokenizer.merges) and model["n_vocab"] == tokenizer.n_vocab
        assert sum(model["token_lengths"]["n_tokens"]) == 256 + len(tokenizer.merges)
        # the curve's last point is the whole model, its first the bytes alone
        curve = model["compression_curve"]
        assert curve["n_merges"][0] == 0 and curve["bytes_per_token"][0] == 1.0
        assert curve["n_merges"][-1] == len(tokenizer.merges)
        assert curve["bytes_per_token"][-1] == pytest.approx(c["bytes_per_token"])
        # a middle point against the reference with the first k merges
        k = curve["n_merges"][len(curve["n_merges"]) // 2]
        assert 0 < k < len(tokenizer.merges)
        truncated = Tokenizer(tokenizer.merges[:k], pat_str=tokenizer.pat_str, byte_ids=tokenizer.byte_ids)
        expected = n_bytes / sum(len(truncated.encode_ordinary(t)) for t in texts)
        assert curve["bytes_per_token"][curve["n_merges"].index(k)] == pytest.approx(expected)
        # token counts: the rarest used ones and the unused ones, against a count of the reference's ids
        counts = np.bincount([i for t in texts for i in tokenizer.encode_ordinary(t)], minlength=tokenizer.n_vocab)
        rarest = model["rarest_tokens"]
        assert rarest["n_unused"] == int((counts[256:256 + len(tokenizer.merges)] == 0).sum())
        assert [t["count"] for t in rarest["tokens"]] == [int(counts[t["id"]]) for t in rarest["tokens"]]
        assert all(t["count"] > 0 for t in rarest["tokens"]) and all(counts[t["id"]] == 0 for t in rarest["unused"])
    assert report["models"][0]["special_tokens"] == {"<|endoftext|>": 419}
    assert report["models"][1]["pattern_name"] == "gpt2"


def test_training_curve_counts_tokens_exactly(corpus):
    """Training's merge counts give, for every k, the token count of the text with the first k merges."""
    trainer = BpeTrainer(330, pat_str="cl100k", show_progress=False)
    tokenizer = trainer.train_from_iterator([corpus])
    training = build_report(tokenizer, stats=trainer.stats)["models"][0]["training"]
    curve = training["curve"]
    assert curve["n_merges"][-1] == len(tokenizer.merges)
    assert curve["bytes_per_token"][-1] == pytest.approx(trainer.stats.bytes_per_token)
    n_bytes = len(corpus.encode("utf-8"))
    assert trainer.stats.n_piece_bytes == n_bytes
    for k, value in zip(curve["n_merges"][::9], curve["bytes_per_token"][::9]):
        truncated = Tokenizer(tokenizer.merges[:k], pat_str=tokenizer.pat_str)
        assert value == pytest.approx(n_bytes / len(truncated.encode_ordinary(corpus))), k
    merge_counts = training["merge_counts"]
    assert merge_counts["k"][0] == 1 and merge_counts["k"][-1] == len(tokenizer.merges)
    assert merge_counts["merge_count"] == [int(trainer.stats.merge_counts[k - 1]) for k in merge_counts["k"]]


def test_html_is_self_contained_with_figures_and_escaped_tokens(files, tmp_path):
    pytest.importorskip("matplotlib", reason="the HTML report needs matplotlib (the report extra)")
    out = tmp_path / "report.html"
    argv = ["report", str(files["model"]), "--text", *map(str, files["texts"]),
            "--compare", str(files["compare"]), "--compare-pat-str", "gpt2", "-o", str(out)]
    assert main(argv) == 0
    page = out.read_text(encoding="utf-8")
    assert not re.search(r"https?:", page) and "<link" not in page and "<script" not in page
    assert not re.search(r'src="(?!data:image/png;base64,)', page)
    assert len(re.findall(r'<img alt="" src="data:image/png;base64,', page)) == 2  # compression, lengths
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", page), "raw control bytes in the page"
    assert "&lt;|endoftext|&gt;" in page and "<|endoftext|>" not in page
    report = build_report(Tokenizer.load(files["model"]), texts=read_texts(files["texts"]))
    model = report["models"][0]
    shown = model["longest_tokens"] + model["rarest_tokens"]["tokens"] + model["rarest_tokens"]["unused"]
    for token in shown:
        escaped = html.escape(token["token"]).replace(" ", '<span class="sp">\u2423</span>')
        assert f'<code class="tok">{escaped}</code>' in page
    tricky = [t["token"] for t in shown if set(t["token"]) & set("<>&\"'\\")]
    assert tricky, "the fixture should give a listed token with a character to escape"
    assert not list(files["root"].glob(".report.html.*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_train_report_has_the_training_curve(tmp_path, corpus):
    pytest.importorskip("matplotlib", reason="the HTML report needs matplotlib (the report extra)")
    text = tmp_path / "c.txt"
    text.write_text(corpus, encoding="utf-8")
    out = tmp_path / "r.html"
    assert main(["train", str(text), "--vocab-size", "300", "-o", str(tmp_path / "m.bpe"), "-q", "--report", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "on its training text" not in page  # a legend inside the PNG, not page text
    assert "<h2>Training</h2>" in page and page.count("data:image/png;base64,") == 3  # + the merge counts


def test_missing_matplotlib_gives_how_to_install(files, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    out = tmp_path / "r.html"
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(files["model"]), "-o", str(out)])
    assert exit_info.value.code == 2
    assert "pip install 'bpetrain[report]'" in capsys.readouterr().err
    assert not out.exists()
    corpus = tmp_path / "c.txt"
    corpus.write_text("some text " * 50, encoding="utf-8")
    with pytest.raises(SystemExit):  # before training
        main(["train", str(corpus), "--vocab-size", "260", "-o", str(tmp_path / "m"), "-q", "--report", str(out)])
    assert "bpetrain[report]" in capsys.readouterr().err and not (tmp_path / "m").exists()
    assert main(["report", str(files["model"]), "--json", str(tmp_path / "r.json")]) == 0  # JSON needs no plots
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["models"][0]["compression"] is None


@pytest.mark.parametrize("option", ["-o", "--json"])
def test_bad_output_path_fails_before_reading_input(tmp_path, capsys, option):
    bad = tmp_path / "no-such-folder" / "r.out"
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "absent.bpe"), "--text", str(tmp_path / "absent.txt"), option, str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"cannot write {bad}" in err and "absent" not in err.replace(str(bad), "")


def test_train_bad_report_path_fails_before_training(tmp_path, capsys):
    bad = tmp_path / "no-such-folder" / "r.html"
    with pytest.raises(SystemExit):
        main(["train", str(tmp_path / "absent.txt"), "--vocab-size", "300", "-o", str(tmp_path / "m"),
              "--report", str(bad)])
    assert f"cannot write {bad}" in capsys.readouterr().err


def test_report_needs_an_output(files, capsys):
    with pytest.raises(SystemExit):
        main(["report", str(files["model"])])
    assert "-o REPORT.html" in capsys.readouterr().err


@pytest.mark.parametrize(
    "token, shown",
    [
        (b" the", " the"),
        (b"a\nb\tc\r", "a\\nb\\tc\\r"),
        (b"\\n", "\\\\n"),  # a real backslash is doubled, so it is not read as an escape
        (b"\x00\x1b[0m\x7f", "\\x00\\x1b[0m\\x7f"),
        ("é中🙂".encode(), "é中🙂"),
        ("中".encode()[:2], "\\xe4\\xb8"),  # a character cut in the middle
        (b"\xff\xfe", "\\xff\\xfe"),
        ("a\u200bb\u2028\u0085".encode(), "a\\u200bb\\u2028\\u0085"),  # zero-width space, line separator, NEL
        ("\u00a0\u3000".encode() + b"\xa0", "\\u00a0\\u3000\\xa0"),  # no-break spaces, and the byte 0xa0
        ("\U000f0000".encode(), "\\U000f0000"),  # private use, above U+FFFF
    ],
)
def test_readable_token(token, shown):
    assert readable_token(token) == shown


def test_html_escapes_control_characters_of_every_string(tmp_path):
    """Special tokens and model names went into the page raw (NUL, ESC, U+202E: "\u202egnp.exe"
    renders as "exe.png") though merge tokens were escaped; now every string from the
    model or the user is escaped the same way (readable_text)."""
    pytest.importorskip("matplotlib", reason="the HTML report needs matplotlib (the report extra)")
    from bpetrain.report import readable_text, write_html

    hostile = ["\x00nul", "\x1b[31mred", "\u202egnp.exe", "a\\x00b"]
    tokenizer = Tokenizer([(97, 98)], pat_str="\\p{L}+|\x1b", special_tokens={s: 257 + i for i, s in enumerate(hostile)})
    report = build_report(tokenizer, name="m\u202e\x1b.bpe", compare=tokenizer, compare_name="\u2066other\x7f")
    write_html(report, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]", page)
    for shown in ["\\x00nul", "\\x1b[31mred", "\\u202egnp.exe", "a\\\\x00b", "m\\u202e\\x1b.bpe", "\\u2066other\\x7f",
                  "\\p{L}+|\\x1b"]:  # the pattern's own backslashes stay single: it is a regex
        assert html.escape(shown) in page, shown
    assert readable_text("\u202e\\") == "\\u202e\\\\" and readable_text("\\d\x1b", regex=True) == "\\d\\x1b"
