"""The encoders' tables of a large vocabulary, kept on disk between processes.

Two kinds of table, each slow to build and the same in every process, are kept in the cache
folder (:mod:`bpetrain._util.cache`, which bounds its size):

- the pair table (every split of every token into two tokens, :mod:`bpetrain.encoding._tables`),
  most of the cost of an :class:`~bpetrain.Encoding` of ``cl100k_base`` or ``o200k_base``,
  as ``pairs-<key>.bin``: reading it back costs a tenth;
- the linear encoder's tables (the token trie, each token's split, the span filter, and
  whether merges run in rank order: ``_tables.build_linear_tables`` and
  ``_linear.merges_in_rank_order``), which an encoder builds once it has read
  ``LINEAR_AFTER`` bytes, as ``linear-<key>.bin``: building them takes 90 ms of CPU with
  ``cl100k_base`` and 260 ms with ``o200k_base``, reading them back 16 and 25 ms (medians of
  7 fresh processes on a shared 2-core Zen 3).

For both:

- the key is the build tag of the modules that build the tables
  (:func:`bpetrain._util.cache.build_tag`: their paths, sizes and modification times; the
  compiled ``_tables`` module for a pair table, with ``_linear`` and ``_heap`` for the
  linear tables) and the SHA-256 of the vocabulary (each rank's token length and all token
  bytes in rank order, which fix the tables), of the kind of table and the byte order:
  another vocabulary, or a rebuilt encoder, never reads it, and the cache's trim removes
  the tables of a build that is no longer installed;
- the file is the kind's magic bytes (:data:`MAGIC`, :data:`LINEAR_MAGIC`: the format's
  version), the SHA-256 of its key and body, and the body (native byte order); a file
  whose body does not hash to its digest (cut short, overwritten, bit rot), of another
  kind or of another key (renamed) is ignored and the tables are built and written again,
  so a damaged file never gives a wrong id;
- it is written whole or not at all (:func:`bpetrain._util.cache.write_entry`); a cache
  that cannot be read or written is ignored, and so is a file that vanishes (removed by the
  trim of another process) before it is read;
- a read refreshes the file's modification time (:func:`bpetrain._util.cache.note_use`):
  the trim removes the least recently used tables first.

Only vocabularies with at least :data:`MIN_SPLITS` splits are kept: small ones build in
well under a millisecond.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from array import array

from bpetrain._util.cache import build_tag, cache_dir, note_use, write_entry

__all__ = ["LINEAR_MAGIC", "MAGIC", "MIN_SPLITS", "read_pairs", "read_tables", "store_pairs", "store_tables",
           "vocabulary_key"]

#: The first bytes of a kept pair table (the format's version: change it with the layout).
MAGIC = b"bpetrain pair table v2\n\0"
#: The first bytes of kept linear tables (the format's version: change it with the layout,
#: ``_tables.linear_tables_body``).
LINEAR_MAGIC = b"bpetrain linear tables v1\n\0\0\0\0\0\0"
#: Token splits from which a vocabulary's tables are kept (cl100k_base has about 10**6).
MIN_SPLITS = 1 << 16
_DIGEST_BYTES = 32
#: Each kind's magic bytes; with the digest after them, a multiple of 8 bytes, so that the body
#: read into 8-byte words starts on one (:func:`read_tables`).
_MAGICS = {"pairs": MAGIC, "linear": LINEAR_MAGIC}


def vocabulary_key(token_len, token_bytes, *builders: str, kind: str = "pairs") -> str:
    """The file key of a vocabulary's tables of ``kind`` (hex).

    Parameters
    ----------
    token_len : buffer of int32, shape (n_ranks,)
        Each rank's token length in bytes (0: no token).
    token_bytes : buffer of uint8
        Every token's bytes, in rank order.
    *builders : str
        The paths of the modules that build the tables (their build tag starts the key).
    kind : {"pairs", "linear"}
        The kind of table.

    Raises
    ------
    OSError
        If a builder cannot be examined.
    KeyError
        If ``kind`` is not one of the two.
    """
    digest = hashlib.sha256(_MAGICS[kind])
    digest.update(f"{sys.byteorder}\0".encode())
    digest.update(token_len)
    digest.update(token_bytes)
    return f"{build_tag(builders)}-{digest.hexdigest()[:40]}"


def _path(kind: str, key: str) -> str:
    return os.path.join(cache_dir(), f"{kind}-{key}.bin")


def _digest(key: str, body) -> bytes:
    """The SHA-256 a file kept under ``key`` holds: of the key, then of its body (so a file
    of another key, renamed, is ignored as a damaged one is)."""
    digest = hashlib.sha256(f"{key}\0".encode())
    digest.update(body)
    return digest.digest()


def read_tables(kind: str, key: str, max_bytes: int) -> memoryview | None:
    """The body of the tables of ``kind`` kept under ``key`` (bytes, starting at an address
    that is a multiple of 8: the file is read into 8-byte words, so the tables may be read
    where they are), or None if there are none, the file is damaged or of another key (its
    digest does not match) or of another kind, or its body is empty or longer than
    ``max_bytes`` (more than this vocabulary's tables can take)."""
    magic = _MAGICS[kind]
    head = len(magic) + _DIGEST_BYTES
    with contextlib.suppress(OSError):
        with open(_path(kind, key), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not head < size <= head + max_bytes:
                return None
            words = array("Q", bytes(8)) * ((size + 7) // 8)
            data = memoryview(words).cast("B")[:size]
            n_read = f.readinto(data)
            note_use(f)
        body = data[head:]
        if n_read == size and data[: len(magic)] == magic and _digest(key, body) == data[len(magic) : head]:
            return body
    return None


def store_tables(kind: str, key: str, body) -> None:
    """Keep the buffer ``body`` as the body of the tables of ``kind`` under ``key``; nothing
    if the cache cannot be written.

    Raises
    ------
    ValueError
        If ``BPETRAIN_CACHE_MAX_BYTES`` is set to something the cache does not read
        (:func:`bpetrain._util.cache.write_entry`).
    """
    digest = _digest(key, body)
    with contextlib.suppress(OSError), write_entry(_path(kind, key)) as f:  # read back through its SHA-256
        f.write(_MAGICS[kind] + digest)
        f.write(body)


def read_pairs(key: str, max_slots: int) -> memoryview | None:
    """The pair table kept under ``key`` (its slots' bytes), or None (:func:`read_tables`;
    a table holds fewer than 2.5 slots per split of a token: more than ``max_slots`` cannot
    be this vocabulary's)."""
    return read_tables("pairs", key, 8 * max_slots)


def store_pairs(key: str, table) -> None:
    """Keep the pair table ``table`` (a buffer of its slots) under ``key`` (:func:`store_tables`)."""
    store_tables("pairs", key, table)
