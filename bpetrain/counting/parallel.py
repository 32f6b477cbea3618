"""Counting a corpus in parallel: read blocks, cut them where the pattern cuts, count on threads.

The main thread reads each source (:mod:`bpetrain.counting.inputs`) in blocks of about 1 MB and
ends every block at a safe cut of the split pattern (:class:`bpetrain.splitting.cuts.Cuts`: a point
the pattern cuts at whatever surrounds it), so the blocks can be counted independently;
JSON Lines and Parquet sources come as batches of whole documents. Worker threads count
blocks into tables of their own with the compiled splitter and counter, which run
without the GIL; the tables are merged at the end. The pieces, and so the merges, are
the same as splitting every document whole, for any number of threads.

Where no safe cut exists (raw mode with whole files as documents, a pattern the
``regex`` module splits, or a text with no cut point at all) a file is counted as one
block.
"""
from __future__ import annotations

import queue
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from bpetrain._util.progress import progress_bar
from bpetrain._util.threads import check_num_threads, usable_cores
from bpetrain.counting.inputs import BLOCK_BYTES, Source, read_blocks, read_records, warn_changed
from bpetrain.counting.counts import PieceCounter

__all__ = ["count_sources"]


def count_sources(
    sources: Iterable[Source],
    *,
    pat_str: str | None,
    special_tokens: Iterable[str] = (),
    documents: str = "file",
    text_field: str = "text",
    num_threads: int | None = None,
    show_progress: bool = True,
    block_bytes: int = BLOCK_BYTES,
) -> PieceCounter:
    """Count the pieces of every source on ``num_threads`` threads.

    Parameters
    ----------
    sources : iterable of Source
        From :func:`bpetrain.counting.inputs.expand_inputs`.
    pat_str : str or None
        The split pattern (None: raw mode, each document is one piece).
    special_tokens : iterable of str
        Cut out of the text, not counted.
    documents : {"file", "line"}
        What a document is in a plain-text source: the whole file, or each line.
    text_field : str
        The JSON Lines field, or the Parquet column, that holds the text.
    num_threads : int, optional
        Counting threads (default: one per CPU this process may use when called,
        :func:`bpetrain._util.threads.usable_cores`).
    show_progress : bool
        A tqdm bar of the bytes read (compressed bytes for compressed files).
    block_bytes : int
        Bytes read at a time; a block ends at the last safe cut in it.

    Returns
    -------
    PieceCounter
        All pieces, with ``n_input_bytes`` (text bytes, decompressed) and ``n_documents``.

    Warns
    -----
    InputChangedWarning
        If a file's size changed since it was listed (each file is counted to its end as
        it is when read; :func:`bpetrain.counting.inputs.warn_changed`).

    Raises
    ------
    ValueError
        If a source is corrupt, a record malformed, ``documents`` unknown or ``num_threads`` < 1.
    """
    sources = list(sources)
    counter = count_unchecked(sources, pat_str=pat_str, special_tokens=special_tokens, documents=documents,
                              text_field=text_field, num_threads=num_threads, show_progress=show_progress,
                              block_bytes=block_bytes)
    warn_changed(sources, stacklevel=3)  # the caller of BpeTrainer.count
    return counter


def count_unchecked(
    sources: list[Source], *, pat_str, special_tokens, documents, text_field, num_threads, show_progress,
    block_bytes,
) -> PieceCounter:
    """:func:`count_sources` without the check that the files did not change (a count task
    of :mod:`bpetrain.counting.cluster`: the driver checks)."""
    num_threads = check_num_threads(usable_cores() if num_threads is None else num_threads)
    special_tokens = list(special_tokens)
    counters = [PieceCounter(pat_str, special_tokens, documents=documents) for _ in range(num_threads)]
    idle: queue.SimpleQueue = queue.SimpleQueue()
    for counter in counters:
        idle.put(counter)

    def run(method, *args, **kwargs):
        counter = idle.get()
        try:
            getattr(counter, method)(*args, **kwargs)
        finally:
            idle.put(counter)

    sizes = [s.size for s in sources]
    total = None if None in sizes else sum(sizes)
    pending: list = []
    with ThreadPoolExecutor(num_threads) as pool, progress_bar(
        total=total, unit="B", unit_scale=True, desc="counting", disable=not show_progress
    ) as bar:

        def submit(method, *args, **kwargs):
            pending.append(pool.submit(run, method, *args, **kwargs))
            while len(pending) > 2 * num_threads:  # bounded read-ahead: memory stays a few blocks
                pending.pop(0).result()

        n_files = 0
        for source in sources:
            if source.format == "text":
                blocks = counters[0].cuts.cut_blocks(read_blocks(source, bar.update, block_bytes))
                for data, stop, final, continued in blocks:
                    submit("count_text", data, stop, final=final, continued=continued)
                n_files += 1
            else:
                for data, bounds in read_records(source, text_field=text_field, progress=bar.update):
                    submit("count_documents", data, bounds)
        for future in pending:
            future.result()
    total = counters[0]
    for other in counters[1:]:
        total.merge(other)
    if documents == "file":
        total.n_documents += n_files
    return total
