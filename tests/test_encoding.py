"""Encoding: the compiled encoder against tiktoken and the reference, counting, chunking, errors."""
from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import ASSIGNED, MULTILINGUAL, openai_encodings, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import PATTERNS, BpeTrainer, Encoding, Tokenizer, load_tiktoken
from bpetrain.encoding._encoder import BATCH_COUNTS, BATCH_LISTS, BytePairEncoder
from bpetrain.encoding.errors import DisallowedSpecialTokenError
from bpetrain._reference import count_pieces, encode_piece, encode_piece_ranks
from bpetrain.formats.tiktoken import RAW_MODE_PAT_STR
from bpetrain.splitting.pattern import replace_surrogates

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")

OPENAI = ["cl100k_base", "o200k_base"]


@pytest.fixture(scope="module", params=OPENAI)
def pair(request):
    """(bpetrain's Encoding, tiktoken's Encoding) of one OpenAI vocabulary."""
    return openai_encodings(request.param)


@pytest.fixture(scope="module")
def real_text() -> str:
    return stdlib_text(1_000_000).decode("utf-8") + MULTILINGUAL * 20


def adversarial_texts() -> dict[str, str]:
    rng = random.Random(4)
    return {
        "empty": "",
        "one a": "a",
        "a * 10**6": "a" * 10**6,
        "letters without spaces": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=10**5)),
        "random bytes, replaced": bytes(rng.getrandbits(8) for _ in range(10**5)).decode("utf-8", "replace"),
        "digits": "".join(rng.choices("0123456789", k=10**4)),
        "whitespace": " " * 5000 + "\n" * 300 + "\t \r\n" * 500,
        "lone surrogates": "ab\ud800cd\udfff \udcff\udc80 raw",
        "special strings as text": "x<|endoftext|>y <|fim_prefix|><|endofprompt|>" * 50,
        "emoji run": "👨‍👩‍👧‍👦🙂🚀" * 2000,
    }


# ------------------------------------------------------------ same ids as tiktoken


def test_ids_identical_to_tiktoken_on_real_text(pair, real_text):
    ours, theirs = pair
    expected = theirs.encode_ordinary(real_text)
    assert ours.encode_ordinary(real_text) == expected
    array = ours.encode_to_numpy(real_text, disallowed_special=())
    assert array.dtype == np.uint32 and array.tolist() == expected
    assert ours.count(real_text) == len(expected)


def test_arrays_are_the_callers_own(pair):
    """encode_to_numpy's array (made with NumPy's C API) is 1-D, writable and owns its ids;
    an empty text gives an empty uint32 array."""
    ours, theirs = pair
    for text in ["", "a", "hello world " * 50]:
        array = ours.encode_to_numpy(text)
        assert array.dtype == np.uint32 and array.ndim == 1 and array.tolist() == theirs.encode(text)
        assert array.flags.writeable and array.flags.owndata and array.flags.c_contiguous
        again = ours.encode_to_numpy(text)
        array[:] = 7  # a second call's array does not share memory with the first
        assert again.tolist() == theirs.encode(text)


@pytest.mark.parametrize("name", list(adversarial_texts()))
def test_ids_identical_to_tiktoken_on_adversarial_text(pair, name):
    ours, theirs = pair
    text = adversarial_texts()[name]
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")


def test_texts_of_fewer_and_more_pieces_than_the_loop_reads_ahead(pair):
    """The text loop splits up to eight pieces ahead of the one it encodes, in a ring
    (``_encoder.split_and_encode``): texts of 0 to 20 pieces of every kind (1 and 2 bytes,
    3 to 8, 9 to 16, longer, a character of two bytes) give tiktoken's ids, and
    ``count_till_limit`` stops at every count of them."""
    ours, theirs = pair
    parts = [" a", " the", " Encoding", " internationalization", "  ", "12345", "\n\n", "\u00e9t\u00e9", "!?"]
    for k in range(21):
        text = "".join(parts[i % len(parts)] for i in range(k))
        expected = theirs.encode_ordinary(text)
        assert ours.encode_ordinary(text) == expected, k
        assert ours.encode_to_numpy(text).tolist() == expected, k
        for limit in range(len(expected) + 2):
            assert ours.count_till_limit(text, limit) == (len(expected) if limit >= len(expected) else None), (k, limit)


def _outcome(call, text, **kwargs):
    """What ``call(text, **kwargs)`` gives: its ids (a list, or an array as its dtype and
    list), or the message of the ValueError it raises."""
    try:
        ids = call(text, **kwargs)
    except ValueError as exc:
        return str(exc)
    return ids if isinstance(ids, list) else (str(ids.dtype), ids.tolist())


def _assert_arguments_agree(ours, texts, arguments, expected_of):
    """``ours.encode`` and ``ours.encode_to_numpy`` give ``expected_of(text)`` (:func:`_outcome`
    of a list call) for each of ``texts`` with each of ``arguments``."""
    for text in texts:
        expected = expected_of(text)
        for kwargs in arguments:
            assert _outcome(ours.encode, text, **kwargs) == expected, (text[:40], kwargs)
            got = _outcome(ours.encode_to_numpy, text, **kwargs)
            assert got == (expected if isinstance(expected, str) else ("uint32", expected)), (text[:40], kwargs)


def test_default_special_arguments_as_any_equal_arguments(pair):
    """encode and encode_to_numpy with their defaults skip looking at the arguments (the
    default's identity): the same ids and errors as the arguments passed as equal new
    objects, and as tiktoken's, on real and adversarial text."""
    ours, theirs = pair
    texts = [*adversarial_texts().values(), stdlib_text(3000).decode("utf-8"), MULTILINGUAL,
             "a <|endoftext|> b", "<|endofprompt|>", "<|endoftext", "\ud800<|fim_prefix|>"]
    equal = [{}, {"allowed_special": frozenset()}, {"allowed_special": set()}, {"disallowed_special": "all"},
             {"allowed_special": (), "disallowed_special": "all"}]
    # (tiktoken's encode_to_numpy refuses surrogates: its encode is the reference)
    _assert_arguments_agree(ours, texts, equal, lambda text: _outcome(theirs.encode, text))


