"""Parallel counting and the input formats: the same pieces as the reference, whatever the cut."""
from __future__ import annotations

import gzip
import json
import lzma
import os
import re
import sys
from collections import Counter

import numpy as np
import pytest
import regex
import zstandard
from helpers import DEEPSEEK_V3, MULTILINGUAL, SPLIT_PATTERNS, stdlib_text
from hypothesis import given, settings
from hypothesis import strategies as st

from bpetrain import PATTERNS, BpeTrainer, _reference
from bpetrain.cli import main
from bpetrain.counting.parallel import count_sources
from bpetrain.counting.inputs import expand_inputs
from bpetrain.counting.counts import PieceCounter, PieceTable

SPECIALS = ["<|endoftext|>", "<|x\ny|>"]


def cli(*argv) -> int:
    """Run the command line in-process: its exit status."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as exit_info:
        return exit_info.code


def as_counter(table: PieceTable) -> Counter:
    return Counter({table.piece(i): int(c) for i, c in enumerate(table.counts) if c})


@pytest.fixture(scope="module")
def text() -> bytes:
    """Real text with every kind of cut point, invalid bytes and special tokens (one with a
    newline and a letter inside: a cut must not fall in it)."""
    parts = [stdlib_text(300_000), MULTILINGUAL.encode("utf-8"), b"\xff\xfe broken \xe2\x82 bytes\n"]
    body = b"".join(parts)
    return body[:100_000] + b"<|endoftext|>" + body[100_000:200_000] + b"ab<|x\ny|>cd\n" + body[200_000:] + b"  \n\n"


def reference(data: bytes, pat_str, specials=(), documents="file") -> Counter:
    texts = re.split(rb"(?<=\n)", data) if documents == "line" else [data]
    return _reference.count_pieces([d for d in texts if d], pat_str, specials)


#: Custom patterns for the counting tests: compiled ones with anchors, lookaheads, lazy and
#: atomic parts and text they leave unmatched, and one the regex module splits (lookbehind).
CUSTOM = {
    "words": r"\w+|[^\w]+",
    "anchors": r"^\s*\w+|\w+(?=\s)|(?>\w+)$|[^\w\s]+?|\s+(?!\S)|\s|\d{2,}",
    "lookbehind": r"(?<=\s)\w+|\w+|\s+|[^\w\s]+",
}


def pattern_string(pattern):
    return CUSTOM[pattern] if pattern in CUSTOM else SPLIT_PATTERNS.get(pattern)


@pytest.mark.parametrize("pattern", [*SPLIT_PATTERNS, *CUSTOM, None])
@pytest.mark.parametrize("documents", ["file", "line"])
def test_blocks_and_threads_count_like_the_whole(tmp_path, text, pattern, documents):
    pat_str = pattern_string(pattern)
    if pattern not in (None, "lookbehind"):  # the compiled pattern finds cut points of its own
        assert PieceCounter(pat_str).cut(text[:50_000]) > 40_000
    path = tmp_path / "corpus.txt"
    path.write_bytes(text)
    want = reference(text, pat_str, SPECIALS, documents)
    for num_threads, block_bytes in ((1, 1 << 23), (2, 4096), (3, 1000)):
        counter = count_sources(
            expand_inputs([path]), pat_str=pat_str, special_tokens=SPECIALS, documents=documents,
            num_threads=num_threads, block_bytes=block_bytes, show_progress=False,
        )
        assert as_counter(counter.table()) == want, (num_threads, block_bytes)
        assert counter.n_input_bytes == len(text)
    assert counter.n_documents == (text.count(b"\n") + (not text.endswith(b"\n")) if documents == "line" else 1)


def test_documents_iterator_batches_and_specials(text):
    documents = [text[i : i + 777].decode("utf-8", "surrogateescape") for i in range(0, 50_000, 777)]
    want = _reference.count_pieces(documents, PATTERNS["o200k"], SPECIALS)
    counter = PieceCounter(PATTERNS["o200k"], SPECIALS)
    counter.update([documents[:10], documents[10:20], *documents[20:]], batch_bytes=5000)
    assert as_counter(counter.table()) == want
    assert counter.n_documents == len(documents)
    with pytest.raises(ValueError, match=r"a row has no field 'text' \(it has 'body'\); name the text field"):
        PieceCounter(None).update([{"body": "a"}])
    with pytest.raises(TypeError, match="documents must be str or bytes, got int"):
        PieceCounter(None).update([["a", 5]])


def test_hugging_face_datasets_as_they_are(text):
    datasets = pytest.importorskip("datasets", reason="datasets is a test dependency: pip install '.[test]'")
    documents = [text[i : i + 500].decode("utf-8", "replace") for i in range(0, 20_000, 500)]
    dataset = datasets.Dataset.from_dict({"body": documents, "n": list(range(len(documents)))})
    want = BpeTrainer(400, show_progress=False).train_from_iterator(documents)
    for items in (dataset, dataset.iter(batch_size=7), dataset.to_iterable_dataset(), dataset["body"]):
        assert BpeTrainer(400, show_progress=False).train_from_iterator(items, text_field="body") == want


def test_long_line_without_cut_points_and_huge_repeats(tmp_path):
    data = b"\x00." * 300_000 + b"a" * 10**6 + b" " * 5000
    path = tmp_path / "one-line.txt"
    path.write_bytes(data)
    for pattern in ("cl100k", "o200k"):
        counter = count_sources(expand_inputs([path]), pat_str=PATTERNS[pattern], num_threads=2, block_bytes=4096, show_progress=False)
        assert as_counter(counter.table()) == reference(data, PATTERNS[pattern])


def _write(path, data: bytes) -> None:
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix)
    if path.suffix == ".zst":
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    elif opener:
        with opener(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz", ".txt.xz", ".txt.zst"])
def test_compressed_text_counts_like_plain(tmp_path, text, suffix):
    path = tmp_path / f"corpus{suffix}"
    _write(path, text)
    counter = count_sources(expand_inputs([path]), pat_str=PATTERNS["cl100k"], num_threads=2, show_progress=False)
    assert as_counter(counter.table()) == reference(text, PATTERNS["cl100k"])
    assert counter.n_input_bytes == len(text)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".ndjson.zst", ".parquet"])
def test_records_are_documents(tmp_path, text, suffix):
    documents = [text[i : i + 1000].decode("utf-8", "replace") for i in range(0, 60_000, 1000)] + ["", "ß\u2028x"]
    path = tmp_path / f"records{suffix}"
    if suffix == ".parquet":
        pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
        import pyarrow.parquet as pq

        table = pa.table({"id": list(range(len(documents) + 1)), "body": documents + [None]})
        pq.write_table(table, path, row_group_size=17)
    else:
        lines = [json.dumps({"body": d, "id": i}) for i, d in enumerate(documents)]
        _write(path, ("\n".join(lines[:5]) + "\n\n" + "\n".join(lines[5:]) + "\n").encode("utf-8"))
    for pattern in ("o200k", None):
        counter = count_sources(
            expand_inputs([path]), pat_str=PATTERNS.get(pattern), text_field="body",
            num_threads=2, show_progress=False,
        )
        assert as_counter(counter.table()) == _reference.count_pieces(documents, PATTERNS.get(pattern))
        assert counter.n_documents == len(documents)


def test_directories_globs_and_stdin(tmp_path, monkeypatch, text):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.txt").write_bytes(text[:1000])
    (tmp_path / "d" / "sub" / "b.txt").write_bytes(text[1000:3000])
    (tmp_path / "d" / ".hidden").write_bytes(b"never read")
    assert [os.path.basename(s.path) for s in expand_inputs([tmp_path / "d"])] == ["a.txt", "b.txt"]
    assert [os.path.basename(s.path) for s in expand_inputs([str(tmp_path / "d" / "**" / "*.txt")])] == ["a.txt", "b.txt"]
    read, write = os.pipe()
    os.write(write, text[:3000])
    os.close(write)
    with os.fdopen(read, "rb") as stdin:
        monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stdin})())
        counter = count_sources(expand_inputs(["-"]), pat_str=PATTERNS["gpt2"], show_progress=False)
    want = reference(text[:3000], PATTERNS["gpt2"])
    assert as_counter(counter.table()) == want


def test_counts_files_add_up_to_the_whole(tmp_path, text):
    half = text.index(b"\n", len(text) // 2) + 1
    (tmp_path / "a.txt").write_bytes(text[:half])
    (tmp_path / "b.txt").write_bytes(text[half:])
    assert cli("count", str(tmp_path / "a.txt"), "-o", str(tmp_path / "a.npz"), "-q", "--special-token", SPECIALS[0]) == 0
    assert cli("count", str(tmp_path / "b.txt"), "-o", str(tmp_path / "b.npz"), "-q", "--special-token", SPECIALS[0]) == 0
    _, header = PieceTable.load(tmp_path / "a.npz")
    assert header["pat_str"] == PATTERNS["cl100k"] and header["n_input_bytes"] == half
    trainer = BpeTrainer(600, special_tokens=SPECIALS[:1], show_progress=False)
    from_counts = trainer.train_from_counts([tmp_path / "a.npz", tmp_path / "b.npz"])
    assert trainer.stats.n_input_bytes == len(text) and trainer.stats.n_documents == 2
    from_files = trainer.train([tmp_path / "a.txt", tmp_path / "b.txt"])
    assert from_counts == from_files
    assert cli("train", "--counts", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--special-token", SPECIALS[0],
                 "--vocab-size", "600", "-o", str(tmp_path / "m.bpe"), "-q") == 0
    from bpetrain import Tokenizer

    assert Tokenizer.load(tmp_path / "m.bpe") == from_files


def test_counts_file_errors(tmp_path):
    (tmp_path / "a.txt").write_text("hello world\n" * 10)
    assert cli("count", str(tmp_path / "a.txt"), "-o", str(tmp_path / "a.npz"), "-q", "--pat-str", "gpt2") == 0
    with pytest.raises(ValueError, match=r"a.npz was counted with pat_str=.*train with the options"):
        BpeTrainer(300, show_progress=False).train_from_counts(tmp_path / "a.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="bad.npz: not a bpetrain counts file"):
        BpeTrainer(300, show_progress=False).train_from_counts(tmp_path / "bad.npz")
    np.savez(tmp_path / "other.npz", data=np.zeros(3, np.uint8), offsets=np.array([0, 5]), counts=np.array([1]),
             header=np.array(json.dumps({"format": "bpetrain counts v1"})))
    with pytest.raises(ValueError, match="inconsistent"):
        PieceTable.load(tmp_path / "other.npz")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("c.txt.gz", b"\x1f\x8b\x08\x00garbage", "c.txt.gz: corrupt or truncated gzip data"),
        ("c.txt.gz", gzip.compress(b"hello " * 1000, mtime=0)[:-30], "c.txt.gz: corrupt or truncated gzip data"),
        ("c.txt.xz", lzma.compress(b"hello " * 1000)[:-30], "c.txt.xz: corrupt or truncated xz data"),
        ("c.txt.zst", b"\x28\xb5\x2f\xfd garbage", "c.txt.zst: corrupt or truncated zstd data"),
        ("r.jsonl", b'{"text": "a"}\n{"text": "b"\n', r"r.jsonl:2: not a JSON line"),
        ("r.jsonl", b'{"text": "a"}\n\n{"body": "b"}\n', r"r.jsonl:3: the record has no field 'text' \(it has 'body'\)"),
        ("r.jsonl", b'{"text": 5}\n', r"r.jsonl:1: field 'text' holds int, not text"),
        ("r.jsonl", b'[1, 2]\n', r"r.jsonl:1: expected a JSON object, got list"),
        ("r.jsonl", b'{"text": "\\ud800"}\n', r"r.jsonl:1: not a JSON line \(no low surrogate"),
        ("p.parquet", b"PAR1 not really", r"p.parquet: not a readable Parquet file"),
    ],
)
def test_bad_inputs_name_the_file_and_line_and_write_nothing(tmp_path, capsys, name, content, message):
    if name.endswith(".parquet"):  # without pyarrow the error says to install it instead
        pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    (tmp_path / name).write_bytes(content)
    out = tmp_path / "out.npz"
    assert cli("count", str(tmp_path / name), "-o", str(out), "-q") == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists() and os.listdir(tmp_path) == [name]


def test_missing_inputs_and_bad_options(tmp_path, capsys):
    assert cli("count", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "o.npz"), "-q") == 2
    assert "no such file: " in capsys.readouterr().err
    assert cli("count", str(tmp_path / "*.txt"), "-o", str(tmp_path / "o.npz"), "-q") == 2
    assert "no file matches this pattern" in capsys.readouterr().err
    (tmp_path / "p.parquet").write_bytes(b"x")
    with pytest.raises(ValueError, match="no column 'body'"):
        pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"text": ["a"]}), tmp_path / "p.parquet")
        count_sources(expand_inputs([tmp_path / "p.parquet"]), pat_str=None, text_field="body", show_progress=False)
    with pytest.raises(ValueError, match="num_threads must be an int >= 1"):
        count_sources([], pat_str=None, num_threads=0)
    with pytest.raises(ValueError, match="documents must be 'file' or 'line'"):
        BpeTrainer(300).train([tmp_path / "p.parquet"], documents="lines")
    assert cli("train", "--vocab-size", "300", "-o", str(tmp_path / "m"), "-q") == 2
    assert "give either text FILEs or --counts" in capsys.readouterr().err


def test_piece_table_against_a_counter():
    """The compiled table on pieces with zero bytes, lengths around the 8-byte inline limit,
    long pieces, merges of tables, and counts beyond int32."""
    import random

    from bpetrain.counting._counter import PieceCounts

    rng = random.Random(3)
    pieces = [b"a", b"a\x00", b"\x00", b"\x00\x00", b"a" * 8, b"a" * 9, b"\x00" * 8 + b"a", b"x" * 100_000]
    pieces += [bytes(rng.randrange(3) for _ in range(rng.randrange(1, 20))) for _ in range(3000)]
    want: Counter = Counter()
    first, second = PieceCounts(), PieceCounts()
    for i, piece in enumerate(pieces * 3):
        count = 1 + (i % 5) * 2**33
        (first if i % 2 else second).add(piece, count)
        want[piece] += count
    first.update(second)
    assert as_counter(PieceTable(*first.arrays())) == want
    again = PieceCounts()
    again.update_arrays(*first.arrays())
    assert as_counter(PieceTable(*again.arrays())) == want and again.n_pieces == len(want)
    with pytest.raises(ValueError, match="exceeds 2\\*\\*63 - 1"):
        first.add(b"a", 2**63 - 1)
    with pytest.raises(ValueError, match="count must be >= 0"):
        first.add(b"a", -1)
    with pytest.raises(ValueError, match="not inside the data"):
        first.count(b"abc", np.array([[0, 4, 4]], dtype=np.int64), None)


def test_cuts_never_split_a_special_token(tmp_path):
    """The special token holds a cut point (newline, letter); blocks end inside it often."""
    data = b"".join(b"ab <|x\nB|> c%d\n" % i for i in range(3000))
    path = tmp_path / "dense.txt"
    path.write_bytes(data)
    for pattern in ("cl100k", "o200k"):
        want = reference(data, PATTERNS[pattern], ["<|x\nB|>"])
        for block_bytes in (97, 1000):
            counter = count_sources(expand_inputs([path]), pat_str=PATTERNS[pattern], special_tokens=["<|x\nB|>"],
                                    num_threads=2, block_bytes=block_bytes, show_progress=False)
            assert as_counter(counter.table()) == want


def test_cut_right_before_a_special_token_ends_the_text(tmp_path):
    """A safe cut can fall right before a special token; the text before it ends there
    (for $), and the text after the token starts a string (for ^)."""
    pat_str = CUSTOM["anchors"]
    data = "\xffa|>aaa\u00e9 b<|a|>\u00e9a|>".encode().replace("\xff".encode(), b"\xff")
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    specials = ["<|a|>", "<|a\nb|>", "|>"]
    want = reference(data, pat_str, specials)
    for block_bytes in (8, 9, 10, 1000):
        counter = count_sources(expand_inputs([path]), pat_str=pat_str, special_tokens=specials,
                                num_threads=1, block_bytes=block_bytes, show_progress=False)
        assert as_counter(counter.table()) == want, block_bytes


BLOCK_TEXTS = st.lists(
    st.sampled_from(["a", "B", "é", "中", " ", "\n", "\r\n", "1", ".", "'", "<|a|>", "<|a\nb|>", "|>", "\xff"]),
    max_size=300,
).map("".join)


BLOCK_CASES = {
    "text": BLOCK_TEXTS,
    "pattern": st.sampled_from([*SPLIT_PATTERNS, *CUSTOM, None]),
    "documents": st.sampled_from(["file", "line"]),
    "block_bytes": st.integers(8, 200),
    "num_threads": st.integers(1, 3),
}


def check_blocks(text, pattern, documents, block_bytes, num_threads):
    """Overlapping special tokens ("|>" is the end of the others), cut points inside them
    and right before them, invalid bytes, CR/LF: any block size and thread count gives
    the reference's counts."""
    import tempfile

    data = text.encode("utf-8").replace("\xff".encode(), b"\xff")
    specials = ["<|a|>", "<|a\nb|>", "|>"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.txt")
        with open(path, "wb") as f:
            f.write(data)
        counter = count_sources(expand_inputs([path]), pat_str=pattern_string(pattern), special_tokens=specials,
                                documents=documents, num_threads=num_threads, block_bytes=block_bytes,
                                show_progress=False)
    assert as_counter(counter.table()) == reference(data, pattern_string(pattern), specials, documents)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(**BLOCK_CASES)
def test_random_blocks_count_like_the_whole(text, pattern, documents, block_bytes, num_threads):
    check_blocks(text, pattern, documents, block_bytes, num_threads)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None)
