"""BpeTrainer: options, inputs and bad input."""
from __future__ import annotations

import warnings

import pytest
from helpers import MULTILINGUAL

from bpetrain import PATTERNS, BpeTrainer, VocabSizeNotReachedWarning, _reference


def trainer(vocab_size=300, **kwargs):
    return BpeTrainer(vocab_size, show_progress=False, **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"vocab_size": 255}, ValueError, "vocab_size=255 is below 256 byte tokens"),
        ({"vocab_size": 257, "special_tokens": ["<a>", "<b>"]}, ValueError, "below 256 byte tokens \\+ 2 special"),
        ({"vocab_size": 2**31}, ValueError, "token ids are int32"),
        ({"vocab_size": 300.0}, TypeError, "vocab_size must be an int"),
        ({"pat_str": "cl200k"}, ValueError, "unknown pattern name 'cl200k'"),
        ({"pat_str": "(unclosed"}, ValueError, "nor a valid regular expression"),
        ({"pat_str": "a*"}, ValueError, "matches the empty string"),
        ({"pat_str": 5}, TypeError, "pat_str must be a str, a PreTokenizer or None"),
        ({"special_tokens": "<|endoftext|>"}, TypeError, "not one string"),
        ({"special_tokens": ["<s>", "<s>"]}, ValueError, "repeated"),
        ({"special_tokens": [""]}, ValueError, "non-empty"),
        ({"min_frequency": -1}, ValueError, "min_frequency must be >= 0"),
    ],
)
def test_bad_options(kwargs, error, message):
    kwargs = {"vocab_size": 300, **kwargs}
    with pytest.raises(error, match=message):
        BpeTrainer(**kwargs)


def test_unknown_option_is_an_error():
    with pytest.raises(TypeError):
        BpeTrainer(300, vocab=5)


@pytest.mark.parametrize("texts", [[], [""], ["", b""]])
def test_empty_corpus(texts):
    with pytest.raises(ValueError, match="the corpus is empty"):
        trainer().train_from_iterator(texts)


def test_pattern_that_matches_nothing():
    with pytest.raises(ValueError, match="the pattern matched nothing"):
        trainer(pat_str=r"\d+").train_from_iterator(["no digits here"])


def test_only_special_tokens_is_empty():
    with pytest.raises(ValueError, match="empty"):
        trainer(special_tokens=["<s>"]).train_from_iterator(["<s><s>"])


def test_unreachable_vocab_size_warns_and_returns_what_it_learned():
    with pytest.warns(VocabSizeNotReachedWarning, match="learned 2 of the 1000 merges.*min_frequency=1"):
        tok = trainer(1256, min_frequency=0).train_from_iterator(["abc"])
    assert tok.merges == [(97, 98), (256, 99)]


def test_min_frequency_stops_early():
    with pytest.warns(VocabSizeNotReachedWarning, match="min_frequency=3"):
        tok = trainer(400, min_frequency=3).train_from_iterator(["ab ab ab cd cd"])
    assert tok.merges == _reference.train(["ab ab ab cd cd"], 144, PATTERNS["cl100k"], min_frequency=3)


def test_bad_documents():
    with pytest.raises(TypeError, match="documents must be str or bytes, got int"):
        trainer().train_from_iterator(["ok", 5])
    with pytest.raises(ValueError, match="lone surrogate U\\+D800"):
        trainer().train_from_iterator(["bad \ud800 text"])


@pytest.mark.parametrize("pattern", ["cl100k", None])
def test_special_tokens_split_the_text_and_get_ids_after_merges(pattern):
    texts = ["xy<|eot|>zxy<|eot|>z"] * 3
    tok = trainer(259, pat_str=pattern, special_tokens=["<|eot|>"], min_frequency=1).train_from_iterator(texts)
    assert tok.special_tokens == {"<|eot|>": 258}
    # the pieces are xy, zxy, z: the special token's bytes never take part
    assert tok.merges == [(ord("x"), ord("y")), (ord("z"), 256)]


def test_files_equal_iterator_and_keep_invalid_bytes(tmp_path):
    data = [b"caf\xc3\xa9 \xff\xfe na\xefve\n" * 50, b"plain text, plain text\n" * 30]
    paths = []
    for i, d in enumerate(data):
        paths.append(tmp_path / f"f{i}.txt")
        paths[-1].write_bytes(d)
    for pattern in ("cl100k", None):
        from_files = trainer(270, pat_str=pattern).train(paths)
        from_iter = trainer(270, pat_str=pattern).train_from_iterator(data)
        assert from_files.merges == from_iter.merges
        assert from_files.merges == _reference.train(data, 14, PATTERNS.get(pattern), min_frequency=2)
        # invalid bytes round-trip through bytes (a str's lone surrogates become U+FFFD, as in tiktoken)
        assert from_files.decode_bytes(from_files.encoding()._encode_bytes(data[0])) == data[0]


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file: .*nope.txt"):
        trainer().train([tmp_path / "nope.txt"])


