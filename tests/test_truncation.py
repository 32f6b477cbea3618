"""Tokenizer.truncate and ``bpetrain export --vocab-size``: the model training to the size gives."""
from __future__ import annotations

import random
import re
import warnings

import pytest

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.cli import main
from bpetrain.encoding.added_tokens import AddedToken


def _corpora() -> dict[str, list[str]]:
    rng = random.Random(7)
    syllables = ["the", "n", "re", "o", "rem", "a", "an", "d", "über", "stra", "ße", "日本", "語", "x1", "ka", "mi", "to"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(400)]
    prose = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for _ in range(300)]
    code = [f"def f{i}(x):\n    return x ** {i % 7} + {i}\n" for i in range(200)]
    noise = ["".join(rng.choice("ab \n") for _ in range(rng.randint(1, 60))) for _ in range(200)]
    return {"prose": prose, "code": code, "noise": noise}


CORPORA = _corpora()


def _train(documents, vocab_size, base=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # VocabSizeNotReachedWarning where the text runs out
        return BpeTrainer(vocab_size, show_progress=False, **options).train_from_iterator(documents, base=base)


OPTIONS = [
    {},
    {"special_tokens": ["<|endoftext|>", "<pad>"]},
    {"min_frequency": 1},
    {"min_frequency": 5},
    {"max_token_length": 3},
    {"tie_break": "hf"},
    {"pat_str": None},
    {"pat_str": "gpt2", "special_tokens": ["<s>"], "min_frequency": 3, "max_token_length": 4},
]


@pytest.mark.parametrize("corpus", sorted(CORPORA))
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_truncate_equals_training_to_the_size(corpus, options):
    documents = CORPORA[corpus]
    n_special = len(options.get("special_tokens", ()))
    big = _train(documents, 700, **options)
    top = 256 + len(big.merges) + n_special
    assert top > 280  # room for several sizes on every corpus
    for size in sorted({256 + n_special, 257 + n_special, min(300, top), min(333, top), min(450, top), top}):
        expected = _train(documents, size, **options)
        truncated = big.truncate(size)
        assert truncated.merges == expected.merges, size
        assert truncated.special_tokens == expected.special_tokens
        assert truncated.byte_ids == expected.byte_ids
        assert truncated == expected


def test_truncate_extended_base():
    """A run that extends a base keeps the prefix property, above and below the base's size."""
    documents = CORPORA["prose"]
    base = _train(documents[:100], 300)
    big = _train(documents, 600, base=base)
    for size in (280, 300, 420, 600):
        expected = base.truncate(size) if size <= 300 else _train(documents, size, base=base)
        assert big.truncate(size) == expected


def test_truncate_keeps_pattern_bytes_order_and_encodes():
    tok = _train(CORPORA["prose"], 500, pat_str="gpt2", tie_break="hf", special_tokens=["<e>"])
    small = tok.truncate(320)
    assert small.pat_str == tok.pat_str and small.byte_ids == tok.byte_ids and small.unicode_version is tok.unicode_version
    assert small.special_tokens == {"<e>": 319} and small.n_vocab == 320
    text = "the theorem über straße<e>"
    ids = small.encode(text, allowed_special="all")
    assert small.decode(ids) == text and max(ids) < 320
    assert len(ids) >= len(tok.encode(text, allowed_special="all"))


def test_truncate_real_vocabulary_renumbers_its_special_tokens():
    path = "/work/shared/vocabs/cl100k_base.tiktoken"
    try:
        cl100k = Tokenizer.from_file(path)
    except FileNotFoundError:
        pytest.skip("cl100k_base.tiktoken is not on this machine")
    small = cl100k.truncate(1000)
    assert small.merges == cl100k.merges[:739] and small.byte_ids == cl100k.byte_ids
    assert list(small.special_tokens.values()) == [995, 996, 997, 998, 999]
    text = "hello world, the truncated vocabulary"
    ids = small.encode(text)
    assert small.decode(ids) == text and max(ids) < 995 and len(ids) > len(cl100k.encode(text))


@pytest.mark.parametrize(
    "size, message",
    [(256, "below the 256 bytes + 1 special tokens = 257"), (10**6, "above this tokenizer's"),
     (True, "must be an int")],
)
def test_truncate_errors(size, message):
    tok = _train(CORPORA["code"], 300, special_tokens=["<e>"])
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        tok.truncate(size)


def _hf_trained(documents, vocab_size, special_tokens=("<unk>", "<s>")):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(documents, trainer)
    return hf


def test_truncate_hugging_face_vocabulary_in_merge_order(tmp_path):
    """A tokenizer.json numbered as Hugging Face's trainer numbers it (special tokens, the
    alphabet, then the merges): truncation keeps the ids below the size, as training to it."""
    documents = CORPORA["prose"]
    big_path, small_path = tmp_path / "big.json", tmp_path / "small.json"
    _hf_trained(documents, 600).save(str(big_path))
    _hf_trained(documents, 400).save(str(small_path))
    big, small = Tokenizer.from_file(big_path), Tokenizer.from_file(small_path)
    assert big.tokens is not None  # the imported layout
    truncated = big.truncate(400)
    assert truncated.merges == small.merges and truncated.tokens == small.tokens
    assert truncated.special_tokens == small.special_tokens == {"<unk>": 0, "<s>": 1}


def test_truncate_refuses_imported_ids_out_of_merge_order():
    tokens = {i: bytes([i]) for i in range(256)}
    a, b, c = ord("a"), ord("b"), ord("c")
    tokens.update({900: b"ab", 800: b"abc"})  # the second merge's token has the smaller id
    tok = Tokenizer([(a, b), (900, c)], pat_str=None, tokens=tokens)
    with pytest.raises(ValueError, match="do not follow its merge order"):
        tok.truncate(257)
    tokens = {i: bytes([i]) for i in range(256) if i != 5}
    tokens.update({300: b"ab", 400: bytes([5])})  # a byte after the first merge
    tok = Tokenizer([(a, b)], pat_str=None, tokens=tokens)
    with pytest.raises(ValueError, match="which no merge makes"):
        tok.truncate(256)


def test_truncate_refuses_renumbering_ids_a_post_processor_names():
    tok = _train(CORPORA["code"], 300, special_tokens=["<s>"])
    origin = {"tokenizer.json": {"post_processor": {"type": "TemplateProcessing", "special_tokens": {}}}}
    tok = Tokenizer(tok.merges, pat_str=tok.pat_str, added_tokens=[AddedToken("<s>", 299)], origin=origin)
    with pytest.raises(ValueError, match="post_processor"):
        tok.truncate(280)
    assert tok.truncate(300) == tok


@pytest.mark.parametrize("format", ["tiktoken", "hf", "minbpe"])
def test_export_vocab_size(tmp_path, capsys, format):
    model = tmp_path / "model.bpe"
    tok = _train(CORPORA["prose"], 500, special_tokens=["<|endoftext|>"])
    tok.save(model)
    out = tmp_path / f"out.{format}"
    assert main(["export", str(model), "--format", format, "--vocab-size", "300", "-o", str(out)]) == 0
    assert "300 tokens" in capsys.readouterr().err
    back = Tokenizer.from_file(f"{out}.model" if format == "minbpe" else out, format=format)
    assert back.merges == tok.merges[:43] and back.special_tokens == {"<|endoftext|>": 299}


def test_export_vocab_size_error_writes_nothing(tmp_path, capsys):
    model = tmp_path / "model.bpe"
    _train(CORPORA["code"], 300).save(model)
    out = tmp_path / "out.tiktoken"
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(model), "--format", "tiktoken", "--vocab-size", "5000", "-o", str(out)])
    assert exit_info.value.code == 2
    assert "train to a larger size instead" in capsys.readouterr().err
    assert not out.exists()
