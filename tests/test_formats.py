"""Export and import: round trips for every format, the real libraries loading our files,
cl100k/o200k imported from their rank files, and every malformed case."""
from __future__ import annotations

import base64
import hashlib
import inspect
import json
import os
import pathlib
import tempfile
import warnings

import pytest
import regex
from helpers import MULTILINGUAL, VOCABS, require, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import PATTERNS, BpeTrainer, Tokenizer, VocabSizeNotReachedWarning
from bpetrain._reference import merges_from_ranks as reference_merges_from_ranks
from bpetrain.formats.hf import hf_pattern
from bpetrain.formats.model_file import write_model
from bpetrain.formats._rank_file import parse_canonical
from bpetrain.formats.tiktoken import _parse_lines, merges_from_ranks, read_tiktoken

SPECIALS = ["<|endoftext|>", "<|fim_middle|>"]
DIGITS = "0 12 345 6789 1234567890 3.14159 1,000,000 2026-11-22 ٣٤٥٦٧ ９９９９ ²³ 0x1F 1e10 a1b22c333 ++4\n" * 20
PATHS = {"tiktoken": "ranks.tiktoken", "hf": "tokenizer.json", "gpt2": "gpt2", "minbpe": "model"}


def read_back(tmp_path, format, tok):
    path = tmp_path / PATHS[format]
    tok.export(path, format=format)
    if format == "minbpe":
        return Tokenizer.from_file(f"{path}.model")
    if format == "gpt2":
        return Tokenizer.from_file(path, pat_str=tok.pat_str or "none")
    return Tokenizer.from_file(path)


@pytest.fixture(scope="module", params=["cl100k", "o200k", "gpt2", None], ids=lambda p: f"pattern={p}")
def trained(request):
    text = stdlib_text(300_000).decode("utf-8") + MULTILINGUAL * 10 + DIGITS
    trainer = BpeTrainer(256 + 600 + 2, pat_str=request.param, special_tokens=SPECIALS, show_progress=False)
    return trainer.train_from_iterator([text])


@pytest.fixture(scope="module")
def sample():
    """Real text the tokenizers were not trained on, with special tokens and digits."""
    text = stdlib_text(360_000)[300_000:].decode("utf-8", "replace")
    return text[:8_000] + SPECIALS[0] + MULTILINGUAL + DIGITS + SPECIALS[1] + text[8_000:12_000]


@pytest.mark.parametrize("format", list(PATHS))
def test_round_trip_gives_identical_merges_and_ids(trained, sample, tmp_path, format):
    back = read_back(tmp_path, format, trained)
    assert back == trained
    assert back.merges == trained.merges and back.special_tokens == trained.special_tokens
    assert back.encode(sample, allowed_special="all") == trained.encode(sample, allowed_special="all")


def test_export_writes_the_documented_files(trained, tmp_path):
    for format, name in PATHS.items():
        trained.export(tmp_path / name, format=format)
    assert sorted(os.listdir(tmp_path)) == [
        "gpt2", "model.model", "model.vocab", "ranks.tiktoken", "ranks.tiktoken.json", "tokenizer.json"
    ]
    merges = (tmp_path / "gpt2" / "merges.txt").read_text(encoding="utf-8")
    assert merges.startswith("#version: 0.2\n") and merges.endswith("\n")
    assert len(merges.splitlines()) == 1 + len(trained.merges)
    ranks = (tmp_path / "ranks.tiktoken").read_bytes()
    assert json.loads((tmp_path / "ranks.tiktoken.json").read_text(encoding="utf-8")) == {
        "pat_str": trained.pat_str,
        "special_tokens": trained.special_tokens,
        "rank_file": {"n_bytes": len(ranks), "sha256": hashlib.sha256(ranks).hexdigest()},
    }
    model_lines = (tmp_path / "model.model").read_text(encoding="utf-8").split("\n")
    assert model_lines[:3] == ["minbpe v1", trained.pat_str or "", "2"]
    vocab_lines = (tmp_path / "model.vocab").read_text(encoding="utf-8").splitlines()
    assert len(vocab_lines) == trained.n_vocab and vocab_lines[256].endswith(" 256")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=12))
