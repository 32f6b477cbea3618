"""The piece cache never changes an id, and the batch calls (lists, arrays, counts) agree with one text at a time."""
from __future__ import annotations

import gc
import itertools
import random
import sys
import threading
from collections import Counter

import numpy as np
import pytest
from helpers import ASSIGNED, MULTILINGUAL, openai_encodings, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import BpeTrainer, Encoding
from bpetrain.encoding import _encoder

pytestmark = pytest.mark.usefixtures("threads_beyond_cores")

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")


@pytest.fixture(scope="module")
def trained():
    """A vocabulary trained here (CI has no OpenAI files): bpetrain with a tiny cache, with
    none, and tiktoken with the same ranks."""
    text = stdlib_text(150_000).decode("utf-8") + MULTILINGUAL * 5
    tok = BpeTrainer(256 + 2000, pat_str="cl100k", min_frequency=1, show_progress=False).train_from_iterator([text])
    kwargs = {"pat_str": tok.pat_str, "mergeable_ranks": tok.mergeable_ranks, "special_tokens": {"<|endoftext|>": 2256}}
    tiny = Encoding("tiny cache", cache_size=2, **kwargs)
    none = Encoding("no cache", cache_size=0, **kwargs)
    return tiny, none, tiktoken.Encoding("trained", **kwargs), text


# Text that repeats its pieces (so entries are found again) and mixes lengths around the
# cached range (3 to 16 bytes) and the id limit (5 ids).
words = st.sampled_from(
    ["the", " the", " kernel", " encoder", "abc", " abcabcabcabc", " Straße", " 東京都", " données", "1234",
     "    ", "\n\n", " 🙂🙂", "(x)", " supercalifragilistic", "ab", " a", "zzzzzzzzzzzzzzzzz", "ééééééé",
     # same length, same first eight bytes: only the second word of the key tells them apart
     " transformers", " transforming", " constructors", " constructing"]
)
texts = st.lists(st.one_of(words, st.text(ASSIGNED, max_size=12)), max_size=60).map("".join)


@pytest.fixture(scope="module")
def encoders(trained):
    """The three encoders of ``trained`` without its text (hypothesis prints the arguments
    of a failing example)."""
    return trained[:3]


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_hypothesis_tiny_cache_gives_the_ids_of_no_cache_and_tiktoken(encoders, batch):
    tiny, none, theirs = encoders
    for text in batch + batch:  # the second pass finds what the first stored (or evicted)
        expected = theirs.encode_ordinary(text.encode("utf-8", "replace").decode("utf-8"))
        assert none.encode_ordinary(text) == expected
        assert tiny.encode_ordinary(text) == expected
        assert tiny.count(text) == len(expected)


def test_pieces_that_differ_only_after_eight_bytes():
    """Same length, same first eight bytes, two ids each: only the key's second word
    tells the pieces apart in a two-entry table."""
    ranks = {bytes([i]): i for i in range(256)}
    for token in [b"ab", b"cd", b"ef", b"gh", b"abcd", b"efgh", b"abcdefgh"]:
        ranks[token] = len(ranks)
    tiny = Encoding("eight", pat_str=None, mergeable_ranks=ranks, cache_size=2)
    texts = [f"abcdefgh{tail}" for tail in [*"0123456789", "xy", "yx", "1234567", "7654321"]]
    for _ in range(3):
        for text in texts:
            assert tiny.encode_ordinary(text) == [ranks[b"abcdefgh"], *text[8:].encode()]


def test_entries_hold_up_to_five_ids_and_a_two_entry_table_takes_turns():
    """Pieces of 3 to 5 ids are kept (ids 3 and 4 beside the length and count), longer
    ones are merged every time; a table of two entries holds one piece, so the pieces
    taking turns in it empty it each time one is stored. Ranks near 2**21 fill every bit
    of an id."""
    ranks = {bytes([b]): 2**21 - 2 - 3 * b for b in range(256)}  # no merges: a piece of n bytes has n ids
    tiny = Encoding("five", pat_str=None, mergeable_ranks=ranks, cache_size=2)
    rng = random.Random(5)
    texts = ["".join(rng.choice("abcXYZ\x7f") for _ in range(n)) for n in [3, 4, 5, 6, 7, 16] for _ in range(3)]
    for _ in range(4):
        rng.shuffle(texts)
        for text in texts + texts[:2] + texts[:1]:  # the last two again, at once
            assert tiny.encode_ordinary(text) == [ranks[bytes([b])] for b in text.encode()]


@pytest.mark.parametrize("size", [2, 64, 1 << 14])
def test_cache_on_real_text_equals_no_cache(trained, size):
    _tiny, none, theirs, text = trained
    enc = Encoding("sized", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks, cache_size=size)
    docs = [text[i : i + 700] for i in range(0, len(text), 700)]
    expected = [theirs.encode_ordinary(d) for d in docs]
    assert [enc.encode_ordinary(d) for d in docs] == expected
    assert [enc.encode_ordinary(d) for d in docs] == expected  # now from the cache
    assert enc.encode_ordinary_batch(docs, num_threads=2) == expected


