"""The encoder's pair table of a large vocabulary, kept on disk between processes.

Building the pair table (every split of every token into two tokens,
:mod:`bpetrain.encoding._tables`) is most of the cost of an :class:`~bpetrain.Encoding` of
``cl100k_base`` or ``o200k_base``; reading it back costs a tenth. The table is kept in the
cache folder (:mod:`bpetrain._util.cache`, which bounds its size) as ``pairs-<key>.bin``:

- the key is the build tag of what built it (:func:`bpetrain._util.cache.build_tag` of the
  compiled ``_tables`` module: its path, size and modification time) and the SHA-256 of the
  vocabulary (each rank's token length and all token bytes in rank order, which fix the
  table) and the byte order: another vocabulary, or a rebuilt encoder, never reads it, and
  the cache's trim removes the tables of a build that is no longer installed;
- the file is :data:`MAGIC`, the SHA-256 of the table, and the table (the ``uint64``
  slots, native byte order); a file whose table does not hash to its digest (cut short,
  overwritten, bit rot) is ignored and the table is built and written again, so a damaged
  file never gives a wrong id;
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

from bpetrain._util.cache import build_tag, cache_dir, note_use, write_entry

__all__ = ["MAGIC", "MIN_SPLITS", "read_pairs", "store_pairs", "vocabulary_key"]

#: The first bytes of a kept pair table (the format's version: change it with the layout).
MAGIC = b"bpetrain pair table v1\n\0"
#: Token splits from which a vocabulary's pair table is kept (cl100k_base has about 10**6).
MIN_SPLITS = 1 << 16
_DIGEST_BYTES = 32


def vocabulary_key(token_len, token_bytes, builder: str) -> str:
    """The file key of a vocabulary's pair table (hex).

    Parameters
    ----------
    token_len : buffer of int32, shape (n_ranks,)
        Each rank's token length in bytes (0: no token).
    token_bytes : buffer of uint8
        Every token's bytes, in rank order.
    builder : str
        The path of the module that builds the table (its build tag starts the key).

    Raises
    ------
    OSError
        If ``builder`` cannot be examined.
    """
    digest = hashlib.sha256(MAGIC)
    digest.update(f"{sys.byteorder}\0".encode())
    digest.update(token_len)
    digest.update(token_bytes)
    return f"{build_tag([builder])}-{digest.hexdigest()[:40]}"


def _path(key: str) -> str:
    return os.path.join(cache_dir(), f"pairs-{key}.bin")


def read_pairs(key: str, max_slots: int) -> memoryview | None:
    """The table kept under ``key`` (its slots' bytes), or None if there is none, it is
    damaged (its digest does not match) or it has more than ``max_slots`` slots (a table
    holds fewer than 2.5 slots per split of a token: more cannot be this vocabulary's)."""
    head = len(MAGIC) + _DIGEST_BYTES
    with contextlib.suppress(OSError):
        with open(_path(key), "rb") as f:
            data = f.read(head + 8 * max_slots + 1)
            note_use(f)
        body = memoryview(data)[head:]
        if (data.startswith(MAGIC) and 0 < len(body) <= 8 * max_slots
                and hashlib.sha256(body).digest() == data[len(MAGIC) : head]):
            return body
    return None


def store_pairs(key: str, table) -> None:
    """Keep ``table`` (a buffer of the table's slots) under ``key``; nothing if the cache
    cannot be written.

    Raises
    ------
    ValueError
        If ``BPETRAIN_CACHE_MAX_BYTES`` is set to something the cache does not read
        (:func:`bpetrain._util.cache.write_entry`).
    """
    with contextlib.suppress(OSError), write_entry(_path(key)) as f:  # read back through its SHA-256
        f.write(MAGIC + hashlib.sha256(table).digest())
        f.write(table)
