"""Counting on a cluster: the corpus cut into count tasks, their counters merged in a tree.

Counting is linear in the corpus and splits into independent parts; merging the counts
is exact in any order (:meth:`PieceCounter.merge`). So the counting half of training can
run where the data is:

1. :func:`plan_count_tasks` groups the inputs into tasks of about ``task_bytes``: whole
   small files, and byte ranges of big uncompressed plain-text files. A range's ends are
   nominal; the task moves each end back to the last *boundary* before it (see below), so
   the ranges of neighbouring tasks meet and no piece is cut. The last range ends at the
   end of the file as it is when it is read, so a file that grew or shrank after planning
   is counted as it is then, as local counting counts it (with an
   :class:`~bpetrain.counting.inputs.InputChangedWarning` on the driver).
2. :func:`count_task` counts one task on any machine that can read the inputs (local
   paths or fsspec URLs) and returns a :class:`PieceCounter`, which pickles as its table.
3. :func:`merge_counts` makes one counter of two (leaving both as they are, so an engine
   can run a lost merge again). Counters are merged pairwise, as they finish, so the
   driver receives one table.

:func:`count_on_dask` runs the three steps on a ``dask.distributed.Client`` (Dask retries
a task whose worker died; a counter is only used whole). Ray or Spark jobs can call the
same public functions (docs/cluster.md, "Other engines").

A boundary of a text is a safe cut of the split pattern
(:meth:`bpetrain.splitting.cuts.Cuts.cut`) that can be recognised from the bytes around it alone, so
that two tasks reading different ranges agree on it: the bytes on both sides are ASCII
(one character each, whatever precedes them) and no special token overlaps or ends at
it. In ``documents="line"`` mode every line start is a cut. Texts in raw mode with
whole files as documents, or split by the ``regex`` module, have no cuts: their files are
counted whole. The boundary of a nominal offset ``x`` is the last boundary at or before
``x`` (0 if there is none), so boundaries never cross and the ranges partition the file.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from bpetrain._util.progress import progress_bar
from bpetrain.counting.parallel import count_unchecked
from bpetrain.counting.inputs import BLOCK_BYTES, Source, expand_inputs, read_range, warn_changed
from bpetrain.counting.counts import PieceCounter, PieceTable
from bpetrain.splitting.cuts import check_documents
from bpetrain.splitting.pattern import resolve_pattern, split_pattern

__all__ = [
    "CountTask",
    "PiecesDroppedWarning",
    "connect",
    "count_on_dask",
    "count_task",
    "group_sources",
    "keep_most_frequent",
    "merge_counts",
    "plan_count_tasks",
]

TASK_BYTES = 64 << 20  # bytes of input per task: large enough that a task outlasts its scheduling
WINDOW_BYTES = 1 << 16  # bytes before a nominal offset searched for a boundary (doubled until one is found)


class PiecesDroppedWarning(UserWarning):
    """``max_pieces`` dropped rare pieces: the merges may differ from an exact count."""


@dataclass(frozen=True)
class CountTask:
    """One unit of counting: whole files, or a byte range of one plain-text file.

    Attributes
    ----------
    sources : tuple of Source
        The files (one for a range).
    start, stop : int or None
        Nominal byte range ``[start, stop)`` of ``sources[0]``; None: the files are whole.
        The task counts from the boundary at ``start`` to the boundary at ``stop``.
    """

    sources: tuple[Source, ...]
    start: int | None = None
    stop: int | None = None

    @property
    def n_bytes(self) -> int:
        """Bytes on disk the task reads (nominal), for progress bars."""
        if self.start is not None:
            return self.stop - self.start
        return sum(s.size or 0 for s in self.sources)

    def __str__(self) -> str:
        if self.start is not None:
            return f"{self.sources[0].path} (bytes {self.start}..{self.stop})"
        names = ", ".join(s.path for s in self.sources[:3])
        return names + (f" and {len(self.sources) - 3} more" if len(self.sources) > 3 else "")


def plan_count_tasks(
    files: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    pat_str: str | None = "cl100k",
    documents: str = "file",
    input_format: str = "auto",
    task_bytes: int | None = None,
) -> list[CountTask]:
    """Group the inputs into count tasks of about ``task_bytes`` each.

    Parameters
    ----------
    files : path, URL, or iterable of them
        As :meth:`BpeTrainer.train` takes them (no ``-``: standard input cannot be shared).
    pat_str : str or None, default "cl100k"
        The split pattern: it decides whether a text file can be cut into ranges.
    documents : {"file", "line"}, default "file"
    input_format : {"auto", "text", "jsonl", "parquet"}, default "auto"
    task_bytes : int, optional
        Target bytes on disk per task (default: ``TASK_BYTES``, 64 MiB). Uncompressed
        plain-text files larger than this are cut into ranges; smaller files are grouped.

    Returns
    -------
    list of CountTask

    Raises
    ------
    FileNotFoundError
        If an input does not exist (all are checked first).
    ValueError
        If ``-`` (standard input) is among the inputs, or an option is invalid.
    """
    check_documents(documents)
    return group_sources(expand_inputs(files, input_format), pat_str=pat_str, documents=documents,
                         task_bytes=task_bytes)


def group_sources(
    sources: Sequence[Source], *, pat_str: str | None, documents: str = "file", task_bytes: int | None = None
) -> list[CountTask]:
    """:func:`plan_count_tasks` for inputs already expanded by :func:`bpetrain.counting.inputs.expand_inputs`."""
    task_bytes = TASK_BYTES if task_bytes is None else task_bytes
    if isinstance(task_bytes, bool) or not isinstance(task_bytes, int) or task_bytes < 1:
        raise ValueError(f"task_bytes must be an int >= 1, got {task_bytes!r}")
    if any(s.path == "-" for s in sources):
        raise ValueError("standard input ('-') cannot be counted on a cluster; save it to a file first")
    streams = [s.path for s in sources if s.size is None]
    if streams:
        raise ValueError(f"{streams[0]} is a pipe or device: a stream cannot be counted on a cluster; "
                         "save it to a file first")
    pat_str = resolve_pattern(pat_str)
    cuttable = documents == "line" or (pat_str is not None and split_pattern(pat_str).program is not None)
    tasks: list[CountTask] = []
    group: list[Source] = []
    group_bytes = 0
    for source in sources:
        if cuttable and source.format == "text" and source.compression is None and source.size > task_bytes:
            n = math.ceil(source.size / task_bytes)
            edges = [source.size * i // n for i in range(n + 1)]
            tasks.extend(CountTask((source,), a, b) for a, b in zip(edges[:-1], edges[1:]))
            continue
        group.append(source)
        group_bytes += source.size
        if group_bytes >= task_bytes:
            tasks.append(CountTask(tuple(group)))
            group, group_bytes = [], 0
    if group:
        tasks.append(CountTask(tuple(group)))
    return tasks


def count_task(
    task: CountTask,
    *,
    pat_str: str | None = "cl100k",
    special_tokens: Sequence[str] = (),
    documents: str = "file",
    text_field: str = "text",
    num_threads: int = 1,
) -> PieceCounter:
    """Count the pieces of one task (on whichever machine runs it).

    Takes the options of :meth:`BpeTrainer.count`; they must be the same for every task
    of a corpus. The result pickles (as its table and totals) and merges with
    :func:`merge_counts`.

    Parameters
    ----------
    task : CountTask
        From :func:`plan_count_tasks`.
    num_threads : int, default 1
        Counting threads in this task (whole files only; a range is one stream). One,
        as a Dask worker runs one task per thread of its own.

    Returns
    -------
    PieceCounter
        ``n_input_bytes`` and ``n_documents`` count this task's part only. The last range
        of a file, and whole files, are counted to the end of the file as it is when read
        (a file that grew since planning is counted whole; the driver's
        :func:`bpetrain.counting.inputs.warn_changed` reports the change).

    Raises
    ------
    FileNotFoundError, ValueError
        As :meth:`BpeTrainer.count`: the message names the file (and line).
    """
    pat_str = resolve_pattern(pat_str)
    if task.start is None:
        return count_unchecked(
            list(task.sources), pat_str=pat_str, special_tokens=special_tokens, documents=documents,
            text_field=text_field, num_threads=num_threads, show_progress=False, block_bytes=BLOCK_BYTES,
        )
    counter = PieceCounter(pat_str, special_tokens, documents=documents)
    source = task.sources[0]
    start = 0 if task.start == 0 else _boundary(source, task.start, counter)
    if task.stop >= source.size:  # the last range: to the end of the file as it is now, as count_sources reads
        stop, tail = None, b""
    else:
        stop = _boundary(source, task.stop, counter, floor=task.start)
        if stop is None or stop <= start:
            return counter  # the boundaries of this range are before it: a neighbour counts its bytes
        tail = b"".join(read_range(source, stop, stop + 8 + counter.lookahead))  # what the splitter may look at
    blocks = read_range(source, start, stop)
    for data, cut, final, continued in counter.cuts.cut_blocks(blocks, continued=start > 0, tail=tail):
        counter.count_text(data, cut, final=final, continued=continued)
    if documents == "file" and start == 0:
        counter.n_documents += 1
    return counter


def merge_counts(a: PieceCounter, b: PieceCounter) -> PieceCounter:
    """A new counter with the counts and totals of ``a`` and ``b`` (exact in any order).

    The inputs are left as they are: an engine may keep them to re-run a lost merge.
    """
    merged = PieceCounter(a.pat_str, a.special_tokens, documents=a.documents)
    merged.merge(a)
    merged.merge(b)
    return merged


def keep_most_frequent(counter: PieceCounter, max_pieces: int) -> tuple[PieceCounter, int, int, int]:
    """The pieces of ``counter`` seen more than ``k`` times, for the smallest ``k`` that
    leaves at most ``max_pieces`` of them (whole count levels go, so ties never decide).

    Not exact: a dropped piece's pairs no longer count (see docs/cluster.md, "Memory on the
    driver"). The totals (``n_input_bytes``, ``n_documents``) stay those of the input.

    Returns
    -------
    counter : PieceCounter
        A new counter with the kept pieces.
    k : int
        Pieces seen ``k`` times or fewer were dropped (0: none were).
    n_dropped : int
        Unique pieces dropped.
    n_dropped_bytes : int
        Bytes of text the dropped pieces stood for (length times count).
    """
    table = counter.table()
    kept = PieceCounter(counter.pat_str, counter.special_tokens, documents=counter.documents)
    kept.n_input_bytes, kept.n_documents, kept.seconds = counter.n_input_bytes, counter.n_documents, counter.seconds
    if table.n_pieces <= max_pieces:
        kept.add_table(table)
        return kept, 0, 0, 0
    levels, level_sizes = np.unique(table.counts, return_counts=True)  # ascending counts
    above = table.n_pieces - np.cumsum(level_sizes)  # pieces seen more than each level
    k = int(levels[np.argmax(above <= max_pieces)])
    keep = table.counts > k
    lengths = np.diff(table.offsets)
    new_offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(lengths[keep], out=new_offsets[1:])
    starts = np.repeat(table.offsets[:-1][keep] - new_offsets[:-1], lengths[keep])
    data = table.data[starts + np.arange(new_offsets[-1], dtype=np.int64)]
    kept.add_table(PieceTable(data, new_offsets, table.counts[keep]))
    n_dropped_bytes = int(np.sum(lengths[~keep] * table.counts[~keep]))
    return kept, k, int((~keep).sum()), n_dropped_bytes


def _boundary(source: Source, x: int, counter: PieceCounter, *, floor: int = 0) -> int | None:
    """The last boundary at or before offset ``x`` of a text file (see the module notes);
    0 if there is none, None if there is none at ``floor`` or after it."""
    specials = [t.encode("utf-8") for t in counter.special_tokens]
    longest = max(map(len, specials), default=0)
    program = None if counter.documents == "line" else counter._program
    width = WINDOW_BYTES
    while True:
        window_start = max(0, x - width)
        window = b"".join(read_range(source, window_start, x + 8 + longest))
        lim = x - window_start  # a boundary p (window offsets) has p <= lim
        low = max(longest, 1) if window_start else 1  # special tokens before p are in view
        hi = min(len(window), lim + 4)
        while True:
            if program is None:
                p = window.rfind(b"\n", 0, min(hi, lim)) + 1
            else:
                p = program.safe_cut(window, 0, hi)
            if p < low:
                break
            if p <= lim and (program is None or window[p - 1] < 0x80 > window[p]) and not any(
                s in window[max(0, p - len(s)) : p + len(s) - 1] for s in specials
            ):
                return window_start + p
            hi = p - 1 if program is None else p  # (a line start p is found from p - 1)
        if window_start <= floor:
            return 0 if floor == 0 else None
        width *= 2


def count_on_dask(
    client,
    tasks: Sequence[CountTask],
    *,
    pat_str: str | None,
    special_tokens: Sequence[str] = (),
    documents: str = "file",
    text_field: str = "text",
    show_progress: bool = True,
    max_pieces: int | None = None,
) -> PieceCounter:
    """Count ``tasks`` on a Dask cluster and merge the counters pairwise on the workers.

    Merges start as soon as two counters are done, so at most about one table per worker
    waits in memory, and only the final table comes to the driver.

    Parameters
    ----------
    client : dask.distributed.Client
    tasks : sequence of CountTask
        From :func:`plan_count_tasks`.
    show_progress : bool, default True
        A tqdm bar on the driver: bytes counted (tasks done in the postfix), MB/s, ETA.
    max_pieces : int, optional
        Bound the table sent to the driver: on a worker, keep the pieces seen more than
        ``k`` times for the smallest ``k`` that leaves at most this many
        (:func:`keep_most_frequent`), with a :class:`PiecesDroppedWarning` that says
        what was dropped. Not exact; default: keep every piece.

    Returns
    -------
    PieceCounter
        All pieces; ``seconds`` is the wall time on the driver.

    Warns
    -----
    InputChangedWarning
        If a local file's size changed since it was planned: each range is counted from
        the file as it is when read, the last range to the file's end then, as
        :func:`bpetrain.counting.parallel.count_sources` counts.

    Raises
    ------
    FileNotFoundError, ValueError
        From the first task that fails (the message names its input); the other tasks
        are cancelled. Dask retries a task whose worker died
        (``distributed.scheduler.allowed-failures`` times) before it fails.
    """
    from dask.distributed import as_completed

    started = time.perf_counter()
    if not tasks:
        return PieceCounter(pat_str, special_tokens, documents=documents)
    options = {"pat_str": pat_str, "special_tokens": list(special_tokens), "documents": documents,
               "text_field": text_field}
    counts = [client.submit(count_task, task, **options, pure=False) for task in tasks]
    sizes = {future.key: task for future, task in zip(counts, tasks)}
    done = as_completed(counts)
    waiting = None
    n_done = 0
    merges = []
    try:
        with progress_bar(total=sum(t.n_bytes for t in tasks), unit="B", unit_scale=True, desc="counting",
                          disable=not show_progress) as bar:
            for future in done:
                if future.status == "error":
                    _raise_task_error(future, sizes.get(future.key))
                if future.key in sizes:
                    n_done += 1
                    bar.update(sizes[future.key].n_bytes)
                    bar.set_postfix_str(f"{n_done}/{len(tasks)} tasks")
                if waiting is None:
                    waiting = future
                else:
                    merges.append(client.submit(merge_counts, waiting, future, pure=False))
                    done.add(merges[-1])
                    waiting = None
            if max_pieces is not None:
                waiting = client.submit(keep_most_frequent, waiting, max_pieces, pure=False)
                merges.append(waiting)
                counter, k, n_dropped, n_dropped_bytes = waiting.result()
                if n_dropped:
                    warnings.warn(
                        f"max_pieces={max_pieces}: dropped the {n_dropped:,} unique pieces seen {k} times or fewer "
                        f"({n_dropped_bytes:,} bytes of text, {n_dropped_bytes / max(counter.n_input_bytes, 1):.2%} "
                        "of the input); the merges may differ from those of the whole count",
                        PiecesDroppedWarning,
                        stacklevel=4,
                    )
            else:
                counter = waiting.result()
            bar.set_postfix_str(f"{n_done}/{len(tasks)} tasks; table on the driver: {counter.nbytes / 2**20:.0f} MiB")
    except BaseException:
        client.cancel(counts + merges)  # the first error ends the run: the rest would be thrown away
        raise
    counter.seconds = time.perf_counter() - started
    warn_changed(list({s.path: s for task in tasks for s in task.sources}.values()), stacklevel=4)
    return counter


def _raise_task_error(future, task: CountTask | None) -> None:
    """Re-raise a failed task's error; name the task's input if the message does not."""
    exc = future.exception()
    if task is not None and not any(s.path in str(exc) for s in task.sources):
        raise ValueError(f"counting {task} failed: {type(exc).__name__}: {exc}") from exc
    raise exc


@contextlib.contextmanager
def connect(scheduler: str) -> Iterator:
    """A Dask client for the CLI's ``--scheduler``: a running scheduler's address
    (``tcp://host:8786``), or ``local:N`` for a cluster of N local worker processes
    (one thread each) that lives as long as the ``with`` block.

    Raises
    ------
    ValueError
        If Dask is not installed or ``local:N`` has no count >= 1.
    OSError
        If the scheduler cannot be reached (Dask's connect timeout).
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("counting on a cluster needs Dask: pip install 'bpetrain[dask]'") from None
    if scheduler.startswith("local:"):
        n = scheduler[len("local:"):]
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"--scheduler local:N needs a number of workers N >= 1, got {scheduler!r}")
        with LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            yield client
    else:
        with Client(scheduler) as client:
            yield client
