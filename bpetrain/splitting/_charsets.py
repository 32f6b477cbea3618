"""Character sets as the ``regex`` module reads them, over every code point.

The compiled matchers (:mod:`bpetrain.splitting._compiler` for any pattern,
:mod:`bpetrain.splitting._blocks` for the named ones) decide which characters a class such as
``\\p{L}`` or ``(?i:s)`` matches as the installed ``regex`` module does, so membership and the
Unicode version are the ``regex`` module's (:mod:`bpetrain.splitting.unicode` derives the sets
of another Unicode version from them). :func:`members` gives a set two ways:

- derived (:func:`set_bits`, a fraction of a millisecond): the set is parsed by the ``regex``
  module's own parser, and its literals, ranges, ``.``, general-category, script
  (``\\p{Han}``, ``\\p{scx=Hani}``) or ``\\s``/``\\w`` properties are read from range
  tables of the module's classes (:func:`regex_facts`), which the build writes beside this
  module for the installed ``regex`` (:func:`write_facts`);
  case-insensitive sets are asked of the module on the code points that have other cases;
- asked (:func:`compute_members`, 1-15 ms, without numpy): the module matches the set against
  every code point. This is how a block, a binary or POSIX property or a case-insensitive
  property is read, and the answer is kept in a small file (the packed bits, zlib-compressed, ~1-5 KB)
  in the cache folder (:mod:`bpetrain._util.cache`: ``~/.cache/bpetrain`` by default, bounded
  in size). The file name is ``charset-TAG-KEY.bits``: ``KEY`` a hash of the ``regex``
  version, the set and its flags, so a new ``regex`` release (new Unicode data) never reads an
  old answer, and ``TAG`` the build tag of the installed ``regex`` module (:func:`regex_tag`),
  so that the cache's trim removes the answers of a ``regex`` no longer installed. A cache that
  cannot be read or written is ignored: the set is computed again (a damaged file fails
  zlib's checksum or the length check).

Compiled split patterns are kept the same way (:func:`read_arrays`, :func:`store_arrays`:
the program's arrays, ``arrays-TAG-KEY.bin``), keyed by their caller on what they are of and
tagged with the build that made them, and so are the tables of a ``regex`` version the build
did not write them for (tagged as the character sets are).
"""
from __future__ import annotations

import array
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
from bpetrain._util.cache import build_tag, cache_dir, note_use, write_entry

if TYPE_CHECKING:
    import numpy as np

__all__ = ["N_CODE_POINTS", "array_view", "cache_dir", "cached", "members", "parse_ranges", "ranges_text",
           "read_arrays", "read_shipped_arrays", "regex_facts", "regex_modules", "regex_tag", "set_bits",
           "store_arrays"]

N_CODE_POINTS = 0x110000
_PACKED_BYTES = N_CODE_POINTS // 8
_FORMAT = "charset v1"


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
    derived = set_bits(source, flags)
    if derived is not None:
        return derived
    return cached(f"{flags}\0{source}", lambda: compute_members(source, flags))


def cached(key: str, compute) -> bytes:
    """The packed set ``compute()`` gives (bytes, length 139,264), kept on disk under ``key``
    and the ``regex`` version (the module docstring says where and how)."""
    key = hashlib.sha256(f"{_FORMAT}\0{regex.__version__}\0{key}".encode()).hexdigest()[:32]
    path = os.path.join(cache_dir(), f"charset-{_tagged(regex_tag())}{key}.bits")
    with contextlib.suppress(OSError, zlib.error):
        with open(path, "rb") as f:
            packed = zlib.decompress(f.read(1 << 20))
            note_use(f)
        if len(packed) == _PACKED_BYTES:
            return packed
    packed = compute()
    with contextlib.suppress(OSError):
        with write_entry(path) as f:  # read back through zlib's checksum
            f.write(zlib.compress(packed, 6))
    return packed


def regex_modules() -> list[str]:
    """The files of the installed ``regex`` module that the character sets and tables
    depend on: its compiled ``_regex`` module (the Unicode data and the matcher), which a
    reinstall or an upgrade of ``regex`` replaces."""
    from regex import _regex

    return [_regex.__file__]