def test_train_from_counts_and_stats():
    t = trainer(260, pat_str=None, min_frequency=1)
    tok = t.train_from_counts({"hug": 10, "pug": 5, b"pun": 12, "bun": 4, "hugs": 5})
    assert tok.merges == _reference.train_pieces({b"hug": 10, b"pug": 5, b"pun": 12, b"bun": 4, b"hugs": 5}, 4)
    assert t.stats.n_pieces == 5
    assert t.stats.n_piece_bytes == 3 * 31 + 4 * 5
    assert t.stats.merge_counts.tolist()[0] == 20  # (u, g) in hug, pug, hugs
    assert t.stats.n_tokens < t.stats.n_piece_bytes


@pytest.mark.parametrize("pieces", [
    {"aaaaaaa": 3, "abababab": 2, "aaab": 5, "baaaa": 1},  # overlapping pairs: count > tokens removed
    {"a" * 1000: 1},
    {MULTILINGUAL: 2, "hug": 10, "pug": 5},
])
def test_merge_tokens_removed_counts_the_tokens_after_each_merge(pieces):
    """Stats: after the first k merges the pieces have n_piece_bytes - merge_tokens_removed[:k].sum()
    tokens, as the reference encoder applying those k merges counts them."""
    t = trainer(300, pat_str=None, min_frequency=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabSizeNotReachedWarning)  # the small ones run out of pairs
        tok = t.train_from_counts(pieces)
    s = t.stats
    removed, counts = s.merge_tokens_removed, s.merge_counts
    assert removed.dtype == counts.dtype == "int64" and len(removed) == len(counts) == s.n_merges > 0
    assert (removed <= counts).all() and (removed > 0).all()
    assert removed.sum() == s.n_piece_bytes - s.n_tokens
    data = {p.encode("utf-8"): c for p, c in pieces.items()}
    for k in range(s.n_merges + 1):
        merge_ids = {pair: 256 + i for i, pair in enumerate(tok.merges[:k])}
        n_tokens = sum(c * len(_reference.encode_piece(p, merge_ids)) for p, c in data.items())
        assert n_tokens == s.n_piece_bytes - removed[:k].sum(), k
    if "aaab" in pieces:
        assert (removed < counts).any()


def test_str_and_bytes_documents_agree():
    texts = [MULTILINGUAL, "a\udcffb"]
    as_bytes = [t.encode("utf-8", "surrogateescape") for t in texts]
    assert trainer(286).train_from_iterator(texts).merges == trainer(286).train_from_iterator(as_bytes).merges


@pytest.mark.parametrize(
    "counts, error, message",
    [
        ({"ab": 2.5}, TypeError, "each count must be an int, got float: 2.5"),
        ({"ab": True}, TypeError, "each count must be an int, got bool: True"),
        ({"ab": -1}, ValueError, "counts must be in \\[0, 2\\*\\*63\\)"),
        ({"ab": 2**63}, ValueError, "counts must be in \\[0, 2\\*\\*63\\)"),
        ({"ab": 2**64}, ValueError, "does not fit in int64"),
        ({"ab": 2**62, "cd": 2**62}, ValueError, "more than int64 pair counts can hold"),
        ({5: 1}, TypeError, "pieces must be str or bytes, got int"),
    ],
)
def test_bad_counts(counts, error, message):
    with pytest.raises(error, match=message):
        trainer().train_from_counts(counts)


def test_piece_table_checks_counts_directly():
    from bpetrain import PieceTable

    with pytest.raises(TypeError, match="each count must be an int, got float"):
        PieceTable.from_counts({b"ab": 1.5})
    with pytest.raises(TypeError, match="pieces must be bytes, got str"):
        PieceTable.from_counts({"ab": 1})


def test_warning_points_at_the_callers_line():
    with pytest.warns(VocabSizeNotReachedWarning) as record:
        trainer(1000).train_from_iterator(["ab ab"])
    assert record[0].filename == __file__
    with pytest.warns(VocabSizeNotReachedWarning) as record:
        trainer(1000).train_from_counts({"ab": 5})
    assert record[0].filename == __file__


def test_line_documents_refused_for_records_and_text_field_has_one_name(tmp_path):
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text('{"body": "hello hello world"}\n' * 20, encoding="utf-8")
    with pytest.raises(ValueError, match=r"r.jsonl is JSON Lines, whose records are the documents"):
        trainer(260).train([jsonl], documents="line")
    assert trainer(260).train([jsonl], text_field="body") == trainer(260).train_from_iterator(
        ["hello hello world"] * 20)
    with pytest.raises(TypeError, match="text_column"):  # an old spelling that never shipped
        trainer(260).train([jsonl], text_column="body")


def test_deep_json_line_is_a_clear_error(tmp_path):
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text('{"text": "ok"}\n' + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"deep.jsonl:2: not a JSON line"):
        trainer(260).train([jsonl])


def test_train_from_counts_extends_a_base_from_a_mapping():
    """A mapping of pieces trains on a base as counts files do: a model extended on its own
    counts gives the model trained to the larger size."""
    counts = {"hello": 9, " world": 7, " wonder": 3, "help": 4, "yellow": 2}
    base = trainer(262, pat_str=None).train_from_counts(counts)
    full = trainer(268, pat_str=None).train_from_counts(counts)
    extended = trainer(268, pat_str=None).train_from_counts(counts, base=base)
    assert len(base.merges) == 6 and extended.merges == full.merges
