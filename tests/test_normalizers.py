"""A tokenizer.json's normalizer (bpetrain.splitting.normalizers): NFC, NFD, NFKC, NFKD and
Lowercase, alone or in a Sequence, read, applied before the split on every path that splits,
and written back; ids equal ``tokenizers``' on files its own BpeTrainer made with a Qwen2
pre-tokenizer, with added tokens cut before (``normalized`` false) and after it (true)."""
from __future__ import annotations

import json
import unicodedata

import pytest
from helpers import ASSIGNED, MULTILINGUAL, QWEN2_PATTERN, stdlib_text
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.encoding.added_tokens import AddedToken, split_added
from bpetrain.splitting.normalizers import Normalizer
from bpetrain.splitting.pipeline import ByteLevel, PreTokenizer, Split, pat_str_from_json, pat_str_to_json

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (a test dependency) is not installed")
from tokenizers import AddedToken as HFAddedToken  # noqa: E402
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

#: Hugging Face normalizers, by name, and the forms bpetrain reads them as.
CONFIGS = {
    "NFC": (normalizers.NFC(), ("NFC",)),
    "NFKC": (normalizers.NFKC(), ("NFKC",)),
    "Sequence": (normalizers.Sequence([normalizers.NFD(), normalizers.Strip(left=False, right=False),
                                       normalizers.Lowercase(), normalizers.NFKC()]), ("NFD", "Lowercase", "NFKC")),
}
#: Text a normalizer changes: combining marks (composed, decomposed, reordered), Hangul
#: syllables and jamo, compatibility characters, capitals (a final sigma, a dotted I; 'ℌ', which
#: NFD, Lowercase, NFKC makes 'H', so that normalizing twice makes 'h').
TRICKY = ["e\u0301", "\u0301", "a\u0328\u0301", "o\u0301\u0328", "\u0327", "é", "가", "\u1100\u1161\u11a8", "\u11a8",
          "ﬁ", "①", "Ⅻ", "ℌ", "ｶ", "㎏", "²", "ΑΣ ", "Σ", "İ", "ẞ", "K", "Å", "café", "cafe\u0301", "ﬁnal", "final",
          "<|ﬁ|>", "<|fi|>", " ", "  ", "\n", "12", "a", "'S", "中文", "\u00a0"]
#: Added tokens: normalized false (cut before the normalizer), true (cut after it, as their content normalized).
ADDED = [HFAddedToken("<|ﬁ|>", special=True, normalized=False), HFAddedToken("ﬁnal", special=False, normalized=True),
         HFAddedToken("cafe\u0301", special=False, normalized=True), HFAddedToken("<|eot|>", special=True,
                                                                                   normalized=False)]
TRAINING_TEXT = stdlib_text(100_000).decode("utf-8").splitlines() + [MULTILINGUAL + "".join(TRICKY)] * 20


def hf_ids(hf, text: str) -> list[int]:
    return hf.encode(text, add_special_tokens=False).ids


def comparable(text: str, hf_normalizer, normalizer: Normalizer) -> str:
    """``text`` without characters whose Unicode data differ between Python's tables and
    tokenizers' (unassigned ones, whose classes differ too; the few the normalizer maps
    otherwise, measured in docs/formats.md; the Dives Akuru block, whose one composition
    tokenizers lacks; the marks the two order otherwise beside another mark, such as U+0EBA,
    of combining class 9 in Python's tables and 0 in tokenizers')."""
    return "".join(c for c in text if unicodedata.category(c) not in ("Cn", "Cs", "Co")
                   and not "\U00011900" <= c <= "\U0001195f" and normalizer(c) == hf_normalizer.normalize_str(c)
                   and normalizer("a\u0300" + c) == hf_normalizer.normalize_str("a\u0300" + c)
                   and normalizer("a" + c + "\u0300") == hf_normalizer.normalize_str("a" + c + "\u0300"))


TEXTS = st.one_of(
    st.lists(st.sampled_from(TRICKY), max_size=30).map("".join),
    st.text(ASSIGNED, max_size=60),
    st.lists(st.sampled_from(TRICKY) | st.text(ASSIGNED, max_size=3), max_size=20).map("".join),
)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def trained(request, tmp_path_factory):
    """(name, the HF tokenizer with added tokens, its file, the file without them)."""
    hf_normalizer, forms = CONFIGS[request.param]
    hf = tokenizers.Tokenizer(models.BPE())
    hf.normalizer = hf_normalizer
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2_PATTERN), "isolated"),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    folder = tmp_path_factory.mktemp(request.param)
    plain = folder / "plain.json"
    hf.save(str(plain))
    hf.add_tokens(ADDED)
    path = folder / "tokenizer.json"
    hf.save(str(path))
    return request.param, hf, path, plain


