"""One way to name a model: every command and function that takes a model, on every kind of
reference (a model file of each format, folders, a recognised rank file, an encoding name),
and the pattern kept through every export."""
from __future__ import annotations

import hashlib
import json

import pytest
from helpers import MULTILINGUAL, VOCABS, require, stdlib_text

from bpetrain import BpeTrainer, Tokenizer, registry
from bpetrain.cli import main
from bpetrain.registry import ENCODINGS, EncodingSpec, VocabFile

SPECIALS = {"<|endoftext|>": 555}
#: Reference kind -> how the fixture's folder names it (a path below the folder, or the name).
REFERENCES = {
    "bpetrain": "model.bpe",
    "tiktoken+sidecar": "sidecar/model.tiktoken",
    "tiktoken recognised": "vocabs/test.tiktoken",
    "hf file": "hf/tokenizer.json",
    "hf folder": "hf",
    "gpt2 folder": "gpt2",
    "minbpe": "minbpe.model",
    "encoding name": "test",
}


@pytest.fixture(scope="module")
def text() -> str:
    return stdlib_text(60_000).decode("utf-8", "replace") + MULTILINGUAL


@pytest.fixture(scope="module")
def made(tmp_path_factory, text):
    """A trained tokenizer written as every kind of reference; the rank file without sidecar
    is the file of the encoding "test" (registered by :func:`models`)."""
    root = tmp_path_factory.mktemp("models")
    tokenizer = BpeTrainer(257 + 299, pat_str="gpt2", special_tokens=list(SPECIALS),
                           show_progress=False).train_from_iterator([text])
    assert tokenizer.special_tokens == SPECIALS
    tokenizer.save(root / "model.bpe")
    (root / "sidecar").mkdir()
    tokenizer.export(root / "sidecar" / "model.tiktoken", format="tiktoken")
    (root / "vocabs").mkdir()
    tokenizer.export(root / "vocabs" / "test.tiktoken", format="tiktoken")
    (root / "vocabs" / "test.tiktoken.json").unlink()
    tokenizer.export(f"{root}/hf/", format="hf")
    tokenizer.export(root / "gpt2", format="gpt2")
    tokenizer.export(root / "minbpe", format="minbpe")
    (root / "text.txt").write_text(text, encoding="utf-8")
    return root, tokenizer


@pytest.fixture
def models(made, monkeypatch):
    """The folder of :func:`made`, with the encoding "test" registered and its folder in $BPETRAIN_VOCABS."""
    root, tokenizer = made
    digest = hashlib.sha256((root / "vocabs" / "test.tiktoken").read_bytes()).hexdigest()
    monkeypatch.setitem(ENCODINGS, "test", EncodingSpec(
        "gpt2", (VocabFile("https://example.org/vocabs/test.tiktoken", digest),), SPECIALS))
    monkeypatch.setattr(registry, "_loaded", {})
    monkeypatch.setenv("BPETRAIN_VOCABS", str(root / "vocabs"))
    monkeypatch.chdir(root)  # "test" is no path here
    return root, tokenizer


@pytest.mark.parametrize("kind", REFERENCES)
def test_python_functions_take_every_reference(models, kind):
    root, tokenizer = models
    ref = REFERENCES[kind]
    assert Tokenizer.from_file(ref) == tokenizer
    assert Tokenizer.load(ref) == tokenizer
    extended = BpeTrainer(tokenizer.n_vocab + 20, show_progress=False).train_from_iterator(
        [(root / "text.txt").read_text(encoding="utf-8")], base=ref)
    assert extended.merges[: len(tokenizer.merges)] == tokenizer.merges and extended.pat_str == tokenizer.pat_str


@pytest.mark.parametrize("kind", REFERENCES)
def test_every_command_takes_every_reference(models, kind, capsysbinary, text):
    root, tokenizer = models
    ref = REFERENCES[kind]
    sample = text[:5000]
    (root / "sample.txt").write_text(sample, encoding="utf-8")
    # encode
    assert main(["encode", ref, "sample.txt", "--ids"]) == 0
    assert capsysbinary.readouterr().out.split() == [b"%d" % i for i in tokenizer.encode_ordinary(sample)]
    # inspect
    assert main(["inspect", ref, "--text", "def f(): return 1"]) == 0
    shown = capsysbinary.readouterr().out.decode()
    assert f"vocab size: {tokenizer.n_vocab:,}" in shown and "pattern: " + tokenizer.pat_str in shown
    # export
    out = root / f"out-{kind.replace(' ', '-')}.tiktoken"
    assert main(["export", ref, "--format", "tiktoken", "-o", str(out)]) == 0
    assert Tokenizer.from_file(out) == tokenizer
    # report, and --compare
    assert main(["report", ref, "--compare", ref, "--text", "sample.txt", "--json", "-"]) == 0
    report = json.loads(capsysbinary.readouterr().out)
    for model in report["models"]:
        assert model["n_vocab"] == tokenizer.n_vocab and model["pattern_name"] == "gpt2"
        assert model["special_tokens"] == SPECIALS
        assert model["compression"]["n_tokens"] == len(tokenizer.encode_ordinary(sample))
    # train --base
    model = root / f"extended-{kind.replace(' ', '-')}.bpe"
    assert main(["train", "text.txt", "--base", ref, "--vocab-size", str(tokenizer.n_vocab + 20), "-o", str(model),
                 "-q"]) == 0
    assert Tokenizer.from_file(model).merges[: len(tokenizer.merges)] == tokenizer.merges
    capsysbinary.readouterr()