def test_round_trip_any_bytes(docs):
    """Tokens made of any bytes (invalid UTF-8, controls, spaces) survive every format (raw mode)."""
    docs = [*docs, b"\xff\xfe\x00\n \t" * 3, b"a" * 300]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabSizeNotReachedWarning)
        tok = BpeTrainer(256 + 40 + 1, pat_str=None, special_tokens=["<|eot|>"], min_frequency=1,
                         show_progress=False).train_from_iterator(docs)
    with tempfile.TemporaryDirectory() as tmp:
        for format in PATHS:
            assert read_back(pathlib.Path(tmp), format, tok) == tok


# ------------------------------------------------------------ the real libraries


def test_tokenizers_loads_hf_export(trained, sample, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    trained.export(tmp_path / "tokenizer.json", format="hf")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ids = trained.encode(sample, allowed_special="all")
    assert hf.encode(sample, add_special_tokens=False).ids == ids
    assert hf.decode(ids, skip_special_tokens=False) == sample


def test_transformers_loads_hf_export(trained, sample, tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is a test dependency: pip install '.[test]'")
    trained.export(tmp_path / "tokenizer.json", format="hf")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    assert fast.encode(sample, add_special_tokens=False) == trained.encode(sample, allowed_special="all")
    assert len(fast) == trained.n_vocab


def test_tiktoken_loads_export_with_sidecar(trained, sample, tmp_path):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    from tiktoken.load import load_tiktoken_bpe

    from bpetrain.formats.tiktoken import tiktoken_encoding

    trained.export(tmp_path / "ranks.tiktoken", format="tiktoken")
    sidecar = json.loads((tmp_path / "ranks.tiktoken.json").read_text(encoding="utf-8"))
    del sidecar["rank_file"]  # the rest are tiktoken.Encoding's arguments
    ids = trained.encode(sample, allowed_special="all")
    if trained.pat_str is not None:  # the sidecar alone is enough to build the Encoding
        enc = tiktoken.Encoding("t", mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "ranks.tiktoken")), **sidecar)
        assert enc.encode(sample, allowed_special="all") == ids
    assert tiktoken_encoding(trained).encode(sample, allowed_special="all") == ids


def test_hf_reads_gpt2_files(trained, sample, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    if trained.pat_str is None:
        pytest.skip("GPT-2 files carry no pattern; raw mode is covered by the round trip")
    trained.export(tmp_path / "gpt2", format="gpt2")
    hf = tokenizers.Tokenizer(
        tokenizers.models.BPE.from_file(str(tmp_path / "gpt2" / "vocab.json"), str(tmp_path / "gpt2" / "merges.txt"))
    )
    hf.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(hf_pattern(trained.pat_str)), behavior="isolated"),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf.add_special_tokens(SPECIALS)
    assert hf.encode(sample).ids == trained.encode(sample, allowed_special="all")


