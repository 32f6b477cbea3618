"""Character sets as the ``regex`` module reads them, over every code point, cached on disk.

The compiled matchers (:mod:`bpetrain.splitting._compiler` for any pattern,
:mod:`bpetrain.splitting._blocks` for the named ones) decide which characters a class such as
``\\p{L}`` or ``(?i:s)`` matches by asking the installed ``regex`` module over all
1,114,112 code points, so membership and the Unicode version are the ``regex``
module's (:mod:`bpetrain.splitting.unicode` derives the sets of another Unicode version from
them). That takes 20-60 ms a set (a quarter of a second for the named patterns'
tables), so each answer is kept in a small file (the packed bits, zlib-compressed,
~1-5 KB) under the cache folder: ``$BPETRAIN_CACHE_DIR``, else
``$XDG_CACHE_HOME/bpetrain``, else ``~/.cache/bpetrain``. The file name is a hash of the
``regex`` version, the set and its flags, so a new ``regex`` release (new Unicode data)
never reads an old answer. A cache that cannot be read or written is ignored: the set
is computed again (a damaged file fails zlib's checksum or the length check).

Compiled split patterns are kept the same way (:func:`read_arrays`, :func:`store_arrays`:
the program's arrays, ``arrays-*.bin``), keyed by their caller on what made them.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import zlib
from typing import TYPE_CHECKING

import regex

from bpetrain._util.atomic import atomic_write

if TYPE_CHECKING:
    import numpy as np

__all__ = ["N_CODE_POINTS", "cache_dir", "cached", "members", "read_arrays", "store_arrays"]

N_CODE_POINTS = 0x110000
_PACKED_BYTES = N_CODE_POINTS // 8
_FORMAT = "charset v1"


def cache_dir() -> str:
    """The folder the sets are cached in (see the module docstring); it may not exist yet."""
    if os.environ.get("BPETRAIN_CACHE_DIR"):
        return os.environ["BPETRAIN_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bpetrain")


@functools.lru_cache(maxsize=256)
def members(source: str, flags: str) -> bytes:
    """The code points the one-character regex ``source`` matches under ``flags``.

    Parameters
    ----------
    source : str
        One character set in ``regex`` syntax: ``\\p{L}``, ``[^\\s\\p{L}]``, ``s``, ``.``.
    flags : str
        Scoped flags (``"i"``, ``"s"``, ``"is"`` or ``""``).

    Returns
    -------
    bytes, length 139,264
        ``numpy.packbits`` of a bool per code point U+0000..U+10FFFF (big-endian bit order).
    """
    return cached(f"{flags}\0{source}", lambda: compute_members(source, flags))


def cached(key: str, compute) -> bytes:
    """The packed set ``compute()`` gives (bytes, length 139,264), kept on disk under ``key``
    and the ``regex`` version (the module docstring says where and how)."""
    key = hashlib.sha256(f"{_FORMAT}\0{regex.__version__}\0{key}".encode()).hexdigest()[:32]
    path = os.path.join(cache_dir(), f"charset-{key}.bits")
    with contextlib.suppress(OSError, zlib.error):
        with open(path, "rb") as f:
            packed = zlib.decompress(f.read(1 << 20))
        if len(packed) == _PACKED_BYTES:
            return packed
    packed = compute()
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_write(path, "wb") as f:
            f.write(zlib.compress(packed, 6))
    return packed


#: The numpy dtypes :func:`read_arrays` reads (``dtype.str`` without the byte order) as the
#: ``struct`` formats of the memoryviews it gives, and their sizes in bytes.
_FORMATS = {"u1": ("B", 1), "i1": ("b", 1), "b1": ("?", 1), "u2": ("H", 2), "i2": ("h", 2),
            "u4": ("I", 4), "i4": ("i", 4), "u8": ("Q", 8), "i8": ("q", 8)}
_NATIVE = "<" if sys.byteorder == "little" else ">"


def read_arrays(key: str) -> dict[str, memoryview] | None:
    """The arrays :func:`store_arrays` kept under ``key`` and the ``regex`` version, or
    None if there are none or they do not read back whole (zlib's checksum, the lengths).

    Returns
    -------
    dict of memoryview
        Name -> a writable, C-contiguous memoryview with the array's shape and its dtype as
        a ``struct`` format (int64 ``"q"``, uint16 ``"H"``, bool ``"?"``...); ``numpy.asarray``
        gives the array (an empty one of shape (0,): a memoryview has no zeros in its
        shape). Not numpy arrays, so that reading a compiled pattern at start-up does not
        import numpy. Arrays of another byte order or dtype are not read (None).
    """
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError, zlib.error):
        with open(_arrays_path(key), "rb") as f:
            data = zlib.decompress(f.read(1 << 26))
        header, _, body = data.partition(b"\n")
        body = memoryview(bytearray(body))
        arrays, offset = {}, 0
        for name, dtype, shape in json.loads(header):
            if dtype[0] not in ("|", _NATIVE) or not all(isinstance(n, int) and n >= 0 for n in shape):
                return None
            form, itemsize = _FORMATS[dtype[1:]]
            size = itemsize * functools.reduce(int.__mul__, shape, 1)
            if offset + size > len(body):
                return None
            arrays[name] = body[offset : offset + size].cast(form, shape) if size else body[:0].cast(form)
            offset += size
        if offset == len(body):
            return arrays
    return None


def store_arrays(key: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep ``arrays`` (name -> numpy array) on disk under ``key``, as :func:`cached` keeps a
    set: zlib-compressed, a JSON line of each array's name, dtype and shape, then their
    bytes; nothing if the cache cannot be written."""
    import numpy as np

    header = json.dumps([[name, a.dtype.str, list(a.shape)] for name, a in arrays.items()]).encode()
    body = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    with contextlib.suppress(OSError):
        path = _arrays_path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_write(path, "wb") as f:
            f.write(zlib.compress(header + b"\n" + body, 6))


def _arrays_path(key: str) -> str:
    key = hashlib.sha256(f"{_FORMAT}\0{regex.__version__}\0arrays\0{key}".encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), f"arrays-{key}.bin")


def compute_members(source: str, flags: str) -> bytes:
    """:func:`members` without the cache: ask the ``regex`` module."""
    import numpy as np

    prefix = f"(?{flags}:" if flags else "(?:"
    member = np.zeros(N_CODE_POINTS + 1, dtype=np.int8)
    for m in regex.finditer(prefix + source + ")+", _every_code_point()):
        member[m.start()] += 1
        member[m.end()] -= 1
    return np.packbits(np.cumsum(member[:-1], dtype=np.int8).astype(bool)).tobytes()


@functools.cache
def _every_code_point() -> str:
    """Every code point, U+0000..U+10FFFF, surrogates included, in one str."""
    import numpy as np

    return np.arange(N_CODE_POINTS, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
