"""How the batch calls scale from one thread to two, by output: lists of ids
(``encode_ordinary_batch``, and ``encode_batch``, which also looks for disallowed special
tokens), one array (``encode_batch_to_numpy``), counts (``count_batch``).

The file is cut into documents of about 1000 bytes (as ``encode_peers.py`` does). Each of
``--repeat`` rounds (15) runs every row once, one thread then two, with the piece caches
emptied before each run, so all rows see the machine alike. Each timed run follows an
untimed run of the same call on as many threads (``--cold``: none): a run on two threads
right after one on one thread, the second core idle meanwhile, ran 2-4% slower than one
after another run on two (lists 2.1% and 3.8%, counts 1.4%, medians of 40 paired
rounds), which measures the change of thread count rather than how the call scales.
The medians are reported as MB/s with their ratio, and the median of the ratios of each
round's pair of runs (steadier where other work on the machine comes and goes). The
result is freed after the clock stops (what a caller does with it is not the call).
bpetrain runs alone in the process (a peer's idle thread pool would take a core from the
second thread).

The last row is the machine's own ceiling, measured in the same run: ``count_batch`` of all
the documents on one thread in this process, against two processes at once (this one and a
forked twin, started together), each counting on one thread the chunks a two-thread call
cuts (``bpetrain.encoding.batching.batch_chunks``), taken one at a time from a shared counter as
the threads take them: the same work as two threads, without sharing a process. (Two
fixed halves were not the same work: the first half of fortunes.txt took 1.5 times as long
as the second, and the row read 1.70x where threads gave 1.93-1.99x.) On a shared virtual
machine two cores do not always give twice one core, so a thread ratio is best read against
that row.

    python benchmarks/batch_threads.py mix-10M.txt --vocab cl100k_base [--max-bytes 3000000] [--cold]
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

import bpetrain
from bpetrain.encoding._encoder import text_lengths
from bpetrain.encoding.batching import batch_chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--vocab", default="cl100k_base", help="an OpenAI encoding name (BPETRAIN_VOCABS)")
    parser.add_argument("--max-bytes", type=int, default=3_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--cold", action="store_true", help="no untimed run before each timed one")
    args = parser.parse_args()
    enc = bpetrain.get_encoding(args.vocab)
    with open(args.file, "rb") as f:
        text = f.read(args.max_bytes).decode("utf-8", "ignore")
    docs = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    megabytes = len(text.encode("utf-8")) / 1e6
    runs_of_docs = batch_chunks(docs, text_lengths(docs), 2)  # the chunks of a call on two threads
    taken = multiprocessing.get_context("fork").Value("q", 0)  # runs taken so far
    twin, child = _twin(enc, runs_of_docs, taken)  # forked before any thread pool exists
    rows = {"lists": enc.encode_ordinary_batch, "lists, special tokens checked": enc.encode_batch,
            "array (special tokens checked)": enc.encode_batch_to_numpy, "counts": enc.count_batch}

    runs = 1 if args.cold else 2  # the last of them timed

    def processes() -> tuple[float, float]:
        for _ in range(runs):
            enc.clear_cache()
            alone = _timed(enc.count_batch, docs, 1)
        for _ in range(runs):
            taken.value = 0
            twin.send("go")
            enc.clear_cache()
            elapsed = _count_shared(enc, runs_of_docs, taken)
            both = max(elapsed, twin.recv())  # the work is done when the later process ends
        return alone, both

    def threads(call) -> tuple[float, float]:
        times = []
        for num_threads in (1, 2):
            for _ in range(runs):
                enc.clear_cache()
                elapsed = _timed(call, docs, num_threads)
            times.append(elapsed)
        return times[0], times[1]

    times: dict[str, list[tuple[float, float]]] = {name: [] for name in [*rows, CEILING]}
    for _ in range(args.repeat):  # every row in every round, so all rows see the machine alike
        for name, call in rows.items():
            times[name].append(threads(call))
        times[CEILING].append(processes())
    twin.send("stop")
    child.join()
    print(f"| {args.vocab} output | 1 thread MB/s | 2 threads MB/s | 2 / 1 | 2 / 1, paired runs |\n|---|---:|---:|---:|---:|")
    for name, pairs in times.items():
        one, two = (statistics.median(pair[k] for pair in pairs) for k in (0, 1))
        paired = statistics.median(a / b for a, b in pairs)
        print(f"| {name} | {megabytes / one:.1f} | {megabytes / two:.1f} | {one / two:.2f}x | {paired:.2f}x |")


CEILING = "the machine's ceiling: counts, 1 process / 2 processes sharing the documents"


def _timed(call, docs: list[str], num_threads: int) -> float:
    started = time.perf_counter()
    result = call(docs, num_threads=num_threads)
    elapsed = time.perf_counter() - started
    del result  # freed after the clock stops: freeing 3 MB of lists takes ~1.8 ms, on one thread
    return elapsed


def _count_shared(enc, runs_of_docs: list[list[str]], taken) -> float:
    """Time to ``count_batch`` on one thread each run of ``runs_of_docs`` that this process
    takes from the shared counter ``taken``, until none is left."""
    started = time.perf_counter()
    while True:
        with taken.get_lock():
            index = taken.value
            taken.value += 1
        if index >= len(runs_of_docs):
            return time.perf_counter() - started
        enc.count_batch(runs_of_docs[index], num_threads=1)


def _twin(enc, runs_of_docs: list[list[str]], taken):
    """A forked copy of this process that, each time it is sent "go", counts the runs it
    takes from ``taken`` (:func:`_count_shared`) and sends its time back; "stop" ends it."""
    parent_end, child_end = multiprocessing.get_context("fork").Pipe()

    def serve() -> None:
        while child_end.recv() == "go":
            enc.clear_cache()
            child_end.send(_count_shared(enc, runs_of_docs, taken))

    child = multiprocessing.get_context("fork").Process(target=serve, daemon=True)
    child.start()
    return parent_end, child


if __name__ == "__main__":
    main()