def test_reads_tokenizer_json_written_by_transformers_converter(trained, sample, tmp_path):
    """TikTokenConverter lists every split of every token as a merge; the merges come back from the ranks."""
    pytest.importorskip("transformers", reason="transformers is a test dependency: pip install '.[test]'")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    if trained.pat_str is None:
        pytest.skip("TikTokenConverter always writes a Split pattern; raw mode is covered by our own layout")
    trained.export(tmp_path / "ranks.tiktoken", format="tiktoken")
    # The argument is extra_special_tokens in transformers 5, additional_special_tokens in
    # transformers 4 (4.57 is the newest for Python 3.9); the converter takes **kwargs and
    # ignores the other name, then fails on special tokens of None.
    parameters = inspect.signature(TikTokenConverter).parameters
    special = "extra_special_tokens" if "extra_special_tokens" in parameters else "additional_special_tokens"
    converted = TikTokenConverter(vocab_file=str(tmp_path / "ranks.tiktoken"), pattern=hf_pattern(trained.pat_str),
                                  **{special: list(trained.special_tokens)}).converted()
    converted.save(str(tmp_path / "tokenizer.json"))
    assert len(json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))["model"]["merges"]) > len(
        trained.merges
    )
    back = Tokenizer.from_file(tmp_path / "tokenizer.json")
    assert back == trained
    assert converted.encode(sample).ids == back.encode(sample, allowed_special="all")


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_hf_pattern_splits_like_ours(name):
    """Oniguruma reads cl100k's ``\\p{N}{1,3}+`` as a repeated group; the rewrite must not."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(hf_pattern(PATTERNS[name])), behavior="isolated")
    text = DIGITS + MULTILINGUAL + stdlib_text(100_000).decode("utf-8") + "  trailing space \n\n  "
    assert [piece for piece, _ in split.pre_tokenize_str(text)] == regex.findall(PATTERNS[name], text)


def test_hf_pattern_rewrites_possessive_intervals():
    assert hf_pattern(r"\p{N}{1,3}+") == r"(?>\p{N}{1,3})"
    assert hf_pattern(r"(?:ab|c){2,}+x[{]{3}+\x41{2}+") == r"(?>(?:ab|c){2,})x(?>[{]{3})(?>\x41{2})"
    assert hf_pattern(PATTERNS["o200k"]) == PATTERNS["o200k"]  # nothing possessive to rewrite
    for pat_str in PATTERNS.values():  # the rewrite means the same in the regex module
        assert regex.findall(hf_pattern(pat_str), DIGITS + MULTILINGUAL) == regex.findall(pat_str, DIGITS + MULTILINGUAL)


# ------------------------------------------------------------ OpenAI's vocabularies


@pytest.fixture(scope="module")
def cl100k():
    return Tokenizer.from_file(require(VOCABS / "cl100k_base.tiktoken", "OpenAI's ranks for the import tests"),
                               pat_str="cl100k", special_tokens={"<|endoftext|>": 100257, "<|fim_prefix|>": 100258})


@pytest.mark.parametrize("name, pattern, eot", [("cl100k_base", "cl100k", 100257), ("o200k_base", "o200k", 199999)])
def test_openai_rank_file_imports_and_encodes_like_tiktoken(name, pattern, eot, sample):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    path = require(VOCABS / f"{name}.tiktoken", "OpenAI's ranks for the import tests")
    tok = Tokenizer.from_file(path, pat_str=pattern, special_tokens={"<|endoftext|>": eot})
    ranks = read_tiktoken(path)
    assert tok.mergeable_ranks == ranks and tok.byte_ids[ord("!")] == 0
    enc = tiktoken.Encoding(name, pat_str=PATTERNS[pattern], mergeable_ranks=ranks,
                            special_tokens=tok.special_tokens)
    text = stdlib_text(40_000).decode("utf-8") + "<|endoftext|>" + MULTILINGUAL + DIGITS
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")


def test_merges_from_ranks_agrees_with_the_reference(trained):
    merges, byte_ids = merges_from_ranks(trained.mergeable_ranks)
    assert merges == trained.merges and byte_ids == list(range(256))
    assert reference_merges_from_ranks(trained.mergeable_ranks.items()) == trained.merges


def test_merges_from_ranks_agrees_with_the_reference_on_cl100k(cl100k):
    """cl100k's first 20,000 merges, with the bytes moved to ids 0..255 for the reference."""
    tokens = [cl100k.vocab[i] for i in range(256 + 20_000)]
    canonical = {bytes([b]): b for b in range(256)} | {t: i for i, t in enumerate(tokens) if i >= 256}
    canonical_merges, _ = merges_from_ranks(canonical)
    assert canonical_merges == reference_merges_from_ranks(canonical.items())


def test_imported_byte_order_survives_every_format(cl100k, tmp_path, sample):
    """cl100k's bytes are not ids 0..255 in byte order: the model file (v3, and v2 before it),
    tiktoken, hf and gpt2 keep the order; minbpe cannot and says so."""
    cl100k.save(tmp_path / "cl100k.bpe")
    lines = (tmp_path / "cl100k.bpe").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "bpetrain model v3" and lines[3] == f"byte_ids: {cl100k.byte_ids}"
    assert Tokenizer.load(tmp_path / "cl100k.bpe") == cl100k
    text = sample[:5_000] + "<|endoftext|>"
    for format in ("tiktoken", "hf"):
        back = read_back(tmp_path, format, cl100k)
        assert back == cl100k and back.encode(text, allowed_special="all") == cl100k.encode(text, allowed_special="all")
    assert read_tiktoken(tmp_path / "ranks.tiktoken") == read_tiktoken(VOCABS / "cl100k_base.tiktoken")
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode(text).ids == cl100k.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="minbpe's ids 0..255 are the bytes in byte order"):
        cl100k.export(tmp_path / "m", format="minbpe")
    assert not list(tmp_path.glob("m.*"))