def test_all_allowed_as_any_equal_arguments(pair):
    """encode and encode_to_numpy with ``allowed_special="all"`` (one kernel call from the
    compiled method, the special tokens its ids) give the same ids and errors as the same
    tokens allowed by a set of them, by ``disallowed_special=()``, and as tiktoken's, on real
    and adversarial text, a text past one kernel call's length and a lone surrogate."""
    from bpetrain.encoding._encoder import DOC_CHARS

    ours, theirs = pair
    texts = [*adversarial_texts().values(), stdlib_text(3000).decode("utf-8"), MULTILINGUAL,
             "a <|endoftext|> b<|fim_prefix|>", "<|endofprompt|>", "<|endoftext", "\ud800<|fim_prefix|>x",
             "ab <|endoftext|>" * (DOC_CHARS // 16 + 1)]
    equal = [{"allowed_special": "all"}, {"allowed_special": "all", "disallowed_special": "all"},
             {"allowed_special": "all", "disallowed_special": ()}, {"allowed_special": set(ours.special_tokens)}]
    _assert_arguments_agree(ours, texts, equal, lambda text: _outcome(theirs.encode, text, allowed_special="all"))
    with pytest.raises(TypeError, match="text must be a str"):
        ours.encode(b"<|endoftext|>", allowed_special="all")


@settings(max_examples=150, deadline=None)
@given(text=st.text())
def test_hypothesis_round_trip(pair, text):
    ours, _ = pair
    assert ours.decode(ours.encode_ordinary(text)) == text




@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=ASSIGNED))
def test_hypothesis_same_ids_as_tiktoken(pair, text):
    ours, theirs = pair
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


