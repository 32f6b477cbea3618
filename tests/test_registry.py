"""get_encoding and encoding_for_model: tiktoken's facts, files found without a download, errors."""
from __future__ import annotations

import hashlib
import pickle

import pytest
from helpers import MULTILINGUAL, VOCABS, require, stdlib_text

import bpetrain
from bpetrain import PATTERNS, BpeTrainer, Tokenizer, registry
from bpetrain.registry import ENCODINGS, EncodingSpec, VocabFile

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No encoding loaded yet, no $BPETRAIN_VOCABS, and an empty tiktoken cache in ``tmp_path``."""
    monkeypatch.setattr(registry, "_loaded", {})
    monkeypatch.delenv("BPETRAIN_VOCABS", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_encodings_are_tiktokens(monkeypatch):
    """Names, patterns, special tokens (in order), explicit_n_vocab and files, against
    tiktoken_ext/openai_public.py with its file loaders replaced (nothing is downloaded)."""
    from tiktoken_ext import openai_public

    def rank_file(url, expected_hash=None):
        return {"files": [(url, expected_hash)]}

    def data_gym(vocab_bpe_file, encoder_json_file, vocab_bpe_hash=None, encoder_json_hash=None):
        return {"files": [(encoder_json_file, encoder_json_hash), (vocab_bpe_file, vocab_bpe_hash)]}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", rank_file)
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", data_gym)
    for name, spec in ENCODINGS.items():
        theirs = openai_public.ENCODING_CONSTRUCTORS[name]()
        assert theirs["name"] == name
        assert PATTERNS[spec.pattern] == theirs["pat_str"], name
        assert list(spec.special_tokens.items()) == list(theirs["special_tokens"].items()), name
        assert spec.explicit_n_vocab == theirs.get("explicit_n_vocab"), name
        assert [(file.url, file.sha256) for file in spec.files] == theirs["mergeable_ranks"]["files"], name
    assert bpetrain.list_encoding_names() == list(ENCODINGS)


def test_models_as_tiktoken():
    from tiktoken.model import encoding_name_for_model

    names = [*registry.MODEL_TO_ENCODING, *(prefix + "2025-01-01" for prefix in registry.MODEL_PREFIX_TO_ENCODING),
             "ft:gpt-4o-mini:org", "gpt-4-0613", "gpt-oss-120b", "gpt-5.1"]
    for name in names:
        assert bpetrain.encoding_name_for_model(name) == encoding_name_for_model(name), name
    for unknown in ["llama-3", "", "GPT-4", "davinci-003"]:
        with pytest.raises(KeyError, match="no encoding is known for the model"):
            bpetrain.encoding_name_for_model(unknown)
        with pytest.raises(KeyError):
            encoding_name_for_model(unknown)
    if tiktoken.__version__ == "0.14.0":  # the tables were written from this release
        from tiktoken import model

        assert registry.MODEL_TO_ENCODING == model.MODEL_TO_ENCODING
        assert list(registry.MODEL_PREFIX_TO_ENCODING.items()) == list(model.MODEL_PREFIX_TO_ENCODING.items())


def test_absent_files_say_where_they_were_looked_for(fresh, monkeypatch):
    with pytest.raises(FileNotFoundError) as info:
        bpetrain.get_encoding("cl100k_base")
    message = str(info.value)
    cache_path = fresh / "cache" / hashlib.sha1(ENCODINGS["cl100k_base"].files[0].url.encode()).hexdigest()
    assert f"{cache_path} (absent)" in message
    assert "$BPETRAIN_VOCABS/cl100k_base.tiktoken ($BPETRAIN_VOCABS is not set)" in message
    assert "curl -o cl100k_base.tiktoken https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken" in message
    assert "python -c \"import tiktoken; tiktoken.get_encoding('cl100k_base')\"" in message
    monkeypatch.setenv("BPETRAIN_VOCABS", str(fresh))
    with pytest.raises(FileNotFoundError, match=f"{fresh / 'encoder.json'} \\(absent\\)"):
        bpetrain.encoding_for_model("gpt2")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(FileNotFoundError, match="tiktoken's cache \\(off: TIKTOKEN_CACHE_DIR is empty\\)"):
        bpetrain.get_encoding("o200k_harmony")
    (fresh / "p50k_base.tiktoken").write_bytes(b"YQ== 0\n")
    with pytest.raises(ValueError, match="p50k_base.tiktoken should be https://.* but its SHA-256 is"):
        bpetrain.get_encoding("p50k_edit")
    assert registry._loaded == {}


def test_unknown_names_raise_what_tiktoken_raises(fresh):
    for name in ["cl100k", "gpt-4", 7]:
        with pytest.raises(ValueError):
            tiktoken.get_encoding(name)
        with pytest.raises(ValueError, match="unknown encoding|must be a str"):
            bpetrain.get_encoding(name)
    with pytest.raises(KeyError):
        bpetrain.encoding_for_model("no-such-model")


@pytest.fixture(scope="module")
def trained():
    text = stdlib_text(100_000).decode() + MULTILINGUAL
    return BpeTrainer(256 + 300, pat_str="gpt2", show_progress=False).train_from_iterator([text]), text


def spec_for(monkeypatch, files, special_tokens):
    """Register the encoding "test" made of ``files`` ({VocabFile: path}), written by the test."""
    sha256 = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files.items()}
    spec = EncodingSpec("gpt2", tuple(VocabFile(f"https://example.org/vocabs/{name}", sha256[name]) for name in files),
                        special_tokens)
    monkeypatch.setitem(ENCODINGS, "test", spec)
    return spec


def test_rank_file_from_either_place(fresh, monkeypatch, trained):
    from tiktoken.load import load_tiktoken_bpe

    tok, text = trained
    tok.save_tiktoken(fresh / "test.tiktoken")
    spec = spec_for(monkeypatch, {"test.tiktoken": fresh / "test.tiktoken"}, {"<|endoftext|>": 1000})
    # $BPETRAIN_VOCABS, under the file's name
    monkeypatch.setenv("BPETRAIN_VOCABS", str(fresh))
    enc = bpetrain.get_encoding("test")
    assert enc.mergeable_ranks == tok.mergeable_ranks and enc.special_tokens == {"<|endoftext|>": 1000}
    assert enc.encode_ordinary(text) == tok.encode_ordinary(text)
    # tiktoken's cache, under the SHA-1 of the URL: where tiktoken itself finds it, offline
    cache = fresh / "cache"
    cache.mkdir()
    (cache / hashlib.sha1(spec.files[0].url.encode()).hexdigest()).write_bytes((fresh / "test.tiktoken").read_bytes())
    (fresh / "test.tiktoken").unlink()
    monkeypatch.setattr(registry, "_loaded", {})
    assert bpetrain.get_encoding("test").mergeable_ranks == tok.mergeable_ranks
    assert load_tiktoken_bpe(spec.files[0].url, spec.files[0].sha256) == tok.mergeable_ranks
    # registered encodings pickle by name, as tiktoken's do
    enc = bpetrain.get_encoding("test")
    assert len(pickle.dumps(enc)) < 100 and pickle.loads(pickle.dumps(enc)) is enc
    assert bpetrain.get_encoding("test") is enc


def test_gpt2_release_files(fresh, monkeypatch, trained):
    """encoder.json + vocab.bpe (GPT-2's release; bpetrain's gpt2 export writes the same
    formats) give the ranks tiktoken's data_gym_to_mergeable_bpe_ranks gives."""
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    trained_tok, text = trained
    # GPT-2's files rank the single bytes printable ones first, as tiktoken's reader expects
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    order = printable + [b for b in range(256) if b not in printable]
    byte_ids = [order.index(b) for b in range(256)]
    tok = Tokenizer(trained_tok.merges, pat_str=trained_tok.pat_str, byte_ids=byte_ids)
    tok.export(fresh / "export", format="gpt2")
    (fresh / "export" / "vocab.json").rename(fresh / "encoder.json")
    (fresh / "export" / "merges.txt").rename(fresh / "vocab.bpe")
    spec_for(monkeypatch, {"encoder.json": fresh / "encoder.json", "vocab.bpe": fresh / "vocab.bpe"}, {})
    monkeypatch.setenv("BPETRAIN_VOCABS", str(fresh))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would copy the files into its cache
    expected = data_gym_to_mergeable_bpe_ranks(str(fresh / "vocab.bpe"), str(fresh / "encoder.json"))
    enc = bpetrain.get_encoding("test")
    assert enc.mergeable_ranks == expected
    assert enc.encode_ordinary(text) == tok.encode_ordinary(text)