def test_the_text_loop_stores_and_finds_each_piece_by_its_own_key(trained):
    """The text loop finds each piece before it encodes the one before (to prefetch its
    entry), so it carries each piece's key (``_piece.piece_key``) one piece ahead: every
    piece must be stored, and found, under its own. The same words in other orders, and
    with pieces the table does not hold between them (1, 2 and over 16 bytes), store
    nothing new (a key of a neighbour would store a piece again, or give it another's ids)."""
    _tiny, none, theirs, _text = trained
    words = ["the", "quick", " fox", "jumps", "overhead", "extraordinarily", "zzzzzq", "naïve", "ab"]
    enc = Encoding("ahead", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks, cache_size=1 << 12)
    fillers = ["x", "-" * 20, "7", "..."]
    rng = random.Random(3)
    counts = None
    for _ in range(6):
        order = words * 3
        rng.shuffle(order)
        doc = " ".join(w + " " + rng.choice(fillers) for w in order) + " " + " ".join(fillers)
        assert enc.encode_ordinary(doc) == theirs.encode_ordinary(doc)
        held = (enc._bpe._py_spare_shorts, enc._bpe._py_spare_tables)
        if counts is None:  # the first text stores every piece of 3 to 255 bytes and few ids
            counts = held
            assert counts[0][0][1] >= 5 and counts[1][0][1] >= 2
        assert held == counts


