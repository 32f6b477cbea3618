"""Reading files that may be damaged or hostile: bounded reads, UTF-8 text, JSON with a depth limit.

Every reader of a model, vocabulary or counts file goes through these, so a file that
is too large (or endless, such as ``/dev/zero``), not UTF-8, or JSON nested deeper
than :data:`MAX_JSON_DEPTH` is a ``ValueError`` naming the file, never a
``MemoryError`` or ``RecursionError``.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat

__all__ = [
    "MAX_JSON_DEPTH",
    "file_kind",
    "loads_json",
    "max_file_bytes",
    "open_unblocked",
    "read_bytes",
    "read_lines",
    "sha256_file",
    "too_large",
]

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


def file_kind(mode: int) -> str:
    """What a file with ``st_mode`` ``mode`` is, for messages: ``"a regular file"``,
    ``"a named pipe"``, ``"a socket"``, ``"a character device"``, ``"a block device"``,
    ``"a folder"`` or ``"a symbolic link"``."""
    kinds = {stat.S_IFREG: "a regular file", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket",
             stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFDIR: "a folder",
             stat.S_IFLNK: "a symbolic link"}
    return kinds.get(stat.S_IFMT(mode), "not a regular file")


def open_unblocked(path):
    """Open ``path`` for reading in binary without blocking in ``open``.

    ``open`` of a named pipe waits until something opens it for writing, forever if
    nothing does; opened with ``O_NONBLOCK`` it returns at once, and a pipe that nobody
    writes to then reads as empty (the flag is cleared after opening, so reads of a pipe
    that is written to wait for the data as usual).

    Returns
    -------
    file : io.BufferedReader
        The open file (the caller closes it).
    status : os.stat_result
        ``os.fstat`` of the open file: what was opened, whatever the path names now.

    Raises
    ------
    IsADirectoryError
        If ``path`` is a folder.
    OSError
        If it cannot be opened: missing, no permission, a socket (``ENXIO``), a
        symbolic link loop (``ELOOP``); the message names the path.
    """
    name = os.fspath(path)
    nonblocking = getattr(os, "O_NONBLOCK", 0)  # (Windows has no named pipes in the file system)
    flags = os.O_RDONLY | nonblocking | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(name, flags)
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if nonblocking:
            os.set_blocking(fd, True)
        f = open(fd, "rb")  # noqa: SIM115 (the caller closes it)
    except BaseException:
        os.close(fd)
        raise
    f.raw.name = name  # for messages (open(fd) names it by the number)
    return f, status


def too_large(name: str, limit: int, what: str) -> ValueError:
    """The error for a file ``name`` of more than ``limit`` bytes that should be ``what``."""
    return ValueError(
        f"{name}: larger than {limit} bytes, too large for {what} "
        "(set BPETRAIN_MAX_FILE_BYTES to a higher number of bytes to read it anyway)"
    )


def _bounded_blocks(path, what: str, block_bytes: int | None = None):
    """The bytes of ``path`` in blocks of ``block_bytes`` (None: a regular file in one
    block, anything else in 1 MB blocks), at most :func:`max_file_bytes` of them (see
    :func:`read_bytes`)."""
    limit = max_file_bytes()
    name = os.fspath(path)
    f, status = open_unblocked(path)
    with f:
        if stat.S_ISREG(status.st_mode) and status.st_size > limit:
            raise too_large(name, limit, what)  # refused before a byte is read
        # A regular file comes whole in the first read (its size, plus one byte to see the
        # end); a device or pipe in 1 MB reads. read(n) allocates n bytes first: never ask
        # for the whole cap.
        ask, n_bytes = block_bytes or status.st_size + 1, 0
        while n_bytes <= limit:
            chunk = f.read(min(max(ask, 1), limit + 1 - n_bytes))
            if not chunk:
                return
            n_bytes += len(chunk)
            if n_bytes > limit:
                break
            yield chunk
            ask = block_bytes or 1 << 20
    raise too_large(name, limit, what)


def read_bytes(path, what: str) -> bytes:
    """The whole content of ``path``, reading at most :func:`max_file_bytes` bytes.

    A regular file larger than the cap is refused before it is read; a named pipe or
    device is read up to the cap (a pipe nobody writes to reads as empty: it is opened
    with :func:`open_unblocked`, so this never waits for a writer).

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
    return b"".join(_bounded_blocks(path, what))


def sha256_file(path, what: str) -> str:
    """The SHA-256 of ``path`` (hex), read in blocks of at most 1 MB, under the cap of
    :func:`read_bytes` (a regular file over it is refused before it is read).

    Raises
    ------
    OSError, ValueError
        As :func:`read_bytes`.
    """
    digest = hashlib.sha256()
    for block in _bounded_blocks(path, what, 1 << 20):
        digest.update(block)
    return digest.hexdigest()


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
    import numpy as np  # only for deep JSON: reading a file does not import numpy

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