def test_special_tokens_follow_tiktoken(pair):
    ours, theirs = pair
    text = "a <|endoftext|> b <|endofprompt|>c"
    for kwargs in [{"allowed_special": "all"}, {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
                   {"disallowed_special": ()}]:
        assert ours.encode(text, **kwargs) == theirs.encode(text, **kwargs)
    with pytest.raises(ValueError, match="(?s)disallowed special token '<\\|endoftext\\|>'.*disallowed_special=\\(\\)"):
        ours.encode(text)
    with pytest.raises(ValueError, match="disallowed special token '<\\|endofprompt\\|>'"):
        ours.encode(text, allowed_special={"<|endoftext|>"})
    assert ours.encode(text, allowed_special={"<|nope|>"}, disallowed_special=()) == theirs.encode(
        text, allowed_special={"<|nope|>"}, disallowed_special=())
    assert ours.encode_single_token("<|endoftext|>") == ours.eot_token == theirs.eot_token
    assert ours.encode_single_token(b"<|endoftext|>") == theirs.encode_single_token(b"<|endoftext|>")
    assert ours.encode_single_token(b"hello") == theirs.encode_single_token(b"hello")
    with pytest.raises(KeyError, match="not a single token"):
        ours.encode_single_token("<|nope|>")
    for method in [ours.encode, ours.encode_ordinary, ours.encode_to_numpy, ours.count,
                   lambda text: ours.count_till_limit(text, 5), lambda text: ours.split_into_chunks(text, 5)]:
        with pytest.raises(TypeError, match="text must be a str, got bytes"):
            method(b"hello")
    assert ours.n_vocab == theirs.n_vocab and ours.max_token_value == theirs.max_token_value
    assert ours.special_tokens_set == theirs.special_tokens_set
    assert ours.is_special_token(ours.eot_token) and not ours.is_special_token(0)


def test_pickles_for_other_processes(pair):
    import pickle

    ours, _ = pair
    copy = pickle.loads(pickle.dumps(ours))
    assert copy.name == ours.name and copy.encode(MULTILINGUAL) == ours.encode(MULTILINGUAL)
    assert copy.special_tokens == ours.special_tokens


@pytest.mark.parametrize("protocol", range(6))
def test_an_encoding_of_its_own_pickles_and_copies_in_every_protocol(pair, protocol):
    """An ``Encoding`` made by its constructor (not by name) pickles by its arguments in
    every protocol, though its compiled base class has no default reduction in 0 and 1,
    and copies as it pickles."""
    import copy
    import pickle

    ours, _ = pair
    enc = Encoding("own", pat_str=ours.pat_str, mergeable_ranks=ours.mergeable_ranks,
                   special_tokens=ours.special_tokens, cache_size=4096)
    for made in (pickle.loads(pickle.dumps(enc, protocol=protocol)), copy.copy(enc), copy.deepcopy(enc)):
        assert type(made) is Encoding and made.name == "own" and made.cache_size == 4096
        assert made.special_tokens == enc.special_tokens
        assert made.encode(MULTILINGUAL, allowed_special="all") == enc.encode(MULTILINGUAL, allowed_special="all")
        assert made.encode_to_numpy(MULTILINGUAL).tolist() == enc.encode_ordinary(MULTILINGUAL)


def test_batches_on_threads(pair, real_text):
    ours, theirs = pair
    docs = [real_text[i : i + 1000] for i in range(0, 200_000, 1000)]
    assert ours.encode_ordinary_batch(docs, num_threads=2) == theirs.encode_ordinary_batch(docs, num_threads=2)
    assert ours.encode_batch(docs, num_threads=2) == [ours.encode(d) for d in docs]
    docs[7] += "<|endoftext|>"
    assert ours.encode_batch(docs, num_threads=2, allowed_special="all") == theirs.encode_batch(
        docs, num_threads=2, allowed_special="all"
    )
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode_batch(docs, num_threads=2)
    with pytest.raises(ValueError, match="num_threads must be an int >= 1"):
        ours.encode_ordinary_batch(docs, num_threads=0)


def test_decode_and_bad_ids(pair):
    ours, theirs = pair
    ids = theirs.encode(MULTILINGUAL + "<|endoftext|>", allowed_special="all")
    assert ours.decode(ids) == theirs.decode(ids) and ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    assert ours.decode_bytes(np.array(ids, dtype=np.uint32)) == theirs.decode_bytes(ids)
    assert ours.decode_tokens_bytes(ids[:5]) == theirs.decode_tokens_bytes(ids[:5])
    assert ours.decode_batch([ids, ids[:3]]) == theirs.decode_batch([ids, ids[:3]])
    assert ours.decode_single_token_bytes(ours.eot_token) == b"<|endoftext|>"
    assert ours.token_byte_values() == theirs.token_byte_values()
    with pytest.raises(KeyError, match=f"token id {ours.n_vocab} is not in the vocabulary"):
        ours.decode([1, ours.n_vocab])
    with pytest.raises(KeyError, match="is not in the vocabulary"):
        ours.decode_single_token_bytes(ours.n_vocab + 5)


# ------------------------------------------------------- kernel against reference


def small_vocabulary() -> dict[bytes, int]:
    """A trained vocabulary over a 3-letter alphabet: long tokens, many ties."""
    texts = ["".join(random.Random(seed).choices("abc", k=3000)) for seed in range(4)] + ["a" * 500]
    tok = BpeTrainer(256 + 300, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(texts)
    return tok.mergeable_ranks


@pytest.mark.parametrize("alphabet", [b"abc", b"ab", b"a"])
def test_kernel_matches_reference_rule_on_raw_pieces(alphabet):
    """Lengths on both sides of the short-piece path (32 bytes) and the heap path."""
    ranks = small_vocabulary()
    enc = Encoding("small", pat_str=None, mergeable_ranks=ranks)
    rng = random.Random(len(alphabet))
    for length in [*range(80), 100, 257, 600]:
        piece = bytes(rng.choices(alphabet, k=length))
        assert enc._bpe.encode_bytes(piece).tolist() == encode_piece_ranks(piece, ranks), piece


def test_whole_token_lookup_compares_every_byte():
    """Tokens that agree on the bytes a whole-token slot holds (the first 12) and differ
    after them, and tokens past the length a slot holds (2047 bytes), are told apart; a
    piece that is no token but agrees with tokens on its first 8 or 12 bytes is merged.
    The table is as full as it gets (815 tokens in 1024 slots), so a lookup that misses
    passes about a dozen slots, many of them of tokens with the same first 8 bytes."""
    ranks = {bytes([b]): b for b in range(256)}
    for length in range(2040, 2240, 2):
        ranks[b"z" * length] = len(ranks)
    tails = [b""]
    while len(ranks) < 815:
        tails = [tail + c for tail in tails for c in (b"a", b"b")]
        if len(tails[0]) != 4:  # no token of 12 bytes: each longer one's first 12 are none
            for tail in tails[: 815 - len(ranks)]:
                ranks[b"q" * 8 + tail] = len(ranks)
    bpe = BytePairEncoder(ranks)
    pieces = [piece for token in ranks if token[:1] == b"q"
              for piece in (token, token[:-1] + b"c", token + b"a", token[:-1], token[:12])]
    pieces += [b"z" * n for n in range(2030, 2250)]
    for piece in pieces:
        expected = [ranks[piece]] if piece in ranks else encode_piece_ranks(piece, ranks)
        assert bpe.encode_bytes(piece, as_list=True) == expected, (len(piece), piece[-3:])
        assert bpe.encode_pieces([piece.decode()], as_list=True) == expected


@pytest.mark.skipif(not hasattr(__import__("mmap"), "PROT_READ"), reason="needs POSIX mmap and mprotect")
def test_pieces_ending_where_memory_ends():
    """The whole-token lookup and the piece cache read a piece's first bytes as one 8-byte
    word and mask off the rest (``load_head``); within 7 bytes of a page's end they copy
    the piece's bytes alone. Pieces of 1-24 bytes ending just before a page that cannot
    be read (PROT_NONE) encode as the reference rule says (a whole token is its rank, as
    in tiktoken): a read past the piece into that page would crash the test. Run twice,
    so the second pass finds the merged pieces in the piece cache."""
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    rng = random.Random(5)
    ranks = {bytes([b]): b for b in range(256)}
    while len(ranks) < 2000:  # tokens of 2-20 bytes over a small alphabet: most pieces merge
        ranks.setdefault(bytes(rng.choices(b"ab", k=rng.randint(2, 20))), len(ranks))
    bpe = BytePairEncoder(ranks, cache_size=64)
    pieces = [bytes(rng.choices(b"ab", k=n)) for n in range(1, 25) for _ in range(6)]
    pieces += list(ranks)[256:400]
    memory = mmap.mmap(-1, 2 * page)
    anchor = ctypes.c_char.from_buffer(memory)
    start = ctypes.addressof(anchor)
    del anchor  # the address stays: the mapping lives until memory.close()
    assert libc.mprotect(start + page, page, 0) == 0, ctypes.get_errno()  # PROT_NONE
    got = []
    try:
        for _ in range(2):
            for piece in pieces:
                memory[page - len(piece) : page] = piece
                with memoryview(memory) as whole, whole[page - len(piece) : page] as tail:
                    got.append(bpe.encode_bytes(tail, as_list=True))
    finally:
        libc.mprotect(start + page, page, mmap.PROT_READ | mmap.PROT_WRITE)
        memory.close()
    expected = [[ranks[piece]] if piece in ranks else encode_piece_ranks(piece, ranks) for piece in pieces]
    assert got == expected * 2


def test_kernel_matches_reference_rule_with_openai_ranks(pair):
    ours, _ = pair
    rng = random.Random(7)
    for length in range(1, 120, 3):
        for alphabet in [b"ab ", b"xyz0", bytes(range(0xE0, 0xF0)) + b"\x80\x81"]:
            piece = bytes(rng.choices(alphabet, k=length))
            assert ours._bpe.encode_bytes(piece).tolist() == encode_piece_ranks(piece, ours.mergeable_ranks)


@pytest.fixture(scope="module")
def trained():
    text = stdlib_text(200_000).decode("utf-8") + MULTILINGUAL * 5
    tok = BpeTrainer(256 + 1500, pat_str="cl100k", min_frequency=1, special_tokens=["<|endoftext|>"],
                     show_progress=False).train_from_iterator([text])
    return tok, text


def test_trained_vocab_reproduces_training_segmentation(trained):
    tok, text = trained
    enc = tok.encoding()
    merges = {pair: 256 + i for i, pair in enumerate(tok.merges)}
    pieces = count_pieces([text], tok.pat_str)
    assert len(pieces) > 3000
    for piece in pieces:
        assert enc._bpe.encode_bytes(piece).tolist() == encode_piece(piece, merges), piece
    assert enc.encode_ordinary(text) == tok.encode_ordinary(text)


def test_plain_python_merge_rule_equals_the_reference(trained):
    """The library's plain-Python encoders (:mod:`bpetrain.encoding.merge_rule`: by the
    merges, by the ranks below a limit) against the reference's, on trained pieces, on
    random byte strings, and on every token's bytes (a whole token included)."""
    from bpetrain.encoding.merge_rule import encode_with_merges, split_with_ranks

    tok, text = trained
    merges, ranks = {pair: 256 + i for i, pair in enumerate(tok.merges)}, tok.mergeable_ranks
    rng = random.Random(7)
    pieces = [*count_pieces([text[:50_000]], tok.pat_str), *(rng.randbytes(rng.randint(0, 40)) for _ in range(300)),
              *(bytes(rng.choices(b"ab \n.e", k=rng.randint(0, 60))) for _ in range(300)), *ranks]
    for piece in pieces:
        assert encode_with_merges(piece, merges) == encode_piece(piece, merges), piece
        assert [ranks[p] for p in split_with_ranks(piece, ranks)] == encode_piece_ranks(piece, ranks), piece
    for token, rank in list(ranks.items())[256::7]:  # below its own rank: the two parts merges_from_ranks finds
        assert [ranks[p] for p in split_with_ranks(token, ranks, rank)] == encode_piece_ranks(
            token, {t: r for t, r in ranks.items() if r < rank}), token


def test_kernel_reads_a_str_as_its_utf8(trained):
    """``encode_doc`` reads an ASCII ``str`` in place and encodes any other to UTF-8 itself:
    the ids are ``encode_text``'s of the UTF-8, and a lone surrogate raises as
    ``str.encode`` does (the caller replaces it); what is not one kernel call's text (not
    an exact ``str``, ``DOC_CHARS`` characters or more, no compiled pattern) is left to
    the caller's other paths (``NotOneCall``)."""
    from bpetrain.encoding._encoder import DOC_CHARS, NotOneCall

    tok, text = trained
    enc = tok.encoding()
    bpe, program = enc._bpe, enc._pattern
    for sample in ["", "a", "\x00\x7f", "hello world", text[:5000], MULTILINGUAL, "ascii, then \u00e9"]:
        assert np.array_equal(bpe.encode_doc(sample, program, False, None, None),
                              bpe.encode_text(sample.encode("utf-8"), program))
        assert bpe.encode_doc(sample, program, True, None, None) == bpe.encode_text(sample.encode("utf-8"), program, True)
    with pytest.raises(UnicodeEncodeError):
        bpe.encode_doc("ab\ud800", program, False, None, None)
    for not_one_call in (b"bytes", type("Sub", (str,), {})("a str subclass"), "a" * DOC_CHARS):
        with pytest.raises(NotOneCall):
            bpe.encode_doc(not_one_call, program, False, None, None)
    with pytest.raises(NotOneCall):
        bpe.encode_doc("no pattern", None, False, None, None)


def test_kernel_utf8_of_every_kind_of_str():
    """The UTF-8 the kernel reads is ``str.encode``'s: ASCII (read in place), Latin-1
    (encoded by the kernel, eight bytes at a time), and wider strings, at every
    length around the eight-byte steps and with the other characters anywhere."""
    from bpetrain.encoding._encoder import _py_utf8_of

    rng = random.Random(0)
    samples = ["", "a", "\x80", "\xff" * 9, "caf\xe9", "\u20ac", "\U0001f600 ok", MULTILINGUAL]
    for length in range(40):
        for alphabet in ("ab", "a\xe9", "\x7f\x80", "abcdefgh\xfc", "a\u0100"):
            samples.append("".join(rng.choice(alphabet) for _ in range(length)))
    for sample in samples:
        assert _py_utf8_of(sample) == sample.encode("utf-8"), repr(sample)


def test_trained_vocab_same_ids_as_tiktoken_with_exported_ranks(trained, tmp_path):
    from tiktoken.load import load_tiktoken_bpe

    tok, text = trained
    path = tmp_path / "trained.tiktoken"
    tok.save_tiktoken(path)
    theirs = tiktoken.Encoding("trained", pat_str=tok.pat_str, mergeable_ranks=load_tiktoken_bpe(str(path)),
                               special_tokens=tok.special_tokens)
    ours = load_tiktoken(path, pat_str=tok.pat_str, special_tokens=tok.special_tokens)
    sample = text[:50_000] + "<|endoftext|>" + MULTILINGUAL + adversarial_texts()["letters without spaces"]
    assert ours.encode(sample, allowed_special="all") == theirs.encode(sample, allowed_special="all")
    assert ours.name == "trained" and ours.encode_ordinary(sample) == tok.encoding().encode_ordinary(sample)
    from_sidecar = load_tiktoken(path)  # save_tiktoken wrote path.json: pattern and special tokens
    assert from_sidecar.pat_str == tok.pat_str and from_sidecar.special_tokens == tok.special_tokens
    assert from_sidecar.encode(sample, allowed_special="all") == theirs.encode(sample, allowed_special="all")


def test_raw_mode_tokenizer_encodes_like_reference():
    texts = ["abcabcabd" * 30, "xyz xyz" * 9, "<s>"]
    tok = BpeTrainer(270, pat_str=None, special_tokens=["<s>"], show_progress=False).train_from_iterator(texts)
    enc = tok.encoding()
    for text in [*texts, "abc<s>abcabd xyz"]:
        assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


# ------------------------------------------ tiktoken drop-in, against tiktoken


@pytest.fixture(scope="module")
def drop_in(trained):
    """(bpetrain's Encoding, tiktoken's Encoding) of the trained vocabulary, with special tokens."""
    tok, _ = trained
    n = tok.n_vocab
    specials = {"<|endoftext|>": n, "<|fim_prefix|>": n + 1, "<|fim_middle|>": n + 2}
    kwargs = {"pat_str": tok.pat_str, "mergeable_ranks": tok.mergeable_ranks, "special_tokens": specials}
    return Encoding("trained", **kwargs), tiktoken.Encoding("trained", **kwargs)


def outcome(function, *args, **kwargs):
    """What ``function(*args, **kwargs)`` returns, or the type of what it raises (the
    ``ValueError`` that tiktoken raises for a disallowed special token is bpetrain's
    :class:`DisallowedSpecialTokenError`, a ``ValueError`` with the same message that also
    names the token: ``ValueError`` here)."""
    try:
        return function(*args, **kwargs)
    except DisallowedSpecialTokenError:
        return ValueError
    except Exception as exc:  # noqa: BLE001 (the type is the outcome)
        return type(exc)


def test_bad_ids_raise_what_tiktoken_raises(drop_in):
    ours, theirs = drop_in
    unused = ours.max_token_value + 1
    for ids in [[unused], [5, 2**32], [-1], [5, 2**40], ["a"], [1.5], [None], [True, 3], [np.uint32(7)]]:
        for method in ["decode_bytes", "decode", "decode_tokens_bytes", "decode_with_offsets"]:
            expected = outcome(getattr(theirs, method), ids)
            assert outcome(getattr(ours, method), ids) == expected, (method, ids)
        expected = outcome(theirs.decode_single_token_bytes, ids[-1])
        assert outcome(ours.decode_single_token_bytes, ids[-1]) == expected, ids
    assert outcome(ours.decode, [unused]) is KeyError  # a user's `except KeyError` catches it
    assert outcome(ours.decode_single_token_bytes, unused) is KeyError
    with pytest.raises(KeyError, match=f"token id {unused} is not in the vocabulary of encoding 'trained'"):
        ours.decode_single_token_bytes(unused)


def test_special_tokens_as_tiktoken_takes_them(drop_in):
    ours, theirs = drop_in
    text = "a <|endoftext|> b <|fim_prefix|>c<|fim_middle|>"
    for allowed in ["all", {"<|endoftext|>"}, {"<|nope|>"}, {"<|nope|>", "<|fim_middle|>"}, set()]:
        for disallowed in ["all", (), {"<|fim_middle|>"}, {"b <"}]:
            options = {"allowed_special": allowed, "disallowed_special": disallowed}
            expected = outcome(theirs.encode, text, **options)
            assert expected is ValueError or isinstance(expected, list)
            assert outcome(ours.encode, text, **options) == expected, options
            got = outcome(ours.encode_to_numpy, text, **options)
            assert (got if got is ValueError else got.tolist()) == expected
    for token in ["<|endoftext|>", b"<|fim_middle|>", "hello", b" the", b"\xff", "<|nope|>", b"<|nope|>"]:
        assert outcome(ours.encode_single_token, token) == outcome(theirs.encode_single_token, token)
    assert ours.encode_single_token(b"<|endoftext|>") == ours.eot_token


def test_encode_finds_special_tokens_as_tiktoken(drop_in):
    """With its defaults, encode looks for special tokens in the kernel (the UTF-8, without
    the regex): each one at every offset of ASCII and other text, cut short, or beside a
    lone surrogate, must raise tiktoken's error or give tiktoken's ids."""
    ours, theirs = drop_in

    def outcome_of(call, text):
        try:
            return call(text)
        except ValueError as exc:
            return str(exc)

    for token in ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>"]:
        for around in ["plain ascii text", "\u00e9t\u00e9 \u6771\u4eac \U0001f642", "ab\ud800cd"]:
            for cut in range(len(around) + 1):
                for middle in [token, token[:-1], token[1:]]:
                    text = around[:cut] + middle + around[cut:]
                    expected = outcome_of(theirs.encode, text)  # its encode_to_numpy refuses surrogates
                    assert outcome_of(ours.encode, text) == expected, text
                    got = outcome_of(ours.encode_to_numpy, text)
                    assert (got if isinstance(got, str) else got.tolist()) == expected, text


def test_encode_with_allowed_special_tokens_as_tiktoken(trained):
    r"""With special tokens allowed, encode looks for them in the kernel and encodes the
    text between them as texts of their own (so ``\s+(?!\S)`` and ``$`` see a special
    token's start as the end of text). Special tokens that overlap or start with a space,
    whole or cut short, next to each other and at every offset of ASCII, other and
    lone-surrogate text, under allowed and disallowed sets of every kind (each pair kept
    for the next calls, so most calls here find it kept): tiktoken's ids or message, one
    text a call and all in one batch call (one and two threads).

    Where one special token is a prefix of another, tiktoken takes whichever its hash
    map lists first (an order that changes from process to process); bpetrain takes the
    longest, as its regex path always has."""
    tok, _ = trained
    n = tok.n_vocab
    specials = {"<|endoftext|>": n, "<|fim_prefix|>": n + 1, "<s>": n + 2, "s>": n + 3, " <t>": n + 4}
    kwargs = {"pat_str": tok.pat_str, "mergeable_ranks": tok.mergeable_ranks, "special_tokens": specials}
    ours, theirs = Encoding("specials", **kwargs), tiktoken.Encoding("specials", **kwargs)
    arguments = [
        {"allowed_special": "all"},
        {"allowed_special": "all", "disallowed_special": ()},
        {"allowed_special": frozenset({"<s>"})},
        {"allowed_special": {"s>", "<|endoftext|>"}, "disallowed_special": ()},
        {"allowed_special": {"<s>", " <t>"}, "disallowed_special": {"<|endoftext|>"}},
        {"allowed_special": frozenset({"s>", "not a special token"}), "disallowed_special": frozenset({"<s>"})},
        {"disallowed_special": ()},
        {"disallowed_special": frozenset({"s>"})},
    ]

    def outcome_of(call, text, options):
        try:
            got = call(text, **options)
        except ValueError as exc:
            return str(exc)
        return got if isinstance(got, list) else got.tolist()

    def batch_of(call, texts, options):
        try:
            got = call(texts, **options)
        except ValueError as exc:
            return str(exc)
        if isinstance(got, tuple):  # encode_batch_to_numpy: ids and offsets
            ids, offsets = got
            return [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
        return got

    middles = [*specials, "<s><s>s><s>", "<|endoftext|><|endoftext|>", " <t> <t>", "<s", "<|endoftext|", "<<s>>"]
    for around in ["plain ascii text  ", "\u00e9t\u00e9 \u6771\u4eac \U0001f642", "ab\ud800cd", "x \n  "]:
        texts = []
        for cut in range(len(around) + 1):
            for middle in middles:
                text = around[:cut] + middle + around[cut:]
                texts.append(text)
                for options in arguments:
                    expected = outcome_of(theirs.encode, text, options)  # its encode_to_numpy refuses surrogates
                    assert outcome_of(ours.encode, text, options) == expected, (text, options)
                    assert outcome_of(ours.encode_to_numpy, text, options) == expected, (text, options)
        for options in arguments:  # the batch calls: the kernel's segments for every text at once
            expected = batch_of(theirs.encode_batch, texts, options)
            for threads in (1, 2):
                assert batch_of(ours.encode_batch, texts, {**options, "num_threads": threads}) == expected, options
                assert batch_of(ours.encode_batch_to_numpy, texts, {**options, "num_threads": threads}) == expected, options
        # The kernel also counts with special tokens: one each, as many as the ids it gives.
        clean = [replace_surrogates(text) for text in texts]
        found = ours._specials.strings(frozenset(specials), ()).specials
        counts = ours._bpe.encode_batch(clean, ours._pattern, BATCH_COUNTS, None, found)
        assert counts.tolist() == [len(ids) for ids in ours._bpe.encode_batch(clean, ours._pattern, BATCH_LISTS, None, found)]
        assert counts.tolist() == [len(theirs.encode(text, allowed_special="all")) for text in clean]
    longer = Encoding("prefixes", **{**kwargs, "special_tokens": {"<s>": n, "<s>x": n + 1, "x<s>": n + 2}})
    by_regex = longer._specials.strings({"<s>", "<s>x", "x<s>"}, ())._replace(kernel=False)  # cut by the regex module
    for text in ["<s>x", "a <s>xb", "<s><s>x", "x<s>x", "x<s>"]:
        assert longer.encode(text, allowed_special="all") == longer._encode(text, True, by_regex)
    assert longer.encode("<s>x<s>", allowed_special="all") == [n + 1, n]


def test_shared_and_ranked_special_ids_as_tiktoken(trained):
    """tiktoken accepts two special tokens with one id, and a special token with a rank's id."""
    tok, _ = trained
    n = tok.n_vocab
    rank = tok.mergeable_ranks[b" the"]
    specials = {"<s>": n, "<t>": n, "<r>": rank}
    kwargs = {"pat_str": tok.pat_str, "mergeable_ranks": tok.mergeable_ranks, "special_tokens": specials}
    ours, theirs = Encoding("shared", **kwargs), tiktoken.Encoding("shared", **kwargs)
    text = "<t> the<r><s>"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all") == [n, rank, rank, n]
    assert ours.decode_bytes([n, rank]) == theirs.decode_bytes([n, rank]) == b"<s> the"  # the first name; the rank
    assert ours.decode_single_token_bytes(n) == theirs.decode_single_token_bytes(n)
    assert ours.is_special_token(rank) and theirs.is_special_token(rank)
    assert (ours.n_vocab, ours.max_token_value) == (theirs.n_vocab, theirs.max_token_value)
    with pytest.raises(ValueError, match="share id"):
        Tokenizer(tok.merges, pat_str=tok.pat_str, special_tokens=specials)  # bpetrain's own vocabularies refuse


def test_decode_with_offsets_as_tiktoken(drop_in, trained):
    ours, theirs = drop_in
    _, text = trained
    for sample in [text[:3000], MULTILINGUAL, "", "é", "🙂🙂 x", "<|endoftext|> 我非常渴望"]:
        ids = theirs.encode(sample, allowed_special="all")
        assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids) == (sample, ours.decode_with_offsets(ids)[1])
    # a token that starts inside a character starts at that character
    e_acute = [ours.encode_single_token(b"\xc3"), ours.encode_single_token(b"\xa9")]
    assert ours.decode_with_offsets([ours.encode_single_token("a"), *e_acute, *e_acute]) == ("aéé", [0, 1, 1, 2, 2])
    with pytest.raises(UnicodeDecodeError):
        ours.decode_with_offsets(e_acute[:1])


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("aé我🙂 \n'x1")))
def test_hypothesis_offsets_as_tiktoken(drop_in, text):
    ours, theirs = drop_in
    ids = ours.encode_ordinary(text)
    assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)


