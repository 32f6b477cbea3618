"""Tokenizer: vocabulary, reference encode/decode, special tokens, model files."""
from __future__ import annotations

import os

import pytest
from helpers import MULTILINGUAL, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Tokenizer, _reference


@pytest.fixture(scope="module")
def tok():
    text = stdlib_text(400_000).decode("utf-8") + MULTILINGUAL * 10
    return BpeTrainer(256 + 500 + 2, special_tokens=["<|endoftext|>", "<|pad|>"], show_progress=False).train_from_iterator([text])


def test_vocab_ranks_and_specials(tok):
    assert len(tok.merges) == 500
    assert tok.special_tokens == {"<|endoftext|>": 756, "<|pad|>": 757}
    assert tok.n_vocab == 758
    for i, (a, b) in enumerate(tok.merges):
        assert tok.vocab[256 + i] == tok.vocab[a] + tok.vocab[b]
        assert tok.mergeable_ranks[tok.vocab[256 + i]] == 256 + i
    assert len(tok.mergeable_ranks) == 756
    assert tok.vocab[757] == b"<|pad|>"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_decode_encode_round_trip(tok, text):
    assert tok.decode(tok.encode_ordinary(text)) == text


def test_round_trip_adversarial(tok):
    for text in ["", "a" * 10**4, MULTILINGUAL, " " * 1000 + "\n" * 50]:
        assert tok.decode(tok.encode_ordinary(text)) == text
    # lone surrogates become U+FFFD, as in tiktoken and tok.encoding()
    assert tok.encode_ordinary("\udcff\udc80 raw") == tok.encoding().encode_ordinary("\udcff\udc80 raw")
    assert tok.decode(tok.encode_ordinary("\udcff\udc80 raw")) == "\ufffd\ufffd raw"


def _reference_ids(tok, text, allowed=()):
    merge_ids = {pair: 256 + i for i, pair in enumerate(tok.merges)}
    return _reference.encode(text, merge_ids, tok.pat_str, {s: tok.special_tokens[s] for s in allowed},
                             tok._byte_table)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \n.thé", max_size=80) | st.text(max_size=40))
def test_encode_is_compiled_and_equals_the_merges_applied_in_order(tok, text):
    assert tok._compiled[0] is not None
    assert tok.encode_ordinary(text) == _reference_ids(tok, text)
    marked = text + "<|endoftext|>" + text
    assert tok.encode(marked, allowed_special="all") == _reference_ids(tok, marked, ["<|endoftext|>"])


def test_encode_equals_reference_on_real_and_long_text(tok):
    real = stdlib_text(60_000).decode("utf-8")
    for text in [real, "a" * 10**4, "ab" * 3000, MULTILINGUAL, ""]:
        assert tok.encode_ordinary(text) == _reference_ids(tok, text)


def test_vocabulary_with_duplicate_bytes_falls_back_with_a_warning():
    # (97, 98) makes "ab" (256), (256, 99) "abc" (257), (98, 99) "bc" (258), (97, 258) "abc" again (259)
    dup = Tokenizer([(97, 98), (256, 99), (98, 99), (97, 258)], pat_str=None)
    with pytest.warns(RuntimeWarning, match="pure-Python reference.*spell the same bytes"):
        ids = dup.encode_ordinary("abcabc")
    assert ids == _reference_ids(dup, "abcabc") == [257, 257]


def test_decode_invalid_utf8_and_bad_ids(tok):
    assert tok.decode([0xFF, ord("a")]) == "\ufffda"
    assert tok.decode_bytes([0xFF]) == b"\xff"
    with pytest.raises(KeyError, match="token id 758 is not in the vocabulary"):
        tok.decode([1, 758])


@pytest.mark.parametrize("bad, error", [(758, KeyError), (10**6, KeyError), (-1, OverflowError),
                                        (2**32, OverflowError), (1.0, TypeError)])
def test_tokenizer_and_encoding_refuse_bad_ids_alike(tok, bad, error):
    # Encoding follows tiktoken (KeyError for an id that is no token); Tokenizer.decode agrees
    for decoder in (tok, tok.encoding()):
        with pytest.raises(error):
            decoder.decode([1, bad])
        with pytest.raises(error):
            decoder.decode_bytes([bad])