@given(**BLOCK_CASES)
def test_random_blocks_count_like_the_whole_many(text, pattern, documents, block_bytes, num_threads):
    check_blocks(text, pattern, documents, block_bytes, num_threads)


# ------------------------------------------------------------ files that change after planning


def _changed_file(tmp_path, change: str) -> tuple:
    """A file listed with one size that then grows (the piece across the old end:
    ``wor|ld``) or shrinks; returns its listed sources and its content at counting time."""
    from bpetrain.counting.cluster import group_sources

    text = stdlib_text(60_000)
    old_end = text.index(b"return", 30_000) + 3  # inside a word: one piece crosses it
    path = tmp_path / "growing.txt"
    path.write_bytes(text[:old_end] if change == "grow" else text)
    sources = expand_inputs([path])
    tasks = group_sources(sources, pat_str="cl100k", task_bytes=7_000)
    final = text if change == "grow" else text[:old_end]
    path.write_bytes(final)
    return sources, tasks, final


def _counts_of(data: bytes, **options) -> dict:
    counter = PieceCounter(PATTERNS["cl100k"], **options)
    counter.count_text(data, len(data), final=True)
    return as_counter(counter.table())


@pytest.mark.parametrize("change", ["grow", "shrink"])
def test_local_counting_counts_a_changed_file_as_it_is_and_warns(tmp_path, change):
    """The file's bytes when it is read, all of them, and an InputChangedWarning naming it."""
    from bpetrain.counting.inputs import InputChangedWarning

    sources, _, final = _changed_file(tmp_path, change)
    with pytest.warns(InputChangedWarning, match=r"growing\.txt \(\d[\d,]* bytes when the inputs were listed, "):
        counter = count_sources(sources, pat_str=PATTERNS["cl100k"], num_threads=2, show_progress=False)
    assert as_counter(counter.table()) == _counts_of(final)
    assert counter.n_input_bytes == len(final)