# ------------------------------------------------------------ bad input


def tiny(**options):
    """b, c, a+b -> 256, 256+c -> 257 ('abc'), special token after."""
    return Tokenizer([(97, 98), (256, 99)], pat_str=None, special_tokens={"<s>": 258}, **options)


def test_export_refuses_duplicate_and_unreachable_tokens(tmp_path):
    duplicate = Tokenizer([(97, 98), (256, 99), (98, 99), (97, 258)], pat_str=None)  # 'abc' twice
    unreachable = Tokenizer([(98, 99), (97, 98), (99, 100), (257, 258)], pat_str=None)  # 'abcd' encodes a|bc|d
    assert unreachable.unreachable_tokens() == [259]
    for format, name in PATHS.items():
        with pytest.raises(ValueError, match="spell the same bytes as earlier ones .*ids 257 and 259"):
            duplicate.export(tmp_path / name, format=format)
        with pytest.raises(ValueError, match="1 tokens do not encode to themselves .*id 259, b'abcd'"):
            unreachable.export(tmp_path / name, format=format)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="unknown format 'sentencepiece'"):
        tiny().export(tmp_path / "x", format="sentencepiece")


def test_hf_special_ids_with_gaps(tmp_path):
    """tokenizers renumbers added tokens unless the model vocab holds them: safe for printable
    ASCII and for tokens with a character outside the byte-level alphabet, which no piece spells."""
    gap = Tokenizer([(97, 98)], pat_str=None, special_tokens={"<|a|>": 260, "<|b|>": 258})
    gap.export(tmp_path / "tokenizer.json", format="hf")
    assert Tokenizer.from_file(tmp_path / "tokenizer.json") == gap
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode("ab<|a|>b<|b|>").ids == gap.encode("ab<|a|>b<|b|>", allowed_special="all") == [256, 260, 98, 258]
    wide = Tokenizer([(97, 98)], pat_str=None, special_tokens={"<｜end▁of▁text｜>": 260, "<|命|>": 258})
    wide.export(tmp_path / "wide.json", format="hf")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "wide.json"))
    text = "ab<｜end▁of▁text｜>b<|命|>命ab"
    assert hf.encode(text).ids == wide.encode(text, allowed_special="all")
    assert hf.encode(text).ids[1:4] == [260, 98, 258]
    with pytest.raises(ValueError, match="'<é>' \\(id 300\\) is spelled by the bytes b'<\\\\xe9>'"):
        Tokenizer([], pat_str=None, special_tokens={"<é>": 300}).export(tmp_path / "t.json", format="hf")
    assert not (tmp_path / "t.json").exists()


def write_rank_file(path, tokens):
    Tokenizer([], pat_str=None).export(path, format="tiktoken")
    sidecar = path.with_name(path.name + ".json")
    sidecar.write_text(json.dumps({"pat_str": None, "special_tokens": {}}))  # a valid sidecar with no record
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in tokens))


BYTES = [(bytes([b]), b) for b in range(256)]


@pytest.mark.parametrize(
    "tokens",
    [
        BYTES + [(b"ab", 256), (b"abc", 258)],  # a gap in the ranks
        BYTES[1:] + [(b"\x00", 300)],  # a byte after the merges
        [(b"ab", 0), *BYTES[1:], (b"\x00", 256)],  # a merge before a byte
        BYTES + [(b"bc", 256), (b"ab", 257), (b"cd", 258), (b"abcd", 259)],  # 'abcd' only whole
    ],
)
def test_rank_files_no_merges_build_read_with_tiktokens_rule(tmp_path, tokens):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    path = tmp_path / "odd.tiktoken"
    write_rank_file(path, tokens)
    tok = Tokenizer.from_file(path, pat_str="gpt2")
    enc = tiktoken.Encoding("odd", pat_str=PATTERNS["gpt2"], mergeable_ranks=dict(tokens), special_tokens={})
    for text in ["abcd abc", "abcdabcd\x00ab", MULTILINGUAL]:
        assert tok.encode(text) == enc.encode(text)


