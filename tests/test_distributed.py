"""Counting on a Dask cluster (bpetrain.counting.cluster): the same tokenizer as counting in one
process, for every input kind, pattern kind, special tokens and documents mode; fsspec
URLs; a worker killed mid-task; errors that name the input."""
import functools
import gzip
import json
import os
import pickle
import random
import sys

import pytest
import zstandard
from helpers import MULTILINGUAL, stdlib_text

from bpetrain import PATTERNS as BPE_PATTERNS
from bpetrain import BpeTrainer, PieceCounter
from bpetrain.counting import cluster as dist
from bpetrain.cli import main as cli
from bpetrain.counting.parallel import count_sources
from bpetrain.counting.inputs import expand_inputs
from bpetrain.splitting.pattern import resolve_pattern

distributed = pytest.importorskip("distributed", reason="the cluster tests need Dask: pip install '.[test]'")

SPECIALS = ["<|endoftext|>", "<|fim|>"]
PATTERNS = {
    "named": "cl100k",
    "custom": r" ?\p{L}+| ?\p{N}{1,3}|\s+(?!\S)|\s+|[^\s\p{L}\p{N}]+",  # compiled splitter
    "regex-module": r"(?<=\s)\w+|\w+|\s+|[^\w\s]+",  # lookbehind: the regex module splits
    "raw": None,
}
TASK_BYTES = 40_000  # small tasks, so the big text file is cut into ranges


class KillOnce(distributed.WorkerPlugin):
    """Ends the worker process when the first count task starts executing on it (once per cluster)."""

    name = "kill-once"

    def __init__(self, marker: str):
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith("count_task") and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)


