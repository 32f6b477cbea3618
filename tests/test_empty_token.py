"""An empty token in the ranks, loaded as tiktoken loads it.

Whisper's ``multilingual.tiktoken`` ends with ``= 50256``: the empty token (base64 of no
bytes) at rank 50256. tiktoken and Whisper load it; encoding never gives it (no piece is
empty and no pair of tokens joins into it) and decoding it gives ``b""``.
"""
from __future__ import annotations

import base64
import importlib.util
import pathlib

import pytest

from bpetrain import Encoding, Tokenizer, load_tiktoken
from bpetrain.formats.tiktoken import read_tiktoken, write_tiktoken
from helpers import MULTILINGUAL, stdlib_text

#: The pattern Whisper gives tiktoken (``whisper/tokenizer.py``, ``get_encoding``).
WHISPER_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PATTERN = r" ?\S+|\s+"
TEXT = "ab abc abd ab\n\n" + MULTILINGUAL


def _ranks() -> dict[bytes, int]:
    """The 256 bytes, two merges, the empty token (rank 258) and one more merge after it."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"ab": 256, b"abc": 257, b"": 258, b" ab": 259})
    return ranks


def _rank_file(tmp_path) -> pathlib.Path:
    path = tmp_path / "empty.tiktoken"
    path.write_bytes(b"".join(
        (base64.b64encode(token) or b"=") + b" %d\n" % rank
        for token, rank in _ranks().items()
    ))
    return path


def test_a_rank_file_with_an_empty_token_loads_as_an_encoding(tmp_path):
    path = _rank_file(tmp_path)
    assert path.read_bytes().endswith(b"YWJj 257\n= 258\nIGFi 259\n")
    assert read_tiktoken(path) == _ranks()
    enc = load_tiktoken(path, pat_str=PATTERN, special_tokens={"<|x|>": 260})
    assert enc.n_vocab == 261 and enc.max_token_value == 260
    assert enc.encode("ab abc abd") == [256, 32, 257, 259, 100]
    assert enc.decode_bytes([258]) == b"" and enc.decode([97, 258, 98]) == "ab"
    assert enc.decode_single_token_bytes(258) == b"" and enc.decode_tokens_bytes([258]) == [b""]
    assert enc.encode_single_token(b"") == 258 and enc.encode_single_token("") == 258
    assert enc.token_byte_values()[0] == b"" and len(enc.token_byte_values()) == 260
    assert enc._encode_single_piece(b"") == [258] and enc._encode_bytes(b"") == [] and enc.encode("") == []
    # tiktoken raises IndexError on an empty token; it starts where the next character does
    assert enc.decode_with_offsets([97, 258, 98, 258]) == ("ab", [0, 1, 1, 2])


def test_encoding_never_gives_the_empty_token():
    enc = Encoding("x", pat_str=PATTERN, mergeable_ranks=_ranks())
    plain = Encoding("x", pat_str=PATTERN, mergeable_ranks={t: r for t, r in _ranks().items() if t})
    text = TEXT * 3
    ids = enc.encode(text)
    assert 258 not in ids and ids == plain.encode(text)
    assert enc.count(text) == len(ids)
    assert enc.encode_batch([text, "", "ab"]) == [ids, [], [256]]
    assert [int(i) for part in enc.encode_stream([text[:7], text[7:]], block_chars=8) for i in part] == ids
    assert enc.interval_counter(text).count(0, len(text)) == len(ids)
    raw = Encoding("x", pat_str=None, mergeable_ranks=_ranks())
    plain_raw = Encoding("x", pat_str=None, mergeable_ranks=plain.mergeable_ranks)
    assert raw.encode("") == [] and raw.encode(text) == plain_raw.encode(text)


def test_the_empty_token_is_written_as_tiktoken_reads_it(tmp_path):
    tokens = [token for token, _ in sorted(_ranks().items(), key=lambda item: item[1])]
    write_tiktoken(tmp_path / "out.tiktoken", tokens)
    assert b"\n= 258\n" in (tmp_path / "out.tiktoken").read_bytes()
    assert read_tiktoken(tmp_path / "out.tiktoken") == _ranks()
    tiktoken_load = pytest.importorskip("tiktoken.load", reason="tiktoken is a test dependency")
    assert tiktoken_load.load_tiktoken_bpe(str(tmp_path / "out.tiktoken")) == _ranks()


def test_a_tokenizer_refuses_the_empty_token_and_says_what_loads_it(tmp_path):
    with pytest.raises(ValueError, match=r"rank 258 is the empty token .*bpetrain.load_tiktoken"):
        Tokenizer.from_file(_rank_file(tmp_path), pat_str=PATTERN)


def test_an_empty_token_matches_tiktoken(tmp_path):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    specials = {"<|x|>": 260}
    ours = Encoding("x", pat_str=PATTERN, mergeable_ranks=_ranks(), special_tokens=specials)
    theirs = tiktoken.Encoding("x", pat_str=PATTERN, mergeable_ranks=_ranks(), special_tokens=specials)
    assert ours.n_vocab == theirs.n_vocab and ours.max_token_value == theirs.max_token_value
    assert ours.token_byte_values() == theirs.token_byte_values()
    for data in (b"", b"ab", b"abc"):
        assert ours.encode_single_token(data) == theirs.encode_single_token(data)
        assert ours._encode_single_piece(data) == theirs._encode_single_piece(data)
    assert ours.encode(TEXT, allowed_special="all") == theirs.encode(TEXT, allowed_special="all")
    for ids in ([258], [97, 258, 98], [258, 260, 258]):
        assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    with pytest.raises(IndexError):  # tiktoken's decode_with_offsets reads the token's first byte
        theirs.decode_with_offsets([97, 258, 98])


def test_ranks_without_bytes_do_not_break_the_incremental_counters():
    # the empty token, or a hole in the ranks: a rank with no trie node (this crashed the
    # automaton's builder)
    holes = {bytes([b]): b for b in range(256)} | {b"ab": 300, b"abc": 301}
    for ranks in (_ranks(), holes):
        enc = Encoding("x", pat_str=PATTERN, mergeable_ranks=ranks)
        text = TEXT * 2
        counter = enc.interval_counter(text)
        for start, end in ((0, len(text)), (3, 40), (10, 11)):
            assert counter.count(start, end) == len(enc.encode(text[start:end]))
        appendable = enc.appendable()
        appendable.push(text)
        assert appendable.count == len(enc.encode(text))


def _whisper_asset(name: str) -> pathlib.Path:
    """A rank file of the installed ``openai-whisper`` (found without importing it: that needs torch)."""
    spec = importlib.util.find_spec("whisper")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("openai-whisper is not installed (pip install --no-deps openai-whisper): it ships the files")
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / "assets" / name
    if not path.exists():
        pytest.skip(f"the installed whisper package has no {name}")
    return path


def test_whispers_multilingual_file_loads_and_encodes_as_tiktoken():
    path = _whisper_asset("multilingual.tiktoken")
    ranks = read_tiktoken(path)
    assert len(ranks) == 50257 and ranks[b""] == 50256
    specials = {"<|endoftext|>": 50257, "<|startoftranscript|>": 50258}
    ours = load_tiktoken(path, pat_str=WHISPER_PATTERN, special_tokens=specials)
    assert ours.n_vocab == 50259 and ours.decode_bytes([50256]) == b""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    from tiktoken.load import load_tiktoken_bpe

    assert load_tiktoken_bpe(str(path)) == ranks
    theirs = tiktoken.Encoding("multilingual", pat_str=WHISPER_PATTERN, mergeable_ranks=ranks,
                               special_tokens=specials, explicit_n_vocab=50259)
    text = MULTILINGUAL + stdlib_text(100_000).decode("utf-8", "replace")
    assert ours.encode(text) == theirs.encode(text)
    assert ours.token_byte_values() == theirs.token_byte_values()
    assert ours.encode_single_token(b"") == theirs.encode_single_token(b"") == 50256
