"""Corpus inputs: which files, how to open them, and how to read them as text or records.

A corpus is named by paths, directories (every file below, sorted, hidden ones skipped),
glob patterns, or ``-`` for standard input. Each file is read as bytes, decompressed by
its suffix (``.gz`` with :mod:`gzip`, ``.xz`` with :mod:`lzma`, ``.zst`` with the
``zstandard`` package), and parsed by its format: plain text, JSON Lines (one record a
line, the text in a field) or Parquet (the text in a column; needs ``pyarrow``).

A name with a protocol (``s3://bucket/dir``, ``gs://...``, ``hf://datasets/...``,
``file://...``, ``memory://...``) is read with :mod:`fsspec`, as Dask reads remote
files; the backends for cloud stores (``s3fs``, ``gcsfs``, ``huggingface_hub``) are
installed by the user who needs them.

Only regular files are read below a directory or through a glob: a named pipe, socket,
device or broken symbolic link there is left out with a warning naming it, and nothing
is opened that could wait (a pipe is never opened there). A named pipe or device named
itself (``<(zcat corpus.gz)``, ``/dev/stdin``) is read as a stream, as ``-`` is.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import glob
import gzip
import io
import lzma
import os
import stat
import sys
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import orjson

from bpetrain._util.read import file_kind, open_unblocked
from bpetrain.splitting.pattern import encode_utf8

__all__ = [
    "INPUT_FORMATS",
    "InputChangedWarning",
    "SkippedInputWarning",
    "Source",
    "expand_inputs",
    "join_documents",
    "read_blocks",
    "read_range",
    "read_records",
    "standard_input",
    "warn_changed",
]

#: Input formats; ``auto`` picks one from the file name.
INPUT_FORMATS = ("auto", "text", "jsonl", "parquet")
COMPRESSIONS = {".gz": "gzip", ".xz": "xz", ".zst": "zstd"}
JSONL_SUFFIXES = (".jsonl", ".ndjson")
BLOCK_BYTES = 1 << 20  # bytes read at a time (1 MB: counting threads keep a block in cache and share the work evenly)


@dataclass(frozen=True)
class Source:
    """One input: a path (or ``-`` for standard input), its format and compression.

    Attributes
    ----------
    path : str
        A local path or an fsspec URL (``s3://bucket/key``).
    format : str
        ``text``, ``jsonl`` or ``parquet``.
    compression : str or None
        ``gzip``, ``xz``, ``zstd`` or None.
    size : int or None
        Bytes on disk when the inputs were listed, for progress bars and count tasks;
        None for a stream: standard input, or a named pipe or device.
    """

    path: str
    format: str
    compression: str | None
    size: int | None


def expand_inputs(
    inputs: Iterable[str | os.PathLike], input_format: str = "auto", *, skip_unreadable: bool = False
) -> list[Source]:
    """Resolve paths, directories, globs and ``-`` into a list of :class:`Source`.

    In a directory, files that look binary (a NUL byte in their first 8 KB, as ``grep``
    and ``git`` judge it; ``.npz`` counts files, ``.so`` libraries, images) are left out with a
    :class:`SkippedInputWarning` naming them, unless their name says a compression or
    Parquet, or ``input_format`` is given; name such a file directly to read it as text.
    In a directory or a glob's matches, what is not a regular file (a named pipe, socket,
    device, a symbolic link that is broken or loops) is left out with a
    :class:`SkippedInputWarning` naming it, before anything is opened. A named pipe or
    device named itself is a stream (read to its end, like ``-``; size None).

    Parameters
    ----------
    inputs : path, or iterable of paths, directories, globs and ``-``
    input_format : {"auto", "text", "jsonl", "parquet"}
    skip_unreadable : bool
        Leave out folders and files below a directory that cannot be read, with a
        :class:`SkippedInputWarning` naming each, instead of raising.

    Raises
    ------
    FileNotFoundError
        If a path does not exist (a symbolic link that is broken or loops included) or a
        glob matches nothing (all are checked before any file is read).
    PermissionError
        If a file named cannot be read, or a folder or file below a directory (and not
        ``skip_unreadable``).
    ValueError
        If ``input_format`` is unknown, ``-`` is given twice or as Parquet, or standard
        input is closed, or a path names a socket.
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {', '.join(INPUT_FORMATS)}, got {input_format!r}")
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    paths: list[str] = []
    missing: list[str] = []
    for item in inputs:
        name = os.fspath(item)
        if name == "-":
            if "-" in paths:
                raise ValueError("standard input ('-') can be read only once")
            standard_input()  # closed (<&-): say so now, not after the other inputs
            paths.append(name)
        elif is_url(name):
            found = _expand_url(name)
            if not found:
                missing.append(name)
            paths.extend(found)
        elif os.path.isdir(name):
            paths.extend(_walk(name, skip_unreadable=skip_unreadable, sniff=input_format == "auto"))
        elif os.path.exists(name):
            _check_named(name)
            paths.append(name)
        elif glob.has_magic(name):
            matches = sorted(p for p in glob.glob(name, recursive=True) if not os.path.isdir(p))
            matches = _regular_files(matches, f"matching {name}")
            if not matches:
                missing.append(f"{name} (no file matches this pattern)")
            paths.extend(matches)
        else:
            missing.append(name + _broken_link(name))
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise FileNotFoundError(f"no such file: {missing[0]}{more}")
    return [_source(p, input_format) for p in paths]