def test_an_unknown_reference_says_what_a_model_is(models, capsys):
    with pytest.raises(FileNotFoundError, match="not an encoding name .*cl100k_base.*a folder of Hugging Face"):
        Tokenizer.from_file("cl100k")
    with pytest.raises(SystemExit):
        main(["inspect", "absent.bpe"])
    assert "absent.bpe: no such file or folder, and not an encoding name" in capsys.readouterr().err


def test_an_encoding_name_with_options_and_format(models):
    _, tokenizer = models
    assert registry.locate_model("test").encoding_name == "test"
    raw = Tokenizer.from_file("test", pat_str="none")
    assert raw.pat_str is None and raw.merges == tokenizer.merges
    assert registry.locate_model("test", pat_str="none").encoding_name is None
    with pytest.raises(ValueError, match="encoding of tiktoken files, not hf"):
        Tokenizer.from_file("test", format="hf")


def test_rank_file_recognised_by_its_hash(made, monkeypatch):
    """A rank file without sidecar whose SHA-256 is a registered encoding's gets that pattern and specials."""
    root, tokenizer = made
    path = root / "vocabs" / "test.tiktoken"
    with pytest.raises(ValueError, match="pat_str"):
        Tokenizer.from_file(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    spec = EncodingSpec("gpt2", (VocabFile("https://example.org/other.tiktoken", digest),), {"<|x|>": 600})
    monkeypatch.setitem(ENCODINGS, "test", spec)
    recognised = Tokenizer.from_file(path)
    assert recognised.special_tokens == {"<|x|>": 600} and recognised.merges == tokenizer.merges
    assert recognised.pat_str == tokenizer.pat_str
    assert Tokenizer.from_file(path, pat_str="none").pat_str is None  # an explicit pattern wins


def test_cl100k_is_recognised(monkeypatch):
    path = require(VOCABS / "cl100k_base.tiktoken", "OpenAI's cl100k_base rank file (set BPETRAIN_VOCABS)")
    tokenizer = Tokenizer.from_file(path)
    assert tokenizer.n_vocab == 100277 and tokenizer.special_tokens["<|endofprompt|>"] == 100276
    monkeypatch.setenv("BPETRAIN_VOCABS", str(VOCABS))
    assert Tokenizer.from_file("cl100k_base") == tokenizer  # by name, from the registry's folder


@pytest.mark.parametrize("pat_str", ["nanochat", None, r"\p{L}+|[^\p{L}]+"])
@pytest.mark.parametrize("format, path", [("tiktoken", "m.tiktoken"), ("hf", "m.json"), ("gpt2", "m"),
                                          ("minbpe", "m"), ("bpetrain", "m.bpe")])
def test_the_pattern_travels_with_every_export(tmp_path, text, format, path, pat_str):
    """Exported and read back without options, a model splits text as before (GPT-2's
    folder keeps the pattern in its record, which other libraries ignore)."""
    tokenizer = BpeTrainer(256 + 100, pat_str=pat_str, show_progress=False).train_from_iterator([text[:20000]])
    back = exported_and_read(tokenizer, tmp_path / path, format)
    assert back.pat_str == tokenizer.pat_str
    assert back.encode_ordinary(MULTILINGUAL) == tokenizer.encode_ordinary(MULTILINGUAL)


def exported_and_read(tokenizer: Tokenizer, target, format: str) -> Tokenizer:
    """``tokenizer`` written as ``format`` at ``target`` (saved, for bpetrain's model file) and read back."""
    if format == "bpetrain":
        tokenizer.save(target)
    else:
        tokenizer.export(target, format=format)
    return Tokenizer.from_file(target.with_suffix(".model") if format == "minbpe" else target)


def test_gpt2_folder_without_the_pattern_record_means_gpt2(tmp_path, text):
    tokenizer = BpeTrainer(256 + 50, pat_str="nanochat", show_progress=False).train_from_iterator([text[:20000]])
    tokenizer.export(tmp_path / "m", format="gpt2")
    record = tmp_path / "m" / ".bpetrain.json"
    manifest = json.loads(record.read_text(encoding="utf-8"))
    del manifest["pat_str"]  # as bpetrain wrote it before the pattern was recorded
    record.write_text(json.dumps(manifest), encoding="utf-8")
    assert Tokenizer.from_file(tmp_path / "m").pat_str == Tokenizer([], pat_str="gpt2").pat_str
    assert Tokenizer.from_file(tmp_path / "m", pat_str="nanochat").pat_str == tokenizer.pat_str


@pytest.mark.parametrize("format, path", [("tiktoken", "m.tiktoken"), ("hf", "m.json"), ("gpt2", "m"),
                                          ("bpetrain", "m.bpe")])
def test_a_pipeline_with_a_normalizer_travels_with_every_export_that_holds_it(tmp_path, text, format, path):
    """A pipeline of pre-tokenizers and its normalizer survive a round trip (minbpe, one
    regex a file, refuses them: test_pipeline)."""
    from bpetrain.splitting.pipeline import PreTokenizer

    pre = PreTokenizer.from_hf(
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "pre_tokenizer", {"type": "NFKC"}, "normalizer")
    tokenizer = BpeTrainer(256 + 100, pat_str=pre, show_progress=False).train_from_iterator([text[:20000]])
    back = exported_and_read(tokenizer, tmp_path / path, format)
    assert back.pat_str == tokenizer.pat_str
    sample = MULTILINGUAL + " ﬁ ① 2024"
    assert back.encode_ordinary(sample) == tokenizer.encode_ordinary(sample)
