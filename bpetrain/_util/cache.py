"""The on-disk cache: where it is, what it holds, its size bound and how it is trimmed.

What is slow to make and the same in every process is kept in one folder, :func:`cache_dir`:
``$BPETRAIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/bpetrain``, else ``~/.cache/bpetrain`` (the
XDG Base Directory specification's user cache folder, as pip's ``pip cache dir`` and
Hugging Face's ``HF_HOME`` default to; like tiktoken's ``TIKTOKEN_CACHE_DIR`` and Hugging
Face's ``HF_HUB_CACHE``, one environment variable moves it). It holds:

- entries, one file each, named ``KIND-TAG-KEY.EXT`` with ``KIND`` one of :data:`KINDS`: the
  character sets asked of the ``regex`` module (``charset-*.bits``), compiled split patterns
  and Unicode tables (``arrays-*.bin``), the encoders' pair tables (``pairs-*.bin``, 4-8 MB
  each for ``cl100k_base`` and ``o200k_base``) and their linear encoders' tables
  (``linear-*.bin``, 9-11 MB each);
- ``TAG`` (:func:`build_tag`) stands for the paths, sizes and modification times of the
  modules whose build made the entry and alone reads it (a pair table: the compiled
  ``_tables`` module; linear tables: ``_tables``, ``_linear`` and ``_heap``; a compiled
  pattern: the compiler's modules and the ``regex`` module; a character set or a table: the
  ``regex`` module), which the record ``build-TAG.json``
  lists: once a module has changed or is gone (a reinstall, an upgrade), no process reads
  the entry again, and it is *stale*; so is an entry without a tag (of an older bpetrain);
- ``.last-trim``, whose modification time says when the folder was last trimmed, and the
  temporary files of writes in progress (``.NAME.xxxxxxxx.tmp``,
  :func:`bpetrain._util.atomic.atomic_write`).

Nothing else in the folder is touched, so a folder shared with other files loses none of them.

Entries are written whole or not at all (:func:`write_entry`), and every reader checks what it
reads (a checksum) and treats a file that cannot be read, or has vanished, as a miss: it makes
the value again. So any entry may be removed at any time, by :func:`trim` in another
process or by the user (:func:`clear_cache_dir`, ``bpetrain cache --clear``), as pip's
``pip cache purge`` and Hugging Face's ``delete-cache`` may.

**The bound.** The entries may take :func:`max_bytes` in all (``BPETRAIN_CACHE_MAX_BYTES``,
default :data:`DEFAULT_MAX_BYTES`; ``0`` or ``none``: no bound, as ccache's ``max_size = 0``).
:func:`trim` removes stale entries, then the least recently used ones until the rest fit.
An entry's last use is its modification time, which every reader refreshes at most once an
hour (:func:`note_use`: pair and linear tables, compiled patterns, character sets), or its access time if
later (Linux's default ``relatime`` mount option refreshes it about once a day, ``noatime``
never).

**When.** Not on every write: listing a folder of 40,000 files, with each file's size and
times, takes about 0.2 s. A process trims the folder at most once, after a write, when
``.last-trim`` is older than :data:`TRIM_INTERVAL` (a day) or missing, or when its own writes
reach an eighth of the bound; a process that only reads never trims. Two processes may trim
at once: each removal of a file that is already gone is skipped. A temporary file is
removed only once it is :data:`TEMPORARY_MAX_AGE` old (a write in progress takes well under
that), so a write another process has in progress is never cut off.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import time
from typing import NamedTuple

from bpetrain._util.atomic import atomic_write

__all__ = [
    "DEFAULT_MAX_BYTES",
    "KINDS",
    "TEMPORARY_MAX_AGE",
    "TRIM_INTERVAL",
    "CacheInfo",
    "KindInfo",
    "build_tag",
    "cache_dir",
    "clear_cache_dir",
    "max_bytes",
    "note_use",
    "parse_size",
    "scan_cache",
    "trim",
    "write_entry",
]

#: The bound on the entries' bytes when ``BPETRAIN_CACHE_MAX_BYTES`` is not set (256 MiB:
#: the pair and linear tables of about ten large vocabularies, or tens of thousands of patterns).
DEFAULT_MAX_BYTES = 256 << 20
#: Seconds between two trims of the folder (by any process), unless a process writes an
#: eighth of the bound: a day (a trim lists the folder: about 0.2 s for 40,000 files).
TRIM_INTERVAL = 86400.0
#: Seconds after which a temporary file counts as left by an interrupted write.
TEMPORARY_MAX_AGE = 3600.0
#: Seconds within which :func:`note_use` does not refresh an entry's modification time again.
USE_RESOLUTION = 3600.0
#: The kinds of entry (the first part of their names) and what they hold.
KINDS = {
    "pairs": "encoders' pair tables of large vocabularies",
    "arrays": "compiled split patterns and Unicode tables",
    "charset": "character sets asked of the regex module",
    "linear": "encoders' linear tables (token trie, splits) of large vocabularies",
}

_ENV_DIR = "BPETRAIN_CACHE_DIR"
_ENV_MAX = "BPETRAIN_CACHE_MAX_BYTES"
_MARKER = ".last-trim"
_TAG_CHARS = 16
_ENTRY = re.compile(r"(?P<kind>[a-z]+)-(?:(?P<tag>[0-9a-f]{16})-)?[0-9a-f]+\.(?:bin|bits)")
_RECORD = re.compile(r"build-(?P<tag>[0-9a-f]{16})\.json")
_TEMPORARY = re.compile(r"\.(?P<target>[^/\\]+)\.[a-z0-9_]+\.tmp")
#: The names of the cache's files begin so: KIND-, build-, or . for a temporary file.
_NAMED = re.compile(r"\.?(?:[a-z]+-)")
_SIZE = re.compile(r"(?P<number>\d+(?:\.\d*)?)\s*(?P<unit>(?:[kMGT]i?)?)B?")
_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "ki": 2**10, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def cache_dir() -> str:
    """The cache folder (see the module docstring); it may not exist yet."""
    if os.environ.get(_ENV_DIR):
        return os.environ[_ENV_DIR]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bpetrain")


def parse_size(text: str) -> int | None:
    """A size as ``BPETRAIN_CACHE_MAX_BYTES`` gives it, in bytes; None for no bound.

    A number of bytes (``300000000``), or a number with a unit as ccache's ``max_size``
    takes them (``500M``, ``1.5G``, ``512Mi``, ``2Gi``: ``k``/``M``/``G``/``T`` are powers
    of 1000, ``Ki``/``Mi``/``Gi``/``Ti`` of 1024; a trailing ``B`` is allowed); ``0`` or
    ``none`` (any case): no bound.

    Raises
    ------
    ValueError
        If ``text`` is none of these (the message names the variable and the forms).
    """
    stripped = text.strip()
    if stripped.lower() == "none":
        return None
    match = _SIZE.fullmatch(stripped)
    if match is None:
        raise ValueError(f"{_ENV_MAX} must be a number of bytes, optionally with a unit (500M, 1.5G, 512Mi), "
                         f"or 0 or 'none' for no bound; got {text!r}")
    n_bytes = int(float(match["number"]) * _UNITS[match["unit"]])
    return n_bytes or None


def max_bytes() -> int | None:
    """The bound on the cache's entries, in bytes (``BPETRAIN_CACHE_MAX_BYTES``, else
    :data:`DEFAULT_MAX_BYTES`); None: no bound.

    Raises
    ------
    ValueError
        If the environment variable is set to something :func:`parse_size` does not read.
    """
    value = os.environ.get(_ENV_MAX)
    return DEFAULT_MAX_BYTES if value is None or not value.strip() else parse_size(value)


# ------------------------------------------------------------------ builds


#: The builds this process has tagged: tag -> {module path: [size, modification time (ns)]}.
_BUILDS: dict[str, dict[str, list[int]]] = {}


def build_tag(paths) -> str:
    """A tag (16 hex digits) for the build of the modules at ``paths``: their absolute
    paths, sizes and modification times. An entry named ``KIND-TAG-KEY.EXT`` is stale once
    one of them has changed or is gone (see the module docstring).

    Raises
    ------
    OSError
        If a module cannot be examined (``os.stat``).
    """
    modules = {}
    for path in paths:
        path = os.path.abspath(path)
        stat = os.stat(path)
        modules[path] = [stat.st_size, stat.st_mtime_ns]
    tag = hashlib.sha256(json.dumps(modules, sort_keys=True).encode()).hexdigest()[:_TAG_CHARS]
    _BUILDS[tag] = modules
    return tag


def _build_is_installed(folder: str, tag: str) -> bool:
    """Whether every module the record of ``tag`` lists is still as it was (False if the
    record is missing or unreadable)."""
    try:
        with open(os.path.join(folder, f"build-{tag}.json"), "rb") as f:
            modules = json.loads(f.read(1 << 16))
        for path, (size, mtime_ns) in modules.items():
            stat = os.stat(path)
            if (stat.st_size, stat.st_mtime_ns) != (size, mtime_ns):
                return False
    except (OSError, ValueError, TypeError, AttributeError):
        return False
    return True


# ------------------------------------------------------------------ writing and reading

#: Per folder: bytes this process wrote there, whether it has looked at ``.last-trim``,
#: whether it has trimmed.
_WRITTEN: dict[str, int] = {}
_LOOKED: set[str] = set()
_TRIMMED: set[str] = set()


@contextlib.contextmanager
def write_entry(path, mode: str = "wb"):
    """Write the entry ``path`` whole or not at all, then, if ``path`` is in
    :func:`cache_dir`, trim that folder if it is due (see the module docstring).

    The folder is made if needed; the entry's build record is written first if its name
    carries a tag of :func:`build_tag`. The file is not flushed to disk before it is renamed
    into place (:func:`~bpetrain._util.atomic.atomic_write` with ``durable=False``): every
    reader of the cache checks what it reads. Temporary files of interrupted writes are left
    to :func:`trim`, so a write does not list the folder.

    Raises
    ------
    OSError
        If the folder or the file cannot be written.
    ValueError
        If ``BPETRAIN_CACHE_MAX_BYTES`` is set to something :func:`parse_size` does not read.
    """
    bound = max_bytes()
    path = os.fspath(path)
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    match = _ENTRY.fullmatch(os.path.basename(path))
    tag = match and match["tag"]
    if tag in _BUILDS:
        record = os.path.join(folder, f"build-{tag}.json")
        if not os.path.exists(record):
            with atomic_write(record, "w", durable=False, leftovers=False, encoding="utf-8") as f:
                json.dump(_BUILDS[tag], f)
    with atomic_write(path, mode, durable=False, leftovers=False) as f:
        yield f
        n_bytes = f.tell()
    _after_write(folder, n_bytes, bound)


def _after_write(folder: str, n_bytes: int, bound: int | None) -> None:
    if folder in _TRIMMED or os.path.abspath(folder) != os.path.abspath(cache_dir()):
        return  # trimmed already, or not the cache folder (one the build fills with entries)
    _WRITTEN[folder] = _WRITTEN.get(folder, 0) + n_bytes
    due = bound is not None and _WRITTEN[folder] * 8 >= bound
    if folder not in _LOOKED:
        _LOOKED.add(folder)
        try:
            due = due or time.time() - os.stat(os.path.join(folder, _MARKER)).st_mtime >= TRIM_INTERVAL
        except OSError:
            due = True
    if due:
        _TRIMMED.add(folder)
        with contextlib.suppress(OSError):
            trim(folder, bound=bound)


def note_use(f) -> None:
    """Record that the entry open as ``f`` (a file object with a name) was read: refresh
    its modification time if it is older than :data:`USE_RESOLUTION` (so that a read writes
    to the folder at most once an hour per entry, as Linux's ``relatime`` refreshes access
    times). Nothing if it cannot be refreshed (a folder read-only to this user)."""
    with contextlib.suppress(OSError):
        if time.time() - os.fstat(f.fileno()).st_mtime >= USE_RESOLUTION:
            os.utime(f.name)


# ------------------------------------------------------------------ looking and trimming


class _File(NamedTuple):
    name: str
    n_bytes: int
    last_used: float  # seconds since the epoch: the later of the modification and access times
    modified: float


def _listing(folder: str) -> list[_File]:
    """The folder's files whose names the cache may have written (a file removed while it
    is listed is left out)."""
    found = []
    try:
        entries = os.scandir(folder)
    except FileNotFoundError:
        return found
    with entries:
        for entry in entries:
            if not _NAMED.match(entry.name):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:  # removed meanwhile
                continue
            found.append(_File(entry.name, stat.st_size, max(stat.st_mtime, stat.st_atime), stat.st_mtime))
    return found


def _ours(name: str) -> bool:
    """Whether ``name`` is an entry or a build record (by its name)."""
    match = _ENTRY.fullmatch(name)
    return (match is not None and match["kind"] in KINDS) or _RECORD.fullmatch(name) is not None


def _classify(folder: str, files: list[_File], now: float):
    """(live entries, stale entries, build records of stale builds, old temporary files,
    young temporary files) among ``files``."""
    live, stale, records, old, young = [], [], [], [], []
    installed: dict[str, bool] = {}
    for file in files:
        temporary = _TEMPORARY.fullmatch(file.name)
        if temporary is not None and _ours(temporary["target"]):
            (old if now - file.modified >= TEMPORARY_MAX_AGE else young).append(file)
            continue
        match = _ENTRY.fullmatch(file.name)
        if match is None or match["kind"] not in KINDS:
            continue
        tag = match["tag"]
        if tag is None:  # of an older bpetrain, which wrote some entries without a tag
            stale.append(file)
            continue
        if tag not in installed:
            installed[tag] = _build_is_installed(folder, tag)
        (live if installed[tag] else stale).append(file)
    for file in files:
        record = _RECORD.fullmatch(file.name)
        if record is None:
            continue
        if record["tag"] not in installed:
            installed[record["tag"]] = _build_is_installed(folder, record["tag"])
        if not installed[record["tag"]]:
            records.append(file)
    return live, stale, records, old, young


def _remove(folder: str, files: list[_File]) -> tuple[int, int]:
    """Remove ``files``; (files removed, their bytes). One already gone (another process
    removed it), or open elsewhere where that forbids removing it (Windows), is skipped."""
    n_files = n_bytes = 0
    for file in files:
        try:
            os.unlink(os.path.join(folder, file.name))
        except OSError:
            continue
        n_files += 1
        n_bytes += file.n_bytes
    return n_files, n_bytes


_FROM_ENV = object()


def trim(folder=None, *, bound=_FROM_ENV, now: float | None = None) -> tuple[int, int]:
    """Trim the cache folder: remove temporary files older than :data:`TEMPORARY_MAX_AGE`,
    stale entries (and their build records), then the least recently used entries until
    the rest take at most ``max_bytes``; mark the folder trimmed (``.last-trim``).

    Parameters
    ----------
    folder : str or os.PathLike, optional
        The cache folder (default :func:`cache_dir`).
    bound : int or None, optional
        The bound on the entries' bytes (None: no bound); default :func:`max_bytes`.
    now : float, optional
        The time (seconds since the epoch) ages are measured at; default now.

    Returns
    -------
    tuple of int
        The files removed and their bytes.

    Raises
    ------
    ValueError
        If ``bound`` is not given and ``BPETRAIN_CACHE_MAX_BYTES`` is not readable.
    """
    folder = cache_dir() if folder is None else os.fspath(folder)
    bound = max_bytes() if bound is _FROM_ENV else bound
    now = time.time() if now is None else now
    if not os.path.isdir(folder):
        return 0, 0
    with contextlib.suppress(OSError):
        with open(os.path.join(folder, _MARKER), "ab"):
            pass
        os.utime(os.path.join(folder, _MARKER))
    live, stale, records, old, _young = _classify(folder, _listing(folder), now)
    removed = [_remove(folder, files) for files in (old, stale, records)]
    if bound is not None:
        total = sum(file.n_bytes for file in live)
        evict = []
        for file in sorted(live, key=lambda file: (file.last_used, file.name)):
            if total <= bound:
                break
            evict.append(file)
            total -= file.n_bytes
        removed.append(_remove(folder, evict))
    return sum(n for n, _ in removed), sum(b for _, b in removed)


@dataclasses.dataclass(frozen=True)
class KindInfo:
    """The entries of one kind in the cache folder.

    Attributes
    ----------
    n_files : int
        How many.
    n_bytes : int
        Their sizes added up, in bytes.
    n_stale : int
        How many of them are stale: written by a build no longer installed (or by an older
        bpetrain), never read again; the next trim removes them.
    """

    n_files: int
    n_bytes: int
    n_stale: int


@dataclasses.dataclass(frozen=True)
class CacheInfo:
    """What the cache folder holds (:func:`scan_cache`), after Hugging Face's
    ``scan_cache_dir`` and pip's ``pip cache info``.

    Attributes
    ----------
    folder : str
        The cache folder (:func:`cache_dir`); it may not exist.
    max_bytes : int or None
        The bound on the entries' bytes (None: no bound).
    kinds : dict of str to KindInfo
        Each kind of :data:`KINDS` (all of them, in that order) -> its entries.
    n_temporary : int
        Temporary files of writes in progress, or left by interrupted ones.
    """

    folder: str
    max_bytes: int | None
    kinds: dict[str, KindInfo]
    n_temporary: int

    @property
    def n_bytes(self) -> int:
        """The entries' bytes, all kinds together."""
        return sum(kind.n_bytes for kind in self.kinds.values())

    @property
    def n_files(self) -> int:
        """The number of entries, all kinds together."""
        return sum(kind.n_files for kind in self.kinds.values())