def random_vocabulary(seed: int) -> dict[bytes, int]:
    """The 256 bytes and 60 random tokens over a small alphabet (spaces, newlines, "é" and its
    bytes), ranked at random: many tokens the merge rule cannot make, and tokens that are
    invalid UTF-8."""
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    while len(ranks) < 316:
        ranks.setdefault(bytes(rng.choices(b"ab \n\xc3\xa9", k=rng.randint(2, 5))), len(ranks))
    return ranks


def unstable_pairs():
    """(bpetrain, tiktoken) Encodings on which encode_with_unstable must agree: split and raw."""
    specials = {"<s>": 400}
    for seed, pat_str in [(1, "cl100k"), (2, "o200k"), (3, None)]:
        ranks = random_vocabulary(seed)
        theirs_pattern = RAW_MODE_PAT_STR if pat_str is None else PATTERNS[pat_str]
        yield (Encoding("r", pat_str=pat_str, mergeable_ranks=ranks, special_tokens=specials),
               tiktoken.Encoding("r", pat_str=theirs_pattern, mergeable_ranks=ranks, special_tokens=specials))


UNSTABLE_PAIRS = list(unstable_pairs())
UNSTABLE_TEXT = st.lists(st.sampled_from(["a", "b", " ", "\n", "\t", "é", "我", "'", "1", "!", "\u3000", "<s>"])).map("".join)