def test_special_tokens_follow_tiktoken_rules(tok):
    text = "hello <|endoftext|> world"
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
        tok.encode(text)
    ids = tok.encode(text, allowed_special={"<|endoftext|>"})
    assert 756 in ids and tok.decode(ids) == text
    assert 756 not in tok.encode(text, disallowed_special=())
    assert tok.encode(text, disallowed_special=()) == tok.encode_ordinary(text)
    with pytest.raises(ValueError, match="not special tokens"):
        tok.encode(text, allowed_special={"<|nope|>"})


def test_save_load_round_trip(tok, tmp_path):
    path = tmp_path / "model.bpe"
    tok.save(path)
    loaded = Tokenizer.load(path)
    assert loaded == tok
    assert loaded.encode(MULTILINGUAL) == tok.encode(MULTILINGUAL)
    assert os.listdir(tmp_path) == ["model.bpe"]


def test_raw_mode_model_round_trip(tmp_path):
    tok = BpeTrainer(266, pat_str=None, show_progress=False).train_from_iterator(["abcabcabd" * 20, "xyz" * 9])
    tok.save(tmp_path / "raw.bpe")
    assert Tokenizer.load(tmp_path / "raw.bpe") == tok
    assert tok.pat_str is None


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda lines: ["gpt2 model v1", *lines[1:]], "not a bpetrain model file"),
        (lambda lines: ["bpetrain model v9", *lines[1:]], "version 'v9' is not supported"),
        (lambda lines: [lines[0], "pat_str: [oops", *lines[2:]], ":2: pat_str:1: not valid JSON"),
        (lambda lines: lines[:10] + ["1 2 3"] + lines[11:], ":11: expected two token ids"),
        (lambda lines: lines[:-5] + [""], "announces 500 merges but the file holds 496"),
        (lambda lines: lines[:12] + ["9999 1"] + lines[13:], "merge 2 \\(9999, 1\\) names an id"),
        (lambda lines: lines[:4] + ['unicode: "unicode 16"'] + lines[5:], ':5: unicode must be "tiktoken", null or a table'),
        (lambda lines: lines[:4] + ['unicode: {"source": "x", "classes": {}}'] + lines[5:],
         ":5: unicode: a Unicode table needs the classes"),
    ],
)
def test_malformed_model_files(tok, tmp_path, mutate, message):
    path = tmp_path / "model.bpe"
    tok.save(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(mutate(lines)), encoding="utf-8")
    with pytest.raises(ValueError, match=message):  # the bpetrain reader's own message
        Tokenizer.from_file(path, format="bpetrain")
    with pytest.raises(ValueError, match="model.bpe:"):  # load reads any model: detected, and still named
        Tokenizer.load(path)


def test_failed_write_leaves_no_file(tok, tmp_path, monkeypatch):
    from bpetrain.formats import tiktoken

    def explode(*args):
        raise OSError("disk full")

    target = tmp_path / "ranks.tiktoken"
    monkeypatch.setattr(tiktoken.base64, "b64encode", explode)
    with pytest.raises(OSError, match="disk full"):
        tok.save_tiktoken(target)
    assert os.listdir(tmp_path) == []


def test_tokenizer_rejects_inconsistent_parts():
    with pytest.raises(ValueError, match="names an id"):
        Tokenizer([(97, 300)], pat_str=None)
    with pytest.raises(ValueError, match="which is a byte or merge id"):
        Tokenizer([(97, 98)], pat_str=None, special_tokens={"<s>": 256})
    with pytest.raises(ValueError, match="share id"):
        Tokenizer([], pat_str=None, special_tokens={"<s>": 300, "</s>": 300})


def test_tiktoken_rank_file_round_trip(tok, tmp_path):
    from bpetrain.formats.tiktoken import read_tiktoken

    path = tmp_path / "ranks.tiktoken"
    tok.save_tiktoken(path)
    assert read_tiktoken(path) == tok.mergeable_ranks


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "holds no tokens"),
        (b"YQ== 0\nYQ==\n", ":2: expected 'base64-token rank'"),
        (b"YQ== 0\nYg== x\n", ":2: expected 'base64-token rank'"),
        (b"YQ== 0\n!!!! 1\n", ":2: .*not valid base64"),
        (b"YQ== 0\nYQ== 1\n", ":2: token b'a' already has rank 0"),
        (b"YQ== 0\nYg== 0\n", ":2: rank 0 was already given on line 1"),
    ],
)
def test_malformed_tiktoken_rank_files(tmp_path, content, message):
    from bpetrain.formats.tiktoken import read_tiktoken

    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_tiktoken(path)
