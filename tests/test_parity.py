"""ParityBpeTrainer (parity-aware BPE) against the reference, Hugging Face's ParityBpeTrainer, and
the kernel methods it drives (PairMerger.best_pair, PairMerger.merge_pair)."""
from __future__ import annotations

import json
import random
import warnings

import pytest
from helpers import MULTILINGUAL, random_corpus

from bpetrain import PATTERNS, BpeTrainer, ParityBpeTrainer, VocabSizeNotReachedWarning, _reference
from bpetrain.counting.counts import PieceTable
from bpetrain.formats._vocab import str_to_token, token_to_str
from bpetrain.formats.hf import hf_pattern
from bpetrain.training._merge import PairMerger
from bpetrain.training.trainer import HF_BYTE_IDS


def _language(seed: int, syllables: list[str], n_docs: int) -> list[str]:
    """Documents of made-up words from a language's syllables (many repeats, some ties)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(60)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(2, 30))) for _ in range(n_docs)]


#: Three languages of very different sizes and scripts: the big one would take the merges.
LANGUAGES = {
    "en": _language(1, ["the", "ing", "an", "st", "o", "re", "th", "er", "a", "s"], 300),
    "ru": _language(2, ["при", "вет", "ка", "к", "де", "ла", "о", "сп", "а", "си", "бо"], 60),
    "hi": _language(3, ["न", "म", "स्", "ते", "दु", "नि", "या", "आ", "प", "कै", "से"], 25),
}
DEV = {name: _language(10 + i, syl, 8) for i, (name, syl) in enumerate(
    [("en", ["the", "ing", "an", "st", "o"]), ("ru", ["при", "вет", "ка", "к"]), ("hi", ["न", "म", "स्", "ते"])])}
TIES = {"a": random_corpus(7, 80, "ab c", 12), "b": random_corpus(8, 40, "cd a", 9)}
TIES_DEV = {"a": random_corpus(9, 5, "ab c", 12), "b": random_corpus(10, 5, "cd a", 12)}


def reference(languages, n_merges, *, pat_str="cl100k", dev=None, ratio=None, tie_key=None, **options):
    names = list(languages)
    pieces = [_reference.count_pieces(languages[n], PATTERNS.get(pat_str, pat_str)) for n in names]
    dev_pieces = None if dev is None else [_reference.count_pieces(dev[n], PATTERNS.get(pat_str, pat_str)) for n in names]
    return _reference.train_parity(pieces, n_merges, dev=dev_pieces, ratio=ratio, tie_key=tie_key, **options)


def compiled(languages, n_merges, *, pat_str="cl100k", dev=None, special_tokens=(), **options):
    trainer = ParityBpeTrainer(256 + len(special_tokens) + n_merges, pat_str=pat_str, show_progress=False,
                               special_tokens=special_tokens, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabSizeNotReachedWarning)
        tok = trainer.train_from_iterator(languages, dev=dev)
    return tok, trainer.stats


CASES = [
    ({"dev": DEV}, {}),
    ({"ratio": [1.0, 1.0, 1.0]}, {}),
    ({"ratio": [1.0, 2.0, 2.5]}, {}),
    ({"dev": DEV}, {"variant": "window"}),
    ({"dev": DEV}, {"variant": "window", "window_size": 5, "alpha": 1.0}),
    ({"ratio": [1.0, 1.5, 3.0]}, {"variant": "window", "window_size": 7, "alpha": 1.5}),
    ({"dev": DEV}, {"global_merges": 40}),
    ({"dev": DEV}, {"global_merges": 30, "variant": "window", "window_size": 4}),
    ({"dev": DEV}, {"min_frequency": 6}),
    ({"dev": DEV}, {"max_token_length": 4}),
    ({"ratio": [2.0, 1.0, 1.0]}, {"min_frequency": 3, "max_token_length": 5, "variant": "window"}),
]


@pytest.mark.parametrize("pat_str", ["cl100k", None])
@pytest.mark.parametrize("data, options", CASES, ids=lambda v: ",".join(f"{k}" if k == "dev" else f"{k}={v[k]}" for k in v))
def test_compiled_equals_reference(pat_str, data, options):
    n_merges = 300
    tok, stats = compiled(LANGUAGES, n_merges, pat_str=pat_str, **data, **options)
    ratio = data.get("ratio")
    merges, chosen = reference(LANGUAGES, n_merges, pat_str=pat_str, dev=data.get("dev"), ratio=ratio,
                               **{"min_frequency": 2, **options})
    assert tok.merges == merges
    assert stats.chosen.tolist() == chosen
    assert len(merges) > 100  # the texts leave room for many merges


@pytest.mark.parametrize("seed", range(12))
def test_compiled_equals_reference_on_ties(seed):
    """Tiny alphabets: many pairs of equal count, languages of equal token counts, and
    languages that run out of pairs (dropped) before the vocabulary is full."""
    rng = random.Random(seed)
    languages = {"a": random_corpus(seed, rng.randint(5, 60), "ab c", 10),
                 "b": random_corpus(seed + 100, rng.randint(1, 20), "cd a\n", 8)}
    dev = {"a": random_corpus(seed + 200, 3, "ab c", 8), "b": random_corpus(seed + 300, 3, "cd a", 8)}
    options = rng.choice([{}, {"variant": "window", "window_size": 3, "alpha": 1.0}, {"global_merges": 5},
                          {"min_frequency": 1}])
    use_ratio = seed % 3 == 0
    data = {"ratio": [1.0, 1.25]} if use_ratio else {"dev": dev}
    tok, stats = compiled(languages, 120, pat_str=None, **data, **options)
    merges, chosen = reference(languages, 120, pat_str=None, dev=data.get("dev"), ratio=data.get("ratio"),
                               **{"min_frequency": 2, **options})
    assert tok.merges == merges and stats.chosen.tolist() == chosen


def test_tie_break_hf_equals_reference():
    tok, _ = compiled(TIES, 100, pat_str=None, dev=TIES_DEV, tie_break="hf")
    rank = {b: int(HF_BYTE_IDS[b]) for b in range(256)}
    merges, _ = reference(TIES, 100, pat_str=None, dev=TIES_DEV, min_frequency=2,
                          tie_key=lambda p, vocab: (-rank.get(p[0], p[0]), -rank.get(p[1], p[1])))
    assert _bytes(tok.merges, tok.byte_ids) == _bytes(merges)
    assert tok.byte_ids == HF_BYTE_IDS.tolist()


def test_parity_gives_the_small_languages_merges_plain_bpe_does_not():
    n_merges = 250
    plain = BpeTrainer(256 + n_merges, show_progress=False).train_from_iterator(
        [doc for docs in LANGUAGES.values() for doc in docs])
    tok, stats = compiled(LANGUAGES, n_merges, dev=DEV)
    def dev_tokens(t):
        return [sum(len(t.encode(d)) for d in DEV[name]) for name in LANGUAGES]
    before, after = dev_tokens(plain), dev_tokens(tok)
    assert after == stats.n_dev_tokens.tolist()  # the kernel's count is the encoder's
    assert max(after) / min(after) < max(before) / min(before)  # closer to parity
    assert after[2] < before[2]  # the smallest language gains
    assert set(stats.chosen.tolist()) == {0, 1, 2}


def test_special_tokens_pattern_and_stats():
    tok, stats = compiled(LANGUAGES, 50, dev=DEV, special_tokens=["<|endoftext|>"], pat_str="gpt2")
    assert tok.special_tokens == {"<|endoftext|>": 306} and tok.pat_str == PATTERNS["gpt2"]
    assert stats.languages == ["en", "ru", "hi"] and len(stats.chosen) == 50
    rows = stats.table()
    assert [row["language"] for row in rows] == ["en", "ru", "hi"]
    assert sum(row["merges_chosen"] for row in rows) == 50
    assert all(row["train_tokens"] < row["train_bytes"] for row in rows)


def test_languages_as_a_list_and_named_ratios():
    by_list, _ = compiled(list(LANGUAGES.values()), 80, ratio=[1.0, 2.0, 3.0])
    by_name, _ = compiled(LANGUAGES, 80, ratio={"hi": 3.0, "en": 1.0, "ru": 2.0})
    assert by_list.merges == by_name.merges


def test_truncating_a_parity_tokenizer_equals_training_to_the_size():
    big, _ = compiled(LANGUAGES, 300, dev=DEV, variant="window", window_size=6, special_tokens=["<s>"])
    for n_merges in (0, 1, 57, 200):
        small, _ = compiled(LANGUAGES, n_merges, dev=DEV, variant="window", window_size=6, special_tokens=["<s>"])
        assert big.truncate(257 + n_merges) == small


# ------------------------------------------------------------ inputs and errors


def test_train_on_files_and_json_lines(tmp_path):
    paths, dev_paths = {}, {}
    for name, docs in LANGUAGES.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("".join(doc + "\n" for doc in docs), encoding="utf-8")
        dev_paths[name] = tmp_path / f"{name}.dev.txt"
        dev_paths[name].write_text("".join(doc + "\n" for doc in DEV[name]), encoding="utf-8")
    trainer = ParityBpeTrainer(500, show_progress=False)
    from_files = trainer.train(paths, dev=dev_paths, documents="line")
    lines = {name: [doc + "\n" for doc in docs] for name, docs in LANGUAGES.items()}
    dev_lines = {name: [doc + "\n" for doc in docs] for name, docs in DEV.items()}
    assert from_files == trainer.train_from_iterator(lines, dev=dev_lines)
    records, dev_records = tmp_path / "all.jsonl", tmp_path / "dev.jsonl"
    with open(records, "w", encoding="utf-8") as f, open(dev_records, "w", encoding="utf-8") as g:
        for i in range(300):  # interleaved, as a mixed corpus is
            for name in LANGUAGES:
                if i < len(LANGUAGES[name]):
                    f.write(json.dumps({"lang": name, "text": lines[name][i]}) + "\n")
                if i < len(DEV[name]):
                    g.write(json.dumps({"lang": name, "text": dev_lines[name][i]}) + "\n")
    assert trainer.train(records, dev=dev_records, language_field="lang") == from_files
    import gzip

    packed = tmp_path / "all.jsonl.gz"
    packed.write_bytes(gzip.compress(records.read_bytes()))
    assert trainer.train(packed, dev=dev_records, language_field="lang") == from_files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no language"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1: a record needs a string 'lang'"):
        trainer.train(bad, dev=dev_records, language_field="lang")


@pytest.mark.parametrize(
    "options, data, message",
    [
        ({}, {}, "needs a dev set"),
        ({"ratio": [1.0, 2.0]}, {"dev": DEV}, "not both"),
        ({"ratio": [1.0, 2.0]}, {}, "2 values for 3 languages"),
        ({"ratio": {"en": 1.0}}, {}, "ratio names"),
        ({}, {"dev": {"en": ["x"]}}, "one part per language"),
        ({"variant": "hybrid"}, {}, "variant must be one of"),
        ({"ratio": [1.0, 0.0, 1.0]}, {}, "each ratio must be a positive number"),
        ({"alpha": 0}, {}, "alpha must be a positive number"),
        ({"window_size": 0}, {}, "window_size must be >= 1"),
        ({"global_merges": -1}, {}, "global_merges must be >= 0"),
        ({"num_merges": 5}, {}, "ParityBpeTrainer got unknown option num_merges"),
        ({"new_ids_from": 5}, {}, "unknown option new_ids_from"),
    ],
)
def test_errors(options, data, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ParityBpeTrainer(300, show_progress=False, **options).train_from_iterator(LANGUAGES, **data)


def test_a_language_without_text_is_named():
    with pytest.raises(ValueError, match="language 'hi': the corpus is empty"):
        ParityBpeTrainer(300, ratio=[1, 1], show_progress=False).train_from_iterator({"en": ["text"], "hi": [""]})


def test_warns_when_every_language_runs_out():
    with pytest.warns(VocabSizeNotReachedWarning, match="in any language"):
        ParityBpeTrainer(400, ratio=[1, 1], show_progress=False).train_from_iterator({"a": ["abab"], "b": ["cdcd"]})


# ------------------------------------------------------------ the kernel methods


def _table(texts):
    return PieceTable.from_counts(_reference.count_pieces(texts, PATTERNS["cl100k"]))


@pytest.mark.parametrize("texts", [LANGUAGES["en"], [MULTILINGUAL * 3], random_corpus(3, 50, "ab ", 30)])
def test_best_pair_and_merge_pair_replay_merge(texts):
    """Driven pair by pair, a merger makes the merges (counts, tokens removed) merge() makes."""
    table = _table(texts)
    reference = PairMerger(table.data, table.offsets, table.counts, 400, 1)
    driven = PairMerger(table.data, table.offsets, table.counts, 400, 1)
    while not reference.finished:
        best = driven.best_pair()
        assert reference.merge(1) == 1
        count, left, right = best
        assert (left, right) == tuple(reference.merges[-1]) and count == reference.merge_counts[-1]
        assert driven.merge_pair(left, right) == reference.merge_tokens_removed[-1]
    assert driven.merges.tolist() == reference.merges.tolist()
    assert driven.n_tokens_removed == reference.n_tokens_removed
    assert (driven.best_pair() is None) == (reference.n_merges < 400)


def test_merge_pair_of_an_absent_pair_makes_its_id_and_grows():
    table = _table(["ab"])
    merger = PairMerger(table.data, table.offsets, table.counts, 5, 1)
    assert merger.max_merges == 4  # capped at the slots
    for i in range(200):  # pairs that do not occur: ids made, nothing removed
        assert merger.merge_pair(ord("x"), ord("y") if i == 0 else 255 + i) == 0
    assert merger.merge_pair(ord("a"), ord("b")) == 1 and merger.merges[-1].tolist() == [97, 98]
    assert merger.n_merges == 201 and merger.merge_counts[-1] == 1


@pytest.mark.parametrize(
    "args, build, message",
    [((300, 97), {}, "ids must be below 256"), ((-1, 97), {}, "ids must be below"),
     ((97, 98), {"max_token_length": 1}, "longer than max_token_length=1"),
     ((97, 98), {"min_frequency": 2}, "min_frequency=1")],
)
def test_merge_pair_errors(args, build, message):
    table = _table(["abab"])
    options = {"min_frequency": 1, **build}
    merger = PairMerger(table.data, table.offsets, table.counts, 5, options["min_frequency"],
                        options.get("max_token_length", 2**31 - 1))
    with pytest.raises(ValueError, match=message):
        merger.merge_pair(*args)


# ------------------------------------------------------------ Hugging Face tokenizers


def _bytes(merges, byte_ids=range(256)):
    vocab = {token_id: bytes([b]) for b, token_id in enumerate(byte_ids)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    return [(vocab[a], vocab[b]) for a, b in merges]


def hf_parity_merges(languages, n_merges, *, dev=None, ratio=None, pat_str="gpt2", **options):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, models, pre_tokenizers, trainers

    if not hasattr(trainers, "ParityBpeTrainer"):
        pytest.skip("this tokenizers has no ParityBpeTrainer (0.23 has)")
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(hf_pattern(PATTERNS[pat_str])), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.ParityBpeTrainer(num_merges=n_merges, show_progress=False,
                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), **options)
    names = list(languages)
    trainer.train_from_iterator(hf, [languages[n] for n in names],
                                dev_iterators=None if dev is None else [dev[n] for n in names], ratio=ratio)
    merges = json.loads(hf.to_str())["model"]["merges"]
    return [tuple(str_to_token(part, "hf") for part in (m.split(" ") if isinstance(m, str) else m)) for m in merges]


#: alpha / n_languages * window_size >= 1 / n_languages of the window: tokenizers 0.23.3 loops
#: forever when every language has had more than its share of the window (bpetrain then
#: takes the worst-off language).
HF_CASES = [
    ({"dev": DEV}, {}),
    ({"ratio": [1.0, 2.0, 2.5]}, {}),
    ({"dev": DEV}, {"variant": "window", "window_size": 5, "alpha": 2.0}),
    ({"ratio": [1.0, 1.5, 3.0]}, {"variant": "window", "window_size": 4}),
    ({"dev": DEV}, {"global_merges": 40}),
]


@pytest.mark.parametrize("data, options", HF_CASES, ids=lambda v: ",".join(str(k) for k in v) or "-")
def test_reference_with_hugging_face_ties_equals_tokenizers(data, options):
    """With Hugging Face's tie order, the reference gives ParityBpeTrainer's merges: the
    language choice, the ratios, the window and the global merges mean the same. (The
    compiled trainer equals the reference with bpetrain's tie order, above.) The window
    runs stop before "hi" runs out of pairs: tokenizers records a language that has run
    out in the window before it finds out, bpetrain does not."""
    n_merges = 100 if options.get("variant") == "window" else 200
    expected = hf_parity_merges(LANGUAGES, n_merges, **data, min_frequency=0, **options)
    pieces = [_reference.count_pieces(LANGUAGES[n], PATTERNS["gpt2"]) for n in LANGUAGES]
    dev = data.get("dev")
    dev_pieces = None if dev is None else [_reference.count_pieces(dev[n], PATTERNS["gpt2"]) for n in LANGUAGES]
    merges, _ = _reference.train_parity(
        pieces, n_merges, dev=dev_pieces, ratio=data.get("ratio"), min_frequency=1,
        tie_key=lambda pair, vocab: (token_to_str(vocab[pair[0]]), token_to_str(vocab[pair[1]])), **options)
    assert _bytes(merges) == expected


# ------------------------------------------------------------ the command line


def _write_languages(tmp_path):
    paths = {}
    for name, docs in LANGUAGES.items():
        for part, data in (("train", docs), ("dev", DEV[name])):
            paths[name, part] = tmp_path / f"{name}.{part}.txt"
            paths[name, part].write_text("".join(doc + "\n" for doc in data), encoding="utf-8")
    return paths


def test_cli_train_parity(tmp_path, capsys):
    from bpetrain import Tokenizer
    from bpetrain.cli import main

    paths = _write_languages(tmp_path)
    out = tmp_path / "parity.bpe"
    argv = ["train", "--vocab-size", "500", "--documents", "line", "--parity-variant", "window", "--window-size", "6",
            "-o", str(out), "-q"]
    for name in LANGUAGES:
        argv += ["--language", f"{name}={paths[name, 'train']}", "--dev", f"{name}={paths[name, 'dev']}"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "3 languages, 244 merges" in err and "hi" in err and "dev bytes/token" in err
    trainer = ParityBpeTrainer(500, variant="window", window_size=6, show_progress=False)
    expected = trainer.train({n: paths[n, "train"] for n in LANGUAGES}, dev={n: paths[n, "dev"] for n in LANGUAGES},
                             documents="line")
    assert Tokenizer.load(out) == expected
    ratio_out = tmp_path / "ratio.bpe"
    argv = ["train", "--vocab-size", "400", "-o", str(ratio_out), "-q", "--ratio", "en=1", "--ratio", "ru=2",
            "--ratio", "hi=3", *[f"--language={n}={paths[n, 'train']}" for n in LANGUAGES]]
    assert main(argv) == 0
    expected = ParityBpeTrainer(400, ratio={"en": 1, "ru": 2, "hi": 3}, show_progress=False).train(
        {n: paths[n, "train"] for n in LANGUAGES})
    assert Tokenizer.load(ratio_out) == expected


@pytest.mark.parametrize(
    "extra, message",
    [([], "needs a dev set"), (["--ratio", "en"], "--ratio takes NAME=VALUE"), (["--ratio", "en=x"], "not a number"),
     (["--language-field", "lang"], "not both"), (["--counts", "c.npz"], "apply to plain training")],
)
def test_cli_parity_errors(tmp_path, capsys, extra, message):
    from bpetrain.cli import main

    paths = _write_languages(tmp_path)
    out = tmp_path / "m.bpe"
    argv = ["train", "--vocab-size", "300", "-o", str(out), "-q", "--language", f"en={paths['en', 'train']}",
            "--language", f"hi={paths['hi', 'train']}", *extra]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_report_measures_parity_on_parallel_texts(tmp_path):
    from bpetrain import report

    paths = _write_languages(tmp_path)
    texts = report.read_texts([str(paths[name, "dev"]) for name in LANGUAGES])
    plain = BpeTrainer(500, show_progress=False).train_from_iterator([d for docs in LANGUAGES.values() for d in docs])
    fair, _ = compiled(LANGUAGES, 244, dev=DEV)
    built = report.build_report(fair, name="parity", texts=texts, compare=plain, compare_name="plain")
    parity, plain_parity = (m["compression"]["parity"] for m in built["models"])
    per_text = built["models"][0]["compression"]["per_text"]
    assert parity == max(r["n_tokens"] for r in per_text) / min(r["n_tokens"] for r in per_text)
    assert 1 <= parity < plain_parity
    assert report.build_report(fair, texts=texts[:1])["models"][0]["compression"]["parity"] is None


def test_cli_train_parity_language_field(tmp_path, capsys):
    """``train --language-field FIELD --dev FILE``: records grouped by a field, from two files
    (languages interleaved, the text under ``--text-field``), with a dev set of records: the
    merges of the Python API on the same files, and of ``train_from_iterator`` on the texts
    grouped by hand."""
    from bpetrain import Tokenizer
    from bpetrain.cli import main

    records = [{"lang": name, "body": doc} for name, docs in LANGUAGES.items() for doc in docs]
    random.Random(5).shuffle(records)
    files = [tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"]
    for path, part in zip(files, (records[::2], records[1::2])):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part), encoding="utf-8")
    dev = tmp_path / "dev.jsonl"
    dev.write_text("".join(json.dumps({"lang": n, "body": d}, ensure_ascii=False) + "\n"
                           for n, docs in DEV.items() for d in docs), encoding="utf-8")
    out = tmp_path / "parity.bpe"
    argv = ["train", *map(str, files), "--language-field", "lang", "--text-field", "body", "--dev", str(dev),
            "--vocab-size", "500", "--parity-variant", "window", "--window-size", "6", "-o", str(out), "-q"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "3 languages, 244 merges" in err and "dev bytes/token" in err
    trained = Tokenizer.load(out)
    trainer = ParityBpeTrainer(500, variant="window", window_size=6, show_progress=False)
    assert trained == trainer.train(files, dev=[dev], language_field="lang", text_field="body")
    # the records' order within a language is kept, so grouping by hand gives the same merges
    grouped = {name: [r["body"] for r in records if r["lang"] == name] for name in LANGUAGES}
    by_hand = ParityBpeTrainer(500, variant="window", window_size=6, show_progress=False)
    assert trained.merges == by_hand.train_from_iterator(grouped, dev=DEV).merges


@pytest.mark.parametrize(
    "extra, message",
    [(["--dev", "en=dev.jsonl"], "no NAME="), (["--dev", "dev.jsonl", "--documents", "line"], "documents='line'"),
     (["--dev", "dev.jsonl", "--input-format", "text"], "input_format='text'"),
     (["--dev", "dev.jsonl", "--superword-transition", "300"], "takes no --superword-transition"),
     (["--dev", "dev.jsonl", "--allow-colon-space", "--new-ids-from", "400"],
      "takes no --new-ids-from, --allow-colon-space"),
     (["--dev", "dev.jsonl", "--skip-unreadable"], "takes no --skip-unreadable")],
)
def test_cli_parity_language_field_errors(tmp_path, capsys, monkeypatch, extra, message):
    """Options that parity-aware training of records would ignore are refused, before any output."""
    from bpetrain.cli import main

    monkeypatch.chdir(tmp_path)
    for name in ("train.jsonl", "dev.jsonl"):
        (tmp_path / name).write_text("".join(json.dumps({"lang": n, "text": d}) + "\n"
                                             for n, docs in DEV.items() for d in docs), encoding="utf-8")
    argv = ["train", "train.jsonl", "--language-field", "lang", "--vocab-size", "300", "-o", "m.bpe", "-q", *extra]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m.bpe").exists()