def same_unstable(ours, theirs, text, **options):
    expected = outcome(theirs.encode_with_unstable, text, **options)
    got = outcome(ours.encode_with_unstable, text, **options)
    if expected is ValueError:
        assert got is ValueError
        return
    stable, completions = got
    assert (stable, sorted(completions)) == (expected[0], sorted(expected[1])), text
    assert len(completions) == len(set(map(tuple, completions)))
    data = text.encode()
    assert data.startswith(ours.decode_bytes(stable))
    assert all(ours.decode_bytes(stable + ids).startswith(data) for ids in completions)


@settings(max_examples=300, deadline=None)
@given(text=UNSTABLE_TEXT)
def test_hypothesis_encode_with_unstable_as_tiktoken(text):
    for ours, theirs in UNSTABLE_PAIRS:
        same_unstable(ours, theirs, text)
        same_unstable(ours, theirs, text, allowed_special="all")


@settings(max_examples=100, deadline=None)
@given(text=UNSTABLE_TEXT)
def test_hypothesis_encode_with_unstable_on_a_trained_vocabulary(drop_in, text):
    same_unstable(*drop_in, text, disallowed_special=())


def test_encode_with_unstable_examples(drop_in):
    """Texts that end in every case tiktoken's rules distinguish."""
    ours, theirs = drop_in
    for text in ["hello fanta", "hello ", "", " ", "\n\n", "today\n \n", "x\n  ", "a\u3000", "x\u00a0",
                 "我非常渴望", "123", "don'", "x<|endoftext|>", "x<|endoftext|>y"]:
        for options in [{}, {"allowed_special": "all"}]:
            same_unstable(ours, theirs, text, **options)
    # a lone surrogate becomes U+FFFD, as in encode (tiktoken raises UnicodeEncodeError here)
    stable, completions = ours.encode_with_unstable("x\ud83d")
    assert (stable, sorted(completions)) == tuple(map(sorted, theirs.encode_with_unstable("x\ufffd")))
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode_with_unstable("x<|endoftext|>")
    assert ours.encode_with_unstable("x<|endoftext|>", allowed_special="all") == (
        [ours.encode_single_token("x"), ours.eot_token], [])