def test_a_table_grown_past_two_mib_keeps_every_id(trained):
    """A piece table of 2 MiB and more lives in its own mapping (huge pages where the system
    gives them, ``bpetrain_table_calloc``): some 35,000 new words of 3 or 4 letters grow
    the short part of a table until ``LINEAR_AFTER`` bytes are read, then fill seeded
    tables (of half the cache size a part from the start: 8 MiB of short entries); they give the ids of no cache, twice (the second time from the table),
    and clearing the cache empties the seeded table back to its seed."""
    _tiny, none, theirs, _text = trained
    rng = random.Random(7)
    words = {"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 4))) for _ in range(45_000)}
    docs = [" ".join(chunk) for chunk in zip(*[iter(sorted(words))] * 100)]
    expected = [theirs.encode_ordinary(d) for d in docs]
    enc = Encoding("grown", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks, cache_size=1 << 20)
    n_bytes = 0
    for doc, ids in zip(docs, expected):  # the table grows until the seed is made
        assert enc.encode_ordinary(doc) == ids
        n_bytes += len(doc)
        if n_bytes < _encoder.LINEAR_AFTER - 1000:
            (entries, used), = enc._bpe._py_spare_shorts
    assert entries >= 16 * 1024 and used > entries // 4  # grown by doubling from 1,024 entries
    for _ in range(2):
        enc.clear_cache()
        assert [enc.encode_ordinary(d) for d in docs] == expected
        (entries, used), = enc._bpe._py_spare_shorts
        assert entries * 16 >= 4 << 20 and used >= 20_000  # the pieces of at most three ids


def test_threads_sharing_a_tiny_cache_get_exact_ids(trained):
    """Four threads hammer two and sixteen entries with different pieces: every entry is
    rewritten while others read it, and no id may change."""
    _, none, _, text = trained
    docs = [text[i : i + 300] for i in range(0, 120_000, 300)]
    expected = {d: none.encode_ordinary(d) for d in docs}
    for size in (2, 16):
        shared = Encoding("shared", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks, cache_size=size)
        failures = []

        def work(seed, shared=shared, failures=failures):
            order = docs[:]
            random.Random(seed).shuffle(order)
            for _ in range(3):
                for d in order:
                    if shared.encode_ordinary(d) != expected[d]:
                        failures.append(d)
            if shared.encode_ordinary_batch(order, num_threads=2) != [expected[d] for d in order]:
                failures.append("batch")

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []


def test_cache_size_setting(trained):
    _, none, _, text = trained
    enc = Encoding("sized", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks)
    assert enc.cache_size == 1 << 18
    sample = text[:5000]
    expected = none.encode_ordinary(sample)
    for size, entries in [(0, 0), (1, 2), (1000, 1024), (4096, 4096)]:
        enc.cache_size = size
        assert enc.cache_size == entries
        assert enc.encode_ordinary(sample) == expected
    enc.clear_cache()
    assert enc.cache_size == 4096 and enc.encode_ordinary(sample) == expected
    with pytest.raises(TypeError, match="cache_size must be an int"):
        enc.cache_size = 1.5
    with pytest.raises(ValueError, match=r"cache_size must be in \[0, 2\*\*32\]"):
        enc.cache_size = -1
    import pickle

    assert pickle.loads(pickle.dumps(enc)).cache_size == 4096


# ------------------------------------------------------------------ batch outputs


def batch_docs(text: str) -> list[str]:
    rng = random.Random(5)
    docs, start = [], 0
    while start < len(text):
        n = rng.choice([0, 1, 7, 300, 2000, 40_000])
        docs.append(text[start : start + n])
        start += n
    return docs + ["", "a" * 10_000, "ab\ud800cd \udfff lone surrogates", "x<|endoftext|>y"]


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_batch_arrays_and_counts_equal_one_text_at_a_time(trained, num_threads):
    tiny, none, theirs, text = trained
    docs = batch_docs(text)
    expected = [none.encode_ordinary(d) for d in docs]
    assert expected[:-3] == [theirs.encode_ordinary(d) for d in docs[:-3]]
    for enc in (tiny, none):
        assert enc.encode_ordinary_batch(docs, num_threads=num_threads) == expected
        ids, offsets = enc.encode_batch_to_numpy(docs, num_threads=num_threads, disallowed_special=())
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and offsets.shape == (len(docs) + 1,)
        assert offsets[0] == 0 and offsets[-1] == len(ids)
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
        assert enc.count_batch(docs, num_threads=num_threads) == [len(e) for e in expected]


@pytest.mark.parametrize("num_threads", [1, 2])
def test_output_lists_hold_the_kept_ints(trained, num_threads):
    """Lists are filled with the process's kept int objects (``_encoder.kept_ints``): where
    ints are kept, making a list raises no count, and lists made and freed many times
    over leave every int alive, with its value, and one the process never frees (a count
    of 2**30 or more). Elsewhere each item is counted, and freeing gives the counts back."""
    _, none, _, text = trained
    docs = batch_docs(text)

    def calls():
        return [none.encode_ordinary_batch(docs, num_threads=num_threads), [none.encode_ordinary(d) for d in docs],
                none.encode_batch(docs, allowed_special="all", num_threads=num_threads)]

    expected = calls()
    probe = list({id(i): i for out in expected for ids in out for i in ids if i < 2256}.values())  # the ranks'
    values = [int(str(i)) for i in probe]  # new objects: the probe's values, kept apart
    gc.collect()  # garbage of earlier tests that holds these ints would lower their counts when collected
    gc.disable()
    try:
        before = [sys.getrefcount(i) for i in probe]
        made = [calls() for _ in range(10)]  # more references than any int's count held before
        uses = Counter(id(i) for out in made for ids in out for i in ids)
        after = [sys.getrefcount(i) for i in probe]
        del made
        freed = [sys.getrefcount(i) for i in probe]
    finally:
        gc.enable()
    if _encoder.INTS_KEPT:
        assert min(before) >= 2**30 and after == before and min(freed) >= 2**30
    else:
        assert [a - b for a, b in zip(after, before)] == [uses[id(i)] for i in probe] and freed == before
    assert len(probe) > 500 and probe == values and calls() == expected


def test_the_kept_ints_are_not_walked_by_the_garbage_collector(trained):
    """The table of kept ints holds ints alone (or None for an id not output yet), so the
    collector does not track it (a full collection would otherwise walk up to 200,000
    items for o200k_base); lists made from it stay tracked, and their ids survive
    collections."""
    _, none, theirs, text = trained
    enc = Encoding("untracked", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks)
    ids = enc.encode_ordinary(text[:2000])
    ints = _encoder._kept_ints
    assert all(ints[i] is i for i in ids) and not gc.is_tracked(ints)
    tables = [o for o in gc.get_referrers(ids[0])  # collections the collector walks holding the table's ints
              if isinstance(o, (list, tuple)) and len(o) >= 2256 and all(o[i] is ints[i] for i in set(ids))]
    assert not tables
    assert gc.is_tracked(ids) and ids == theirs.encode_ordinary(text[:2000])
    gc.collect()
    assert ids == theirs.encode_ordinary(text[:2000]) and enc.encode_ordinary(text[:2000]) == ids


def test_kept_ints_are_made_when_first_output_once_for_every_encoder_and_thread():
    """An id's kept int is made the first time the process outputs the id, and every
    encoder of the process and every thread then hands out that one object: an id never
    output has none. The ranks lie past those of every other vocabulary the tests use,
    so no earlier test has output them. The lists are ordinary lists: each call's its
    own, mutable, tracked by the collector."""
    first = 500_000
    ranks = {bytes([b]): first + b for b in range(256)}
    for k, token in enumerate([b"ab", b"abc", b" ab", b" abc", b"xy"]):
        ranks[token] = first + 256 + k

    def made(i):
        return i < len(_encoder._kept_ints) and _encoder._kept_ints[i] is not None

    assert not any(made(i) for i in range(first, first + 261))
    one = Encoding("first use", pat_str="cl100k", mergeable_ranks=ranks)
    other = Encoding("first use again", pat_str="cl100k", mergeable_ranks=ranks)
    theirs = tiktoken.Encoding("first use", pat_str=one.pat_str, mergeable_ranks=ranks, special_tokens={})
    ids = one.encode_ordinary("abc ab")
    assert ids == theirs.encode_ordinary("abc ab") == [first + 257, first + 258]
    table = _encoder._kept_ints
    assert [table[i] for i in ids] == ids and all(table[i] is i for i in ids)
    assert not any(made(i) for i in range(first, first + 261) if i not in ids)  # "xy", the bytes: not output
    assert all(a is b for a, b in zip(other.encode_ordinary("abc ab"), ids))  # another encoder: the same objects
    assert not gc.is_tracked(table)

    texts = ["xy abc", "ab xy", "q xy", "xy q ab"] * 4
    barrier = threading.Barrier(4)
    outputs = []

    def run(enc):
        barrier.wait()
        outputs.append([enc.encode_ordinary(t) for t in texts] + enc.encode_ordinary_batch(texts, num_threads=1))

    threads = [threading.Thread(target=run, args=(enc,)) for enc in (one, other, one, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [theirs.encode_ordinary(t) for t in texts] * 2
    table = _encoder._kept_ints
    assert len(outputs) == 4 and all(out == expected for out in outputs)
    assert all(table[i] is i for out in outputs for row in out for i in row)
    assert not made(first + ord("z")) and made(first + ord("q"))

    a, b = one.encode_ordinary("abc ab"), one.encode_ordinary("abc ab")
    a.append(a)
    a[0] = -1
    assert a is not b and b == ids and gc.is_tracked(a) and a[2] is a


@pytest.mark.parametrize("num_threads", [1, 2])
def test_special_token_ids_are_new_ints_their_list_holds(trained, num_threads):
    """An id past the ranks (a special token's) is not a kept int: each list item is a new
    int that the list alone holds."""
    _, none, _, text = trained
    docs = [text[:200] + "<|endoftext|>" + text[200:400], "<|endoftext|>"] * 3
    for out in ([none.encode(d, allowed_special="all") for d in docs],
                none.encode_batch(docs, allowed_special="all", num_threads=num_threads)):
        counts = [sys.getrefcount(ids[k]) for ids in out for k in range(len(ids)) if ids[k] == 2256]
        fresh = int("2256")  # held by this name alone, as an item by its list alone
        assert counts == [sys.getrefcount(fresh)] * 6


def test_batch_to_numpy_with_special_tokens_as_encode(trained):
    tiny, _, theirs, text = trained
    docs = [text[:500] + "<|endoftext|>", text[500:900]]
    ids, offsets = tiny.encode_batch_to_numpy(docs, allowed_special="all")
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == theirs.encode_batch(
        docs, allowed_special="all"
    )
    with pytest.raises(ValueError, match="disallowed special token"):
        tiny.encode_batch_to_numpy(docs)


def test_batch_edge_cases_and_errors(trained):
    tiny, _, _, _ = trained
    ids, offsets = tiny.encode_batch_to_numpy([])
    assert ids.dtype == np.uint32 and ids.shape == (0,) and offsets.tolist() == [0]
    assert tiny.count_batch([]) == [] and tiny.encode_ordinary_batch([]) == []
    assert tiny.count_batch(["", ""], num_threads=2) == [0, 0]

    class Text(str):
        pass

    assert tiny.encode_ordinary_batch([Text("fine ☃"), "x"]) == tiny.encode_ordinary_batch(["fine ☃", "x"])
    for call in (tiny.encode_ordinary_batch, tiny.encode_batch_to_numpy, tiny.count_batch):
        with pytest.raises(TypeError, match="text must be a str, got bytes"):
            call(["fine", b"bytes"])
        with pytest.raises(ValueError, match="num_threads must be an int >= 1"):
            call(["fine"], num_threads=0)


def test_batch_without_a_compiled_pattern(trained):
    """Raw mode and a pattern the compiled matcher does not take go text by text."""
    _, none, _, text = trained
    docs = [text[i : i + 500] for i in range(0, 20_000, 500)]
    for pat_str in (None, r"\b\w+\b|\s+|."):
        enc = Encoding("other", pat_str=pat_str, mergeable_ranks=none.mergeable_ranks, unicode_version="regex")
        expected = [enc.encode_ordinary(d) for d in docs]
        for num_threads in (1, 2):
            assert enc.encode_ordinary_batch(docs, num_threads=num_threads) == expected
            ids, offsets = enc.encode_batch_to_numpy(docs, num_threads=num_threads)
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
            assert enc.count_batch(docs, num_threads=num_threads) == [len(e) for e in expected]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_openai_batches_with_the_cache_equal_tiktoken(name):
    ours, theirs = openai_encodings(name)
    text = stdlib_text(400_000).decode("utf-8") + MULTILINGUAL * 30
    docs = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    expected = theirs.encode_ordinary_batch(docs)
    ours.clear_cache()
    assert [ours.encode_ordinary(d) for d in docs] == expected
    assert ours.encode_ordinary_batch(docs, num_threads=2) == expected
    ids, offsets = ours.encode_batch_to_numpy(docs, num_threads=2)
    assert ids.tolist() == [i for e in expected for i in e]
    assert np.diff(offsets).tolist() == [len(e) for e in expected]
    assert ours.count_batch(docs, num_threads=2) == [len(e) for e in expected]


@pytest.mark.parametrize("pat_str", ["cl100k", r"^\s+|\s+$|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"])
def test_long_text_on_threads_equals_tiktoken(trained, pat_str):
    """Texts of LONG_TEXT bytes or more are cut at safe cuts and encoded on threads; the
    ids must be those of the whole (anchors and lookaheads see the real text ends)."""
    from bpetrain.encoding.batching import LONG_TEXT
    from bpetrain.splitting.pattern import resolve_pattern

    _, none, _, text = trained
    pat = resolve_pattern(pat_str)
    ours = Encoding("long", pat_str=pat, mergeable_ranks=none.mergeable_ranks)
    theirs = tiktoken.Encoding("long", pat_str=pat, mergeable_ranks=none.mergeable_ranks, special_tokens={})
    long_text = "  \n" + (text * (2 * LONG_TEXT // len(text.encode()) + 1)) + "   \n  "
    assert len(long_text.encode()) >= 2 * LONG_TEXT
    expected = theirs.encode_ordinary(long_text)
    assert ours.encode_ordinary(long_text) == expected
    assert ours.encode_to_numpy(long_text).tolist() == expected
    assert ours.count(long_text) == len(expected)


def test_each_running_call_has_a_cache_of_its_own(trained):
    """A call takes a cache and gives it back: one after another, calls reuse one cache;
    calls running at once each get their own (never one cache for two threads); setting
    a new size drops them all, clearing empties the seeded ones back to their seed."""
    _, none, _, text = trained
    enc = Encoding("lanes", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks)
    docs = [text[i : i + 400] for i in range(0, 120_000, 400)]
    expected = [none.encode_ordinary(d) for d in docs]
    assert enc._bpe.spare_caches == 0
    for d, e in zip(docs, expected):  # 120 KB: past LINEAR_AFTER, so the tables are seeded from here on
        assert enc.encode_ordinary(d) == e
    assert enc._bpe.spare_caches == 1
    barrier = threading.Barrier(3)
    results = {}

    def work(k):
        barrier.wait()  # three calls start together
        results[k] = enc.encode_ordinary_batch(docs, num_threads=1)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[k] == expected for k in range(3))
    assert 1 <= enc._bpe.spare_caches <= 3
    spares, full = enc._bpe.spare_caches, enc._bpe._py_spare_shorts
    enc.clear_cache()  # the seeded tables are emptied back to the seed in place, and kept
    cleared = (enc._bpe._py_spare_tables, enc._bpe._py_spare_shorts)
    enc.cache_size = 2 * enc.cache_size  # a new size: every table dropped
    enc.cache_size //= 2
    assert enc._bpe.spare_caches == 0 and enc.encode_ordinary("") == []  # a call of no pieces takes a table
    seed = (enc._bpe._py_spare_tables, enc._bpe._py_spare_shorts)  # a new table: the seed's copy
    assert len(seed[0]) == 1 and cleared == (seed[0] * spares, seed[1] * spares) and full != cleared[1]
    enc.clear_cache()
    assert enc._bpe.spare_caches == 1 and enc.encode_ordinary(docs[0]) == expected[0]
    enc.cache_size = 0
    assert enc.encode_ordinary(docs[0]) == expected[0] and enc._bpe.spare_caches == 0


fragments = st.sampled_from(["<|endoftext|>", "<|endof", "text|>", "<|", "<", "|>", " hello", "\u00e9", "<|fim_prefix|>",
                             "z q", "zq", " ", "\n", "q"])


@pytest.fixture(scope="module")
def with_specials(trained):
    _, none, _, _ = trained
    return Encoding("specials", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks,
                    special_tokens={"<|endoftext|>": 2256, "<|fim_prefix|>": 2257})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(fragments, max_size=8).map("".join), min_size=1, max_size=12),
       st.sampled_from(["all", (), {"<|endoftext|>"}, {"z q"}, {"z q", "<|fim_prefix|>", "é"}]),
       st.sampled_from([1, 2]))
def test_batches_check_disallowed_strings_as_encode_does(with_specials, docs, disallowed, num_threads):
    """The batch kernel looks for disallowed strings without the GIL (memchr when they all
    start with one byte, a first-byte table otherwise); it must raise exactly when one
    text makes ``encode`` raise, with the first such text's message."""
    enc = with_specials
    outcome = []
    for d in docs:
        try:
            outcome.append(enc.encode(d, disallowed_special=disallowed))
        except ValueError as error:
            outcome = str(error)
            break
    for call in (enc.encode_batch, enc.encode_batch_to_numpy):
        try:
            got = call(docs, disallowed_special=disallowed, num_threads=num_threads)
        except ValueError as error:
            got = str(error)
        if call == enc.encode_batch_to_numpy and not isinstance(got, str):
            ids, offsets = got
            got = [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
        assert got == outcome


@pytest.mark.parametrize("num_threads", [1, 2])
def test_batch_lists_are_tracked_by_the_garbage_collector(trained, num_threads):
    """The kernel builds batch lists untracked and ``track_lists`` gives them back: a list
    the caller puts in a reference cycle must still be collected."""
    import gc
    import weakref

    _, none, _, text = trained
    docs = [text[i : i + 300] for i in range(0, 300 * 3000, 300)]  # several chunks on two threads
    lists = none.encode_ordinary_batch(docs, num_threads=num_threads)
    assert all(gc.is_tracked(ids) for ids in lists)

    class Box:
        pass

    box = Box()
    box.ids = lists[len(lists) // 2]
    box.ids.append(box)
    alive = weakref.ref(box)
    del box, lists
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("num_threads", [1, 2, 3, 8])
def test_batch_chunks_give_each_thread_several(num_threads):
    """Chunks keep the texts in order, hold at most about BATCH_CHUNK characters (plus one
    text), and number at least four per thread where chunks of SMALLEST_CHUNK characters
    allow it."""
    from bpetrain.encoding.batching import BATCH_CHUNK, SMALLEST_CHUNK, batch_chunks

    rng = random.Random(num_threads)
    for total_texts, mean in [(1, 10), (5, 1000), (3000, 1000), (40, BATCH_CHUNK // 3), (10_000, 700), (1000, 300)]:
        texts = ["x" * rng.randint(0, 2 * mean) for _ in range(total_texts)]
        chunks = batch_chunks(texts, np.array([len(t) for t in texts], dtype=np.int64), num_threads)
        assert [t for chunk in chunks for t in chunk] == texts
        assert all(chunks)
        if num_threads == 1 or total_texts < 2:
            assert len(chunks) == 1
            continue
        longest, total = max(map(len, texts)), sum(map(len, texts))
        assert all(sum(map(len, chunk)) <= BATCH_CHUNK + longest for chunk in chunks)
        if longest <= SMALLEST_CHUNK // 4 and total >= 4 * num_threads * SMALLEST_CHUNK:
            assert len(chunks) >= 4 * num_threads
        assert len(chunks) >= min(total // BATCH_CHUNK, total_texts)


@pytest.mark.parametrize("num_threads", [1, 2])
def test_batch_calls_leave_the_callers_strings_as_they_were(trained, num_threads):
    """The batch kernel reads non-ASCII texts through a UTF-8 copy of its own: CPython
    would otherwise keep a UTF-8 copy inside each str for its lifetime (2.5x the memory of
    CJK text), as ``PyUnicode_AsUTF8AndSize`` does."""
    import sys

    _, none, _, _ = trained
    texts = ["".join(["日本語のテキスト", str(i), "Straße 🙂"] * 40) for i in range(3000)] + ["plain ascii"] * 10
    sizes = [sys.getsizeof(t) for t in texts]
    expected = [none.encode_ordinary(t) for t in texts]
    assert none.encode_ordinary_batch(texts, num_threads=num_threads) == expected
    ids, offsets = none.encode_batch_to_numpy(texts, num_threads=num_threads)
    assert ids.tolist() == [i for e in expected for i in e]
    assert np.diff(offsets).tolist() == [len(e) for e in expected]
    assert none.count_batch(texts, num_threads=num_threads) == [len(e) for e in expected]
    assert [sys.getsizeof(t) for t in texts] == sizes


# ------------------------------------------------------------------ the table: what it holds, growth, limit


def test_the_cache_holds_every_piece_of_1_to_255_bytes():
    """Every piece of 1 to 8 bytes seen is stored in an entry of the short part, one token
    or several (up to three ids); one of 9 to 16 bytes in an entry of the other part (up
    to five ids); one of 17 to 255 bytes in an entry of that part and the arena (its
    bytes, then its ids as uint32); pieces of more than 255 bytes (the entry keeps the
    length in 8 bits), and short ones of more ids, are not."""
    ranks = {bytes([i]): i for i in range(256)}
    for token in [b"abc", b"abcd" * 4, b"xy"]:
        ranks[token] = len(ranks)
    enc = Encoding("held", pat_str=None, mergeable_ranks=ranks)
    assert enc._bpe._py_spare_tables == []

    def held(text):
        assert enc.encode_ordinary(text) == enc._bpe.encode_bytes(text.encode(), as_list=True)
        [(size, used, arena)] = enc._bpe._py_spare_tables
        [(short_size, short_used)] = enc._bpe._py_spare_shorts
        assert size == short_size == 1024
        return short_used, used, arena

    assert held("abc") == (1, 0, 0)  # one token
    assert held("abc") == (1, 0, 0)  # found, not stored again
    assert held("abcd" * 4) == (1, 1, 0)  # one token of 16 bytes
    assert held("xyz") == (2, 1, 0)  # two tokens
    assert held("a") == (3, 1, 0)  # 1 byte
    assert held("xy") == (4, 1, 0)  # 2 bytes, one token
    assert held("xy") == held("a") == (4, 1, 0)  # found
    assert held("qr") == (5, 1, 0)  # 2 bytes, two ids
    assert held("qrst") == (5, 1, 0)  # four ids of a short piece: not held
    assert held("qrs") == (6, 1, 0)  # three ids
    assert held("xyxyxyxy") == (6, 1, 0)  # 8 bytes, four ids: not held
    assert held("xyxyq") == (7, 1, 0)  # 5 bytes, three ids
    assert held("xyxyq") == (7, 1, 0)  # found
    assert held("xyxyxyxyq") == (7, 2, 0)  # 9 bytes, five ids: the other part
    assert held("xyxyxyxyxyq") == (7, 2, 0)  # six ids: not held
    assert held("xyxyxyxyxy") == (7, 3, 0)  # 10 bytes, five ids
    assert held("abcd" * 4 + "a") == (7, 4, 17 + 17 * 4)  # 17 bytes, 17 ids (no merge makes "abcd" * 4)
    assert held("abcd" * 4 + "a") == (7, 4, 85)  # found in the arena
    assert held("q" * 64) == (7, 5, 85 + 64 + 64 * 4)  # 64 bytes, 64 ids
    assert held("q" * 65) == (7, 6, 405 + 65 * 5)  # 65 bytes, 65 ids
    assert held("=" * 255) == (7, 7, 730 + 255 * 5)  # 255 bytes: the longest held
    assert held("=" * 255) == (7, 7, 2005)  # found in the arena
    assert held("=" * 256) == (7, 7, 2005)  # 256 bytes: not held
    assert held("=" * 511) == (7, 7, 2005)  # nor one whose length is 255 in its low 8 bits
    enc.clear_cache()
    assert enc._bpe._py_spare_tables == []


def test_a_full_arena_empties_the_table():
    """The arena grows to 16 bytes per entry of the limit; a piece that does not fit
    empties the table (entries and arena) before it is stored."""
    ranks = {bytes([i]): i for i in range(256)}  # no merges: a piece of n bytes has n ids
    enc = Encoding("arena", pat_str=None, mergeable_ranks=ranks, cache_size=64)  # arena: 1,024 bytes
    pieces = [f"{k:040d}" for k in range(12)]  # 40 bytes, 40 ids: 200 bytes each
    seen = []
    for piece in pieces:
        assert enc.encode_ordinary(piece) == list(piece.encode())
        [(size, used, arena)] = enc._bpe._py_spare_tables
        seen.append((used, arena))
    assert seen[:6] == [(1, 200), (2, 400), (3, 600), (4, 800), (5, 1000), (1, 200)]
    for piece in pieces:  # the last ones found, the others stored again
        assert enc.encode_ordinary(piece) == list(piece.encode())


@pytest.mark.parametrize("short", [True, False])
def test_the_cache_grows_to_its_limit_then_is_emptied(short):
    """Each part of a table doubles when half full, up to ``cache_size`` entries; half full
    at that size the table is emptied before the next piece is stored. The ids stay
    those without a cache. Pieces of 3 bytes (three ids) fill the short part; of 9
    (one token each) the other."""
    ranks = {bytes([i]): i for i in range(256)}
    if short:
        pieces = ["".join(p) for p in itertools.islice(itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=3), 5000)]
    else:
        pieces = [f"{k:09d}" for k in range(5000)]
        for piece in pieces:
            ranks[piece.encode()] = len(ranks)
    enc = Encoding("grows", pat_str=None, mergeable_ranks=ranks, cache_size=4096)
    none = Encoding("none", pat_str=None, mergeable_ranks=ranks, cache_size=0)
    seen = []
    for k, piece in enumerate(pieces):
        assert enc.encode_ordinary(piece) == none.encode_ordinary(piece)
        [(size, used, arena)] = enc._bpe._py_spare_tables
        [(short_size, short_used)] = enc._bpe._py_spare_shorts
        if short:
            assert (size, used) == (1024, 0)
            size, used = short_size, short_used
        else:
            assert (short_size, short_used) == (1024, 0)
        assert used <= size // 2 and arena == 0
        seen.append((size, used))
    assert seen[511] == (1024, 512) and seen[512] == (2048, 513)
    assert seen[1024] == (4096, 1025) and seen[2047] == (4096, 2048)
    assert seen[2048] == (4096, 1)  # full at its limit: emptied, then the new piece stored
    assert seen[-1] == (4096, 5000 - 2 * 2048)
    for piece in pieces[-100:] + pieces[:100]:  # found again, or stored again
        assert enc.encode_ordinary(piece) == none.encode_ordinary(piece)


@pytest.mark.parametrize("size", [2, 4, 8, 64])
def test_small_tables_where_every_piece_shares_probes(trained, size):
    """In a table of a few entries most pieces land on the same slots (collisions in the
    slot, resolved by comparing all 16 bytes and the length); ids must not change."""
    _, none, theirs, text = trained
    enc = Encoding("small", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks, cache_size=size)
    docs = [text[i : i + 500] for i in range(0, 60_000, 500)]
    for _ in range(2):
        assert [enc.encode_ordinary(d) for d in docs] == [theirs.encode_ordinary(d) for d in docs]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=80),
                          st.sampled_from([b"\xd1\x87" * 9, b" " * 21, b"\xff" * 17, b"=" * 255, b"=" * 256,
                                           b"\xd1\x87" * 128])),
                min_size=1, max_size=30),
       st.sampled_from([8, 64, 1024]))
def test_any_bytes_through_the_cache_equal_no_cache(encoders, pieces, size):
    """Invalid UTF-8 and every length around the held ranges (3 to 16 bytes in an entry,
    17 to 255 in the arena, longer not held; the table reads bytes, not characters): a
    table of 8 entries (an arena of 128 bytes), 64 or 1,024 (16 KiB: room for the longest)
    against none."""
    _, none, _ = encoders
    data = np.frombuffer(b"".join(pieces), dtype=np.uint8) if any(pieces) else np.zeros(0, dtype=np.uint8)
    offsets = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
    small = _encoder.BytePairEncoder(none.mergeable_ranks, cache_size=size)
    expected = [i for p in pieces for i in none._bpe.encode_bytes(p, as_list=True)]
    for _ in range(2):
        assert small.encode_table(data, offsets, cached=True, as_list=True) == expected


def test_seeded_tables_hold_every_token_and_the_pieces_seen_since():
    """Once an encoder has read ``LINEAR_AFTER`` bytes, the tables of its next calls start
    with every token of 3 to 16 bytes (the seed: those of 3 to 8 bytes in the short part,
    the others in the other, each at most half of its part, of half the cache size or
    twice its tokens): a piece that is a token is found there, also one no merge
    makes; a piece that is not is merged and stored. A part three quarters full is
    emptied back to the seed (the other part keeps its pieces); clearing the cache empties
    the kept table back to the seed; a cache smaller than the seed has none."""
    ranks = {bytes([i]): i for i in range(256)}
    for token in [b"ab", b"abc", b"abcd" * 4, b"qrs", b"xy" * 9]:  # no merge makes b"qrs" or b"abcd" * 4
        ranks[token] = len(ranks)
    none = Encoding("none", pat_str=None, mergeable_ranks=ranks, cache_size=0)
    enc = Encoding("seeded", pat_str=None, mergeable_ranks=ranks, cache_size=32)
    assert enc.encode_ordinary("012") == [48, 49, 50]
    assert enc._bpe._py_spare_tables == [(32, 0, 0)] and enc._bpe._py_spare_shorts == [(32, 1)]  # not seeded yet
    filler = "-" * 299 + "\n"  # 300 bytes of one piece: read, never held
    assert enc.encode_ordinary(filler * (_encoder.LINEAR_AFTER // len(filler) + 1)) == none.encode_ordinary(
        filler * (_encoder.LINEAR_AFTER // len(filler) + 1))

    def held(text):
        assert enc.encode_ordinary(text) == none.encode_ordinary(text) == tiktoken.Encoding(
            "t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={}).encode_ordinary(text)
        [(size, used, arena)] = enc._bpe._py_spare_tables
        [(short_size, short_used)] = enc._bpe._py_spare_shorts
        assert size == short_size == 16  # half the cache size (the tokens alone would take 2 * 2)
        return short_used, used, arena

    assert held("qrs") == (2, 1, 0)  # the seed: 3 tokens of 3 to 16 bytes; this one no merge makes
    assert held("abc") == held("abcd" * 4) == (2, 1, 0)
    assert held("abcd") == (3, 1, 0)  # two tokens: stored
    assert held("abcd") == (3, 1, 0)  # found
    assert held("xy" * 9) == (3, 2, 18 + 4)  # 18 bytes: not in the seed; one token, stored in the arena
    used = [held(f"{k:03d}") for k in range(10)]
    assert [short for short, _, _ in used[:9]] == [4, 5, 6, 7, 8, 9, 10, 11, 12]  # three quarters of 16
    # the short part back to the seed, then stored; the other part keeps "xy" * 9 and its arena
    assert used[8] == (12, 2, 22) and used[9] == (3, 2, 22)
    assert held("abcd") == (4, 2, 22)  # one more short piece
    used = [held(f"abababab{c}") for c in "0123456789xy"]  # 9 bytes, five ids: the other part
    assert [long for _, long, _ in used[:10]] == list(range(3, 13))  # three quarters of 16
    # that part and its arena back to the seed, then stored; the short part keeps its pieces
    assert used[9] == (4, 12, 22) and used[10] == (4, 2, 0) and used[11] == (4, 3, 0)
    enc.clear_cache()
    assert enc._bpe._py_spare_tables == [(16, 1, 0)] and enc._bpe._py_spare_shorts == [(16, 2)]  # emptied to the seed
    assert held("012") == (3, 1, 0)
    enc.cache_size = 2  # smaller than the seed: no seed
    assert enc.encode_ordinary("qrs") == [ranks[b"qrs"]]
    assert enc._bpe._py_spare_tables == [(2, 0, 0)] and enc._bpe._py_spare_shorts == [(2, 1)]
    enc.cache_size = 32
    assert enc.encode_ordinary("qrs") == [ranks[b"qrs"]]
    assert enc._bpe._py_spare_shorts == [(16, 2)]  # seeded at once: the encoder has read enough
    assert enc._bpe._py_spare_tables == [(16, 1, 0)]


@pytest.fixture(scope="module")
def seeded(trained):
    """An encoder of ``trained``'s vocabulary whose tables are seeded and small (a cache
    size just above the number of tokens of 3 to 16 bytes: the seed takes up to half of
    each part of a table, which is emptied back to it every few hundred new pieces)."""
    _, none, _, text = trained
    n_short = sum(3 <= len(token) <= 8 for token in none.mergeable_ranks)
    n_long = sum(9 <= len(token) <= 16 for token in none.mergeable_ranks)
    enc = Encoding("seeded small", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks,
                   cache_size=n_short + n_long + 100)
    warm = text[: _encoder.LINEAR_AFTER + 1000]
    assert enc.encode_ordinary(warm) == none.encode_ordinary(warm)
    [(size, used, _arena)] = enc._bpe._py_spare_tables
    [(short_size, short_used)] = enc._bpe._py_spare_shorts
    assert used >= n_long and size >= 2 * n_long and short_used >= n_short and short_size >= 2 * n_short
    return enc


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_hypothesis_seeded_tables_give_the_ids_of_tiktoken(seeded, encoders, batch):
    _, _, theirs = encoders
    for text in batch + batch:  # the second pass finds what the first stored (or emptied)
        expected = theirs.encode_ordinary(text.encode("utf-8", "replace").decode("utf-8"))
        assert seeded.encode_ordinary(text) == expected


def test_seeded_tables_on_real_text_equal_tiktoken(seeded, trained):
    """Real text through seeded tables, which it empties on the way (some 2,700 pieces of
    several tokens for room for 1,500), one call per document and in batches on two
    threads."""
    _, _, theirs, text = trained
    docs = [text[i : i + 700] for i in range(0, len(text), 700)]
    expected = [theirs.encode_ordinary(d) for d in docs]
    for _ in range(2):
        assert [seeded.encode_ordinary(d) for d in docs] == expected
        assert seeded.encode_ordinary_batch(docs, num_threads=2) == expected
        ids, offsets = seeded.encode_batch_to_numpy(docs, num_threads=2)
        assert [ids[offsets[k] : offsets[k + 1]].tolist() for k in range(len(docs))] == expected


def test_the_working_memory_kept_with_a_table_gives_every_call_its_own_ids(trained):
    """A call per document takes its output and merge buffers from its piece table
    (``PieceCaches.take_buffers``): each call starts with an empty output, whatever the
    call before left; buffers grown past ``KEPT_IDS`` ids or ``KEPT_SCRATCH`` bytes of
    piece are freed when the table is given back; lists and arrays agree with tiktoken."""
    from bpetrain.encoding import _piece

    _tiny, none, theirs, text = trained
    enc = Encoding("kept", pat_str=none.pat_str, mergeable_ranks=none.mergeable_ranks)
    rng = random.Random(3)
    many_ids = " ".join("".join(rng.choice("qxzj") for _ in range(3)) for _ in range(_piece.KEPT_IDS // 2 + 100))
    long_piece = "".join(rng.choice("qxzjvk") for _ in range(_piece.KEPT_SCRATCH + 100))  # one piece, merged
    docs = [text[:300], many_ids, "", text[300:310], long_piece, "x", text[:300], many_ids[:2000], long_piece[:1000]]
    for doc in docs + docs:
        expected = theirs.encode_ordinary(doc)
        assert enc.encode_ordinary(doc) == expected
        assert enc.encode_to_numpy(doc, disallowed_special=()).tolist() == expected
        [(n_ids, n_bytes)] = enc._bpe._py_spare_buffers
        assert n_ids <= _piece.KEPT_IDS and n_bytes <= _piece.KEPT_SCRATCH
    assert len(theirs.encode_ordinary(many_ids)) > _piece.KEPT_IDS  # the freeing was exercised
    enc.cache_size = 0  # no table: the call's own buffers
    assert [enc.encode_ordinary(d) for d in docs] == [theirs.encode_ordinary(d) for d in docs]


def test_short_pieces_with_ids_past_nineteen_bits():
    """A short entry holds ids below 2**19: a piece of 3 to 8 bytes with a larger id is
    merged (or found in the whole-token table) each time, not held, and a vocabulary
    with such a token of 3 to 8 bytes gets no seed (a seeded table must hold every
    token of 3 to 16 bytes). The ids stay tiktoken's."""
    ranks = {bytes([i]): i for i in range(256)}
    filler = 2**19 - len(ranks)  # tokens of 9 bytes no text here holds
    ranks.update((b"\xff" + k.to_bytes(8, "big"), 256 + k) for k in range(filler))
    ranks[b"big"] = 2**19  # the first id past 19 bits
    ranks[b"ok"] = 2**19 + 1
    none = Encoding("none", pat_str=None, mergeable_ranks=ranks, cache_size=0)
    enc = Encoding("big ids", pat_str=None, mergeable_ranks=ranks, cache_size=4096)
    theirs = tiktoken.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    for text in ["big", "okokok", "bigok", "oko", "xyz"] * 2:
        assert enc.encode_ordinary(text) == none.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert enc._bpe._py_spare_shorts == [(1024, 1)]  # "xyz" alone: the others have an id of 2**19 or more
    warm = "xyz " * (_encoder.LINEAR_AFTER // 4 + 1)
    assert enc.encode_ordinary(warm) == none.encode_ordinary(warm)
    enc.clear_cache()
    assert enc.encode_ordinary("big") == [2**19]
    assert enc._bpe._py_spare_shorts == [(1024, 0)]  # not seeded
