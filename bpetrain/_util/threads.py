"""The number of threads bpetrain uses, worker threads kept from call to call for the
encoder's threaded calls, and the map that shares a call's items between the calling
thread and them.

Every threaded call takes ``num_threads`` (tiktoken's name: training and counting in
:class:`~bpetrain.BpeTrainer`, the batch calls of :class:`~bpetrain.Encoding`,
``--num-threads`` on the command line), with one default: one thread per CPU this process
may use (:func:`usable_cores`; :data:`DEFAULT_THREADS` in the encoder's signatures). The encoder's calls never run more threads than
that (:func:`thread_map`).

Starting a thread took 0.5-1.8 ms on the 2-core machine of the benchmarks: a batch call
that made two new threads for 3 MB of documents (17 ms of work on two threads) started its
second share that much later. The pools here are made once per number of threads and
kept, as the Rust peers keep rayon's global pool.

The calling thread works too, and each helper wakes the next before it starts: a thread
that wakes another keeps running, so the scheduler puts the woken one on an idle core.
When the caller only waited, it woke two pool threads at once and Linux often queued both
on the same core (the other one idle) for 2-3 ms: two threads on 3 MB of 1 KB documents ran
1.32x one thread (median of 40 paired rounds), against 1.76x with the caller working
(``benchmarks/batch_threads.py``). Items are taken one at a time as a thread comes free,
so a thread slowed by other work on the machine takes fewer.
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


#: The default ``num_threads`` of batch encoding: the CPUs this process may use
#: (:func:`usable_cores`), counted when bpetrain is imported (tiktoken's signature takes a
#: number); each call still runs no more threads than the CPUs usable then. Training and
#: counting (``num_threads=None``) count the CPUs when called.
DEFAULT_THREADS = usable_cores()


def check_num_threads(num_threads) -> int:
    """``num_threads`` if it is an int >= 1.

    Raises
    ------
    ValueError
        If it is not (a bool is not a number of threads).
    """
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be an int >= 1, got {num_threads!r}")
    return num_threads


def _mark_worker() -> None:
    _local.worker = True


def thread_map(function: Callable, *iterables: Iterable, num_threads: int) -> list:
    """``list(map(function, *iterables))`` on up to ``num_threads`` threads, and no more
    than the CPUs this process may use (:func:`usable_cores`; more threads than cores only
    contend: a batch call on 8 threads ran 7% slower than on 2 on a 2-core machine): the
    calling thread and helpers from a pool kept for later calls with as many threads, each
    taking the next item when it is free. The first exception raised (in item order among
    those that ran) is raised once every thread has stopped; no item is started after it.

    Called from an item of another call (a threaded call inside a threaded call, on a
    helper or on the calling thread), it maps on that thread alone: the outer call has the
    other threads busy already, and waiting for a pool's own threads from inside it could
    wait forever (on a helper) or until the outer call's items are all done.
    """
    items = list(zip(*iterables))
    n_threads = min(num_threads, len(items), usable_cores())
    if n_threads <= 1 or getattr(_local, "worker", False):
        return [function(*item) for item in items]
    with _lock:
        pool = _pools.get(n_threads - 1)
        if pool is None:
            pool = _pools[n_threads - 1] = ThreadPoolExecutor(
                n_threads - 1, thread_name_prefix=f"bpetrain-{n_threads}", initializer=_mark_worker)
    share = _Share(function, items)

    def helper(more: int) -> None:
        if more:
            helpers.append(pool.submit(helper, more - 1))  # before working: this thread keeps its core
        share.work()

    helpers: list = []  # bound before the first helper runs: it appends to it
    helpers.append(pool.submit(helper, n_threads - 2))
    _local.worker = True  # an item that calls thread_map maps on this thread alone
    try:
        share.work()
    finally:
        _local.worker = False
        done = 0
        while done < len(helpers):  # a helper appends the next one's future before it works
            helpers[done].exception()
            done += 1
    # A pool thread drops its finished work item (and with it ``share``) a moment after the
    # caller has seen it finish: the results must not be kept alive with it.
    results, errors = share.results, share.errors
    share.results = share.items = share.function = None
    if errors:
        raise errors[min(errors)]
    return results


class _Share:
    """The items of one :func:`thread_map` call, taken in order by the threads that run it."""

    def __init__(self, function: Callable, items: list[tuple]):
        self.function: Callable | None = function
        self.items: list[tuple] | None = items
        self.results: list | None = [None] * len(items)
        self.errors: dict[int, BaseException] = {}
        self.taken = iter(range(len(items)))
        self.lock = threading.Lock()

    def work(self) -> None:
        """Run the next item not taken yet until none is left, or one has raised."""
        while not self.errors:
            with self.lock:
                index = next(self.taken, None)
            if index is None:
                return
            try:
                self.results[index] = self.function(*self.items[index])
            except BaseException as error:  # noqa: BLE001 - raised again by the caller
                self.errors[index] = error


def _forget_pools() -> None:
    """In a child process after ``fork``: the parent's threads are not there."""
    global _lock
    _pools.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)