def test_files_read_with_their_normalizer(trained):
    name, _, path, plain = trained
    for file in (path, plain):
        pat_str = Tokenizer.from_file(file).pat_str
        assert isinstance(pat_str, PreTokenizer)
        assert pat_str.normalizer == Normalizer(CONFIGS[name][1])
        assert pat_str.steps == (Split(QWEN2_PATTERN), ByteLevel(add_prefix_space=False, use_regex=False))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_ids_equal_tokenizers_on_hypothesis_text(trained, text):
    name, hf, path, plain = trained
    tok = _tokenizer(path)
    text = comparable(text, CONFIGS[name][0], tok.pat_str.normalizer)
    assert tok.encode(text, allowed_special="all") == hf_ids(hf, text)
    enc = _tokenizer(plain).encoding()
    hf_plain = _hf(plain)
    ids = hf_ids(hf_plain, text)
    assert enc.encode_ordinary(text) == ids
    assert enc.count(text) == len(ids)
    assert enc.count_till_limit(text, len(ids)) == len(ids)


def test_ids_equal_tokenizers_on_real_text(trained):
    name, hf, path, plain = trained
    tok = _tokenizer(path)
    texts = [MULTILINGUAL, stdlib_text(30_000).decode("utf-8"), "".join(TRICKY) * 3, "", "ﬁnal<|ﬁ|>cafe\u0301<|eot|>ΑΣ"]
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf_ids(hf, text)
    enc, hf_plain = _tokenizer(plain).encoding(), _hf(plain)
    expected = [hf_ids(hf_plain, text) for text in texts]
    assert [enc.encode_ordinary(text) for text in texts] == expected
    assert enc.encode_batch(texts, num_threads=2) == expected
    assert enc.count_batch(texts) == [len(ids) for ids in expected]
    assert enc.interval_counter(texts[2]).count(3, 40) == len(hf_ids(hf_plain, texts[2][3:40]))
    with pytest.raises(ValueError, match=r"normalizes it \(a normalizer\): its pieces have no place in the text"):
        enc.split_into_chunks(texts[2], 5)


def test_round_trips_through_the_hf_file_and_the_model_file(trained, tmp_path):
    name, hf, path, _ = trained
    tok = _tokenizer(path)
    tok.export(tmp_path / "again.json", format="hf")
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["normalizer"] == json.loads(path.read_text(encoding="utf-8"))["normalizer"]
    assert Tokenizer.from_file(tmp_path / "again.json") == tok
    tok.save(tmp_path / "m.bpe")
    assert Tokenizer.load(tmp_path / "m.bpe") == tok
    reread = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    for text in (MULTILINGUAL, "".join(TRICKY)):
        assert hf_ids(reread, text) == hf_ids(hf, text) == Tokenizer.load(tmp_path / "m.bpe").encode(
            text, allowed_special="all")


def test_training_on_such_a_base_keeps_the_normalizer(trained, tmp_path):
    name, _, _, path = trained  # the file without added tokens: new ids after '<|ﬁ|>' are not exported
    base = _tokenizer(path)
    extended = BpeTrainer(vocab_size=len(base.vocab) + 40, min_frequency=1, show_progress=False).train_from_iterator(
        [MULTILINGUAL * 5 + "".join(TRICKY) * 5], base=path)
    assert extended.pat_str == base.pat_str
    extended.export(tmp_path / "out.json", format="hf")
    written = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert Normalizer.from_hf(written["normalizer"]) == base.pat_str.normalizer
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "out.json"))
    for text in (MULTILINGUAL, "".join(TRICKY) * 2):
        assert extended.encode(text, allowed_special="all") == hf_ids(hf, text)


