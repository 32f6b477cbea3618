"""Counting on a Dask cluster (bpetrain.counting.cluster) against counting in one process.

counting
    The corpus counted in this process (``BpeTrainer.count(files, num_threads=N)``) and on a
    ``LocalCluster`` of 1 and 2 worker processes (one thread each) with the default task
    size: wall time, MB/s, and the driver's resident memory at its start and its peak
    (sampled every 20 ms; each measurement runs in a fresh process). Before timing, the tokenizers trained on the local and the
    cluster counts (``--vocab-size``) are checked to be identical.
tree merge
    The corpus cut into 2, 8, 32 and 128 tasks (``task_bytes = size / n``) on 2 workers:
    counting until every task is done, then the pairwise merge tree on the workers and
    the final table's trip to the driver, timed apart (in ``BpeTrainer.count`` the two
    overlap), with the final table's size and the driver's memory.

One run each (the machine is shared; its load average is printed with the machine).
Run from the repository after an in-place build::

    PYTHONPATH=. python benchmarks/cluster.py .corpora/kernel-c.txt .corpora/mix-100M.txt
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import psutil  # a dependency of dask.distributed
from dask.distributed import Client, LocalCluster, wait

from bpetrain import BpeTrainer
from bpetrain.counting import cluster as dist


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


@contextmanager
def peak_rss(result: dict):
    """Wall time, and the peak resident memory of this (fresh) process, in MiB."""
    process = psutil.Process()
    peak = process.memory_info().rss
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.wait(0.02):
            peak = max(peak, process.memory_info().rss)

    thread = threading.Thread(target=sample, daemon=True)
    result["start_mib"] = rss_mib()
    thread.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        result["seconds"] = time.perf_counter() - started
        stop.set()
        thread.join()
        result["peak_mib"] = max(peak, process.memory_info().rss) / 2**20


def cluster(n_workers: int):
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0")


def run_one(kind: str, n: int, files: list[str], vocab_size: int) -> dict:
    """One measurement in this process: ``local`` (n threads), ``cluster`` (n workers), or
    ``tree`` (n tasks on 2 workers)."""
    trainer = BpeTrainer(vocab_size, show_progress=False)
    m: dict = {}
    if kind == "local":
        with peak_rss(m):
            trainer.count(files, num_threads=n)
        return m
    with cluster(2 if kind == "tree" else n) as local, Client(local) as client:
        if kind == "cluster":
            m["tasks"] = len(dist.plan_count_tasks(files))
            with peak_rss(m):
                counter = trainer.count(files, client=client)
            m["table_mib"] = counter.nbytes / 2**20
            return m
        n_bytes = sum(os.path.getsize(f) for f in files)
        tasks = dist.plan_count_tasks(files, task_bytes=-(-n_bytes // n))
        m["tasks"] = len(tasks)
        with peak_rss(m):
            started = time.perf_counter()
            level = [client.submit(dist.count_task, t, pat_str=trainer.pat_str, pure=False) for t in tasks]
            wait(level)
            m["count_s"] = time.perf_counter() - started
            while len(level) > 1:
                pairs = [client.submit(dist.merge_counts, a, b, pure=False) for a, b in zip(level[::2], level[1::2])]
                level = pairs + level[len(pairs) * 2 :]
            counter = level[0].result()
            m["merge_s"] = time.perf_counter() - started - m["count_s"]
        m["table_mib"] = counter.nbytes / 2**20
        return m


def measure(kind: str, n: int, files: list[str], vocab_size: int) -> dict:
    """:func:`run_one` in a fresh process, so its peak memory is its own."""
    out = subprocess.run(
        [sys.executable, __file__, *files, "--one", kind, str(n), "--vocab-size", str(vocab_size)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def check(files: list[str], vocab_size: int) -> None:
    """The tokenizer trained on cluster counts is the one trained on local counts."""
    trainer = BpeTrainer(vocab_size, show_progress=False)
    with cluster(2) as local, Client(local) as client:
        if trainer.train(files, client=client) != trainer.train(files, num_threads=2):
            raise SystemExit("the cluster's tokenizer differs from the local one")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--vocab-size", type=int, default=2000, help="for the check that the tokenizers agree")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]), args.files, args.vocab_size)))
        return
    n_bytes = sum(os.path.getsize(f) for f in args.files)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; {n_bytes / 1e6:.0f} MB: {', '.join(os.path.basename(f) for f in args.files)}")
    check(args.files, args.vocab_size)
    print("\n| counted by | tasks | seconds | MB/s | driver RSS MiB: start -> peak |\n|---|---|---|---|---|")
    for kind, n, label in [("local", 1, "this process, 1 thread"), ("local", 2, "this process, 2 threads"),
                           ("cluster", 1, "LocalCluster, 1 worker"), ("cluster", 2, "LocalCluster, 2 workers")]:
        m = measure(kind, n, args.files, args.vocab_size)
        print(f"| {label} | {m.get('tasks', '-')} | {m['seconds']:.1f} | {n_bytes / 1e6 / m['seconds']:.0f} | "
              f"{m['start_mib']:.0f} -> {m['peak_mib']:.0f} |", flush=True)
    print("\n| tasks | count s | merge tree + transfer s | total s | final table MiB | driver RSS MiB: start -> peak |\n"
          "|---|---|---|---|---|---|")
    for n in (2, 8, 32, 128):
        m = measure("tree", n, args.files, args.vocab_size)
        print(f"| {m['tasks']} | {m['count_s']:.1f} | {m['merge_s']:.1f} | {m['count_s'] + m['merge_s']:.1f} | "
              f"{m['table_mib']:.0f} | {m['start_mib']:.0f} -> {m['peak_mib']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
