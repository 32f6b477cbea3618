"""Atomic file writes: one file, or files that must be replaced together.

One file is written to a temporary name beside the target, flushed to disk, then renamed
over it (:func:`atomic_write`). A file that must not be read with an older or newer
partner (a tiktoken rank file and its sidecar, GPT-2's ``vocab.json`` and ``merges.txt``)
is replaced with :func:`replace_together`: the parts go to pending names, then one
commit file records each part's length and SHA-256 and is renamed into place (the one
step that switches from the old artifact to the new), then the parts are renamed. A
reader checks each part against the commit file's record (:func:`read_recorded`) and,
after an interruption between the commit and the last rename, reads the pending part
the record names; so the old or the new artifact is read whole, never a mix.

Temporary files left by an interrupted write (``.NAME.xxxxxxxx.tmp``) are removed by the
next write to the same target, which lists the folder to find them; the cache's writes skip
that (``leftovers=False``) and leave them to the cache's trim
(:func:`bpetrain._util.cache.trim`), since its folder may hold tens of thousands of files.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping

from bpetrain._util.read import read_bytes

__all__ = ["atomic_write", "file_record", "pending_path", "read_recorded", "replace_together"]


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", *, durable: bool = True, leftovers: bool = True, **open_kwargs):
    """Open a temporary file next to ``path``; on success rename it to ``path``.

    If the block raises, the temporary file is removed and ``path`` is left as it was,
    so no partial file ever looks complete: the temporary file is named
    ``.NAME.xxxxxxxx.tmp`` (hidden, and not ``NAME``) until the rename. ``leftovers``: first
    remove the temporary files an earlier, interrupted write to ``path`` left behind (this
    lists the folder: a cost that grows with the files in it). ``durable``: flush the file
    to disk (``fsync``) before the rename, so that it is whole after a power loss; a cache
    whose reader checks what it reads (a checksum) may skip that wait.

    Raises
    ------
    OSError
        If the folder cannot be written (the message names ``path``).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    prefix = f".{os.path.basename(path)}."
    if leftovers:
        remove_leftovers(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if exc.filename is None and exc.errno is not None:
            raise type(exc)(exc.errno, f"cannot write {path}: {exc.strerror}") from None
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_leftovers(path) -> None:
    """Remove the temporary files (``.NAME.xxxx.tmp``) that interrupted writes to ``path`` left."""
    directory, name = os.path.split(os.path.abspath(path))
    for leftover in glob.glob(os.path.join(glob.escape(directory), glob.escape(f".{name}.") + "*.tmp")):
        with contextlib.suppress(OSError):
            os.unlink(leftover)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_record(data: bytes) -> dict:
    """What a commit file records of a part: ``{"n_bytes": len(data), "sha256": hex digest}``."""
    return {"n_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def pending_path(path) -> str:
    """Where :func:`replace_together` puts a part before the commit: ``DIR/.NAME.pending``."""
    directory, name = os.path.split(os.fspath(path))
    return os.path.join(directory, f".{name}.pending")


def replace_together(parts: Mapping[str, bytes], commit: str, commit_data: bytes) -> None:
    """Replace the files ``parts`` (path -> content) and the commit file as one artifact.

    ``commit_data`` must record :func:`file_record` of each part, so that
    :func:`read_recorded` can tell which content belongs to it. The steps: each part to
    its :func:`pending_path`; the commit file (atomically: from here on readers see the
    new artifact); each pending part renamed to its path.
    """
    for path, data in parts.items():
        remove_leftovers(path)
        with atomic_write(pending_path(path), "wb") as f:
            f.write(data)
    with atomic_write(commit, "wb") as f:
        f.write(commit_data)
    for path in parts:
        os.replace(pending_path(path), path)
    for directory in {os.path.dirname(os.path.abspath(p)) for p in [*parts, commit]}:
        _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    if os.name == "nt":  # Windows opens no folder as a file (PermissionError); a rename there is its own record
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_recorded(path, record, commit: str, what: str) -> bytes:
    """The content of the part ``path`` that matches ``record`` (from the commit file ``commit``).

    ``path`` itself when it matches, else its pending copy (an export interrupted after
    its commit); ``record`` None (a commit file written before records existed) accepts
    ``path`` as it is.

    Raises
    ------
    ValueError
        If ``record`` is malformed, or neither ``path`` nor its pending copy matches it:
        the pair is mixed (an interrupted export of an older bpetrain, or an edited file).
    """
    data = read_bytes(path, what)
    if record is None:
        return data
    if not (isinstance(record, dict) and set(record) == {"n_bytes", "sha256"}):
        raise ValueError(f"{commit}: the record of {os.path.basename(path)} must be {{\"n_bytes\": ..., \"sha256\": ...}}")
    if file_record(data) == record:
        return data
    with contextlib.suppress(FileNotFoundError):
        pending = read_bytes(pending_path(path), what)
        if file_record(pending) == record:
            return pending
    raise ValueError(
        f"{os.fspath(path)} ({len(data)} bytes) is not the file {commit} was written with "
        f"({record['n_bytes']} bytes, SHA-256 {str(record['sha256'])[:12]}...): the two belong to different "
        "exports (an interrupted export, or an edited file); export again, or delete the record from "
        f"{commit} to read them together anyway"
    )


def write_folder(directory, files: Mapping[str, bytes], manifest: Mapping, manifest_name: str) -> None:
    """Write ``files`` (name -> content) into ``directory`` (made if needed) as one artifact:
    :func:`replace_together` with ``manifest`` (JSON, which must hold each file's
    :func:`file_record`) as the commit file ``directory/manifest_name``. If writing fails,
    a folder this call made is removed again.
    """
    directory = os.fspath(directory)
    made = not os.path.isdir(directory)
    os.makedirs(directory, exist_ok=True)
    try:
        replace_together(
            {os.path.join(directory, name): data for name, data in files.items()},
            os.path.join(directory, manifest_name),
            (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode("utf-8"),
        )
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        raise