@given(st.lists(st.tuples(st.binary(max_size=6), st.integers(0, 2**33)), max_size=8),
       st.sampled_from([b" ", b"  ", b"\t", b" \r"]), st.sampled_from([b"\n", b"\n\n", b"", b"\r\n"]),
       st.sampled_from([None, (0, b"="), (0, b" "), (1, b"Q"), (0, b"QUJD="), (1, b"x"), (0, b"QR=="), (0, b"QUI="),
                        (0, b"Q==="), (0, b"===="), (0, b"QUJ"), (0, b"QU=D"), (1, b"007"), (1, b"4294967295"),
                        (1, b"4294967296"), (1, b"00000000001"), (1, b""), (1, b"1 "), (0, b"\nQQ=="), (0, b"-_8=")]),
       st.booleans())
@settings(max_examples=500, deadline=None)
def test_rank_file_bulk_reader_agrees_with_line_reader(lines, space, end, damage, last_newline):
    """The one-pass reader reads only tiktoken's own layout, and that as the line reader
    does (non-zero bits after the last byte of a padded group ignored, leading zeros of a
    rank read); everything else (odd spacing, bad base64, repeats, ranks out of range) it
    leaves to the line reader, which gives the message."""
    fields = [[base64.b64encode(token) or b"=", b"%d" % rank] for token, rank in lines]
    if damage is not None and fields:
        fields[0][damage[0]] = damage[1]
    data = b"".join(token + space + rank + b"\n" for token, rank in fields)
    data = data.replace(b"\n", end)
    if not last_newline and data.endswith(end) and end:
        data = data[:-len(end)]
    try:
        expected = _parse_lines(data, "f")
    except ValueError:
        expected = None
    bulk = parse_canonical(data)
    if bulk is not None:
        assert list(bulk.items()) == list(expected.items())
    if damage is None and space == b" " and end == b"\n" and expected is not None and b"" not in expected:
        assert bulk is not None  # tiktoken's own layout is read in bulk


def test_malformed_tiktoken_import(tmp_path):
    path = tmp_path / "bad.tiktoken"
    write_rank_file(path, [(b"ab", 0), *BYTES[1:]])  # no token for the byte 0
    with pytest.raises(ValueError, match=f"{regex.escape(str(path))}: rank 0 is b'ab': ranks 0..255 must be the 256"):
        Tokenizer.from_file(path, pat_str="gpt2")


def test_tiktoken_sidecar_problems(tmp_path):
    path = tmp_path / "r.tiktoken"
    tiny().export(path, format="tiktoken")
    (tmp_path / "r.tiktoken.json").write_text('{"pat_str": null,\n "special_tokens": {"<s>": "x"}}')
    with pytest.raises(ValueError, match="r.tiktoken.json: special_tokens must be an object of token -> integer"):
        Tokenizer.from_file(path)
    (tmp_path / "r.tiktoken.json").write_text('{"pat_str": "[bad", "special_tokens": {"<s>": 257}}')
    with pytest.raises(ValueError, match="r.tiktoken: pattern '\\[bad' is neither"):
        Tokenizer.from_file(path)
    (tmp_path / "r.tiktoken.json").write_text('{"pat_str": null, "special_tokens": {"<s>": 257}}')
    with pytest.raises(ValueError, match="r.tiktoken: special token '<s>' has id 257, which is a byte or merge id"):
        Tokenizer.from_file(path)
    (tmp_path / "r.tiktoken.json").write_text('{"pat_str": null,\n "special_tokens": {')
    with pytest.raises(ValueError, match="r.tiktoken.json:2: not valid JSON"):
        Tokenizer.from_file(path)
    os.unlink(tmp_path / "r.tiktoken.json")
    with pytest.raises(ValueError, match="does not say its split pattern .* pass pat_str"):
        Tokenizer.from_file(path)
    assert Tokenizer.from_file(path, pat_str="none") == Tokenizer(tiny().merges, pat_str=None)