def scan_cache(folder=None) -> CacheInfo:
    """What the cache folder holds: its entries by kind, with their sizes; nothing is changed.

    Parameters
    ----------
    folder : str or os.PathLike, optional
        The folder to look at (default :func:`cache_dir`).

    Returns
    -------
    CacheInfo

    Raises
    ------
    ValueError
        If ``BPETRAIN_CACHE_MAX_BYTES`` is set to something :func:`parse_size` does not read.
    OSError
        If the folder exists but cannot be listed (not a folder, no permission).
    """
    folder = cache_dir() if folder is None else os.fspath(folder)
    bound = max_bytes()
    live, stale, _records, old, young = _classify(folder, _listing(folder), time.time())
    kinds = {}
    for kind in KINDS:
        mine = [f for f in live if f.name.startswith(kind + "-")]
        gone = [f for f in stale if f.name.startswith(kind + "-")]
        kinds[kind] = KindInfo(len(mine) + len(gone), sum(f.n_bytes for f in mine + gone), len(gone))
    return CacheInfo(folder, bound, kinds, len(old) + len(young))


def clear_cache_dir(folder=None) -> tuple[int, int]:
    """Remove every entry and build record from the cache folder, and the temporary files
    older than :data:`TEMPORARY_MAX_AGE` (a younger one may be a write in progress: its
    entry appears when it ends). Files that are not the cache's are left, and so is the
    folder. Safe while other processes use the cache: they make what they miss again.

    Parameters
    ----------
    folder : str or os.PathLike, optional
        The folder to clear (default :func:`cache_dir`).

    Returns
    -------
    tuple of int
        The files removed and their bytes.

    Raises
    ------
    OSError
        If the folder exists but cannot be listed (not a folder, no permission).
    """
    folder = cache_dir() if folder is None else os.fspath(folder)
    files = _listing(folder)
    live, stale, _records, old, _young = _classify(folder, files, time.time())
    records = [f for f in files if _RECORD.fullmatch(f.name)]
    removed = [_remove(folder, group) for group in (live, stale, records, old)]
    return sum(n for n, _ in removed), sum(b for _, b in removed)