@functools.cache
def regex_tag() -> str | None:
    """The build tag (:func:`bpetrain._util.cache.build_tag`) of :func:`regex_modules`,
    which the cache entries of :func:`cached` and :func:`store_arrays` carry by default: the
    cache's trim removes them once that ``regex`` is no longer installed. None if the module
    cannot be examined (the entries are then untagged: stale at the next trim)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        return build_tag(regex_modules())
    return None


def _tagged(tag: str | None) -> str:
    """The part of an entry's name that carries ``tag`` (nothing for None)."""
    return "" if tag is None else f"{tag}-"


#: The numpy dtypes :func:`read_arrays` reads (``dtype.str`` without the byte order) as the
#: ``struct`` formats of the memoryviews it gives, and their sizes in bytes.
_FORMATS = {"u1": ("B", 1), "i1": ("b", 1), "b1": ("?", 1), "u2": ("H", 2), "i2": ("h", 2),
            "u4": ("I", 4), "i4": ("i", 4), "u8": ("Q", 8), "i8": ("q", 8)}
_NATIVE = "<" if sys.byteorder == "little" else ">"


#: The cache folder the build fills (``setup.py``,
#: :func:`bpetrain.splitting.pattern.ship_patterns`: the compiled programs of the patterns
#: of :data:`bpetrain.splitting.names.SHIPPED`), read where the cache folder lacks an entry.
SHIPPED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shipped")


def read_arrays(key: str, tag: str | None = None, *, shipped: bool = True) -> dict[str, memoryview] | None:
    """The arrays :func:`store_arrays` kept under ``key`` and the ``regex`` version (in the
    cache folder under ``tag``, else, if ``shipped``, in :data:`SHIPPED_DIR`), or None if
    there are none or they do not read back whole (zlib's checksum, the lengths).

    Parameters
    ----------
    key : str
        What the arrays are of (hashed into the file's name).
    tag : str, optional
        The build tag the cache entry carries (default :func:`regex_tag`).
    shipped : bool, default True
        Whether to look in :data:`SHIPPED_DIR` (under ``key``, untagged) when the cache
        folder has no entry.

    Returns
    -------
    dict of memoryview
        Name -> a writable, C-contiguous memoryview with the array's shape and its dtype as
        a ``struct`` format (int64 ``"q"``, uint16 ``"H"``, bool ``"?"``...); ``numpy.asarray``
        gives the array (an empty one of shape (0,): a memoryview has no zeros in its
        shape). Not numpy arrays, so that reading a compiled pattern at start-up does not
        import numpy. Arrays of another byte order or dtype are not read (None).
    """
    arrays = _read_arrays_file(_arrays_path(key, regex_tag() if tag is None else tag), used=True)
    if arrays is None and shipped:
        arrays = read_shipped_arrays(key)
    return arrays


def read_shipped_arrays(key: str) -> dict[str, memoryview] | None:
    """:func:`read_arrays` of :data:`SHIPPED_DIR` only (the cache folder is not looked at)."""
    return _read_arrays_file(_arrays_path(key, None, SHIPPED_DIR), used=False)