@pytest.fixture
def real_vocabs(monkeypatch):
    require(VOCABS / "cl100k_base.tiktoken", "the OpenAI vocabularies (set BPETRAIN_VOCABS)")
    require(VOCABS / "o200k_base.tiktoken", "the OpenAI vocabularies (set BPETRAIN_VOCABS)")
    monkeypatch.setenv("BPETRAIN_VOCABS", str(VOCABS))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "o200k_harmony"])
def test_openai_encodings_equal_tiktokens(real_vocabs, name):
    from tiktoken.load import load_tiktoken_bpe

    enc = bpetrain.get_encoding(name)
    spec = ENCODINGS[name]
    theirs = tiktoken.Encoding(name, pat_str=PATTERNS[spec.pattern], special_tokens=spec.special_tokens,
                               mergeable_ranks=load_tiktoken_bpe(str(VOCABS / spec.files[0].name)))
    text = MULTILINGUAL + "".join(spec.special_tokens)
    assert enc.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    ids = sorted(spec.special_tokens.values())
    assert enc.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)  # 200018: <|endofprompt|>
    assert (enc.n_vocab, enc.max_token_value, enc.eot_token) == (theirs.n_vocab, theirs.max_token_value, theirs.eot_token)


def test_models_load_their_encodings(real_vocabs):
    assert bpetrain.encoding_for_model("gpt-oss-120b").name == "o200k_harmony"
    assert bpetrain.encoding_for_model("gpt-4o").decode([200018]) == "<|endofprompt|>"
    assert bpetrain.encoding_for_model("gpt-4") is bpetrain.get_encoding("cl100k_base")


