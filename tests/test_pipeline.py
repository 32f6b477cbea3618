"""Hugging Face pre-tokenizers as a pipeline (bpetrain.splitting.pipeline): the compiled
kernel, the regex-module reference and ``tokenizers`` itself give the same pieces, and
encodings, counters, trainers and file formats take a pipeline where a pattern goes."""
from __future__ import annotations

import json
import unicodedata
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Encoding, Tokenizer
from bpetrain._util.byte_alphabet import BYTE_TO_CHAR
from bpetrain.counting.counts import PieceCounter, PieceTable
from bpetrain.splitting.names import LLAMA3_PATTERN, PATTERNS
from bpetrain.splitting.pattern import resolve_pattern, split_pattern
from bpetrain.splitting.pipeline import (
    BYTE_LEVEL_PATTERN,
    ByteLevel,
    Digits,
    PipelineSplitter,
    PreTokenizer,
    Split,
    matches_everywhere,
)
from helpers import ASSIGNED, MULTILINGUAL, QWEN2_PATTERN, stdlib_text
from pattern_strategies import documents

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (a test dependency) is not installed")
pre_tokenizers = tokenizers.pre_tokenizers
Regex = tokenizers.Regex

BEHAVIORS = ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]


def last_byte_level(add_prefix_space=False):
    return pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=False)


def _configs():
    """Hugging Face pre-tokenizers, by name."""
    found = {}
    for aps in (False, True):
        for use_regex in (False, True):
            found[f"bytelevel-aps{int(aps)}-regex{int(use_regex)}"] = pre_tokenizers.ByteLevel(
                add_prefix_space=aps, use_regex=use_regex)
    for behavior in BEHAVIORS:
        for invert in (False, True):
            found[f"split-regex-{behavior}-invert{int(invert)}"] = pre_tokenizers.Sequence(
                [pre_tokenizers.Split(Regex(r"\p{N}+|\s|[.,!?]"), behavior, invert=invert), last_byte_level()])
            found[f"split-string-{behavior}-invert{int(invert)}"] = pre_tokenizers.Sequence(
                [pre_tokenizers.Split(" ", behavior, invert=invert), last_byte_level()])
    for individual in (False, True):
        found[f"digits-{int(individual)}"] = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=individual), last_byte_level()])
    found["llama3"] = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated"),
                                               last_byte_level()])
    found["qwen2"] = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2_PATTERN), "isolated"),
                                              last_byte_level()])
    found["three-splits"] = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), "isolated"),
        pre_tokenizers.Split(Regex(r"[\r\n]+"), "merged_with_previous"),
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated"),
        last_byte_level(),
    ])
    found["split-digits-bytelevel"] = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), "merged_with_next"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),
    ])
    found["nested-sequence"] = pre_tokenizers.Sequence([
        pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\s+"), "contiguous", invert=True),
                                 pre_tokenizers.Digits(individual_digits=False)]),
        pre_tokenizers.Split("-", "merged_with_previous"),
        last_byte_level(),
    ])
    found["line-anchors"] = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r"^ +|\p{L}+$|\p{L}+"), "isolated"), last_byte_level()])
    return found


CONFIGS = _configs()


def pipeline_of(hf_pre_tokenizer) -> PreTokenizer:
    return PreTokenizer.from_hf(json.loads(hf_pre_tokenizer.__getstate__()))


def byte_level(pieces: list[bytes]) -> list[str]:
    return ["".join(BYTE_TO_CHAR[b] for b in piece) for piece in pieces]


def check_pieces(hf_pre_tokenizer, text: str) -> None:
    splitter = pipeline_of(hf_pre_tokenizer).splitter()
    data = text.encode("utf-8")
    compiled = splitter.split(data)
    assert compiled == splitter.split_by_regex(data)
    expected = [piece for piece, _ in hf_pre_tokenizer.pre_tokenize_str(text)]
    assert byte_level(compiled) == expected


def assigned_only(text: str) -> str:
    """``text`` without characters Python's Unicode database leaves unassigned: their
    classes differ between the Unicode versions of Oniguruma and the regex module."""
    return "".join(c for c in text if unicodedata.category(c) not in ("Cn", "Cs", "Co"))