def _read_arrays_file(path: str, used: bool) -> dict[str, memoryview] | None:
    """:func:`read_arrays` of one file; ``used``: a cache entry, whose last use a read
    records (:func:`bpetrain._util.cache.note_use`; not a file the build shipped)."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError, zlib.error):
        with open(path, "rb") as f:
            data = zlib.decompress(f.read(1 << 26))
            if used:
                note_use(f)
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


#: :data:`_FORMATS` the other way: a ``struct`` format -> the numpy dtype (``dtype.str``).
_DTYPES = {form: ("|" if size == 1 else _NATIVE) + dtype for dtype, (form, size) in _FORMATS.items()}


def array_view(form: str, values, shape: tuple[int, ...] | None = None) -> memoryview:
    """``values`` (ints) as an array without numpy, as :func:`read_arrays` gives one.

    Parameters
    ----------
    form : {"B", "H", "I", "Q", "q"}
        The ``struct`` format (and ``array`` type code): uint8, uint16, uint32, uint64, int64.
    values : iterable of int, or bytes for ``"B"``
        The items in C order.
    shape : tuple of int, optional
        The shape (default: one dimension). An array with no items has the shape (0,).

    Returns
    -------
    memoryview
        Writable and C-contiguous; ``numpy.asarray`` gives the array.

    Raises
    ------
    OverflowError
        If a value does not fit the type.
    ValueError
        If ``shape`` does not hold the number of values.
    """
    items = array.array(form, values)
    if shape is not None and functools.reduce(int.__mul__, shape, 1) != len(items):
        raise ValueError(f"{len(items)} values do not fill an array of the shape {tuple(shape)}")
    data = memoryview(items).cast("B")
    if not data.nbytes or shape is None:
        return data.cast(form)
    return data.cast(form, shape)


def store_arrays(key: str, arrays: dict[str, np.ndarray | memoryview | bytes], folder: str | None = None,
                 tag: str | None = None) -> None:
    """Keep ``arrays`` (name -> numpy array; a memoryview of a ``struct`` format that
    :func:`read_arrays` reads, as :func:`array_view` gives; or bytes: a uint8 array; the
    last two kept without numpy) on disk under ``key``, as :func:`cached` keeps a set:
    zlib-compressed, a JSON line of each array's name, dtype and shape, then their bytes;
    nothing if the cache cannot be written. The cache entry carries ``tag`` (default
    :func:`regex_tag`). ``folder``: another folder than the cache folder (the build's
    :data:`SHIPPED_DIR`), where the file is untagged."""
    parts = []
    for name, a in arrays.items():
        if isinstance(a, bytes):
            parts.append(([name, "|u1", [len(a)]], a))
        elif isinstance(a, memoryview):
            parts.append(([name, _DTYPES[a.format], list(a.shape)], a.tobytes()))
        else:
            import numpy as np

            parts.append(([name, a.dtype.str, list(a.shape)], np.ascontiguousarray(a).tobytes()))
    header = json.dumps([head for head, _ in parts]).encode()
    body = b"".join(data for _, data in parts)
    with contextlib.suppress(OSError):
        path = _arrays_path(key, None, folder) if folder else _arrays_path(key, regex_tag() if tag is None else tag)
        with write_entry(path) as f:  # read back through zlib's checksum
            f.write(zlib.compress(header + b"\n" + body, 6))


def _arrays_path(key: str, tag: str | None, folder: str | None = None) -> str:
    """The file of the arrays kept under ``key``, tagged ``tag``, in ``folder`` (default
    the cache folder)."""
    key = hashlib.sha256(f"{_FORMAT}\0{regex.__version__}\0arrays\0{key}".encode()).hexdigest()[:32]
    return os.path.join(folder or cache_dir(), f"arrays-{_tagged(tag)}{key}.bin")


def compute_members(source: str, flags: str) -> bytes:
    """:func:`members` without the cache: ask the ``regex`` module (each run of code points
    ``(?:source)+`` matches in :func:`_every_code_point` is a range of members)."""
    return packed(_runs(f"(?{flags}:{source})" if flags else f"(?:{source})"))


def _runs(one_character: str) -> list[tuple[int, int]]:
    """The code points the one-character regex ``one_character`` matches, as ranges."""
    return _union((m.start(), m.end() - 1) for m in regex.finditer(one_character + "+", _every_code_point()))


@functools.cache
def _every_code_point() -> str:
    """Every code point, U+0000..U+10FFFF, surrogates included, in one str (decoded from
    UTF-32-LE, whose four bytes of each code point are laid down a byte lane at a time:
    no numpy, a few milliseconds)."""
    n_blocks = N_CODE_POINTS >> 8
    utf32 = bytearray(4 * N_CODE_POINTS)
    utf32[0::4] = bytes(range(256)) * n_blocks  # the low byte cycles through each block of 256
    utf32[1::4] = b"".join(bytes([block & 0xFF]) * 256 for block in range(n_blocks))
    utf32[2::4] = b"".join(bytes([block >> 8]) * 256 for block in range(n_blocks))
    return utf32.decode("utf-32-le", "surrogatepass")


# ------------------------------------------------------------------ ranges
#
# A set of code points as ranges: a list of (first, last) pairs, inclusive, ascending,
# neither overlapping nor touching (so one set has one list, and one text).

#: The general categories (Unicode's leaf values), and the class escapes a table of
#: classes holds (:mod:`bpetrain.splitting.unicode`, :func:`regex_facts`).
GENERAL_CATEGORIES = tuple(
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp Cc Cf Cs Co Cn".split()
)
ESCAPES = (r"\s", r"\w")


def parse_ranges(text: str, name: str) -> list[tuple[int, int]]:
    """The ranges of ``text``, hex code points and ranges separated by spaces
    (``"41-5a 61-7a aa"``), in any order, merged.

    Raises
    ------
    ValueError
        If a word is not a hex code point or range of code points (``name`` names the class).
    """
    try:
        ranges = [(int(a, 16), int(b or a, 16)) for a, _, b in (word.partition("-") for word in text.split())]
    except ValueError:
        ranges = None
    if ranges is None or not all(0 <= a <= b < N_CODE_POINTS for a, b in ranges):
        for word in text.split():  # the first word at fault, for the message
            first, _, last = word.partition("-")
            try:
                a, b = int(first, 16), int(last or first, 16)
            except ValueError:
                raise ValueError(f"class {name}: {word!r} is not a hex code point or range") from None
            if not 0 <= a <= b < N_CODE_POINTS:
                raise ValueError(f"class {name}: {word!r} is not a range of code points")
    if all(last + 1 < first for (_, last), (first, _) in zip(ranges, ranges[1:])):
        return ranges  # already merged, as written by ranges_text
    return _union(ranges)


def ranges_text(ranges: list[tuple[int, int]]) -> str:
    """``ranges`` as hex text: ``"41-5a 61-7a aa"`` (what :func:`parse_ranges` reads)."""
    return " ".join(f"{a:x}" if a == b else f"{a:x}-{b:x}" for a, b in ranges)


def _union(ranges) -> list[tuple[int, int]]:
    """The union of any (first, last) pairs, as ranges."""
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The code points not in ``ranges``, as ranges."""
    out, start = [], 0
    for a, b in ranges:
        if a > start:
            out.append((start, a - 1))
        start = b + 1
    if start < N_CODE_POINTS:
        out.append((start, N_CODE_POINTS - 1))
    return out


