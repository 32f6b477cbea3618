"""BpeTrainer's training options against the reference and the peers: max_token_length,
tie_break="hf" (Hugging Face's tie order), base= (extending a vocabulary), unknown options."""
from __future__ import annotations

import json

import pytest
from helpers import (
    CORPORA,
    MULTILINGUAL,
    SPLIT_PATTERNS,
    VOCABS,
    random_corpus,
    require,
    stdlib_text,
)

from bpetrain import (
    PATTERNS,
    BasePatternWarning,
    BpeTrainer,
    Tokenizer,
    _reference,
    load_tiktoken,
)
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


def texts_for(name, pattern):
    """``TEXTS[name]``; in raw mode the stdlib text is cut to 30 KB (the reference is slow
    on one long piece)."""
    return [TEXTS[name][0][:30_000]] if pattern is None and name == "stdlib" else TEXTS[name]


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
    texts = texts_for(name, pattern)
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
    texts = texts_for(name, pattern)
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


def hf_merges(texts, vocab_size, pat_str, min_frequency, **options):
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
        **options,
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


def test_hf_tie_break_counts_special_tokens_like_tokenizers():
    """Both count special tokens in ``vocab_size`` (Hugging Face gives them the first ids)."""
    specials = ["<|endoftext|>", "<pad>"]
    expected = hf_merges(TEXTS["stdlib"], 256 + 300, SPLIT_PATTERNS["gpt2"], 2, special_tokens=specials)
    tok = trainer(256 + 300, pat_str="gpt2", tie_break="hf", special_tokens=specials).train_from_iterator(TEXTS["stdlib"])
    assert len(expected) == 298 and tokenizer_bytes(tok) == expected


@pytest.mark.parametrize("name", ["stdlib", "ties"])
@pytest.mark.parametrize("hf_max", [1, 2, 3, 4, 6])
def test_hf_max_token_length_is_ours_minus_one(name, hf_max):
    """Hugging Face's ``max_token_length=N`` counts a new pair only when its token would be
    shorter than N (``Word::merge`` in ``tokenizers/src/models/bpe/word.rs``) and always
    counts the byte pairs: bpetrain's ``max_token_length=max(N - 1, 2)``."""
    texts = TEXTS[name]
    expected = hf_merges(texts, 256 + 400, SPLIT_PATTERNS["gpt2"], 2, max_token_length=hf_max)
    with pytest.warns() if len(expected) < 400 else _no_warning():
        tok = trainer(256 + 400, pat_str="gpt2", tie_break="hf", max_token_length=max(hf_max - 1, 2)).train_from_iterator(
            texts
        )
    assert tokenizer_bytes(tok) == expected


@pytest.fixture(scope="module")
def mix_docs():
    """4 MB of mix-10M, cut into documents at blank lines."""
    data = require(CORPORA / "mix-10M.txt", "build it with ../shared/corpora/build.sh").read_bytes()[:4_000_000]
    return data.decode("utf-8", "ignore").split("\n\n")


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_hf_tie_break_matches_tokenizers_on_real_text(mix_docs, pattern):
    expected = hf_merges(mix_docs, 256 + 4000, SPLIT_PATTERNS[pattern], 2)
    tok = trainer(256 + 4000, pat_str=pattern, tie_break="hf").train_from_iterator(mix_docs)
    assert tokenizer_bytes(tok) == expected


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, alphabet, n_docs, max_len",
    [(1, "ab ", 2000, 40), (2, "abc de", 3000, 30), (3, "ab", 500, 200), (4, "\x00\xff é!~\nq", 3000, 20)],
)
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_hf_tie_break_matches_tokenizers_on_ties(seed, alphabet, n_docs, max_len, pattern):
    texts = random_corpus(seed, n_docs, alphabet, max_len)
    expected = hf_merges(texts, 256 + 3000, SPLIT_PATTERNS[pattern], 2)
    with pytest.warns() if len(expected) < 3000 else _no_warning():
        tok = trainer(256 + 3000, pat_str=pattern, tie_break="hf").train_from_iterator(texts)
    assert tokenizer_bytes(tok) == expected