def edit_json(path, change):
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["model"]["merges"].__setitem__(1, ["ab", "z\u0100x"]), "model.merges\\[1\\]: the part 'zĀx' is not in"),
        (lambda d: d["model"]["merges"].append(["b", "c"]), "merged token 'bc' is not in the vocab"),
        (lambda d: d["model"]["merges"].__setitem__(0, "a b c"), "model.merges\\[0\\] is \\['a', 'b', 'c'\\]"),
        (lambda d: d["model"]["vocab"].__setitem__("ab", 257), "tokens 'ab' and 'abc' share id 257"),
        (lambda d: d["model"]["merges"].__setitem__(0, ["a", "\u4e00"]), "merges\\[0\\]: token '一' holds '一', which is not"),
        (lambda d: d["model"].__setitem__("type", "WordPiece"), "model.type must be 'BPE'"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Whitespace"}),
         "pre_tokenizer.pretokenizers\\[0\\] is a 'Whitespace' pre-tokenizer; bpetrain reads Split, Digits"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "ByteLevel", "add_prefix_space": False,
                                                                  "trim_offsets": True, "use_regex": True}),
         "step 0 is a ByteLevel but not the last step"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"].pop(), "last step must be a ByteLevel"),
        (lambda d: d.__setitem__("normalizer", {"type": "StripAccents"}), "normalizer is \\{'type': 'StripAccents'\\}"),
    ],
)
def test_malformed_hf_import(tmp_path, change, message):
    """What tokenizers refuses too, or what bpetrain cannot represent (tests/test_hf_models.py has the rest)."""
    path = tmp_path / "tokenizer.json"
    tiny().export(path, format="hf")
    edit_json(path, change)
    with pytest.raises(ValueError, match=f"tokenizer.json: .*{message}"):
        Tokenizer.from_file(path)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["model"]["merges"].reverse(),  # a merge's part made by a later merge
        lambda d: d["model"]["vocab"].__setitem__("zz", 300),  # a token no merge makes
        lambda d: d["model"].__setitem__("continuing_subword_prefix", ""),  # GPT-2's own file
    ],
)
def test_hf_files_bpetrain_once_refused_read_as_tokenizers_reads_them(tmp_path, change):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    path = tmp_path / "tokenizer.json"
    tiny().export(path, format="hf")
    edit_json(path, change)
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_file(path)
    with warnings.catch_warnings():  # 'zz' is reached only whole, which takes the plain-Python rule
        warnings.filterwarnings("ignore", "Tokenizer.encode falls back", RuntimeWarning)
        for text in ["abcd abc cab", "zz<|endoftext|>abc zzz", MULTILINGUAL]:
            assert tok.encode(text, allowed_special="all") == hf.encode(text).ids


@pytest.mark.parametrize(
    "merges, message",
    [
        ([["a", "b"], ["b", "c"], ["ab", "c"], ["a", "bc"]], None),
        ([["a", "b"], ["b", "c"], ["a", "bc"], ["a", "bc"]], "imported"),  # ("ab", "c") not listed
        ([["b", "c"], ["a", "b"], ["ab", "c"], ["a", "bc"]], "imported"),  # not in the order of the ids
        ([["a", "b"], ["b", "c"], ["ab", "c"], ["ab", "d"]], "merges\\[3\\]: the merged token 'abd' is not in the vocab"),
    ],
)
def test_hf_import_of_converter_layout(tmp_path, merges, message):
    """Every split of every token listed, as transformers' TikTokenConverter writes."""
    path = tmp_path / "tokenizer.json"
    tiny().export(path, format="hf")

    def change(d):
        d["model"]["vocab"] = {k: v for k, v in d["model"]["vocab"].items() if v < 256} | {"ab": 256, "bc": 257, "abc": 258}
        d["model"]["merges"] = merges
        d["added_tokens"][0]["id"] = 259

    edit_json(path, change)
    if message is None:
        assert Tokenizer.from_file(path).merges == [(97, 98), (98, 99), (256, 99)]
    elif message == "imported":  # read with the file's merges, encoded as tokenizers does
        tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency")
        tok, hf = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))
        assert tok.tokens is not None and tok.merges == [tuple(Tokenizer.from_file(path).mergeable_ranks[p.encode()]
                                                               for p in m) for m in merges]
        with pytest.warns(RuntimeWarning, match="falls back"):  # not every split listed, or not in order
            for text in ["abc", "abcabc bc ab", "aabbcc"]:
                assert tok.encode(text) == hf.encode(text).ids
    else:
        with pytest.raises(ValueError, match=message):
            Tokenizer.from_file(path)