def packed(ranges: list[tuple[int, int]]) -> bytes:
    """``ranges`` as :func:`members` gives a set: ``numpy.packbits`` of a bool per code point
    (code point ``c`` is the bit ``0x80 >> (c & 7)`` of byte ``c >> 3``), made without numpy."""
    out = bytearray(_PACKED_BYTES)
    for a, b in ranges:
        first, last = a >> 3, (b + 1) >> 3
        head, tail = 0xFF >> (a & 7), ~(0xFF >> ((b + 1) & 7)) & 0xFF
        if first == last:
            out[first] |= head & tail
            continue
        out[first] |= head
        out[first + 1 : last] = b"\xff" * (last - first - 1)
        if tail:
            out[last] |= tail
    return bytes(out)


def ranges_of(member: np.ndarray) -> list[tuple[int, int]]:
    """The code points of ``member`` (bool, shape (0x110000,)) as ranges."""
    import numpy as np

    edges = np.flatnonzero(np.diff(np.concatenate([[0], member.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), (edges[1::2] - 1).tolist()))


# ------------------------------------------------------------------ the regex module's classes

#: The file beside this module that the build writes (:func:`write_facts`, called by
#: setup.py): the installed ``regex`` module's :func:`regex_facts`, with its version.
FACTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_regex_classes.bin")
_FACTS_FORMAT = "regex classes v3"


class Facts:
    """The installed ``regex`` module's classes (:func:`regex_facts`).

    Attributes
    ----------
    version : str
        ``regex.__version__`` when they were read from the module.
    classes : dict of str to list of (int, int)
        Each of :data:`GENERAL_CATEGORIES` and :data:`ESCAPES`: its code points, as ranges.
    cased : list of (int, int)
        The code points that have other cases (``regex``'s ``get_all_cases`` gives more
        than the code point), as ranges: outside them, a case-insensitive literal, range
        or class of them matches what it matches case-sensitively.
    scripts : dict of int to list of (int, int)
        Each value of the properties Script and Script_Extensions, as the ``regex`` module's
        parser numbers a property's value (the property's number << 16 | the value's, as
        ``\\p{Han}`` or ``\\p{scx=Hani}`` parse): its code points, as ranges. Read from
        the file when first used (most patterns have no script); empty if that part is
        damaged (the scripts are then asked of the module).
    """

    def __init__(self, version: str, classes: dict[str, list[tuple[int, int]]], cased: list[tuple[int, int]],
                 scripts: dict[int, list[tuple[int, int]]] | str):
        self.version, self.classes, self.cased = version, classes, cased
        if isinstance(scripts, str):
            self._scripts_text = scripts  # JSON, parsed by the scripts property
        else:
            self.scripts = scripts

    @functools.cached_property
    def scripts(self) -> dict[int, list[tuple[int, int]]]:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            return {int(value): _pairs(flat) for value, flat in json.loads(self._scripts_text).items()}
        return {}

    def to_bytes(self) -> bytes:
        scripts = json.dumps({str(value): _flat(ranges) for value, ranges in self.scripts.items()})
        return zlib.compress(json.dumps({
            "format": _FACTS_FORMAT, "regex": self.version, "cased": _flat(self.cased),
            "classes": {name: _flat(ranges) for name, ranges in self.classes.items()}, "scripts": scripts,
        }).encode(), 9)

    @classmethod
    def from_bytes(cls, data: bytes) -> Facts | None:
        """The facts of :meth:`to_bytes`, or None if they are damaged or of another
        format or ``regex`` version."""
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError, zlib.error):
            kept = json.loads(zlib.decompress(data))
            if kept["format"] == _FACTS_FORMAT and kept["regex"] == regex.__version__:
                classes = {name: _pairs(kept["classes"][name]) for name in (*GENERAL_CATEGORIES, *ESCAPES)}
                return cls(kept["regex"], classes, _pairs(kept["cased"]), str(kept["scripts"]))
        return None

    @functools.cached_property
    def cased_text(self) -> str:
        """The :attr:`cased` code points in one str."""
        return "".join(chr(c) for a, b in self.cased for c in range(a, b + 1))

    @functools.cached_property
    def cased_bits(self) -> int:
        """The :attr:`cased` code points as a bit set (:func:`set_bits`)."""
        return int.from_bytes(packed(self.cased), "big")