@pytest.mark.parametrize("change", ["grow", "shrink"])
def test_count_tasks_count_a_changed_file_as_local_counting_does(tmp_path, change):
    """The cluster's ranges: the last one used to stop at the planned size, so a grown file
    was cut there without a word (and the piece across the old end counted cut)."""
    import functools

    from bpetrain.counting import cluster

    _, tasks, final = _changed_file(tmp_path, change)
    assert len(tasks) > 3 and tasks[-1].start is not None  # ranges, the case that cut
    counters = [cluster.count_task(task, pat_str="cl100k") for task in tasks]
    counter = functools.reduce(cluster.merge_counts, counters)
    assert as_counter(counter.table()) == _counts_of(final)
    assert counter.n_input_bytes == len(final)


#: Patterns the DFA alone splits (no hand-written code, no block rules), which the counter
#: reads with two interleaved readings: DeepSeek V3's (its third split: it parts from every
#: block rules' reference on ASCII), and Mistral's (tekken) with digits after punctuation as
#: well as / (tekken's own splits by blocks).
DFA_ONLY = {
    "deepseek_v3": DEEPSEEK_V3,
    "tekken_slash_digits": r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"""
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n/0-9]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}


@pytest.mark.parametrize("name", DFA_ONLY)
def test_dfa_counts_pieces_in_text_order(text, name):
    """Counting by the DFA's two interleaved readings: every piece counted once, and the
    table's order (the order pieces were first seen) is the text's."""
    pat_str = DFA_ONLY[name]
    counter = PieceCounter(pat_str)
    program = counter._program
    assert program is not None and program.has_dfa and not program.native and not program.blocks
    counter.count_text(text, len(text), final=True)
    table = counter.table()
    pieces = [m.group().encode("utf-8", "surrogateescape")
              for m in regex.finditer(pat_str, text.decode("utf-8", "surrogateescape"))]
    assert as_counter(table) == Counter(pieces)
    assert [table.piece(i) for i in range(len(table.counts))] == list(dict.fromkeys(pieces))