TEXTS = st.one_of(
    st.text(ASSIGNED, max_size=80),
    documents().map(lambda data: assigned_only(data.decode("utf-8", "ignore"))),
    st.lists(st.sampled_from(["\r\n", "\n", " ", "  ", "\t", "12345", "a", "'s", "!!", "x1", "中文", "\u00a0"]),
             max_size=30).map("".join),
)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_pieces_equal_tokenizers(name, text):
    check_pieces(CONFIGS[name], text)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pieces_equal_tokenizers_on_real_text(name):
    real = MULTILINGUAL + stdlib_text(20_000).decode("utf-8") + " " * 300 + "9" * 50 + "\r\n" * 20
    for text in (real, MULTILINGUAL, "", " ", "\n", "  lead", "trail  ", "a" * 1000):
        check_pieces(CONFIGS[name], text)


@settings(max_examples=200, deadline=None)
@given(data=documents())
def test_compiled_equals_regex_on_invalid_utf8(data):
    for name in ("three-splits", "split-digits-bytelevel", "split-regex-merged_with_next-invert1", "line-anchors"):
        splitter = pipeline_of(CONFIGS[name]).splitter()
        assert splitter.split(data) == splitter.split_by_regex(data)


# --- the value: JSON, reductions, errors ---------------------------------------------------

def test_json_round_trip_and_steps():
    pre = pipeline_of(CONFIGS["split-digits-bytelevel"])
    assert pre.steps == (Split(r"\s+", "MergedWithNext"), Digits(True), ByteLevel(True, True, True))
    assert PreTokenizer.from_hf(pre.to_hf()) == pre
    assert json.loads(pre_tokenizers.Sequence([]).__getstate__()) == {"type": "Sequence", "pretokenizers": []}
    # tokenizers reads what to_hf writes and splits the same way
    back = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": pre.to_hf()}))
    assert back.pre_tokenizer.pre_tokenize_str(MULTILINGUAL) == CONFIGS["split-digits-bytelevel"].pre_tokenize_str(
        MULTILINGUAL)


def test_a_single_pattern_is_a_pat_str():
    for pat_str in [*PATTERNS.values(), BYTE_LEVEL_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN]:
        assert matches_everywhere(pat_str), pat_str
        if "$" in pat_str:  # Oniguruma's $ is at every line end: the pattern runs with (?m), not as itself
            continue
        assert resolve_pattern(PreTokenizer((Split(pat_str), ByteLevel(use_regex=False)))) == pat_str
    assert resolve_pattern(PreTokenizer((ByteLevel(),))) == BYTE_LEVEL_PATTERN
    assert resolve_pattern(PreTokenizer((ByteLevel(use_regex=False),))) is None
    # a pattern that leaves gaps keeps them as pieces: a pipeline, unless Removed + invert drops them
    for pat_str in [r"\w+", r"\p{L}+|\s", r"\p{L}(?!x)|\s|\p{N}|[^\s\p{L}\p{N}]", r"(?=x)\p{L}+|\s+"]:
        assert not matches_everywhere(pat_str), pat_str
        pre = PreTokenizer((Split(pat_str), ByteLevel(use_regex=False)))
        assert resolve_pattern(pre) is pre
        assert resolve_pattern(PreTokenizer((Split(pat_str, "Removed", invert=True),))) == pat_str
    assert resolve_pattern(PreTokenizer((ByteLevel(add_prefix_space=True),))) is not None
    assert isinstance(split_pattern(pipeline_of(CONFIGS["three-splits"])), PipelineSplitter)