def test_encode_with_unstable_takes_the_merge_rule_where_tiktoken_does():
    """tiktoken encodes some parts with the merge rule alone, without looking the whole
    part up: with three spaces a token the rule cannot make, the split of "    " into
    "   " + " " gives three one-space tokens, not the three-space token."""
    ranks = {**{bytes([b]): b for b in range(256)}, b"   ": 256}
    for pat_str, theirs_pattern in [("cl100k", PATTERNS["cl100k"]), (None, RAW_MODE_PAT_STR)]:
        ours = Encoding("spaces", pat_str=pat_str, mergeable_ranks=ranks)
        theirs = tiktoken.Encoding("spaces", pat_str=theirs_pattern, mergeable_ranks=ranks, special_tokens={})
        same_unstable(ours, theirs, "    ")
        assert [32, 32, 32, 32] in ours.encode_with_unstable("    ")[1]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=12) | UNSTABLE_TEXT.map(lambda text: text.encode()[: max(0, len(text.encode()) - 1)]))
def test_hypothesis_encode_bytes_as_tiktoken(data):
    """Bytes, and text cut inside its last character: ``_encode_bytes`` gives tiktoken's ids."""
    for ours, theirs in UNSTABLE_PAIRS:
        assert ours._encode_bytes(data) == theirs._encode_bytes(data), data
        assert ours.decode_bytes(ours._encode_bytes(data)) == data