def test_training_with_a_normalizing_pipeline_counts_normalized_text(tmp_path):
    pre = PreTokenizer((Split(QWEN2_PATTERN), ByteLevel(use_regex=False)), Normalizer(("NFKC",)))
    text = MULTILINGUAL + "ﬁne ①② ﬁne ﬁ" * 50
    tok = BpeTrainer(300, pat_str=pre, show_progress=False).train_from_iterator([text])
    assert b" fine" in tok.vocab.values()
    assert all("ﬁ".encode() not in token for token in tok.vocab.values())  # trained on "fine 12 fine fi"
    assert tok.encode("ﬁne") == tok.encode("fine")
    tok.export(tmp_path / "tokenizer.json", format="hf")  # no origin: written from the pipeline
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"] == {"type": "NFKC"}
    assert tok.encode(text) == hf_ids(hf, text)


def test_json_of_a_pipeline_carries_its_normalizer():
    pre = PreTokenizer((Split(r"\p{L}+"), ByteLevel(use_regex=False)), Normalizer(("NFD", "Lowercase")))
    value = pat_str_to_json(pre)
    assert value["normalizer"] == {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}
    assert pat_str_from_json(value, "pat_str") == pre
    assert pat_str_to_json(PreTokenizer(pre.steps)) == {"pre_tokenizer": pre.to_hf()}  # none: as before
    assert pre.as_pat_str() is pre  # a single pattern still normalizes: it stays a pipeline
    with pytest.raises(ValueError, match=r"pat_str.normalizer is \{'type': 'Replace'"):
        pat_str_from_json({"pre_tokenizer": pre.to_hf(), "normalizer": {"type": "Replace"}}, "pat_str")


@pytest.mark.parametrize("forms", [("NFC",), ("NFD",), ("NFKC",), ("NFKD",), ("Lowercase",), ("NFKD", "Lowercase")])
@settings(max_examples=200, deadline=None)
@given(text=TEXTS)
@example(text="\u00c0\u0eba")  # a mark the two tables give other combining classes, after one they agree on
def test_normalizer_equals_tokenizers(forms, text):
    normalizer = Normalizer(forms)
    hf = normalizers.Sequence([getattr(normalizers, form)() for form in forms])
    text = comparable(text, hf, normalizer)
    assert normalizer(text) == hf.normalize_str(text)
    assert normalizer.normalize_utf8(text.encode("utf-8")) == hf.normalize_str(text).encode("utf-8")
    assert Normalizer.from_hf(json.loads(hf.__getstate__())) == normalizer


def test_lowercase_maps_each_character_as_rust_does():
    assert Normalizer(("Lowercase",))("ΟΔΟΣ İ ẞ ABC") == "οδοσ i\u0307 ß abc"  # no final sigma, as char::to_lowercase
    assert "ΟΔΟΣ".lower() == "οδος"  # which str.lower has


def test_normalizers_that_change_nothing_are_dropped_and_others_refused():
    assert Normalizer.from_hf({"type": "Sequence", "normalizers": []}) is None
    assert Normalizer.from_hf({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": ""}, {"type": "NFC"}]}) == Normalizer(("NFC",))
    with pytest.raises(ValueError, match=r"normalizer.normalizers\[1\] is \{'type': 'StripAccents'\}"):
        Normalizer.from_hf({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]})
    with pytest.raises(ValueError, match="unknown normalizers"):
        Normalizer(("NFE",))
    with pytest.raises(TypeError, match="pass a Normalizer or None"):
        PreTokenizer((ByteLevel(),), {"type": "NFC"})


def test_added_tokens_with_normalized_true_are_found_in_the_normalized_text():
    tokens = [AddedToken("<|ﬁ|>", 5, normalized=False), AddedToken("ﬁnal", 6, special=False, normalized=True)]
    parts = split_added("<|ﬁ|>final ﬁnal<|fi|>", tokens, Normalizer(("NFKC",)))
    assert [getattr(p, "id", p) for p in parts] == [5, 6, " ", 6, "<|fi|>"]
    assert [getattr(p, "id", p) for p in split_added("<|ﬁ|>final ﬁnal", tokens)] == [5, "final ", 6]


_CACHE: dict = {}


def _tokenizer(path) -> Tokenizer:
    if ("bpetrain", path) not in _CACHE:
        _CACHE["bpetrain", path] = Tokenizer.from_file(path)
    return _CACHE["bpetrain", path]


def _hf(path):
    if ("hf", path) not in _CACHE:
        _CACHE["hf", path] = tokenizers.Tokenizer.from_file(str(path))
    return _CACHE["hf", path]