def test_harmony_special_tokens_decode_as_tiktoken(trained):
    """o200k_harmony's 1091 special tokens, two of them on 200018, over a small vocabulary."""
    tok, _ = trained
    specials = ENCODINGS["o200k_harmony"].special_tokens
    kwargs = {"pat_str": PATTERNS["o200k"], "mergeable_ranks": tok.mergeable_ranks, "special_tokens": specials}
    ours, theirs = bpetrain.Encoding("harmony", **kwargs), tiktoken.Encoding("harmony", **kwargs)
    ids = sorted(set(specials.values()))
    assert ours.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)
    assert ours.decode_single_token_bytes(200018) == b"<|endofprompt|>"
    text = "<|reserved_200018|>x<|endofprompt|><|call|>"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all") == [200018, ord("x"), 200018, 200012]
    assert (ours.n_vocab, ours.max_token_value) == (theirs.n_vocab, theirs.max_token_value) == (201088, 201087)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="runs in a forked child with a memory limit (POSIX)")
@pytest.mark.parametrize("n_bytes, message", [
    (3 << 30, r"cl100k_base\.tiktoken: larger than 1073741824 bytes, too large for OpenAI's cl100k_base\.tiktoken"),
    (300 << 20, r"cl100k_base\.tiktoken should be .* but its SHA-256 is"),
])
def test_a_candidate_file_is_hashed_in_bounded_memory(fresh, monkeypatch, n_bytes, message):
    """get_encoding read a whole candidate file to hash it (a 3 GiB file: 3.1 GiB RSS before
    the checksum error). Now: hashed 1 MB at a time, and past the readers' cap refused
    before it is read; the child may grow by 128 MiB only."""
    from test_fuzz_readers import run_isolated
    from test_special_files import limit_memory

    with open(fresh / "cl100k_base.tiktoken", "wb") as f:
        f.truncate(n_bytes)  # sparse: takes no disk
    monkeypatch.setenv("BPETRAIN_VOCABS", str(fresh))

    def run():
        limit_memory(128 << 20)
        with pytest.raises(ValueError, match=message):
            bpetrain.get_encoding("cl100k_base")

    run_isolated(run, 120)