def standard_input():
    """``sys.stdin``'s binary stream.

    Raises
    ------
    ValueError
        If standard input is closed (``<&-``: ``sys.stdin`` is None).
    """
    if sys.stdin is None:
        raise ValueError("standard input ('-') is closed: give FILEs, or redirect input (< FILE or a pipe)")
    return sys.stdin.buffer


def _check_named(name: str) -> None:
    """Refuse a path named as an input that cannot be read: a socket, or no permission."""
    mode = os.stat(name).st_mode
    if stat.S_ISSOCK(mode):
        raise ValueError(f"{name} is a socket: inputs are files, pipes or devices (save what it sends to a file)")
    if not os.access(name, os.R_OK):
        raise PermissionError(errno.EACCES, f"cannot read the input {name} (no permission): fix its permissions", name)


def _broken_link(name: str) -> str:
    """`` (a symbolic link ...)`` if ``name`` is a broken or looping symbolic link, else ``""``."""
    if not os.path.islink(name):
        return ""
    try:
        os.stat(name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return " (a symbolic link loop)"
    return f" (a symbolic link to {os.readlink(name)}, which does not exist)"


def _regular_files(paths: list[str], where: str) -> list[str]:
    """The regular files among ``paths`` (symbolic links followed); the rest are left out
    with a :class:`SkippedInputWarning` naming each and what it is. Nothing is opened."""
    found, other = [], []
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            other.append(f"{path}{_broken_link(path) or ' (gone)'}")
            continue
        if stat.S_ISREG(mode):
            found.append(path)
        elif not stat.S_ISDIR(mode):
            other.append(f"{path} ({file_kind(mode)})")
    if other:
        warnings.warn(
            f"left out {len(other)} input(s) {where} that are not regular files: {', '.join(other)} "
            "(name a pipe or device itself to read it as a stream)",
            SkippedInputWarning, stacklevel=4,
        )
    return found


def is_url(name: str) -> bool:
    """Whether ``name`` names a file through fsspec (``protocol://...``)."""
    return "://" in name


def _expand_url(url: str) -> list[str]:
    """The files an fsspec URL names (a file, every file below a directory, or a glob), sorted."""
    import fsspec  # imported when needed: local paths do not need it

    fs, path = fsspec.core.url_to_fs(url)
    if fs.isdir(path):
        found = [p for p in fs.find(path) if not any(part.startswith(".") for part in p[len(path):].split("/"))]
    elif fs.exists(path):
        found = [path]
    elif glob.has_magic(path):
        found = [p for p in fs.glob(path) if fs.isfile(p)]
    else:
        return []
    return sorted(fs.unstrip_protocol(p) for p in found)


def _open_raw(source: Source):
    """The source's bytes as a binary stream (local path or fsspec URL; caller closes it).

    A stream (a pipe or device named as an input) is opened as ``cat`` opens it, waiting
    for a pipe's writer; a file listed as a regular file is opened without waiting and
    must still be one.

    Raises
    ------
    ValueError
        If a file listed as a regular file is now a pipe or device.
    """
    if is_url(source.path):
        import fsspec

        return fsspec.open(source.path, "rb").open()
    if source.size is None:
        return open(source.path, "rb")
    f, status = open_unblocked(source.path)
    if not stat.S_ISREG(status.st_mode):
        f.close()
        raise ValueError(f"{source.path} was a regular file when the inputs were listed, and is now "
                         f"{file_kind(status.st_mode)}")
    return f


def _size(path: str) -> int | None:
    """Bytes in the file at ``path`` (None for a pipe or device)."""
    if is_url(path):
        import fsspec

        fs, inner = fsspec.core.url_to_fs(path)
        return fs.size(inner)
    status = os.stat(path)
    return status.st_size if stat.S_ISREG(status.st_mode) else None


class SkippedInputWarning(UserWarning):
    """A file or folder below an input directory was left out (binary, or unreadable with ``skip_unreadable``)."""


def _walk(root: str, *, skip_unreadable: bool, sniff: bool) -> list[str]:
    """The files below ``root`` (sorted, hidden ones skipped), checked as :func:`expand_inputs` says."""
    found, skipped, binary = [], [], []

    def unreadable(exc: OSError) -> None:
        if not skip_unreadable:
            raise PermissionError(
                exc.errno, f"cannot read the folder {exc.filename} below the input {root} ({exc.strerror}); "
                "fix its permissions, or pass --skip-unreadable (skip_unreadable=True) to leave it out"
            )
        skipped.append(exc.filename)

    candidates = []
    for folder, dirs, files in os.walk(root, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        candidates.extend(os.path.join(folder, name) for name in sorted(files) if not name.startswith("."))
    for path in _regular_files(candidates, f"below {root}"):
        try:
            if _looks_binary(path) and sniff:
                binary.append(path)
                continue
        except OSError as exc:
            exc.filename = exc.filename or path
            unreadable(exc)
            continue
        found.append(path)
    if skipped:
        warnings.warn(
            f"left out {len(skipped)} unreadable file(s) or folder(s) below {root}: {', '.join(skipped)}",
            SkippedInputWarning, stacklevel=3,
        )
    if binary:
        warnings.warn(
            f"left out {len(binary)} binary file(s) below {root}: {', '.join(binary)} "
            "(name a file directly, or pass --input-format text, to read it as text)",
            SkippedInputWarning, stacklevel=3,
        )
    return found


def _looks_binary(path: str) -> bool:
    """Whether a file to be read as plain text has a NUL byte in its first 8 KB (``grep``'s
    test); compressed, JSON Lines and Parquet files are not (their readers check them).
    Opening it also checks it can be read; it is opened without waiting
    (:func:`bpetrain._util.read.open_unblocked`), in case it was replaced by a pipe.

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    f, status = open_unblocked(path)
    with f:
        head = f.read(8192) if stat.S_ISREG(status.st_mode) else b""
    return b"\0" in head and not path.lower().endswith((*COMPRESSIONS, *JSONL_SUFFIXES, ".parquet"))


def _source(path: str, input_format: str) -> Source:
    stem, suffix = os.path.splitext(path.lower())
    compression = COMPRESSIONS.get(suffix)
    if compression is None:
        stem = path.lower()
    fmt = input_format
    if fmt == "auto":
        if stem.endswith(JSONL_SUFFIXES):
            fmt = "jsonl"
        elif stem.endswith(".parquet"):
            fmt = "parquet"
        else:
            fmt = "text"
    if path == "-":
        if fmt == "parquet":
            raise ValueError("Parquet cannot be read from standard input; give the file's path")
        return Source(path, fmt, None, None)
    if fmt == "parquet" and compression:
        raise ValueError(f"{path}: Parquet files carry their own compression; decompress the file first")
    size = _size(path)
    if size is None and fmt == "parquet":
        raise ValueError(f"{path}: Parquet is read from offsets, which a pipe or device does not have; "
                         "save it to a file first")
    return Source(path, fmt, compression, size)


class InputChangedWarning(UserWarning):
    """A local file's size changed between listing the inputs and the end of counting:
    the counts hold the file as it was read."""


def warn_changed(sources: Iterable[Source], *, stacklevel: int = 2) -> None:
    """Warn (:class:`InputChangedWarning`) naming each local file whose size now differs
    from its size when the inputs were listed (``Source.size``).

    Counting reads every file to its end as it is when read, whether it grew or shrank
    since it was listed; a file being written while it is counted may be counted up to
    any point of the writing, which this warning reports. fsspec URLs are not checked
    (it would cost a request per file).
    """
    changed = []
    for source in sources:
        if source.size is None or is_url(source.path):
            continue
        try:
            now = _size(source.path)
        except OSError:
            now = None
        if now != source.size:
            shown = "gone" if now is None else f"{now:,} bytes"
            changed.append(f"{source.path} ({source.size:,} bytes when the inputs were listed, {shown} after counting)")
    if changed:
        warnings.warn(
            f"{len(changed)} input(s) changed while they were counted: {', '.join(changed)}; the counts hold each "
            "file as it was read, to its end at that moment (count files that nothing writes to for exact counts)",
            InputChangedWarning, stacklevel=stacklevel + 1,
        )


class _Counted(io.RawIOBase):
    """A binary file that reports the bytes read from it (the compressed bytes)."""

    def __init__(self, raw, progress, *, owns_raw: bool):
        self._raw = raw
        self._progress = progress
        self._owns_raw = owns_raw

    def close(self) -> None:
        if not self.closed and self._owns_raw:
            self._raw.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)  # bytes read from the file itself (compressed or not)
        if n:
            self._progress(n)
        return n


def _open(source: Source, progress):
    """The source's decompressed bytes as a binary stream (caller closes it)."""
    raw = standard_input() if source.path == "-" else _open_raw(source)
    counted = io.BufferedReader(_Counted(raw, progress, owns_raw=source.path != "-"), buffer_size=1 << 20)
    if source.compression == "gzip":
        return gzip.GzipFile(fileobj=counted, mode="rb")
    if source.compression == "xz":
        return lzma.LZMAFile(counted, "rb")
    if source.compression == "zstd":
        import zstandard  # imported when needed: it is not needed otherwise

        reader = zstandard.ZstdDecompressor().stream_reader(counted, read_across_frames=True, closefd=True)
        return io.BufferedReader(reader, buffer_size=1 << 20)  # for readline()
    return counted


@functools.cache
def _decompression_errors() -> tuple:
    import zstandard

    return (gzip.BadGzipFile, EOFError, lzma.LZMAError, zlib.error, zstandard.ZstdError)


def _checked_read(source: Source, read, *args):
    """``read(*args)`` on a source's stream; corrupt compressed data becomes a ValueError
    that names the file."""
    try:
        return read(*args)
    except _decompression_errors() as exc:
        raise ValueError(f"{source.path}: corrupt or truncated {source.compression} data ({exc})") from None


def read_blocks(source: Source, progress=lambda n: None, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The bytes of a text source, ``block_bytes`` at a time (the last block may be shorter).

    Raises
    ------
    ValueError
        If the compressed data is corrupt or truncated (the message names the file).
    """
    with _open(source, progress) as stream:
        while True:
            block = _checked_read(source, stream.read, block_bytes)
            if not block:
                return
            yield block


def read_range(source: Source, start: int, stop: int | None, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Bytes ``start:stop`` of an uncompressed file (fewer at the end of the file; ``stop``
    None: to the end of the file as it is when read), ``block_bytes`` at a time, from one
    open file.

    Raises
    ------
    ValueError
        If the source is compressed (its bytes cannot be read from an offset).
    """
    if source.compression is not None:
        raise ValueError(f"{source.path}: a {source.compression} file is read whole, not from an offset")
    with _open_raw(source) as f:
        f.seek(start)
        while stop is None or start < stop:
            block = f.read(block_bytes if stop is None else min(block_bytes, stop - start))
            if not block:
                return
            start += len(block)
            yield block


def read_records(
    source: Source, *, text_field: str = "text", progress=lambda n: None
) -> Iterator[tuple[bytes, np.ndarray]]:
    """The documents of a JSON Lines or Parquet source, in batches.

    Yields
    ------
    data : bytes
        The UTF-8 text of a batch of documents, concatenated.
    bounds : numpy.ndarray of int64, shape (n_documents + 1,)
        Document ``i`` is ``data[bounds[i]:bounds[i + 1]]``.

    Raises
    ------
    ValueError
        If a JSON line is not valid JSON, not an object, lacks ``text_field`` or holds a
        non-string there (the message names the file and line), if the Parquet file has no
        string column ``text_field``, or the data is corrupt.
    """
    if source.format == "parquet":
        yield from _parquet_batches(source, text_field, progress)
    else:
        yield from _jsonl_batches(source, text_field, progress)


def _jsonl_batches(source: Source, field: str, progress) -> Iterator[tuple[bytes, np.ndarray]]:
    batch: list[bytes] = []
    size = 0
    with _open(source, progress) as stream:
        lineno = 0
        while True:
            line = _checked_read(source, stream.readline)
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except ValueError as exc:  # orjson.JSONDecodeError (also for nesting deeper than 1024)
                raise ValueError(f"{source.path}:{lineno}: not a JSON line ({exc})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{source.path}:{lineno}: expected a JSON object, got {type(record).__name__}")  # noqa: TRY004 (bad data in a file, not a bad argument)
            if field not in record:
                raise ValueError(
                    f"{source.path}:{lineno}: the record has no field {field!r} (it has {', '.join(map(repr, record)) or 'none'}); "
                    "name the text field with --text-field"
                )
            text = record[field]
            if not isinstance(text, str):
                raise ValueError(f"{source.path}:{lineno}: field {field!r} holds {type(text).__name__}, not text")  # noqa: TRY004
            try:
                data = encode_utf8(text)
            except ValueError as exc:
                raise ValueError(f"{source.path}:{lineno}: {exc}") from None
            batch.append(data)
            size += len(data)
            if size >= BLOCK_BYTES:
                yield join_documents(batch)
                batch, size = [], 0
    if batch:
        yield join_documents(batch)


def join_documents(documents: list[bytes]) -> tuple[bytes, np.ndarray]:
    """Documents as one buffer and their bounds, the input of
    :meth:`bpetrain.counting.counts.PieceCounter.count_documents`.

    Returns
    -------
    data : bytes
        The documents, concatenated.
    bounds : numpy.ndarray of int64, shape (n_documents + 1,)
        Document ``i`` is ``data[bounds[i]:bounds[i + 1]]``.
    """
    bounds = np.zeros(len(documents) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, documents), dtype=np.int64, count=len(documents)), out=bounds[1:])
    return b"".join(documents), bounds


def _parquet_batches(source: Source, column: str, progress) -> Iterator[tuple[bytes, np.ndarray]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{source.path}: reading Parquet needs pyarrow: pip install 'bpetrain[parquet]'") from None
    with _open_raw(source) if is_url(source.path) else contextlib.nullcontext(source.path) as file:
        yield from _parquet_file_batches(source, file, column, pa, pq)
    progress(source.size or 0)


def _parquet_file_batches(source: Source, file, column: str, pa, pq) -> Iterator[tuple[bytes, np.ndarray]]:
    try:
        parquet = pq.ParquetFile(file)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{source.path}: not a readable Parquet file ({exc})") from None
    schema = parquet.schema_arrow
    if column not in schema.names:
        raise ValueError(
            f"{source.path}: no column {column!r} (columns: {', '.join(schema.names)}); name it with --text-field"
        )
    kind = schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise ValueError(f"{source.path}: column {column!r} holds {kind}, not strings")
    try:
        for batch in parquet.iter_batches(columns=[column], batch_size=65536):
            array = batch.column(0).cast(pa.large_string())
            valid = array.filter(array.is_valid())
            offsets = np.frombuffer(valid.buffers()[1], dtype=np.int64)[valid.offset : valid.offset + len(valid) + 1]
            data = valid.buffers()[2]
            data = b"" if data is None else memoryview(data)[offsets[0] : offsets[-1]].tobytes()
            yield data, offsets - offsets[0]
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{source.path}: corrupt Parquet data ({exc})") from None