@pytest.mark.parametrize(
    "pre_tokenizer, message",
    [
        ({"type": "Whitespace"}, "pre_tokenizer is a 'Whitespace' pre-tokenizer; bpetrain reads Split, Digits"),
        ({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Digits"}]},
         "step 0 is a ByteLevel but not the last step"),
        ({"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}+"}, "behavior": "Isolated", "invert": False},
         "Oniguruma reads as"),
        ({"type": "Split", "pattern": {"Regex": r"a*"}, "behavior": "Isolated", "invert": False},
         "matches the empty string"),
        ({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Dropped", "invert": False},
         "pre_tokenizer: Split.behavior is 'Dropped'; Hugging Face's are Isolated"),
        ({"type": "Split", "pattern": {"Glob": "a"}, "behavior": "Isolated", "invert": False}, "pattern must be"),
        ({"type": "ByteLevel", "add_prefix_space": "yes"}, "add_prefix_space must be true or false"),
        ("ByteLevel", "bpetrain reads Split, Digits, ByteLevel"),
    ],
)
def test_refused_pre_tokenizers(pre_tokenizer, message):
    with pytest.raises(ValueError, match=message):
        PreTokenizer.from_hf(pre_tokenizer)


def test_step_types_are_checked():
    with pytest.raises(TypeError, match="step 0 is a str"):
        PreTokenizer(("ByteLevel",))
    with pytest.raises(TypeError, match="pat_str must be a str, a PreTokenizer or None"):
        resolve_pattern(3)


# --- where a pat_str goes -------------------------------------------------------------------

def hf_trained(pre_tokenizer, vocab_size=1200):
    """A tokenizers BPE trained by its own BpeTrainer on real text, with ``pre_tokenizer``."""
    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    hf.pre_tokenizer = pre_tokenizer
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(stdlib_text(200_000).decode("utf-8").splitlines() + [MULTILINGUAL] * 20, trainer)
    return hf


@pytest.fixture(scope="module", params=["qwen2", "three-splits", "split-digits-bytelevel", "bytelevel-aps1-regex1"])
def trained(request, tmp_path_factory):
    hf = hf_trained(CONFIGS[request.param])
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    hf.save(str(path))
    return hf, Tokenizer.from_file(path)


@settings(max_examples=100, deadline=None)
@given(text=TEXTS)
def test_encoding_ids_equal_tokenizers(trained, text):
    hf, tokenizer = trained
    assert tokenizer.encoding().encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids


def test_encoding_ids_equal_tokenizers_on_real_text(trained):
    hf, tokenizer = trained
    enc = tokenizer.encoding()
    texts = [MULTILINGUAL, stdlib_text(50_000).decode("utf-8"), "", "  ", "2024-11-25"]
    for text in texts:
        ids = hf.encode(text, add_special_tokens=False).ids
        assert enc.encode_ordinary(text) == ids
        assert enc.encode_to_numpy(text).tolist() == ids
        assert enc.decode(ids) == text or isinstance(tokenizer.pat_str, PreTokenizer)  # a prefix space is added
    assert enc.encode_batch(texts) == [hf.encode(t, add_special_tokens=False).ids for t in texts]
    assert enc.count_batch(texts) == [len(hf.encode(t, add_special_tokens=False).ids) for t in texts]


def test_encoding_with_special_tokens_splits_each_part():
    pre = pipeline_of(CONFIGS["split-digits-bytelevel"])
    enc = Encoding("p", pat_str=pre, mergeable_ranks={bytes([b]): b for b in range(256)},
                   special_tokens={"<|eot|>": 256})
    ids = enc.encode("a1<|eot|>b", allowed_special="all")
    assert ids == [32, 97, 32, 49, 256, 32, 98]  # " a", " 1" (a prefix space each), <|eot|>, " b"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode("a<|eot|>")


def test_counting_and_training_with_a_pipeline(tmp_path):
    pre = pipeline_of(CONFIGS["three-splits"])
    texts = [MULTILINGUAL, stdlib_text(30_000).decode("utf-8")]
    counter = PieceCounter(pre, ["<|eot|>"])
    counter.update([texts[0] + "<|eot|>" + texts[1]])
    expected = Counter(p for t in texts for p in pre.splitter().split_by_regex(t))
    table = counter.table()
    assert {table.piece(i): int(table.counts[i]) for i in range(table.n_pieces)} == expected
    counter.save(tmp_path / "c.npz")
    assert PieceTable.load(tmp_path / "c.npz")[1]["pat_str"] == pre

    tokenizer = BpeTrainer(300, pat_str=pre, show_progress=False).train_from_iterator(texts)
    assert tokenizer.pat_str == pre
    for name, fmt in (("m.model", None), ("m.tiktoken", "tiktoken"), ("tokenizer.json", "hf")):
        path = tmp_path / name
        tokenizer.save(path) if fmt is None else tokenizer.export(path, format=fmt)
        assert Tokenizer.from_file(path) == tokenizer, name
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert tokenizer.encoding().encode_ordinary(MULTILINGUAL) == hf.encode(MULTILINGUAL, add_special_tokens=False).ids
    with pytest.raises(ValueError, match="minbpe splits by one regex"):
        Tokenizer(tokenizer.merges, pat_str=pre, byte_ids=None).export(tmp_path / "m", format="minbpe")


def test_a_pattern_with_gaps_exports_as_removed_inverted(tmp_path):
    """A pat_str drops the text it does not match; tokenizer.json says so with Split's
    Removed behavior inverted, and tokenizers then gives bpetrain's ids."""
    pat_str = r"\p{L}+| \p{N}"
    tokenizer = BpeTrainer(300, pat_str=pat_str, show_progress=False).train_from_iterator([MULTILINGUAL] * 5)
    tokenizer.export(tmp_path / "tokenizer.json", format="hf")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert tokenizer.encoding().encode_ordinary(MULTILINGUAL) == hf.encode(MULTILINGUAL, add_special_tokens=False).ids
    assert Tokenizer.from_file(tmp_path / "tokenizer.json").pat_str == pat_str


@pytest.mark.parametrize(
    "normalizer, message",
    [
        (None, None),
        ({"type": "Sequence", "normalizers": []}, None),
        ({"type": "Sequence", "normalizers": [{"type": "Strip", "strip_left": False, "strip_right": False},
                                              {"type": "Prepend", "prepend": ""}]}, None),
        ({"type": "Replace", "pattern": {"String": "a"}, "content": "b"},
         "normalizer is \\{'type': 'Replace'.*which changes the text .*bpetrain reads NFC, NFD, NFKC, NFKD, Lowercase"),
        ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip", "strip_left": True,
                                                                "strip_right": False}]},
         "normalizer.normalizers\\[1\\] is \\{'type': 'Strip'"),
        ({"type": "Prepend", "prepend": "\u2581"}, "normalizer is \\{'type': 'Prepend'"),
        ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
          "lowercase": True}, "normalizer is \\{'type': 'BertNormalizer'"),
        ({"type": "Precompiled", "precompiled_charsmap": "AA=="}, "normalizer is \\{'type': 'Precompiled'"),
    ],
)
def test_normalizers(tmp_path, normalizer, message):
    tokenizer = BpeTrainer(260, pat_str="cl100k", show_progress=False).train_from_iterator([MULTILINGUAL])
    path = tmp_path / "tokenizer.json"
    tokenizer.export(path, format="hf")
    document = json.loads(path.read_text(encoding="utf-8"))
    document["normalizer"] = normalizer
    path.write_text(json.dumps(document), encoding="utf-8")
    if message is None:
        assert Tokenizer.from_file(path) == tokenizer
    else:
        with pytest.raises(ValueError, match=message):
            Tokenizer.from_file(path)