def test_encode_bytes_on_a_trained_vocabulary(drop_in, trained):
    ours, theirs = drop_in
    _, text = trained
    data = (text[:2000] + MULTILINGUAL).encode()
    for cut in range(len(data) - 300, len(data)):
        assert ours._encode_bytes(data[:cut]) == theirs._encode_bytes(data[:cut])
    for data in [b"\x80" * 7, b" \xec\x8b\xa4\xed", b"abc\xff def", b"   \xff", b"<|endoftext|>\xff"]:
        assert ours._encode_bytes(data) == theirs._encode_bytes(data)
    with pytest.raises(TypeError, match="data must be bytes"):
        ours._encode_bytes("text")


def test_private_names_that_code_reads(drop_in, trained):
    ours, theirs = drop_in
    _, text = trained
    assert ours._pat_str == theirs._pat_str
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    assert ours._special_tokens == theirs._special_tokens
    # tiktoken's README extends an encoding through them
    extended = Encoding("extended", pat_str=ours._pat_str, mergeable_ranks=ours._mergeable_ranks,
                        special_tokens={**ours._special_tokens, "<|im_start|>": 10**5})
    assert extended.encode("<|im_start|>hi", allowed_special="all")[0] == 10**5
    for piece in ["", "a", " the", "hellohellohello", "我非常", text[:300]]:
        expected = theirs._encode_single_piece(piece) if piece else []  # tiktoken panics on an empty piece
        assert ours._encode_single_piece(piece) == ours._encode_single_piece(piece.encode()) == expected
    assert ours._encode_only_native_bpe(text[:20_000]) == theirs._encode_only_native_bpe(text[:20_000])
    assert ours.token_byte_values() == theirs.token_byte_values()
    assert ours.special_tokens_set == theirs.special_tokens_set and ours.eot_token == theirs.eot_token


def test_batches_take_tiktokens_arguments(drop_in):
    ours, theirs = drop_in
    batch = [ours.encode(text) for text in ["hello world", MULTILINGUAL, ""]]
    assert ours.decode_batch(batch, num_threads=2) == theirs.decode_batch(batch, num_threads=2)
    assert ours.decode_bytes_batch(batch, num_threads=1) == theirs.decode_bytes_batch(batch, num_threads=1)
    assert ours.decode_batch(batch, errors="strict") == theirs.decode_batch(batch, errors="strict")
    for method, arg in [("decode_batch", batch), ("decode_bytes_batch", batch), ("encode_ordinary_batch", ["a"])]:
        assert outcome(getattr(ours, method), arg, num_threads=0) is ValueError
        assert outcome(getattr(theirs, method), arg, num_threads=0) is ValueError


# ----------------------------------------------------------- counting, chunking


def test_count_till_limit_agrees_with_encode(pair, real_text):
    ours, _ = pair
    for text in [real_text[:20_000], MULTILINGUAL, "", "a" * 5000, "x\ud800y"]:
        n = len(ours.encode_ordinary(text))
        assert ours.count(text) == n
        assert ours.count_till_limit(text, n) == n
        assert ours.count_till_limit(text, n + 10) == n
        if n:
            assert ours.count_till_limit(text, n - 1) is None


def test_count_till_limit_stops_early(pair, real_text):
    """Past the limit, the rest of the text is neither split nor encoded."""
    from bpetrain.splitting.pattern import split_pattern

    ours, _ = pair
    data = real_text.encode("utf-8")
    program = split_pattern(ours.pat_str).program
    count, n_read = ours._bpe.count_str(real_text, program, 100)
    assert count == -1 and 0 < n_read < 2000
    count, n_read = ours._bpe.count_str(real_text, program, 10**9)
    assert count == len(ours.encode_ordinary(real_text)) and n_read == len(data)


def test_count_till_limit_stops_early_with_a_custom_pattern(pair, real_text):
    """With the regex module (a lookbehind: not run by the compiled splitter), counting
    stops after the first batch of pieces."""
    from bpetrain.encoding.token_counting import COUNT_BATCH

    ours, _ = pair
    enc = Encoding("custom", pat_str=r"\s*\S+(?<=\S)|\s+", mergeable_ranks=ours.mergeable_ranks)
    assert enc._pattern is None
    counted = []
    kernel = enc._bpe

    class Recorder:
        def count_pieces(self, pieces, limit):
            counted.append(len(pieces))
            return kernel.count_pieces(pieces, limit)

    enc._bpe = Recorder()
    assert enc.count_till_limit(real_text, 100) is None
    assert counted == [COUNT_BATCH]
    enc._bpe = kernel
    assert enc.count_till_limit(real_text, 10**9) == len(enc.encode_ordinary(real_text))


@pytest.mark.parametrize("max_tokens", [4, 7, 50, 1000])
def test_chunks_cut_on_characters_with_exact_counts(pair, real_text, max_tokens):
    ours, theirs = pair
    text = real_text[-30_000:] + adversarial_texts()["emoji run"][:3000] + "a" * 3000
    chunks = ours.split_into_chunks(text, max_tokens)
    assert "".join(chunks) == text and all(chunks)
    counts = [len(theirs.encode_ordinary(chunk)) for chunk in chunks]
    assert max(counts) <= max_tokens
    assert [ours.count(chunk) for chunk in chunks] == counts
    assert sum(counts[:-1]) >= 0.75 * max_tokens * (len(chunks) - 1)  # chunks are nearly full
    head, rest = ours.split_at_token_limit(text, max_tokens)
    assert head == chunks[0] and head + rest == text