def test_hf_import_syntax_errors_name_the_line(tmp_path):
    path = tmp_path / "tokenizer.json"
    tiny().export(path, format="hf")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"ab": 256', '"ab": 256,'), encoding="utf-8")
    line = text[: text.index('"ab": 256')].count("\n") + 1
    with pytest.raises(ValueError, match=f"tokenizer.json:{line}: not valid JSON"):
        Tokenizer.from_file(path)
    path.write_text(text.replace('"ab": 256', '"ab": 256, "ab": 256'), encoding="utf-8")
    with pytest.raises(ValueError, match="the key 'ab' appears twice"):
        Tokenizer.from_file(path)


def test_hf_import_reads_ignore_merges_with_tokens_reached_only_whole(tmp_path):
    path = tmp_path / "tokenizer.json"
    tiny().export(path, format="hf")
    unreachable = {"bc": 256, "ab": 257, "cd": 258, "abcd": 259}

    def change(d):
        d["model"]["vocab"] = {k: v for k, v in d["model"]["vocab"].items() if v < 256} | unreachable
        d["model"]["merges"] = [["b", "c"], ["a", "b"], ["c", "d"], ["ab", "cd"]]
        d["added_tokens"][0]["id"] = 260

    edit_json(path, change)
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency")
    tok, hf = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))
    assert tok.encode("abcd") == [259] == hf.encode("abcd").ids  # 'abcd' only whole
    for text in ["xabcd abcda", "abcd" * 5]:
        assert tok.encode(text) == hf.encode(text).ids
    edit_json(path, lambda d: d["model"].__setitem__("ignore_merges", False))
    assert Tokenizer.from_file(path).unreachable_tokens() == [259]


@pytest.mark.parametrize(
    "file, old, new, message",
    [
        ("merges.txt", "ab c\n", "ab c d\n", "merges.txt:3: expected 'left right'"),
        ("merges.txt", "ab c\n", "ab x\n", "merges.txt:3: the merged token 'abx' is not in the vocab"),
        ("merges.txt", "ab c\n", "ab q\u0100\n", "merges.txt:3: the part 'qĀ' is not in the vocab"),
        ("vocab.json", '"abc": 257', '"abc": 257, "abc": 257', "the key 'abc' appears twice"),
        ("vocab.json", '"abc": 257', '"abc": 256', "tokens 'ab' and 'abc' share id 256"),
        ("vocab.json", '"a": 97', '"a": 1000', "id 97 is missing"),
    ],
)
def test_malformed_gpt2_import(tmp_path, file, old, new, message):
    tiny().export(tmp_path, format="gpt2")
    (tmp_path / ".bpetrain.json").unlink()  # files as other tools write them (no record to refuse the edit)
    path = tmp_path / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Tokenizer.from_file(tmp_path, pat_str="none")


def test_format_is_detected_from_content(tmp_path):
    tok = tiny()
    tok.save(tmp_path / "named.model")  # a bpetrain model file, whatever its name
    tok.export(tmp_path / "mini", format="minbpe")
    os.rename(tmp_path / "mini.model", tmp_path / "mini.txt")
    tok.export(tmp_path / "hf.txt", format="hf")
    for name in ("named.model", "mini.txt", "hf.txt"):
        assert Tokenizer.from_file(tmp_path / name) == tok
    with pytest.raises(ValueError, match="unknown format 'spm'"):
        Tokenizer.from_file(tmp_path / "hf.txt", format="spm")


