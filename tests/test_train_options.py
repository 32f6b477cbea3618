"""BpeTrainer's training options against the reference and the peers: max_token_length,
tie_break="hf" (Hugging Face's tie order), unknown options."""
from __future__ import annotations

import pytest
from helpers import MULTILINGUAL, SPLIT_PATTERNS, random_corpus, stdlib_text

from bpetrain import PATTERNS, BpeTrainer, _reference
from bpetrain.formats.hf import hf_pattern


def trainer(vocab_size, **kwargs):
    return BpeTrainer(vocab_size, show_progress=False, **kwargs)


def merged_bytes(merges, byte_ids=range(256)):
    """Merges as pairs of token bytes (independent of how the bytes are numbered)."""
    vocab = {token_id: bytes([b]) for b, token_id in enumerate(byte_ids)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    return [(vocab[a], vocab[b]) for a, b in merges]


def tokenizer_bytes(tok):
    return merged_bytes(tok.merges, tok.byte_ids)


STDLIB = stdlib_text(120_000).decode("utf-8", "surrogateescape")
#: Texts of every kind the tests train on: real, tie-heavy, one long repeat, invalid UTF-8.
TEXTS = {
    "stdlib": [STDLIB],
    "multilingual": [MULTILINGUAL * 3],
    "ties": random_corpus(7, 300, "ab c", 12),
    "ties-bytes": random_corpus(8, 200, "\x00 é!~\n", 9),
    "repeat": ["a" * 10**5],
    "invalid-utf8": [b"\xff\xfe abc \x80\x80\x80 abc \xff" * 20],
}


# ----------------------------------------------------------------- unknown options


@pytest.mark.parametrize("kwargs, named", [({"vocab": 5}, "vocab"), ({"limit_alphabet": 3, "foo": 1}, "foo, limit_alphabet")])
def test_unknown_options_are_named(kwargs, named):
    with pytest.raises(TypeError, match=f"unknown options? {named}; the options are vocab_size, pat_str"):
        BpeTrainer(300, **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"max_token_length": 0}, ValueError, "max_token_length must be >= 1"),
        ({"max_token_length": 2.0}, TypeError, "max_token_length must be an int"),
        ({"tie_break": "HF"}, ValueError, "tie_break must be one of 'rustbpe', 'hf'"),
    ],
)
def test_bad_option_values(kwargs, error, message):
    with pytest.raises(error, match=message):
        BpeTrainer(300, **kwargs)


# ---------------------------------------------------------------- max_token_length


@pytest.mark.parametrize("name", list(TEXTS))
@pytest.mark.parametrize("pattern", ["cl100k", None])
@pytest.mark.parametrize("max_token_length", [1, 2, 3, 5])
def test_max_token_length_matches_reference(name, pattern, max_token_length):
    texts = TEXTS[name]
    n_merges = 200
    expected = _reference.train(
        texts, n_merges, PATTERNS.get(pattern), min_frequency=2, max_token_length=max_token_length
    )
    with pytest.warns() if len(expected) < n_merges else _no_warning():
        tok = trainer(256 + n_merges, pat_str=pattern, max_token_length=max_token_length).train_from_iterator(texts)
    assert tok.merges == expected
    assert max(len(token) for token in tok.vocab.values()) <= max_token_length
    if max_token_length == 1:
        assert expected == []


def test_max_token_length_only_removes_long_tokens():
    """A limit above every learned token's length changes nothing."""
    texts = TEXTS["stdlib"]
    plain = trainer(600).train_from_iterator(texts)
    longest = max(len(t) for t in plain.vocab.values())
    assert trainer(600, max_token_length=longest).train_from_iterator(texts).merges == plain.merges
    assert trainer(600, max_token_length=longest - 1).train_from_iterator(texts).merges != plain.merges


# ------------------------------------------------------------------ tie_break="hf"


@pytest.mark.parametrize("name", list(TEXTS))
@pytest.mark.parametrize("pattern", ["gpt2", None])
def test_hf_tie_break_matches_reference(name, pattern):
    texts = TEXTS[name]
    n_merges = 150
    expected = _reference.train(texts, n_merges, PATTERNS.get(pattern), min_frequency=2, tie_break="hf")
    with pytest.warns() if len(expected) < n_merges else _no_warning():
        tok = trainer(256 + n_merges, pat_str=pattern, tie_break="hf").train_from_iterator(texts)
    assert tokenizer_bytes(tok) == merged_bytes(expected)
    assert tok.byte_ids[ord("!")] == 0 and tok.byte_ids[ord(" ")] == 220  # Hugging Face's (and GPT-2's) ids


def test_hf_tie_break_differs_from_default_on_ties():
    texts = TEXTS["ties-bytes"]
    ours = tokenizer_bytes(trainer(300).train_from_iterator(texts))
    hf = tokenizer_bytes(trainer(300, tie_break="hf").train_from_iterator(texts))
    assert ours != hf


def hf_merges(texts, vocab_size, pat_str, min_frequency):
    """The merges Hugging Face ``tokenizers`` learns, as pairs of token bytes."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    from tokenizers import Regex, models, pre_tokenizers, trainers

    from bpetrain.formats._vocab import str_to_token

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(hf_pattern(pat_str)), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf_trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    hf.train_from_iterator(texts, trainer=hf_trainer)
    import json

    merges = json.loads(hf.to_str())["model"]["merges"]
    return [tuple(str_to_token(part, "hf") for part in (m.split(" ") if isinstance(m, str) else m)) for m in merges]


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
@pytest.mark.parametrize("name", ["stdlib", "multilingual", "ties"])
@pytest.mark.parametrize("min_frequency", [0, 2, 5])
def test_hf_tie_break_matches_tokenizers(pattern, name, min_frequency):
    texts = TEXTS[name]
    vocab_size = 256 + 400
    expected = hf_merges(texts, vocab_size, SPLIT_PATTERNS[pattern], min_frequency)
    with pytest.warns() if len(expected) < 400 else _no_warning():
        tok = trainer(vocab_size, pat_str=pattern, min_frequency=min_frequency, tie_break="hf").train_from_iterator(
            texts
        )
    assert tokenizer_bytes(tok) == expected


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
