"""Counting on a Dask cluster (bpetrain.distributed) against counting in one process.

counting
    The corpus counted in this process (``BpeTrainer.count(files, workers=N)``) and on a
    ``LocalCluster`` of 1 and 2 worker processes (one thread each) with the default task
    size: wall time, MB/s, and the driver's peak memory above its start (resident set,
    sampled every 20 ms). Before timing, the tokenizers trained on the local and the
    cluster counts (``--vocab-size``) are checked to be identical.
tree merge
    The corpus cut into 2, 8, 32 and 128 tasks (``task_bytes = size / n``) on 2 workers:
    counting until every task is done, then the pairwise merge tree on the workers and
    the final table's trip to the driver, timed apart (in ``BpeTrainer.count`` the two
    overlap), with the final table's size and the driver's peak memory.

One run each (the machine is shared); the machine and the thread counts are printed.
Run from the repository after an in-place build::

    PYTHONPATH=. python benchmarks/cluster.py /work/corpora/kernel-c.txt /work/corpora/mix-100M.txt
"""
from __future__ import annotations

import argparse
import os
import platform
import threading
import time
from contextlib import contextmanager

import psutil  # a dependency of dask.distributed
from dask.distributed import Client, LocalCluster, wait

from bpetrain import BpeTrainer
from bpetrain import distributed as dist


@contextmanager
def peak_rss(result: dict):
    """Peak resident memory of this process above its level at the start, in MiB."""
    process = psutil.Process()
    base = peak = process.memory_info().rss
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.wait(0.02):
            peak = max(peak, process.memory_info().rss)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        result["seconds"] = time.perf_counter() - started
        stop.set()
        thread.join()
        result["peak_mib"] = (max(peak, process.memory_info().rss) - base) / 2**20


def cluster(n_workers: int):
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0")


def counting(files, n_bytes: int, vocab_size: int) -> None:
    trainer = BpeTrainer(vocab_size, show_progress=False)
    print("\n| counted by | tasks | seconds | MB/s | driver peak MiB |\n|---|---|---|---|---|")
    for workers in (1, 2):
        m = {}
        with peak_rss(m):
            counter = trainer.count(files, workers=workers)
        del counter
        print(f"| this process, {workers} thread(s) | - | {m['seconds']:.1f} | {n_bytes / 1e6 / m['seconds']:.0f} | {m['peak_mib']:.0f} |")
    reference = trainer.train(files, workers=2)
    n_tasks = len(dist.plan_count_tasks(files))
    for n_workers in (1, 2):
        with cluster(n_workers) as local, Client(local) as client:
            if n_workers == 1 and trainer.train(files, client=client) != reference:
                raise SystemExit("the cluster's tokenizer differs from the local one")
            m = {}
            with peak_rss(m):
                counter = trainer.count(files, client=client)
            del counter
            print(f"| LocalCluster, {n_workers} worker(s) | {n_tasks} | {m['seconds']:.1f} | "
                  f"{n_bytes / 1e6 / m['seconds']:.0f} | {m['peak_mib']:.0f} |")


def tree_merge(files, n_bytes: int) -> None:
    trainer = BpeTrainer(256, show_progress=False)
    options = {"pat_str": trainer.pat_str}
    print("\n| tasks | count s | merge tree + transfer s | total s | final table MiB | driver peak MiB |\n"
          "|---|---|---|---|---|---|")
    with cluster(2) as local, Client(local) as client:
        for n in (2, 8, 32, 128):
            tasks = dist.plan_count_tasks(files, task_bytes=-(-n_bytes // n))
            m = {}
            with peak_rss(m):
                started = time.perf_counter()
                level = [client.submit(dist.count_task, t, **options, pure=False) for t in tasks]
                wait(level)
                counted = time.perf_counter() - started
                while len(level) > 1:
                    pairs = [client.submit(dist.merge_counts, a, b, pure=False) for a, b in zip(level[::2], level[1::2])]
                    level = pairs + level[len(pairs) * 2 :]
                counter = level[0].result()
                merged = time.perf_counter() - started - counted
            print(f"| {len(tasks)} | {counted:.1f} | {merged:.1f} | {counted + merged:.1f} | "
                  f"{counter.nbytes / 2**20:.0f} | {m['peak_mib']:.0f} |")
            del counter, level


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--vocab-size", type=int, default=2000, help="for the check that the tokenizers agree")
    parser.add_argument("--only", choices=("counting", "tree"), default=None)
    args = parser.parse_args()
    n_bytes = sum(os.path.getsize(f) for f in args.files)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{n_bytes / 1e6:.0f} MB: {', '.join(os.path.basename(f) for f in args.files)}")
    if args.only != "tree":
        counting(args.files, n_bytes, args.vocab_size)
    if args.only != "counting":
        tree_merge(args.files, n_bytes)


if __name__ == "__main__":
    main()