def _flat(ranges: list[tuple[int, int]]) -> list[int]:
    return [x for pair in ranges for x in pair]


def _pairs(flat: list[int]) -> list[tuple[int, int]]:
    """The ranges :func:`_flat` wrote, checked (ascending, apart, within the code points).

    Raises
    ------
    ValueError
        If they are not.
    """
    ranges = list(zip(flat[::2], flat[1::2]))
    if len(flat) % 2 or not all(type(x) is int for x in flat) or not all(0 <= a <= b < N_CODE_POINTS for a, b in ranges) \
            or not all(last + 1 < first for (_, last), (first, _) in zip(ranges, ranges[1:])):
        raise ValueError("not ranges")
    return ranges


@functools.cache
def regex_facts() -> Facts:
    """The installed ``regex`` module's classes: from :data:`FACTS_FILE` if the build
    wrote it with this ``regex`` version, else from the disk cache (under the version),
    else asked of the module (about two seconds) and kept there."""
    with contextlib.suppress(OSError):
        with open(FACTS_FILE, "rb") as f:
            facts = Facts.from_bytes(f.read(1 << 22))
        if facts is not None:
            return facts
    kept = read_arrays("regex classes")
    if kept is not None and kept.keys() == {"facts"}:
        facts = Facts.from_bytes(kept["facts"].tobytes())
        if facts is not None:
            return facts
    facts = compute_facts()
    store_arrays("regex classes", {"facts": facts.to_bytes()})
    return facts


def compute_facts() -> Facts:
    """:func:`regex_facts` asked of the ``regex`` module: each code point's general
    category in one pass (``(\\p{Lu}+)|(\\p{Ll}+)|...``, one per code point), ``\\s``,
    ``\\w``, each value of Script and Script_Extensions (one pass each), and the assigned
    code points with other cases (``regex``'s own ``get_all_cases``, the table its
    case-insensitive matching reads; an unassigned, private-use or surrogate code point has
    no case in Unicode).

    Raises
    ------
    ValueError
        If the general categories do not give every code point exactly one.
    """
    from regex import _regex

    every = _every_code_point()
    classes: dict[str, list[tuple[int, int]]] = {name: [] for name in (*GENERAL_CATEGORIES, *ESCAPES)}
    pattern = "|".join(rf"(\p{{{name}}}+)" for name in GENERAL_CATEGORIES)
    covered = 0
    for m in regex.finditer(pattern, every):
        classes[GENERAL_CATEGORIES[m.lastindex - 1]].append((m.start(), m.end() - 1))
        covered += m.end() - m.start()
    if covered != N_CODE_POINTS:
        raise ValueError(f"regex {regex.__version__}: the general categories cover {covered} code points, "
                         f"not {N_CODE_POINTS}")
    for name in ESCAPES:
        classes[name] = [(m.start(), m.end() - 1) for m in regex.finditer(name + "+", every)]
    classes = {name: _union(ranges) for name, ranges in classes.items()}
    flags = regex.IGNORECASE | regex.UNICODE
    unassigned = _union([*classes["Cn"], *classes["Co"], *classes["Cs"]])
    cased = [(c, c) for a, b in _complement(unassigned) for c in range(a, b + 1)
             if len(_regex.get_all_cases(flags, c)) > 1]
    return Facts(regex.__version__, classes, _union(cased), _compute_scripts())