@pytest.mark.parametrize("name", ["three-splits", "split-digits-bytelevel"])
def test_every_encoding_method_takes_a_pipeline(name):
    pre = pipeline_of(CONFIGS[name])
    text = MULTILINGUAL * 3
    enc = BpeTrainer(400, pat_str=pre, show_progress=False).train_from_iterator([text]).encoding()
    expected = [i for piece in pre.splitter().split_by_regex(text) for i in enc._encode_single_piece(piece)]
    assert enc.encode(text) == expected
    assert enc._encode_only_native_bpe(text) == expected
    assert enc.encode_ordinary_batch([text, text], num_threads=2) == [expected, expected]
    assert enc.count(text) == len(expected)
    assert enc.count_till_limit(text, len(expected)) == len(expected)
    assert enc.count_till_limit(text, len(expected) - 1) is None
    assert [i for part in enc.encode_stream([text[:50], text[50:]]) for i in part.tolist()] == expected
    a = enc.appendable()
    a.push(text)
    assert a.count == len(expected)
    if name == "three-splits":  # pieces that are the text's own: chunks at token limits
        chunks = enc.split_into_chunks(text, 20)
        assert "".join(chunks) == text and all(enc.count(chunk) <= 20 for chunk in chunks)
    else:
        with pytest.raises(ValueError, match="its pieces have no place in the text"):
            enc.split_into_chunks(text, 20)


def test_command_line_with_a_pipeline(tmp_path, capsys):
    from bpetrain.cli import main

    path = tmp_path / "tokenizer.json"
    hf = hf_trained(CONFIGS["split-digits-bytelevel"], 400)
    hf.save(str(path))
    text = tmp_path / "t.txt"
    text.write_bytes(MULTILINGUAL.encode("utf-8"))
    assert main(["report", str(path), "--text", str(text), "--json", "-"]) == 0
    model = json.loads(capsys.readouterr().out)["models"][0]
    assert PreTokenizer.from_hf(model["pat_str"]["pre_tokenizer"]) == Tokenizer.from_file(path).pat_str
    assert model["compression"]["n_tokens"] == len(hf.encode(MULTILINGUAL, add_special_tokens=False).ids)
    assert main(["train", str(text), "--base", str(path), "--vocab-size", "420", "-o", str(tmp_path / "m.bpe"),
                 "-q"]) == 0
    assert Tokenizer.from_file(tmp_path / "m.bpe").pat_str == Tokenizer.from_file(path).pat_str