@pytest.mark.slow
@pytest.mark.parametrize("max_token_length", [3, 8])
def test_max_token_length_matches_reference_on_real_text(mix_docs, max_token_length):
    texts = mix_docs[: len(mix_docs) // 8]
    expected = _reference.train(texts, 600, PATTERNS["cl100k"], min_frequency=2, max_token_length=max_token_length)
    assert trainer(256 + 600, max_token_length=max_token_length).train_from_iterator(texts).merges == expected


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --------------------------------------------------------------------------- base=


@pytest.fixture(scope="module")
def full_models():
    """Models trained from the bytes on the stdlib text: (pattern, tie_break) -> Tokenizer."""
    texts = TEXTS["stdlib"]
    return {
        (pattern, tie_break): trainer(256 + 500, pat_str=pattern, tie_break=tie_break).train_from_iterator(texts)
        for pattern in ("gpt2", None)
        for tie_break in ("rustbpe", "hf")
    }


@pytest.mark.parametrize("pattern", ["gpt2", None])
@pytest.mark.parametrize("tie_break", ["rustbpe", "hf"])
@pytest.mark.parametrize("k", [0, 1, 37, 250, 499, 500])
def test_extending_a_prefix_of_a_model_gives_the_model(full_models, pattern, tie_break, k):
    """The first k merges of a model trained on X, extended on X, give the whole model."""
    full = full_models[pattern, tie_break]
    base = Tokenizer(full.merges[:k], pat_str=full.pat_str, byte_ids=full.byte_ids)
    extended = trainer(256 + 500).train_from_iterator(TEXTS["stdlib"], base=base)
    assert extended.merges == full.merges
    assert extended.byte_ids == full.byte_ids and extended.pat_str == full.pat_str


@pytest.mark.parametrize("name", ["ties", "ties-bytes", "repeat", "invalid-utf8", "multilingual"])
@pytest.mark.parametrize("max_token_length", [None, 4])
def test_extending_matches_reference(full_models, name, max_token_length):
    """A base trained on other text, extended on ``name``: the reference's rule 7."""
    base = full_models["gpt2", "rustbpe"]
    ranks = base.mergeable_ranks
    assert len(ranks) == 256 + len(base.merges)  # no duplicates: the reference numbers by ranks
    n_merges = 120
    expected = _reference.train(
        TEXTS[name], n_merges, base.pat_str, min_frequency=2, base=ranks, max_token_length=max_token_length
    )
    with pytest.warns() if len(expected) < n_merges else _no_warning():
        extended = trainer(len(ranks) + n_merges, max_token_length=max_token_length).train_from_iterator(
            TEXTS[name], base=base
        )
    assert extended.merges[: len(base.merges)] == base.merges
    assert extended.merges[len(base.merges) :] == expected


def test_extending_with_special_tokens_gives_them_the_last_ids(full_models):
    base = full_models["gpt2", "rustbpe"]
    extended = trainer(256 + 500 + 20 + 1, special_tokens=["<|end|>"]).train_from_iterator(
        TEXTS["multilingual"] + ["<|end|>"], base=base
    )
    assert len(extended.merges) == 500 + 20
    assert extended.special_tokens == {"<|end|>": 256 + 520}


def test_base_from_encoding_and_from_files(full_models, tmp_path):
    base = full_models["gpt2", "hf"]
    expected = trainer(256 + 560).train_from_iterator(TEXTS["multilingual"], base=base)
    base.save(tmp_path / "base.model")
    base.export(tmp_path / "base.tiktoken", format="tiktoken")
    base.export(tmp_path / "tokenizer.json", format="hf")
    base.export(tmp_path / "gpt2", format="gpt2")
    sources = [base.encoding(), *(tmp_path / name for name in ("base.model", "base.tiktoken", "tokenizer.json", "gpt2"))]
    for source in sources:
        assert trainer(256 + 560).train_from_iterator(TEXTS["multilingual"], base=source).merges == expected.merges


def test_base_pattern_is_used_unless_given(full_models):
    raw = full_models[None, "rustbpe"]
    assert trainer(256 + 510).train_from_iterator(TEXTS["multilingual"], base=raw).pat_str is None
    with pytest.warns(BasePatternWarning, match="leave pat_str out to use the base's"):
        tok = trainer(256 + 510, pat_str="gpt2").train_from_iterator(TEXTS["multilingual"], base=raw)
    assert tok.pat_str == PATTERNS["gpt2"]


def test_base_through_files_and_counts_files(full_models, tmp_path):
    base = full_models["gpt2", "rustbpe"]
    (tmp_path / "a.txt").write_text(MULTILINGUAL * 3)
    from_iterator = trainer(256 + 530).train_from_iterator([MULTILINGUAL * 3], base=base)
    assert trainer(256 + 530).train(tmp_path / "a.txt", base=base).merges == from_iterator.merges
    counter = trainer(256 + 530).count(tmp_path / "a.txt", base=base)
    assert counter.pat_str == base.pat_str
    counter.save(tmp_path / "a.npz")
    assert trainer(256 + 530).train_from_counts(tmp_path / "a.npz", base=base).merges == from_iterator.merges


@pytest.mark.parametrize(
    "kwargs, base, error, message",
    [
        ({"vocab_size": 300}, "model", ValueError, "below the base's 756 tokens"),
        ({"tie_break": "hf"}, "model", ValueError, "does not apply when extending a base"),
        ({}, 5, TypeError, "base must be a Tokenizer, an Encoding or the path of a model file, got int"),
    ],
)
def test_bad_base(full_models, kwargs, base, error, message):
    base = full_models["gpt2", "rustbpe"] if base == "model" else base
    kwargs = {"vocab_size": 900, **kwargs}
    with pytest.raises(error, match=message):
        BpeTrainer(show_progress=False, **kwargs).train_from_iterator(TEXTS["multilingual"], base=base)


@pytest.mark.slow  # 17 s: cl100k_base read, trained on, exported and read back three times
def test_extend_cl100k_encodes_like_tiktoken_and_round_trips(tmp_path):
    """cl100k_base extended on text it compresses badly; tiktoken with the extended ranks
    encodes like bpetrain, and the exports read back to the same merges."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    path = require(VOCABS / "cl100k_base.tiktoken", "the OpenAI vocabularies (set BPETRAIN_VOCABS)")
    domain = random_corpus(3, 400, "ŋʃʒθðæ ", 30) + [MULTILINGUAL]
    extended = trainer(100256 + 300, pat_str="cl100k").train_from_iterator(domain, base=path)
    assert len(extended.merges) == 100256 - 256 + 300
    theirs = tiktoken.Encoding(
        "extended", pat_str=extended.pat_str, mergeable_ranks=extended.mergeable_ranks, special_tokens={}
    )
    sample = "".join(domain[:50]) + MULTILINGUAL
    ours = extended.encoding()
    assert ours.encode(sample) == theirs.encode(sample)
    assert len(ours.encode(sample)) < len(load_tiktoken(path, pat_str="cl100k").encode(sample))
    for format in ("tiktoken", "hf", "gpt2"):
        extended.export(tmp_path / format, format=format)
        assert Tokenizer.from_file(tmp_path / format).merges == extended.merges


def test_cli_train_options(tmp_path):
    from bpetrain.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXTS["stdlib"][0][:50_000], encoding="utf-8")
    first, extended = tmp_path / "first.model", tmp_path / "extended.model"
    common = ["-q", "--pat-str", "gpt2", "--tie-break", "hf", "--max-token-length", "6"]
    assert main(["train", str(corpus), "--vocab-size", "300", "-o", str(first), *common]) == 0
    assert main(["train", str(corpus), "--vocab-size", "400", "-o", str(tmp_path / "full.model"), *common]) == 0
    assert main(["train", str(corpus), "--vocab-size", "400", "--base", str(first), "--max-token-length", "6",
                 "-o", str(extended), "-q"]) == 0
    full = Tokenizer.load(tmp_path / "full.model")
    assert Tokenizer.load(extended).merges == full.merges and Tokenizer.load(extended).pat_str == PATTERNS["gpt2"]
    assert max(len(t) for t in full.vocab.values()) <= 6


def test_hf_tie_break_matches_tokenizers_files_with_documents_line(tmp_path):
    """Hugging Face's ``train(files)`` makes each line a document: ``tie_break="hf"`` learns its
    merges from files with ``documents="line"`` (as the option's documentation says), and
    not with whole files as documents."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    from tokenizers import Regex, models, pre_tokenizers, trainers

    from bpetrain.formats._vocab import str_to_token

    path = tmp_path / "code.txt"
    path.write_text(stdlib_text(200_000).decode("utf-8", "replace"), encoding="utf-8")
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(hf_pattern(PATTERNS["gpt2"])), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf.train([str(path)], trainer=trainers.BpeTrainer(vocab_size=256 + 300, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    expected = [tuple(str_to_token(part, "hf") for part in (m.split(" ") if isinstance(m, str) else m))
                for m in json.loads(hf.to_str())["model"]["merges"]]
    by_line = trainer(256 + 300, pat_str="gpt2", tie_break="hf").train([path], documents="line")
    by_file = trainer(256 + 300, pat_str="gpt2", tie_break="hf").train([path])
    assert tokenizer_bytes(by_line) == expected
    assert tokenizer_bytes(by_file) != expected