def _compute_scripts() -> dict[int, list[tuple[int, int]]]:
    """:attr:`Facts.scripts` asked of the ``regex`` module (a pass over every code point per
    value: about a second in all)."""
    from regex import _regex_core as core

    scripts = {}
    for prop in ("SC", "SCX"):
        number, values = core.PROPERTIES[prop]
        names = {}
        for name, value in values.items():
            names.setdefault(value, name)
        for value, name in names.items():
            scripts[number << 16 | value] = _runs(rf"\p{{{prop}={name}}}")
    return scripts


def write_facts(path: str = FACTS_FILE) -> None:
    """Write the installed ``regex`` module's :func:`compute_facts` to ``path`` (setup.py
    calls this at build time, for :func:`regex_facts`)."""
    with atomic_write(path, "wb") as f:
        f.write(compute_facts().to_bytes())


# ------------------------------------------------------------------ sets derived from the classes
#
# A derived set is a Python int of N_CODE_POINTS bits, code point c at bit N_CODE_POINTS - 1 - c,
# so that ``int.to_bytes(..., "big")`` gives :func:`members`' packed bits: unions,
# negations and intersections are single operations on it.

_ALL = (1 << N_CODE_POINTS) - 1

#: (id of a classes dict, class names) -> (that dict, the union of those classes as a bit
#: set): kept with the dict itself, so that an id is never read for another dict.
_CLASS_BITS: dict[tuple[int, tuple[str, ...]], tuple[dict, int]] = {}


def _class_bits(classes: dict[str, list[tuple[int, int]]], names: tuple[str, ...]) -> int:
    """The union of the classes ``names`` as a bit set (computed once per classes and names)."""
    key = (id(classes), names)
    kept = _CLASS_BITS.get(key)
    if kept is None or kept[0] is not classes:
        kept = _CLASS_BITS[key] = (classes, int.from_bytes(
            packed(_union([r for name in names for r in classes[name]]) if len(names) > 1 else classes[names[0]]),
            "big") if names else 0)
    return kept[1]


@functools.lru_cache(maxsize=64)
def _script_bits(value: int) -> int:
    """The bit set of the value ``value`` of Script or Script_Extensions (:attr:`Facts.scripts`).

    Raises
    ------
    _Underived
        If the ``regex`` module's facts do not hold it.
    """
    ranges = regex_facts().scripts.get(value)
    if ranges is None:
        raise _Underived
    return int.from_bytes(packed(ranges), "big")


def _span(first: int, last: int) -> int:
    """The bit set of the code points ``first..last``."""
    return ((1 << (last - first + 1)) - 1) << (N_CODE_POINTS - 1 - last)


class _Underived(Exception):
    """A set holds what the classes cannot give (a block, a binary property, ...)."""


