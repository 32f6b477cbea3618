"""Reading files that may be damaged or hostile: bounded reads, UTF-8 text, JSON with a depth limit.

Every reader of a model, vocabulary or counts file goes through these, so a file that
is too large (or endless, such as ``/dev/zero``), not UTF-8, or JSON nested deeper
than :data:`MAX_JSON_DEPTH` is a ``ValueError`` naming the file, never a
``MemoryError`` or ``RecursionError``.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

__all__ = ["MAX_JSON_DEPTH", "loads_json", "max_file_bytes", "read_bytes", "read_lines"]

#: Default cap on the bytes of one model, vocabulary or counts file (1 GiB); the environment
#: variable ``BPETRAIN_MAX_FILE_BYTES`` raises (or lowers) it.
DEFAULT_MAX_FILE_BYTES = 1 << 30
#: The deepest nesting of JSON arrays and objects the readers accept (bpetrain's and Hugging
#: Face's files nest fewer than 10 levels; Python's parser recurses, and fails near 1000).
MAX_JSON_DEPTH = 100

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def max_file_bytes() -> int:
    """The size cap for one file: ``BPETRAIN_MAX_FILE_BYTES`` if set, else 1 GiB.

    Raises
    ------
    ValueError
        If the environment variable is not a positive integer.
    """
    value = os.environ.get("BPETRAIN_MAX_FILE_BYTES")
    if value is None:
        return DEFAULT_MAX_FILE_BYTES
    if not value.isdecimal() or int(value) == 0:
        raise ValueError(f"BPETRAIN_MAX_FILE_BYTES must be a positive number of bytes, got {value!r}")
    return int(value)


def read_bytes(path, what: str) -> bytes:
    """The whole content of ``path``, reading at most :func:`max_file_bytes` bytes.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        What the file should be ("a tiktoken rank file"), for the messages.

    Raises
    ------
    OSError
        If the file cannot be opened or read (``IsADirectoryError`` for a folder).
    ValueError
        If the file holds more than the cap (or never ends, as ``/dev/zero``): the
        message names the file and the environment variable that raises the cap.
    """
    limit = max_file_bytes()
    chunks, n_bytes = [], 0
    with open(path, "rb") as f:
        # A regular file comes whole in the first read (its size, plus one byte to see the
        # end); a device or pipe in 1 MB reads. read(n) allocates n bytes first: never ask
        # for the whole cap.
        ask = os.fstat(f.fileno()).st_size + 1
        while n_bytes <= limit:
            chunk = f.read(min(max(ask, 1), limit + 1 - n_bytes))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            n_bytes += len(chunk)
            ask = 1 << 20
    raise ValueError(
        f"{os.fspath(path)}: larger than {limit} bytes, too large for {what} "
        "(set BPETRAIN_MAX_FILE_BYTES to a higher number of bytes to read it anyway)"
    )


def read_lines(path, what: str) -> list[str]:
    """The lines of a UTF-8 text file (bounded by :func:`read_bytes`), split at ``\\n``
    (a final newline gives a last ``""``).

    Raises
    ------
    ValueError
        If the file is not UTF-8, saying it is not ``what``; or too large.
    """
    return decode_utf8(read_bytes(path, what), os.fspath(path), what).split("\n")


def decode_utf8(data: bytes, name: str, what: str) -> str:
    """``data`` as UTF-8 text; ``ValueError`` naming the file ``name`` and the byte offset otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not {what} (not UTF-8 text at byte {exc.start}: {exc.reason})") from None


def json_depth(data: bytes) -> tuple[int, int]:
    """The deepest nesting of ``[``/``{`` in JSON ``data`` outside strings, and the byte
    offset (in ``data`` with its strings emptied) where it is first reached.

    Without more than :data:`MAX_JSON_DEPTH` opening brackets in all the depth is not
    worked out (returned as 0); otherwise 1 MB at a time, in bounded memory.
    """
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return 0, 0
    skeleton = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    deepest, deepest_at, depth = 0, 0, 0
    for start in range(0, len(skeleton), 1 << 20):
        part = skeleton[start : start + (1 << 20)]
        steps = ((part == ord("[")) | (part == ord("{"))).astype(np.int64)
        steps -= (part == ord("]")) | (part == ord("}"))
        running = depth + np.cumsum(steps)
        at = int(np.argmax(running))
        if running[at] > deepest:
            deepest, deepest_at = int(running[at]), start + at
        depth = int(running[-1])
    return deepest, deepest_at


def loads_json(data: bytes | str, name: str, *, object_pairs_hook=None):
    """Parse JSON from a file named ``name``, refusing nesting deeper than :data:`MAX_JSON_DEPTH`.

    Raises
    ------
    ValueError
        If the text is not UTF-8 JSON (naming the file and line) or nests too deeply.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth, at = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(
            f"{name}: JSON nested {depth} levels deep (near byte {at}); bpetrain reads at most {MAX_JSON_DEPTH}"
        )
    text = decode_utf8(raw, name, "JSON") if isinstance(data, bytes) else data
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ValueError(f"{name}: JSON nested too deeply to parse") from None