@pytest.fixture(scope="module")
def client():
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import this file
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def _text() -> bytes:
    """Real text with the hard cases: special tokens (also split by a cut), invalid UTF-8,
    CRLF, long runs without a cut point, multilingual text."""
    rng = random.Random(16)
    parts = [stdlib_text(120_000), MULTILINGUAL.encode()]
    for i in range(300):
        parts.append(rng.choice([b" <|endoftext|>", b"<|fim|><|endoftext|>", b"\xff\xfe", b"\r\n", b"\n\n", b"'s "]))
        parts.append(MULTILINGUAL.encode()[rng.randrange(200) :][: rng.randrange(300)])
    parts.append(b"a" * 50_000 + b"\n" + "日本語".encode() * 5000)
    return b"".join(parts)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Every input kind: a big text file (cut into ranges), small text files (grouped),
    .gz and .zst text, JSON Lines and Parquet."""
    root = tmp_path_factory.mktemp("corpus")
    text = _text()
    (root / "big.txt").write_bytes(text)
    for i in range(5):
        (root / f"small{i}.txt").write_bytes(text[i * 3000 : (i + 1) * 3000])
    (root / "c.txt.gz").write_bytes(gzip.compress(text[:30_000]))
    (root / "c.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(text[30_000:60_000]))
    documents = [text[i : i + 700].decode("utf-8", "replace") for i in range(0, 40_000, 700)]
    (root / "r.jsonl").write_text("\n".join(json.dumps({"text": d}) for d in documents) + "\n")
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": documents[::-1]}), root / "r.parquet", row_group_size=9)
    return root


KINDS = {
    "text": ["big.txt", "small0.txt", "small1.txt", "small2.txt", "small3.txt", "small4.txt"],
    "compressed": ["c.txt.gz", "c.txt.zst"],
    "jsonl": ["r.jsonl"],
    "parquet": ["r.parquet"],
}


@pytest.fixture
def small_tasks(monkeypatch):
    monkeypatch.setattr(dist, "TASK_BYTES", TASK_BYTES)


def _same(trainer: BpeTrainer, files, client, **options) -> None:
    alone = trainer.train(files, **options)
    alone_stats = trainer.stats
    on_cluster = trainer.train(files, client=client, **options)
    assert on_cluster == alone
    assert len(alone.merges) > 50
    for field in ("n_input_bytes", "n_documents", "n_pieces", "n_piece_bytes"):
        assert getattr(trainer.stats, field) == getattr(alone_stats, field), field


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("documents", ["file", "line"])
@pytest.mark.parametrize("specials", [[], SPECIALS], ids=["no-specials", "specials"])
def test_text_files_same_tokenizer(client, corpus, small_tasks, pattern, documents, specials):
    trainer = BpeTrainer(600, pat_str=PATTERNS[pattern], special_tokens=specials, show_progress=False)
    files = [corpus / name for name in KINDS["text"]]
    if PATTERNS[pattern] is not None and not (pattern == "regex-module" and documents == "file"):
        assert any(t.start is not None for t in dist.plan_count_tasks(files, pat_str=PATTERNS[pattern], documents=documents))
    _same(trainer, files, client, documents=documents)


def test_superword_stages_count_on_the_cluster(client, corpus, small_tasks):
    """Both stages of superword training count on the cluster (stage 2's pattern cuts text
    files into ranges too) and give the tokenizer of counting in one process."""
    files = [corpus / name for name in KINDS["text"]]
    assert any(t.start is not None for t in dist.plan_count_tasks(files, pat_str=BPE_PATTERNS["superbpe"],
                                                                   documents="file"))
    trainer = BpeTrainer(700, superword_transition=500, special_tokens=SPECIALS, show_progress=False)
    _same(trainer, files, client)
    first, second = trainer.stage_stats
    assert first.n_merges == 500 - 256 - len(SPECIALS) and second.n_merges > 0


@pytest.mark.parametrize("kind", ["compressed", "jsonl", "parquet", "all"])
@pytest.mark.parametrize("pattern", ["named", "raw"])
def test_other_kinds_same_tokenizer(client, corpus, small_tasks, kind, pattern):
    names = [n for names in KINDS.values() for n in names] if kind == "all" else KINDS[kind]
    trainer = BpeTrainer(500, pat_str=PATTERNS[pattern], special_tokens=SPECIALS, show_progress=False)
    _same(trainer, [corpus / n for n in names], client)


def test_file_urls_and_a_directory(client, corpus, small_tasks):
    trainer = BpeTrainer(500, show_progress=False)
    want = trainer.train(corpus)
    assert trainer.train(corpus.as_uri(), client=client) == want
    assert trainer.train([(corpus / n).as_uri() for n in sorted(os.listdir(corpus))]) == want


def test_memory_urls_without_a_cluster(corpus):
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    for name in ("big.txt", "c.txt.gz", "r.jsonl", "r.parquet"):
        memory.pipe(f"/bpetrain-test/{name}", (corpus / name).read_bytes())
    try:
        trainer = BpeTrainer(500, special_tokens=SPECIALS, show_progress=False)
        files = ["big.txt", "c.txt.gz", "r.jsonl", "r.parquet"]
        want = trainer.train([corpus / n for n in files])
        assert trainer.train([f"memory://bpetrain-test/{n}" for n in files]) == want
        assert trainer.train("memory://bpetrain-test/*") == want  # a glob, sorted as the list above
        with pytest.raises(FileNotFoundError, match="memory://bpetrain-test/nothing.txt"):
            trainer.train("memory://bpetrain-test/nothing.txt")
    finally:
        memory.rm("/bpetrain-test", recursive=True)


def test_ranges_count_like_one_stream(tmp_path):
    """Without a cluster: every nominal range size, adversarial texts (special tokens that
    overlap each other, invalid UTF-8, no cut at all, only newlines) give the counts of
    one stream."""
    rng = random.Random(7)
    alphabet = [b"a", b"b", b" ", b"\n", "é".encode(), "日本".encode(), b"<|e|>", b"<|", b"|>", b"\r\n", b"123",
                b"'s", b"  ", b"\xff", b"\xf0a", b"\xe6\x97"]
    texts = [b"".join(rng.choice(alphabet) for _ in range(20_000)), b"a" * 30_000, b" \n" * 9000, b"",
             "日本語のテキスト。".encode() * 1500, stdlib_text(40_000)]
    options = [("cl100k", ["<|e|>", "|><|"], "file"), ("o200k", [], "line"), (None, ["<|e|>"], "line"),
               (PATTERNS["regex-module"], [], "line"), (PATTERNS["custom"], ["e|><"], "file")]
    for k, text in enumerate(texts):
        path = tmp_path / f"t{k}.txt"
        path.write_bytes(text)
        for pat_str, specials, documents in options:
            want = count_sources(expand_inputs([path]), pat_str=resolve_pattern(pat_str), special_tokens=specials,
                                 documents=documents, num_threads=1, show_progress=False)
            for task_bytes in (601, 5000):
                tasks = dist.plan_count_tasks(path, pat_str=pat_str, documents=documents, task_bytes=task_bytes)
                counters = [dist.count_task(t, pat_str=pat_str, special_tokens=specials, documents=documents)
                            for t in tasks]
                got = functools.reduce(dist.merge_counts, counters)
                assert _as_dict(got) == _as_dict(want), (k, pat_str, specials, documents, task_bytes)
                assert (got.n_input_bytes, got.n_documents) == (want.n_input_bytes, want.n_documents)


def test_a_file_that_grew_after_planning_is_counted_whole_with_a_warning(client, tmp_path):
    """The last range used to stop at the planned size: 4.8 MB counted of 6.3 MB, silently."""
    from bpetrain.counting.inputs import InputChangedWarning

    text = stdlib_text(100_000)
    path = tmp_path / "growing.txt"
    path.write_bytes(text[:61_111])
    tasks = dist.plan_count_tasks(path, pat_str="cl100k", task_bytes=TASK_BYTES)
    path.write_bytes(text)
    with pytest.warns(InputChangedWarning, match=r"growing\.txt \(61,111 bytes when the inputs were listed, 100,"):
        got = dist.count_on_dask(client, tasks, pat_str=resolve_pattern("cl100k"), show_progress=False)
    want = count_sources(expand_inputs([path]), pat_str=resolve_pattern("cl100k"), show_progress=False)
    assert _as_dict(got) == _as_dict(want) and got.n_input_bytes == len(text)


def _as_dict(counter: PieceCounter) -> dict:
    table = counter.table()
    return {table.piece(i): int(table.counts[i]) for i in range(table.n_pieces)}


def test_counter_pickles_and_merge_leaves_inputs_alone():
    a = PieceCounter(resolve_pattern("gpt2"), SPECIALS, documents="line")
    a.update(["hello world<|fim|> hello\nthere"])
    b = pickle.loads(pickle.dumps(a))
    assert _as_dict(b) == _as_dict(a) and (b.pat_str, b.special_tokens, b.documents) == (a.pat_str, a.special_tokens, "line")
    assert (b.n_input_bytes, b.n_documents) == (a.n_input_bytes, a.n_documents)
    before = _as_dict(a)
    merged = dist.merge_counts(a, b)
    assert _as_dict(a) == before and merged.n_documents == 2 * a.n_documents
    assert _as_dict(merged) == {piece: 2 * n for piece, n in before.items()}


def test_worker_killed_mid_task(client, corpus, small_tasks, tmp_path):
    trainer = BpeTrainer(600, special_tokens=SPECIALS, show_progress=False)
    files = [corpus / n for n in KINDS["text"]]
    want = trainer.train(files)
    marker = tmp_path / "killed"
    client.register_plugin(KillOnce(str(marker)))
    try:
        got = trainer.train(files, client=client)
    finally:
        client.unregister_worker_plugin(KillOnce.name)
    assert marker.exists()  # a worker did die, and its task ran again elsewhere
    assert got == want
    client.wait_for_workers(2, timeout=60)


def test_errors_name_the_input(client, corpus, tmp_path):
    trainer = BpeTrainer(300, show_progress=False)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        trainer.train([corpus / "big.txt", tmp_path / "missing.txt"], client=client)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": "cut off\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a JSON line"):
        trainer.train([corpus / "r.jsonl", bad], client=client)
    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(b"hello " * 1000)[:-30])
    with pytest.raises(ValueError, match="bad.txt.gz: corrupt or truncated gzip data"):
        trainer.train(tmp_path / "bad.txt.gz", client=client)
    gone = tmp_path / "gone.txt"  # deleted after planning, before a worker reads it
    gone.write_bytes(b"some text " * 100)
    tasks = dist.plan_count_tasks(gone)
    gone.unlink()
    with pytest.raises(FileNotFoundError, match="gone.txt"):
        dist.count_on_dask(client, tasks, pat_str=resolve_pattern("cl100k"), show_progress=False)
    with pytest.raises(ValueError, match="num_threads= sets local counting threads"):
        trainer.train(corpus / "big.txt", client=client, num_threads=2)
    with pytest.raises(ValueError, match="standard input"):
        trainer.train("-", client=client)


def test_cli_scheduler(client, corpus, tmp_path, small_tasks):
    files = [str(corpus / n) for n in KINDS["text"]]
    address = client.scheduler.address
    assert cli(["train", *files, "--vocab-size", "500", "-o", str(tmp_path / "a.bpe"), "-q",
                "--scheduler", address]) == 0
    assert cli(["train", *files, "--vocab-size", "500", "-o", str(tmp_path / "b.bpe"), "-q"]) == 0
    assert (tmp_path / "a.bpe").read_bytes() == (tmp_path / "b.bpe").read_bytes()
    assert cli(["count", *files, "-o", str(tmp_path / "a.npz"), "-q", "--scheduler", "local:1"]) == 0
    trainer = BpeTrainer(500, show_progress=False)
    assert trainer.train_from_counts(tmp_path / "a.npz") == trainer.train(files)
    with pytest.raises(SystemExit, match="2"):
        cli(["count", *files, "-o", str(tmp_path / "c.npz"), "-q", "--scheduler", "local:0"])


def test_keep_most_frequent_drops_whole_count_levels():
    counter = PieceCounter(None)
    counter.update(["a"] * 5 + ["bb"] * 5 + ["ccc"] * 3 + ["dddd", "e", "ffffffffffffff", "ffffffffffffff"])
    for max_pieces, k, want in [(10, 0, None), (6, 0, None), (5, 1, {b"a": 5, b"bb": 5, b"ccc": 3, b"f" * 14: 2}),
                                (3, 2, {b"a": 5, b"bb": 5, b"ccc": 3}), (2, 3, {b"a": 5, b"bb": 5}), (1, 5, {})]:
        kept, got_k, n_dropped, n_dropped_bytes = dist.keep_most_frequent(counter, max_pieces)
        want = _as_dict(counter) if want is None else want
        assert (_as_dict(kept), got_k) == (want, k)
        assert n_dropped == 6 - len(want)
        assert n_dropped_bytes == sum(len(p) * n for p, n in _as_dict(counter).items() if p not in want)
        assert kept.n_input_bytes == counter.n_input_bytes


def test_max_pieces_bounds_the_table_with_a_warning(client, corpus):
    trainer = BpeTrainer(400, show_progress=False)
    files = [corpus / n for n in KINDS["text"]]
    whole = trainer.count(files, client=client)
    with pytest.warns(dist.PiecesDroppedWarning, match=r"max_pieces=1000: dropped the [\d,]+ unique pieces seen \d+ times"):
        bounded = trainer.count(files, client=client, max_pieces=1000)
    assert 0 < bounded.table().n_pieces <= 1000 < whole.table().n_pieces
    kept = _as_dict(bounded)
    assert all(_as_dict(whole)[piece] == n for piece, n in kept.items())
    with pytest.raises(ValueError, match="max_pieces bounds the table a cluster sends back"):
        trainer.count(files, max_pieces=10)
