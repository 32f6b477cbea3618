"""Superword training (SuperBPE): the stage-2 patterns against the authors' pre-tokenization,
the kernel's rule and whole merge lists against the reference, one-stage equivalence, and
ids in bpetrain, tiktoken and an exported tokenizer.json."""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
import regex
from helpers import MULTILINGUAL, random_corpus, run_bpetrain
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import PATTERNS, BpeTrainer, Tokenizer, _reference
from bpetrain.splitting.pattern import SplitPattern
from bpetrain.training._superword import SuperwordRule, token_facts

#: The authors' stage-2 split (PythonNut/superbpe ``scripts/extend_tokenizer.sh``), as
#: their ``Split(pattern, behavior="isolated")`` runs it on each line.
AUTHORS_REGEX = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"
#: The paper's: ``Digits(individual_digits=False)``, then this regex isolated.
PAPER_REGEX = r"(?=(\d{3})+(?!\d))"

PROSE = (
    "The cat sat on the mat, and the dog sat on the log. It was, in the end, a fine day: "
    "sunny and warm. In the morning, the cat and the dog went to the park... They played "
    "for 2 hours and 45 minutes (from 10:15 to 13:00), then went home.\n\n"
    "Note: the park is open from 8 to 20; entry costs 1,250 yen.\n"
)
FUZZ = [
    "",
    "\n\n",
    "a\n\nb\n\n\n",
    "key: value, other: thing",
    ": : :: :  : x",
    "1234567890 12 3 4567 + 99,999.5",
    "no\u00a0break\u00a0spaces\u00a0 here \u00a0",
    "中文文本，没有空格。日本語のテキスト、です。",
    "  leading and trailing   ",
    "tab\tseparated\tvalues\r\nwindows line\r\n",
    "punctuation!!! ?? ... -- ->  () [] {} ;;",
    MULTILINGUAL,
    "the quick brown fox jumps over the lazy dog " * 1200,  # a line of 52 KB without a cut
    ("word " * 10_000) + "\n" + ("x" * 50_000),
]


def authors_pieces(text: str, pre) -> list[str]:
    """The pieces of the authors' training: each line (Hugging Face's ``Tokenizer.train``
    reads files by lines, the newline kept) through their pre-tokenizer."""
    lines = regex.findall(r"[^\n]*\n|[^\n]+", text)
    return [piece for line in lines for piece, _ in pre.pre_tokenize_str(line) if piece]


def pieces(pat_str: str, text: str) -> list[str]:
    return [m.group() for m in regex.finditer(pat_str, text)]


@pytest.fixture(scope="module")
def authors():
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    from tokenizers.pre_tokenizers import Digits, Sequence, Split

    return {
        "superbpe": Sequence([Split(tokenizers.Regex(AUTHORS_REGEX), behavior="isolated")]),
        "superbpe-original": Sequence([Digits(individual_digits=False),
                                       Split(tokenizers.Regex(PAPER_REGEX), behavior="isolated")]),
    }


ALPHABET = list("ab  ..,:;!?/\n\n\r\t12345xyZ\x0b\x85\u2028") + ["\r\n", "\u00a0", "é", "中", "²", "٣", "—", "'", "  "]


@pytest.mark.parametrize("name", ["superbpe", "superbpe-original"])
def test_stage2_patterns_split_as_the_authors(authors, name):
    """One pattern over the whole text gives the pieces of the authors' per-line split, on
    the fuzz cases and on random text from an alphabet of the characters that matter."""
    rng = random.Random(7)
    texts = FUZZ[:-2] + [PROSE] + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30)))
                                   for _ in range(3000)]
    for text in texts:
        assert pieces(PATTERNS[name], text) == authors_pieces(text, authors[name]), repr(text)


@pytest.mark.parametrize("name", ["superbpe", "superbpe-original"])
@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_stage2_patterns_cover_the_text_and_compile(name, text):
    """The compiled matcher runs the patterns (no fallback), every character is in a piece,
    and no piece goes on past a newline."""
    splitter = SplitPattern(PATTERNS[name])
    assert splitter.program is not None and splitter.fallback_reason is None
    found = splitter.split(text)
    assert found == [p.encode("utf-8", "surrogateescape") for p in pieces(PATTERNS[name], text)]
    assert b"".join(found) == text.encode()
    assert all(b"\n" not in piece[:-1] for piece in found)


def test_rule_facts_and_choices_agree_with_the_reference():
    """The kernel's per-id facts give the reference's answer for every joined pair of a
    set of tokens (spaces, colons and words at either end)."""
    tokens = [b" ", b":", b": ", b"a", b" a", b"a ", b"a b", b" a b c", b"a:", b" :", b"  ", b"a b c d", b"x: y"]
    for max_words, colon in ((4, True), (0, False), (1, True), (2, False)):
        rule = SuperwordRule(tokens, len(tokens) ** 2, max_words, colon)
        z = len(tokens)
        for a, left in enumerate(tokens):
            for b, right in enumerate(tokens):
                want = _reference.superword_allows(left + right, max_words or None, colon)
                assert rule._py_allows(a, b, z) == want, (left, right)
                if want:  # z's recorded facts are those of the joined bytes
                    assert (int(rule.words_array[z]), int(rule.ends_array[z])) == token_facts(left + right)
                    z += 1


