"""Encoding many texts at once: the batch kernel on chunks of texts, on threads.

With a compiled split pattern the texts are cut into chunks of at most about
:data:`BATCH_CHUNK` characters, which the threads take as they come free
(:func:`bpetrain._util.threads.thread_map`); each chunk is one call of the batch kernel
(``BytePairEncoder.encode_batch``), which splits, looks for the special-token strings and
encodes without the GIL. Texts the kernel cannot take (no compiled pattern, allowed
special tokens it cannot look for) go one by one through :meth:`bpetrain.Encoding._encode`.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from functools import partial
from itertools import accumulate
from typing import TYPE_CHECKING

from bpetrain._util.threads import check_num_threads, thread_map, usable_cores
from bpetrain.encoding._args import check_text
from bpetrain.encoding._encoder import BATCH_COUNTS, BATCH_LISTS, DisallowedText, text_lengths, track_lists
from bpetrain.encoding.special import Strings, check_disallowed, special_regex
from bpetrain.splitting._matcher import BacktrackLimitExceeded
from bpetrain.splitting.pattern import replace_surrogates

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BATCH_CHUNK", "LONG_TEXT", "SMALLEST_CHUNK", "batch_chunks", "batch_output", "encode_batch", "encode_range"]

#: Texts of at least this many bytes (UTF-8) are encoded on one thread per core, cut at
#: safe cuts of the split pattern (:func:`encode_range`).
LONG_TEXT = 1 << 20

#: Most characters of text per kernel call when a batch runs on several threads. The
#: threads take chunks as they come free (:func:`bpetrain._util.threads.thread_map`), so small
#: chunks balance them; but each chunk costs a set-up (4-10 us) and, for lists, a switch
#: of the core's caches from the kernel's tables to the lists and back: on one thread, 3 MB
#: of 1 KB documents in 46 chunks took 9% longer than in one as lists, 4.5% as counts. On
#: 2 threads (40 rotated rounds, mix-10M and fortunes, cl100k_base and o200k_base), chunks
#: of 2**17 characters ran 1.3-4% faster than 2**16, 2**18 -4..+3%, 2**19 -4..+2%.
BATCH_CHUNK = 1 << 17
#: Fewest characters per chunk when a batch is cut into more chunks than ``BATCH_CHUNK``
#: asks for, so that each thread gets several.
SMALLEST_CHUNK = 1 << 14


def encode_batch(enc, text: Sequence[str], num_threads: int, output: int, strings: Strings):
    """The batch kernel's ``output`` (``BATCH_LISTS``, ``BATCH_ARRAYS`` or ``BATCH_COUNTS``)
    for every text of ``text``, encoded by ``enc`` (a :class:`bpetrain.Encoding`) on up
    to ``num_threads`` threads under ``strings`` (:class:`~bpetrain.encoding.special.Strings`).

    The first text that holds a disallowed string raises as :meth:`bpetrain.Encoding.encode`.
    The kernel looks for the strings without the GIL where it can; else the ``regex``
    module checks the disallowed ones first and, where allowed special tokens appear,
    the texts are encoded one by one.

    Raises
    ------
    TypeError
        If an item of ``text`` is not a ``str``.
    ValueError
        If ``num_threads`` < 1, or a text holds a disallowed string.
    """
    texts = list(text)
    check_num_threads(num_threads)
    allowed, disallowed, specials, needles, kernel = strings
    if not (kernel and enc._pattern is not None):
        if allowed and any(special_regex(allowed).search(item) for item in texts):
            for item in texts:
                check_text(item)
                check_disallowed(item, disallowed)
            encode = partial(enc._encode, as_list=False, strings=enc._specials.strings(allowed, ()))
            return batch_output(thread_map(encode, texts, num_threads=num_threads), output)
        allowed, specials = frozenset(), None
    lengths = text_lengths(texts)  # raises as check_text
    if enc._pattern is None or (disallowed and needles is None):
        for item in texts:
            check_disallowed(item, disallowed)
        disallowed, needles = frozenset(), None
    if enc._pattern is None:  # the regex module splits, or no pattern: text by text
        encode = partial(enc._encode, as_list=False, strings=enc._specials.none)
        if num_threads == 1 or len(texts) < 2:
            return batch_output([encode(item) for item in texts], output)
        return batch_output(thread_map(encode, texts, num_threads=num_threads), output)
    chunks = batch_chunks(texts, lengths, min(num_threads, usable_cores()))
    if len(chunks) == 1:
        parts = [_encode_chunk(enc, texts, output, allowed, disallowed, specials, needles)]
    else:
        run = partial(_encode_chunk, enc, output=output, allowed=allowed, disallowed=disallowed, specials=specials,
                      needles=needles)
        parts = thread_map(run, chunks, num_threads=num_threads)
    if output == BATCH_LISTS:
        lists = [ids for part in parts for ids in part]
        track_lists(lists)  # the kernel leaves them untracked while it builds (track_lists)
        return lists
    if len(parts) == 1:
        return parts[0]
    import numpy as np  # arrays out: not imported for lists

    if output == BATCH_COUNTS:
        return np.concatenate(parts)
    starts = np.cumsum([0] + [len(ids) for ids, _ in parts[:-1]])
    offsets = np.concatenate([[0]] + [part_offsets[1:] + start for (_, part_offsets), start in zip(parts, starts)])
    return np.concatenate([ids for ids, _ in parts]), offsets.astype(np.int64)


def _encode_chunk(enc, texts: list[str], output: int, allowed: frozenset[str], disallowed: frozenset[str],
                  specials, needles):
    """One batch kernel call on ``texts`` (the strings as in :class:`~bpetrain.encoding.special.Strings`),
    and its fallback ladder: lone surrogates are replaced by U+FFFD (which neither makes
    nor breaks a match: no needle holds one); a disallowed string raises tiktoken's error;
    a pattern that backtracks past the compiled matcher's limit encodes text by text
    (:meth:`bpetrain.Encoding._encode` copes)."""
    try:
        try:
            return enc._bpe.encode_batch(texts, enc._pattern, output, needles, specials)
        except UnicodeEncodeError:
            texts = [replace_surrogates(item) for item in texts]
            return enc._bpe.encode_batch(texts, enc._pattern, output, needles, specials)
    except DisallowedText as found:
        check_disallowed(texts[found.index], disallowed)
        raise RuntimeError(
            f"bpetrain bug: the kernel found a disallowed string in text {found.index} that the regex does not"
        )
    except BacktrackLimitExceeded:
        for item in texts:
            check_disallowed(item, disallowed)
        each = enc._specials.strings(allowed, ()) if allowed else enc._specials.none
        return batch_output([enc._encode(item, False, each) for item in texts], output)


def batch_chunks(texts: list[str], lengths: Sequence[int], num_threads: int) -> list[list[str]]:
    """``texts`` (of ``lengths`` characters: ints, an ``array.array`` or numpy array) cut
    into consecutive chunks of about as many characters each: at most about
    ``BATCH_CHUNK``, and at least four per thread where that leaves chunks of
    ``SMALLEST_CHUNK`` characters or more (one chunk more or less on a thread then costs
    little), or one chunk on one thread."""
    if num_threads == 1 or len(texts) < 2:
        return [texts]
    ends = list(accumulate(map(int, lengths)))
    total = ends[-1]
    n_chunks = max(-(-total // BATCH_CHUNK), min(4 * num_threads, -(-total // SMALLEST_CHUNK)))
    n_chunks = min(len(texts), n_chunks)
    cuts = [bisect_right(ends, total * k // n_chunks) for k in range(1, n_chunks)]
    bounds = [0, *sorted(set(cuts) - {0, len(texts)}), len(texts)]
    return [texts[a:b] for a, b in zip(bounds, bounds[1:])]


def batch_output(arrays: list[np.ndarray], output: int):
    """Per-text id arrays in the batch kernel's ``output`` form."""
    if output == BATCH_LISTS:
        return [ids.tolist() for ids in arrays]
    import numpy as np

    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    if output == BATCH_COUNTS:
        return lengths
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
    return ids.astype(np.uint32, copy=False), offsets


