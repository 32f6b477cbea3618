"""Worker threads kept from call to call for the encoder's threaded calls.

Starting a thread took 0.5-1.8 ms on the 2-core machine of the benchmarks: a batch call
that made two new threads for 3 MB of documents (17 ms of work on two threads) started its
second share that much later. The pools here are made once per number of threads and
kept, as the Rust peers keep rayon's global pool.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()
_local = threading.local()


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, as under
    ``taskset`` or a container's CPU set; else every CPU)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _mark_worker() -> None:
    _local.worker = True


def thread_map(function: Callable, *iterables: Iterable, num_threads: int) -> list:
    """``list(map(function, *iterables))`` on up to ``num_threads`` threads of a pool kept
    for later calls with as many threads.

    Called from one of these threads (a threaded call inside a threaded call), it maps on
    that thread alone: the outer call has the other threads busy already, and waiting for
    a pool's own threads from inside it could wait forever.
    """
    if getattr(_local, "worker", False):
        return list(map(function, *iterables))
    with _lock:
        pool = _pools.get(num_threads)
        if pool is None:
            pool = _pools[num_threads] = ThreadPoolExecutor(
                num_threads, thread_name_prefix=f"bpetrain-{num_threads}", initializer=_mark_worker)
    return list(pool.map(function, *iterables))


def _forget_pools() -> None:
    """In a child process after ``fork``: the parent's threads are not there."""
    global _lock
    _pools.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)