CORPORA = {
    "prose": [PROSE] * 4 + [PROSE.replace("cat", "bird")] * 2,
    "ties": random_corpus(3, 60, "ab :,\n", 40),
    "repeats": ["a a a a a a a a a a, b b b b b b: c c c c c c c c\n" * 3, "aaaa aaaa aaaa aaaa, " * 20],
    "multilingual": [MULTILINGUAL, MULTILINGUAL.upper(), PROSE],
}


@pytest.mark.parametrize("corpus", list(CORPORA))
@pytest.mark.parametrize("stage2", ["superbpe", "superbpe-original"])
@pytest.mark.parametrize(("transition", "vocab_size"), [(256, 320), (290, 420), (340, 360)])
@pytest.mark.parametrize(("max_words", "colon"), [(4, True), (None, False), (2, True)])
def test_merges_equal_the_reference(corpus, stage2, transition, vocab_size, max_words, colon):
    texts = CORPORA[corpus]
    trainer = BpeTrainer(vocab_size, superword_transition=transition, superword_pat_str=stage2,
                         max_words_per_token=max_words, forbid_colon_space=colon, show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small corpora may not reach vocab_size
        tokenizer = trainer.train_from_iterator(texts)
    want = _reference.train_superword(texts, transition - 256, vocab_size - 256, PATTERNS["cl100k"],
                                      PATTERNS[stage2], min_frequency=2, max_words=max_words,
                                      forbid_colon_space=colon)
    assert tokenizer.merges == want
    assert tokenizer.pat_str == PATTERNS[stage2]
    for a, b in tokenizer.merges[transition - 256:]:  # the constraints hold for every stage-2 token
        assert _reference.superword_allows(tokenizer.vocab[a] + tokenizer.vocab[b], max_words, colon)


def test_constraints_change_the_merges():
    """The test above can fail: without the constraints, the prose makes tokens they refuse."""
    texts = CORPORA["prose"]
    free = BpeTrainer(420, superword_transition=300, max_words_per_token=None, forbid_colon_space=False,
                      show_progress=False).train_from_iterator(texts)
    made = [free.vocab[i] for i in range(300, 420)]
    assert any(b": " in token for token in made)
    assert any(len([w for w in token.split(b" ") if w]) > 4 for token in made)


@pytest.mark.parametrize("pattern", ["cl100k", "gpt2"])
def test_stage2_with_the_stage1_pattern_is_one_stage(pattern):
    texts = [PROSE, MULTILINGUAL] * 3
    one = BpeTrainer(600, pat_str=pattern, show_progress=False).train_from_iterator(texts)
    two = BpeTrainer(600, pat_str=pattern, superword_transition=400, superword_pat_str=pattern,
                     max_words_per_token=None, forbid_colon_space=False, show_progress=False)
    assert two.train_from_iterator(texts).merges == one.merges


def test_files_and_iterator_agree(tmp_path):
    texts = [PROSE, MULTILINGUAL, PROSE.upper()]
    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    options = dict(superword_transition=320, min_frequency=1, show_progress=False)
    from_files = BpeTrainer(500, **options)
    tokenizer = from_files.train([str(p) for p in paths], num_threads=2)
    assert tokenizer.merges == BpeTrainer(500, **options).train_from_iterator(texts).merges
    first, second = from_files.stage_stats
    assert from_files.stats.n_merges == second.n_merges and first.n_merges == 320 - 256
    assert from_files.stats.seconds >= first.seconds + second.seconds


def test_a_base_at_the_transition_is_stage_1():
    """SuperBPE's extension of an existing tokenizer: a base of T tokens goes straight to stage 2."""
    texts = [PROSE, MULTILINGUAL] * 2
    base = BpeTrainer(300, show_progress=False).train_from_iterator(texts)
    trainer = BpeTrainer(400, superword_transition=300, show_progress=False)
    extended = trainer.train_from_iterator(texts, base=base)
    whole = BpeTrainer(400, superword_transition=300, show_progress=False).train_from_iterator(texts)
    assert extended.merges == whole.merges
    assert trainer.stage_stats[0] is None


def test_options_are_checked():
    with pytest.raises(ValueError, match="superword_transition"):
        BpeTrainer(1000, max_words_per_token=2)
    with pytest.raises(ValueError, match="between 256"):
        BpeTrainer(1000, superword_transition=2000)
    with pytest.raises(ValueError, match="max_words_per_token"):
        BpeTrainer(1000, superword_transition=500, max_words_per_token=0)
    with pytest.raises(TypeError, match="superword_transition"):
        BpeTrainer(1000, superword_transition=500.0)
    with pytest.raises(ValueError, match="one split pattern"):
        BpeTrainer(1000, superword_transition=500, superword_pat_str=None)
    trainer = BpeTrainer(1000, superword_transition=500)
    assert "superword_transition=500" in repr(trainer) and "'superbpe'" in repr(trainer)
    with pytest.raises(ValueError, match="two split patterns"):
        trainer.train_from_counts({"a b": 3})
    with pytest.raises(ValueError, match="two split patterns"):
        trainer.count("-")


@pytest.fixture(scope="module")
def superword_tokenizer() -> Tokenizer:
    texts = [PROSE * 3, MULTILINGUAL * 2, "key: value\n" * 50, "1234 5678 90\n" * 30] * 4
    trainer = BpeTrainer(900, superword_transition=500, min_frequency=1, show_progress=False)
    return trainer.train_from_iterator([*texts, *CORPORA["ties"]])


def test_ids_agree_with_tiktoken(superword_tokenizer):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    tok = superword_tokenizer
    peer = tiktoken.Encoding("superword", pat_str=tok.pat_str, mergeable_ranks=tok.mergeable_ranks, special_tokens={})
    encoding = tok.encoding()
    assert any(b" " in t.strip(b" ") for t in tok.mergeable_ranks)  # it has superwords
    for text in [*FUZZ, PROSE * 5]:
        ids = encoding.encode_ordinary(text)
        assert ids == peer.encode_ordinary(text) == tok.encode_ordinary(text), text[:40]
        assert encoding.decode(ids) == text


def test_ids_agree_with_the_exported_tokenizer_json(superword_tokenizer, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency: pip install '.[test]'")
    tok = superword_tokenizer
    tok.export(tmp_path / "tokenizer.json", format="hf")
    peer = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    encoding = tok.encoding()
    for text in [*FUZZ, PROSE * 5]:
        assert peer.encode(text, add_special_tokens=False).ids == encoding.encode_ordinary(text), text[:40]
    assert Tokenizer.from_file(tmp_path / "tokenizer.json").pat_str == tok.pat_str


def test_saved_model_keeps_the_stage2_pattern(superword_tokenizer, tmp_path):
    superword_tokenizer.save(tmp_path / "m.json")
    loaded = Tokenizer.load(tmp_path / "m.json")
    assert loaded.pat_str == PATTERNS["superbpe"] and loaded.merges == superword_tokenizer.merges


def test_kernel_drops_refused_pairs_for_good():
    """A refused pair stays refused when a later merge makes new occurrences of it."""
    from bpetrain.training._merge import PairMerger

    data = np.frombuffer(b"a: a: a: b: b:", dtype=np.uint8)
    vocab = [bytes([i]) for i in range(256)]
    rule = SuperwordRule(vocab, 20, 0, True)
    merger = PairMerger(data, np.array([0, len(data)], dtype=np.int64), np.array([5], dtype=np.int64), 20, 1,
                        2**31 - 1, np.ones(256, dtype=np.int32), data.astype(np.int32), rule)
    merger.merge(20)
    spelled = dict(enumerate(vocab))
    for i, (a, b) in enumerate(merger.merges.tolist()):
        spelled[256 + i] = spelled[a] + spelled[b]
        assert b": " not in spelled[256 + i]
    assert b"a:" in spelled.values() and b" b:" in spelled.values()  # merging went on around the refused pairs
    assert rule.n_refused >= 2  # (":", " ") and, once "a:" was made, ("a:", " ")


def test_cli_trains_superwords(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(PROSE * 20, encoding="utf-8")
    out = tmp_path / "m.json"
    done = run_bpetrain(["train", str(corpus), "--vocab-size", "400", "--superword-transition", "300",
                         "--max-words-per-token", "3", "-o", str(out), "--quiet"])
    assert done.returncode == 0, done.stderr
    tok = Tokenizer.load(out)
    want = BpeTrainer(400, superword_transition=300, max_words_per_token=3, show_progress=False).train(str(corpus))
    assert tok.merges == want.merges and tok.pat_str == PATTERNS["superbpe"]
    bad = run_bpetrain(["train", str(corpus), "--vocab-size", "400", "--max-words-per-token", "3", "-o", str(out)])
    assert bad.returncode != 0 and "superword_transition" in bad.stderr


def test_warnings_name_the_stage_and_point_at_the_call(tmp_path):
    from bpetrain import VocabSizeNotReachedWarning

    texts = ["a tiny text, and a tiny text"] * 3
    with pytest.warns(VocabSizeNotReachedWarning, match=r"stage \d of superword training") as caught:
        BpeTrainer(2000, superword_transition=1000, show_progress=False).train_from_iterator(texts)
    assert {w.filename for w in caught} == {__file__}
    assert {str(w.message)[:7] for w in caught} == {"stage 1", "stage 2"}
    path = tmp_path / "tiny.txt"
    path.write_text(texts[0], encoding="utf-8")
    with pytest.warns(VocabSizeNotReachedWarning) as caught:
        BpeTrainer(2000, superword_transition=1000, show_progress=False).train(str(path))
    assert {w.filename for w in caught} == {__file__}