def test_chunks_with_a_pattern_that_skips_text():
    ranks = small_vocabulary()
    enc = Encoding("words", pat_str=r"[ab]+", mergeable_ranks=ranks)
    text = "".join(random.Random(3).choices("abc  ", k=5000))
    chunks = enc.split_into_chunks(text, 10)
    assert "".join(chunks) == text
    assert max(enc.count(chunk) for chunk in chunks) <= 10


def test_chunk_limits():
    enc = openai_encodings("cl100k_base")[0]
    assert enc.split_at_token_limit("", 5) == ("", "")
    assert enc.split_into_chunks("", 5) == []
    assert enc.split_at_token_limit("hello world", 100) == ("hello world", "")
    emoji = "\U0001f9ec"  # four bytes, more than one token in cl100k
    assert enc.count(emoji) > 1
    with pytest.raises(ValueError, match="at byte 0 of the text needs more than 1 tokens"):
        enc.split_at_token_limit(emoji * 3, 1)
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        enc.split_into_chunks("abc", 0)
    with pytest.raises(TypeError, match="limit must be an int"):
        enc.count_till_limit("abc", 2.5)
    with pytest.raises(ValueError, match="limit must be >= 0"):
        enc.count_till_limit("abc", -1)


def cross_vocabulary() -> dict[bytes, int]:
    r"""Bytes, then b" \xe5" (a token that crosses into a character), b"\x91\xbd" and b"\xe5\x91\xbd"
    ("命"): " 命" encodes to b" \xe5", b"\x91\xbd", and "命" alone to one token."""
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({b" \xe5": 256, b"\x91\xbd": 257, b"\xe5\x91\xbd": 258})
    return ranks


@pytest.mark.parametrize("pat_str", ["cl100k", None, r"(?<=a)b|\s?\w+|\s+|[^\w\s]+"])
def test_chunks_cut_inside_a_token_that_crosses_a_character(pat_str):
    """No token of the whole text's encoding ends between " " and "命", yet " " is a head of one token."""
    enc = Encoding("cross", pat_str=pat_str, mergeable_ranks=cross_vocabulary(), unicode_version="regex")
    assert [enc.decode_single_token_bytes(t) for t in enc.encode_ordinary(" 命")] == [b" \xe5", b"\x91\xbd"]
    assert enc.split_into_chunks(" 命", 1) == [" ", "命"]
    assert enc.split_at_token_limit(" 命 命", 1) == (" ", "命 命")
    assert enc.split_into_chunks(" 命" * 3, 2) == [" 命"] * 3


def test_chunks_of_cl100k_are_the_longest_heads():
    enc = openai_encodings("cl100k_base")[0]
    assert len(enc.encode_ordinary(" 命")) == 3 and enc.count("命") == 1
    assert enc.split_into_chunks(" 命", 1) == [" ", "命"]
    assert enc.split_into_chunks(" 命", 2) == [" ", "命"]
    text = " 命" * 40 + " and then some words"
    for max_tokens in (1, 2, 3, 5, 8):
        chunks = enc.split_into_chunks(text, max_tokens)
        assert "".join(chunks) == text
        start = 0
        for chunk in chunks:
            assert enc.count(chunk) <= max_tokens
            end = start + len(chunk)
            assert all(enc.count(text[start:e]) > max_tokens for e in range(end + 1, min(end + 12, len(text)) + 1))
            start = end


# ---------------------------------------------------------------- bad vocabularies


def test_inconsistent_encodings_are_refused():
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match="1 of the 256 single bytes have no rank \\(first: b'a'\\)"):
        Encoding("x", pat_str=None, mergeable_ranks={k: v for k, v in ranks.items() if k != b"a"})
    with pytest.raises(ValueError, match="rank 3 is given to more than one token"):
        Encoding("x", pat_str=None, mergeable_ranks={**ranks, b"ab": 3})
    with pytest.raises(ValueError, match="rank 3 is given to more than one token"):
        Encoding("x", pat_str=None, mergeable_ranks={**ranks, b"": 3})
    with pytest.raises(ValueError, match="ranks must be in"):
        Encoding("x", pat_str=None, mergeable_ranks={**ranks, b"ab": -5})
    with pytest.raises(ValueError, match="explicit_n_vocab=300"):
        Encoding("x", pat_str=None, mergeable_ranks=ranks, explicit_n_vocab=300)
    with pytest.raises(ValueError, match="explicit_n_vocab=258"):  # tiktoken counts names, not ids
        Encoding("x", pat_str=None, mergeable_ranks=ranks, special_tokens={"<s>": 256, "</s>": 256},
                 explicit_n_vocab=258)
    with pytest.raises(ValueError, match="special tokens must be non-empty"):
        Encoding("x", pat_str=None, mergeable_ranks=ranks, special_tokens={"": 300})
    with pytest.raises(TypeError, match="ids are integers"):
        Encoding("x", pat_str=None, mergeable_ranks=ranks, special_tokens={"<s>": "300"})
    with pytest.raises(OverflowError, match="ids are in \\[0, 2\\*\\*32\\)"):
        Encoding("x", pat_str=None, mergeable_ranks=ranks, special_tokens={"<s>": -1})
    with pytest.raises(ValueError, match="not a valid regular expression|neither a known name"):
        Encoding("x", pat_str="(unclosed", mergeable_ranks=ranks)
    with pytest.raises(TypeError, match="got the key 'a', not bytes"):
        Encoding("x", pat_str=None, mergeable_ranks={**ranks, "a": 300})
    gapped = Encoding("x", pat_str=None, mergeable_ranks={**ranks, b"ab": 1000}, special_tokens={"<s>": 500})
    assert gapped.n_vocab == 1001 and gapped.encode("ab<s>", allowed_special="all") == [1000, 500]
    with pytest.raises(KeyError, match="token id 700 is not in the vocabulary"):
        gapped.decode([700])


def test_tokenizer_with_duplicate_tokens_has_no_encoding():
    tok = Tokenizer([(97, 98), (97, 98)], pat_str=None)
    with pytest.raises(ValueError, match="spell the same bytes"):
        tok.encoding()


def test_load_tiktoken_reports_bad_files(tmp_path):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"YQ== 0\n!!!! 1\n")
    with pytest.raises(ValueError, match="bad.tiktoken:2: .*not valid base64"):
        load_tiktoken(path, pat_str="cl100k")
    with pytest.raises(ValueError, match="there is no sidecar .*; pass pat_str"):
        load_tiktoken(path)