def test_gpt2_special_tokens_are_plain_vocab_entries(tmp_path):
    tiny().export(tmp_path, format="gpt2")
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))["<s>"] == 258
    assert Tokenizer.from_file(tmp_path / "vocab.json", pat_str="none") == tiny()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda lines: ["minbpe v2", *lines[1:]], "m.model:1: not a minbpe model"),
        (lambda lines: [*lines[:2], "x", *lines[3:]], "m.model:3: expected the number of special tokens"),
        (lambda lines: [*lines[:2], "9", *lines[3:]], "m.model:7: expected a special token line"),
        (lambda lines: [*lines[:2], "2", "<s> 258", *lines[3:]], "m.model:5: the special token '<s>' is listed twice"),
        (lambda lines: [*lines[:4], "97", *lines[5:]], "m.model:5: expected a merge line 'left right'"),
        (lambda lines: [*lines[:5], "256 999", *lines[6:]], "m.model: merge 1 \\(256, 999\\) names an id"),
    ],
)
def test_malformed_minbpe_import(tmp_path, mutate, message):
    tiny().export(tmp_path / "m", format="minbpe")
    path = tmp_path / "m.model"
    path.write_text("\n".join(mutate(path.read_text(encoding="utf-8").split("\n"))), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Tokenizer.from_file(path)


def test_minbpe_refuses_what_its_lines_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match="white space; 'end of text' holds some"):
        Tokenizer([], pat_str=None, special_tokens={"end of text": 256}).export(tmp_path / "m", format="minbpe")
    with pytest.raises(ValueError, match="line break"):
        Tokenizer([], pat_str="a\n|b").export(tmp_path / "m", format="minbpe")
    assert os.listdir(tmp_path) == []


def test_model_file_v2_byte_ids_are_checked(tmp_path):
    byte_ids = [*range(1, 256), 0]
    tok = tiny(byte_ids=byte_ids)
    assert tok.vocab[0] == b"\xff" and tok.vocab[257] == b"`ab"
    assert tok.encode("`ab<s>", allowed_special="all") == [257, 258]
    write_model(tmp_path / "m.bpe", merges=tok.merges, pat_str=None, special_tokens=tok.special_tokens,
                byte_ids=byte_ids)  # v2, as bpetrain wrote before v3
    tok.save(tmp_path / "m3.bpe")
    for name, version in (("m.bpe", "v2"), ("m3.bpe", "v3")):
        lines = (tmp_path / name).read_text(encoding="utf-8").split("\n")
        assert lines[0] == f"bpetrain model {version}" and Tokenizer.load(tmp_path / name) == tok
        lines[3] = "byte_ids: [0, 0]"
        (tmp_path / name).write_text("\n".join(lines), encoding="utf-8")
        with pytest.raises(ValueError, match=f"{name}:4: byte_ids must be a permutation"):
            Tokenizer.load(tmp_path / name)
    with pytest.raises(ValueError, match="byte_ids must be a permutation of 0..255"):
        tiny(byte_ids=[0] * 256)


def test_hf_folder_gives_transformers_the_eos_token(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is a test dependency")
    from bpetrain import BpeTrainer

    text = stdlib_text(100_000).decode("utf-8")
    tok = BpeTrainer(300, special_tokens=["<|pad|>", "<|endoftext|>"], show_progress=False).train_from_iterator([text])
    tok.export(f"{tmp_path / 'out'}/", format="hf")  # a path ending in / (or an existing folder)
    assert sorted(os.listdir(tmp_path / "out")) == [".bpetrain.json", "tokenizer.json", "tokenizer_config.json"]
    loaded = transformers.AutoTokenizer.from_pretrained(tmp_path / "out")
    assert loaded.eos_token == "<|endoftext|>" and loaded.eos_token_id == tok.special_tokens["<|endoftext|>"]
    sample = "the lazy dog<|endoftext|>"
    assert loaded.encode(sample) == tok.encode(sample, allowed_special="all")
    assert Tokenizer.from_file(tmp_path / "out") == tok  # the folder reads back (checked against its record)
    (tmp_path / "out" / "tokenizer.json").write_text((tmp_path / "out" / "tokenizer.json").read_text()[:-2] + "\n")
    with pytest.raises(ValueError, match="different exports"):
        Tokenizer.from_file(tmp_path / "out")