def encode_range(bpe, pattern, data: bytes, start: int, as_list: bool, stop: int | None = None):
    """Ids of the pieces of ``data[start:stop]``, one long text on threads.

    ``start`` is 0 or a safe cut; ``stop`` the end, by default, or a safe cut, the pattern
    seeing what follows it. The pieces are found by the compiled ``pattern``
    (:class:`bpetrain.splitting._matcher.Program`) and encoded by ``bpe`` (the encoding's
    ``BytePairEncoder``): a range of :data:`LONG_TEXT` bytes or more on one thread per core,
    cut at safe cuts near equal shares. No piece crosses a safe cut, so the ids joined are
    the ids of the whole text.

    Returns
    -------
    list of int or numpy.ndarray of uint32
        The ids, a list if ``as_list``.
    """
    stop = len(data) if stop is None else stop
    n_blocks = min(usable_cores(), (stop - start) // (LONG_TEXT // 2))
    if stop - start < LONG_TEXT or n_blocks < 2:
        return bpe.encode_text(data, pattern, as_list, start, stop)
    cuts = [start]
    for k in range(1, n_blocks):
        target = start + (stop - start) * k // n_blocks
        cut = pattern.safe_cut(data, max(cuts[-1], target - LONG_TEXT // 4), target)
        if cut > cuts[-1]:
            cuts.append(cut)
    cuts.append(stop)
    parts = thread_map(lambda a, b: bpe.encode_text(data, pattern, False, a, b), cuts, cuts[1:],
                       num_threads=len(cuts) - 1)
    if as_list:
        return bpe.join_as_list(parts)
    import numpy as np

    return np.concatenate(parts)