def set_bits(source: str, flags: str, classes: dict[str, list[tuple[int, int]]] | None = None) -> bytes | None:
    """The code points of the one-character regex ``source`` under ``flags`` (as
    :func:`members` gives them: packed bits), derived from the classes instead of asking the
    ``regex`` module about every code point; None where they cannot be.

    ``source`` is parsed by the ``regex`` module's own parser, then read as its matcher
    reads the parts: a literal, a range, ``.``, a set of them (negated or not), and a
    property that the module reads as general categories (``\\p{L}``, ``\\p{Letter}``,
    ``\\d``, ...: which ones, ``regex._regex.has_property_value`` says on one code point of
    each), ``\\s``/``\\w`` (``\\S``, ``\\W``, ``\\p{White_Space}``), or, without
    ``classes``, a value of Script or Script_Extensions (:attr:`Facts.scripts`). ``classes``
    (name -> ranges; default: the ``regex`` module's, :func:`regex_facts`) gives the
    categories' and escapes' code points. Case-insensitively (``"i"`` in ``flags``), a set
    without properties is asked of the ``regex`` module on the code points that have other
    cases (:attr:`Facts.cased`), and read case-sensitively elsewhere; a property then gives
    None (the module reads ``(?i:\\p{Lu})`` as more than its cases). With ``classes``, a set
    the module's parser reads as every character (``[^\\s\\S]``, which it matches
    everywhere) gives None, and so does a script (a table has none). None too for anything
    else (a block, a binary or POSIX property, ``regex.DEFAULT_VERSION`` other than
    VERSION0), and if the ``regex`` module's
    parser is not as expected.
    """
    if regex.DEFAULT_VERSION != regex.VERSION0:
        return None
    try:
        from regex import _regex_core as core

        text = core.Source(source)
        info = core.Info((regex.IGNORECASE if "i" in flags else 0) | (regex.DOTALL if "s" in flags else 0),
                         text.char_type, {})
        info.guess_encoding = regex.UNICODE  # as regex.compile reads a str pattern
        tree = core._parse_pattern(text, info)
        if type(tree) is core.Sequence and len(tree.items) == 1:
            tree = tree.items[0]
        if classes is not None and source != "." and type(tree) in (core.Any, core.AnyAll):
            return None  # the module reads [^\s\S] as every character: not a set of the classes
        found, cased, properties = _read(tree, core, classes)
    except _Underived:
        return None
    except Exception:  # the regex module's parser is not as read here: ask the module
        return None
    if cased:
        if properties:
            return None
        facts = regex_facts()
        asked = facts.cased_text
        found &= ~facts.cased_bits
        for m in regex.finditer(f"(?{flags}:{source})", asked):
            found |= 1 << (N_CODE_POINTS - 1 - ord(asked[m.start()]))
    return found.to_bytes(_PACKED_BYTES, "big")


def _read(node, core, classes) -> tuple[int, bool, bool]:
    """(bit set, whether case-insensitive, whether it has a property) of one parsed node.

    Raises
    ------
    _Underived
        For a node the classes cannot give.
    """
    kind = type(node)
    if kind is core.Any:
        return _ALL ^ _span(10, 10), False, False
    if kind is core.AnyAll:
        return _ALL, False, False
    if node.zerowidth or not hasattr(node, "positive"):
        raise _Underived
    cased, properties = bool(node.case_flags), False
    if kind is core.Character:
        found = _span(node.value, node.value)
    elif kind is core.Range:
        found = _span(node.lower, node.upper)
    elif kind is core.Property:
        found, properties = _property(node, core, classes), True
    elif kind is core.SetUnion:
        found = 0
        for item in node.items:
            part, part_cased, part_properties = _read(item, core, classes)
            found |= part
            cased, properties = cased or part_cased, properties or part_properties
    else:
        raise _Underived
    return (found if node.positive else _ALL ^ found), cased, properties


def _property(node, core, classes) -> int:
    """The bit set of a property node (before its negation) from ``classes`` (None: the
    ``regex`` module's, :func:`regex_facts`)."""
    from regex import _regex

    if node.encoding not in (0, core.UNICODE_ENCODING):  # ASCII or locale
        raise _Underived
    if node.value >> 16 in (core.PROPERTIES["SC"][0], core.PROPERTIES["SCX"][0]):
        if classes is not None:  # a table has no scripts: class_members reads them otherwise
            raise _Underived
        return _script_bits(node.value)
    if node.value >> 16 != core.PROPERTIES["GC"][0] and node.value not in (
            core.CHARSET_ESCAPES["s"].value, core.CHARSET_ESCAPES["w"].value):
        raise _Underived  # before reading the classes: a script, a block, a binary property
    facts = regex_facts()
    classes = classes or facts.classes
    if node.value >> 16 == core.PROPERTIES["GC"][0]:
        return _class_bits(classes, tuple(name for name in GENERAL_CATEGORIES if facts.classes[name]
                                          and _regex.has_property_value(node.value, facts.classes[name][0][0])))
    for name in ESCAPES:
        if node.value == core.CHARSET_ESCAPES[name[1]].value:
            return _class_bits(classes, (name,))
    raise _Underived
