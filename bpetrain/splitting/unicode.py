"""The Unicode version of a split pattern's character classes (the ``unicode_version`` option).

Which characters ``\\p{L}``, ``\\p{N}``, ``\\s`` or ``\\w`` hold depends on the Unicode
version of the regex engine: tiktoken's (the Rust ``regex`` crate, compiled into tiktoken)
and the Python ``regex`` module bpetrain's splitter asks (:mod:`bpetrain.splitting._charsets`)
do not agree on the characters added in recent versions (tiktoken 0.14 and regex
2026.11.19 on 17,810 code points, docs/split-patterns.md), so the same ranks and pattern
would split such text differently. ``unicode_version`` chooses the classes:

``"regex"``
    the installed ``regex`` module's (what bpetrain trains with);
``"tiktoken"``
    tiktoken's engine's, shipped in :mod:`bpetrain.splitting._unicode_tiktoken` (measured from
    tiktoken by ``tools/unicode_tables.py``); the default for tiktoken files and
    OpenAI's encodings;
a :class:`UnicodeTable`
    classes recorded elsewhere: a model file records the ``regex`` module's classes at
    training time (:func:`regex_table`), so the model splits the same way after the
    ``regex`` module updates.

A table holds the general category of every code point and the members of ``\\s`` and
``\\w`` (``\\d`` is ``\\p{Nd}`` in both engines), as ranges; it is read from its text
without numpy, and two tables are equal when their digests (of the merged ranges) are. A set
the compiled matcher evaluates (:mod:`bpetrain.splitting._compiler`) takes the table's ranges
in place of each property (:func:`class_members`): a property the installed ``regex`` module
reads as a union of general categories (``\\p{L}``, ``\\p{Letter}``, ``\\P{N}``, ``\\p{L&}``,
``\\d``, ...) becomes that union of the table's, ``\\s \\S \\w \\W`` the table's own;
literals, ranges and case-insensitivity stay the ``regex`` module's. A set of such parts that
is not case-insensitive is read from the ranges directly
(:func:`bpetrain.splitting._charsets.set_bits`); another is rewritten with the ranges and
asked of the ``regex`` module. A property that is neither (a script such as ``\\p{Han}``, a
binary property) keeps the installed ``regex`` module's classes, with a
:class:`UnicodeVersionWarning`; so does a pattern the ``regex`` module splits (syntax the
compiled matcher does not run): the ``regex`` module has one Unicode version.
"""
from __future__ import annotations

import functools
import hashlib
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import regex

from bpetrain.splitting import _charsets
from bpetrain.splitting._charsets import (
    ESCAPES,
    GENERAL_CATEGORIES,
    N_CODE_POINTS,
    cached,
    members,
    packed,
    parse_ranges,
    ranges_of,
    read_arrays,
    regex_facts,
    set_bits,
    store_arrays,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ESCAPES",
    "GENERAL_CATEGORIES",
    "UNICODE_VERSIONS",
    "UnicodeTable",
    "UnicodeVersionWarning",
    "check_unicode_version",
    "class_members",
    "classes_that_differ",
    "ranges_text",
    "regex_table",
    "resolve_unicode",
    "ship_table",
    "tiktoken_table",
]

_NAMES = (*GENERAL_CATEGORIES, *ESCAPES)
#: The names ``unicode_version`` takes (besides a :class:`UnicodeTable`).
UNICODE_VERSIONS = ("regex", "tiktoken")


class UnicodeVersionWarning(UserWarning):
    """A class or pattern is read with the installed ``regex`` module's Unicode, not the one asked for."""


class UnicodeTable:
    """The character classes of one regex engine's Unicode version.

    Parameters
    ----------
    source : str
        Where the classes come from (``"tiktoken 0.14.0"``, ``"regex 2026.11.19"``).
    classes : mapping of str to str
        For each of :data:`GENERAL_CATEGORIES` and :data:`ESCAPES`, its code points as hex
        ranges (``"41-5a 61-7a aa"``, :func:`ranges_text`).

    Attributes
    ----------
    source : str
    digest : str
        SHA-256 of the classes (hex): two tables with one digest class alike.

    Raises
    ------
    ValueError
        If a class is missing or unknown, a range is malformed, or the general categories
        do not give every code point exactly one.
    """

    def __init__(self, source: str, classes: Mapping[str, str]):
        if not isinstance(source, str) or not isinstance(classes, Mapping):
            raise TypeError("a UnicodeTable takes a source (str) and classes (a mapping of str to str)")
        expected = {*GENERAL_CATEGORIES, *ESCAPES}
        if set(classes) != expected:
            raise ValueError(f"a Unicode table needs the classes {sorted(expected)}; "
                             f"missing {sorted(expected - set(classes))}, unknown {sorted(set(classes) - expected)}")
        self._key = key = _table_key(source, classes)
        kept = read_arrays(key)
        if kept is not None and kept.keys() == {"digest"} and kept["digest"].nbytes == 64:
            self.source = source  # checked when the digest was kept: the key is the classes' text
            self.digest = kept["digest"].tobytes().decode("ascii")
            self._text = {name: classes[name] for name in _NAMES}
            return  # the classes are read when first asked for (_ranges)
        self._init(source, {name: parse_ranges(classes[name], name) for name in _NAMES})
        store_arrays(key, {"digest": self.digest.encode("ascii")})

    @functools.cached_property
    def _ranges(self) -> dict[str, list[tuple[int, int]]]:
        """Class name -> its code points as ranges; set by :meth:`_init`, else (a table
        whose digest was read back from the disk cache) parsed from the text."""
        return {name: parse_ranges(self._text[name], name) for name in _NAMES}

    def _init(self, source: str, ranges: Mapping[str, list[tuple[int, int]]]) -> None:
        """Check the general categories and set the attributes (``ranges``: name -> ranges,
        :mod:`bpetrain.splitting._charsets`)."""
        expected = 0
        for a, b in sorted(r for name in GENERAL_CATEGORIES for r in ranges[name]):
            if a != expected:
                where, count = (a, 2) if a < expected else (expected, 0)
                raise ValueError(f"{source}: the general categories must give each code point exactly one "
                                 f"(U+{where:04X} has {count})")
            expected = b + 1
        if expected != N_CODE_POINTS:
            raise ValueError(f"{source}: the general categories must give each code point exactly one "
                             f"(U+{expected:04X} has 0)")
        self.source = source
        self._ranges = {name: list(ranges[name]) for name in _NAMES}
        self.digest = hashlib.sha256("".join(f"{name}\0{_charsets.ranges_text(self._ranges[name])}\0"
                                             for name in _NAMES).encode()).hexdigest()

    @classmethod
    def from_members(cls, source: str, member: Mapping[str, np.ndarray]) -> UnicodeTable:
        """The table of the classes ``member`` (name -> bool per code point)."""
        return cls._of_ranges(source, {name: ranges_of(member[name]) for name in _NAMES})

    @classmethod
    def _of_ranges(cls, source: str, ranges: Mapping[str, list[tuple[int, int]]]) -> UnicodeTable:
        """The table of the classes ``ranges`` (name -> ranges, merged)."""
        table = cls.__new__(cls)
        table._init(source, ranges)
        return table

    def __repr__(self) -> str:
        return f"<UnicodeTable {self.source!r}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, UnicodeTable) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __reduce__(self):
        return UnicodeTable, (self.source, self.classes)

    def member(self, name: str) -> np.ndarray:
        """bool, shape (0x110000,): the code points of the class ``name``."""
        import numpy as np

        return np.unpackbits(np.frombuffer(packed(self._ranges[name]), dtype=np.uint8)).view(bool)

    @functools.cached_property
    def classes(self) -> dict[str, str]:
        """Each class's code points as hex ranges (the constructor's ``classes``, merged)."""
        return {name: _charsets.ranges_text(self._ranges[name]) for name in _NAMES}

    @functools.cached_property
    def general_category(self) -> np.ndarray:
        """uint8, shape (0x110000,): each code point's index in :data:`GENERAL_CATEGORIES`."""
        import numpy as np

        category = np.zeros(N_CODE_POINTS, dtype=np.uint8)
        for k, name in enumerate(GENERAL_CATEGORIES):
            for a, b in self._ranges[name]:
                category[a : b + 1] = k
        return category

    def to_json(self) -> dict:
        """``{"source": ..., "classes": {...}}`` (what :meth:`from_json` reads)."""
        return {"source": self.source, "classes": self.classes}

    @classmethod
    def from_json(cls, data, where: str = "the Unicode table") -> UnicodeTable:
        """The table of :meth:`to_json`'s object.

        Raises
        ------
        ValueError
            If ``data`` is not such an object (``where`` names it in the message).
        """
        if not (isinstance(data, dict) and set(data) == {"source", "classes"} and isinstance(data["source"], str)
                and isinstance(data["classes"], dict) and all(isinstance(v, str) for v in data["classes"].values())):
            raise ValueError(f"{where}: expected {{\"source\": str, \"classes\": {{name: ranges}}}}")
        try:
            return cls(data["source"], data["classes"])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None


def ranges_text(member: np.ndarray) -> str:
    """The code points of ``member`` (bool, shape (0x110000,)) as hex ranges: ``"41-5a 61-7a aa"``."""
    return _charsets.ranges_text(ranges_of(member))


def _table_key(source: str, classes: Mapping[str, str]) -> str:
    """The on-disk cache key of the digest of the table of ``source`` and ``classes`` (the
    constructor's arguments): a table made from the same text again reads its digest, and
    parses its classes only when they are needed."""
    text = hashlib.sha256()
    for name in sorted(classes):
        text.update(f"{name}\0{classes[name]}\0".encode())
    return f"unicode table\0{source}\0{text.hexdigest()}"


@functools.cache
def tiktoken_table() -> UnicodeTable:
    """tiktoken's engine's classes, as shipped (:mod:`bpetrain.splitting._unicode_tiktoken`)."""
    from bpetrain.splitting import _unicode_tiktoken

    return UnicodeTable(_unicode_tiktoken.SOURCE, {k: "".join(v) for k, v in _unicode_tiktoken.CLASSES.items()})


def _live(source: str, flags: str = "") -> np.ndarray:
    """bool per code point: the installed ``regex`` module's members of ``source``."""
    import numpy as np

    return np.unpackbits(np.frombuffer(members(source, flags), dtype=np.uint8))[:N_CODE_POINTS].view(bool)


@functools.cache
def regex_table() -> UnicodeTable:
    """The installed ``regex`` module's classes, as a table (what a trained model records;
    :func:`bpetrain.splitting._charsets.regex_facts`)."""
    facts = regex_facts()
    return UnicodeTable._of_ranges(f"regex {facts.version}", facts.classes)


def resolve_unicode(unicode_version) -> UnicodeTable | None:
    """The table ``unicode_version`` names, or None for the installed ``regex`` module's classes.

    A table whose classes are the installed ``regex`` module's gives None too (the
    ``regex`` module then answers every property, scripts included).

    Raises
    ------
    TypeError
        If ``unicode_version`` is neither a str nor a :class:`UnicodeTable`.
    ValueError
        If it is an unknown name.
    """
    check_unicode_version(unicode_version)
    if unicode_version == "regex":
        return None
    table = tiktoken_table() if unicode_version == "tiktoken" else unicode_version
    return None if _is_regex_table(table) else table


def _is_regex_table(table: UnicodeTable) -> bool:
    """``table == regex_table()``: its classes are the installed ``regex`` module's (the
    same merged ranges, so the same digest). The
    answer is kept on disk under the table's digest and the ``regex`` version
    (:func:`~bpetrain.splitting._charsets.store_arrays`), so a later process reads neither
    the table's classes nor the ``regex`` module's."""
    key = _same_key(table)
    kept = read_arrays(key)
    if kept is not None and kept.keys() == {"same"} and kept["same"].nbytes == 1:
        return bool(kept["same"].tobytes()[0])
    classes = regex_facts().classes  # regex_table()'s ranges, compared without computing its digest
    same = all(table._ranges[name] == classes[name] for name in _NAMES)
    store_arrays(key, {"same": bytes([same])})
    return same


def _same_key(table: UnicodeTable) -> str:
    return f"is the regex module's table\0{table.digest}"


def ship_table(table: UnicodeTable, folder: str) -> None:
    """Keep in ``folder`` (the build's :data:`~bpetrain.splitting._charsets.SHIPPED_DIR`)
    what a first process reads of ``table`` (made by the constructor) from the cache: its
    digest and whether its classes are the ``regex`` module's (:func:`resolve_unicode`)."""
    store_arrays(table._key, {"digest": table.digest.encode("ascii")}, folder)
    store_arrays(_same_key(table), {"same": bytes([_is_regex_table(table)])}, folder)


def check_unicode_version(unicode_version):
    """``unicode_version``, checked: one of :data:`UNICODE_VERSIONS` or a :class:`UnicodeTable`.

    Raises
    ------
    TypeError
        If it is neither a str nor a :class:`UnicodeTable`.
    ValueError
        If it is an unknown name.
    """
    if isinstance(unicode_version, UnicodeTable):
        return unicode_version
    if not isinstance(unicode_version, str):
        raise TypeError(f"unicode_version must be one of {UNICODE_VERSIONS} or a UnicodeTable, "
                        f"got {type(unicode_version).__name__}")
    if unicode_version not in UNICODE_VERSIONS:
        raise ValueError(f"unknown unicode_version {unicode_version!r}: use 'tiktoken' (tiktoken's engine, for "
                         "tiktoken files and OpenAI's encodings) or 'regex' (the installed regex module, what "
                         "bpetrain trains with)")
    return unicode_version


def class_members(source: str, flags: str, unicode: UnicodeTable | None) -> bytes:
    """:func:`bpetrain.splitting._charsets.members` of ``source`` under the table ``unicode``
    (None: the installed ``regex`` module's classes; see the module docstring), kept on disk.

    Warns
    -----
    UnicodeVersionWarning
        If ``source`` holds a property the table lacks (read with the ``regex`` module's).
    """
    if unicode is not None:
        derived = _derived(source, flags, unicode)
        if derived is not None:
            return derived
    tokens = [] if unicode is None else [m.group() for m in _TOKEN.finditer(source) if m.group()[1] in _PROPERTY]
    if not tokens:
        return members(source, flags)
    for token in tokens:
        if not _CATEGORY.fullmatch(token) and _lacks(token, unicode):
            warnings.warn(f"the class {token} is not in the Unicode table of {unicode.source}: it is read with "
                          f"the installed regex module's Unicode (regex {regex.__version__})",
                          UnicodeVersionWarning, stacklevel=2)
    if "i" in flags:  # case folding may join a character to one the tables class apart: every code point
        return members(_rewrite(source, unicode), flags)  # (seconds for a set of many ranges; kept on disk)
    return cached(f"{unicode.digest}\0{flags}\0{source}",
                  lambda: _patched(source, _rewrite(source, unicode), flags, unicode))


def _derived(source: str, flags: str, unicode: UnicodeTable) -> bytes | None:
    """:func:`class_members` derived from the table's classes
    (:func:`bpetrain.splitting._charsets.set_bits`), or None where they cannot give it,
    and case-insensitively (:func:`class_members` reads the set rewritten with the table's
    ranges, which the ``regex`` module then reads case-insensitively, unlike a property)."""
    if "i" in flags:
        return None
    return set_bits(source, flags, unicode._ranges)


def _patched(source: str, rewritten: str, flags: str, unicode: UnicodeTable) -> bytes:
    """The members of ``rewritten``: the regex module's of ``source`` but where the table and
    the regex module class a code point apart (elsewhere each property, so the set, holds
    the same characters in both), there ``rewritten``'s."""
    import numpy as np

    member = _live(source, flags).copy()
    differ = _differences(unicode)
    text = differ.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")
    found = np.zeros(len(differ), dtype=bool)
    for m in regex.finditer(f"(?{flags}:{rewritten})" if flags else rewritten, text):
        found[m.start()] = True
    member[differ] = found
    return np.packbits(member).tobytes()


@functools.lru_cache(maxsize=8)
def _differences(unicode: UnicodeTable) -> np.ndarray:
    """int64: the code points whose general category or ``\\s``/``\\w`` membership the
    table and the installed ``regex`` module disagree on, ascending."""
    import numpy as np

    live = regex_table()
    differ = unicode.general_category != live.general_category
    for name in ESCAPES:
        differ |= unicode.member(name) != live.member(name)
    return np.flatnonzero(differ)


# A property escape, a class escape, a POSIX class, or any other escape (kept as written).
_TOKEN = regex.compile(r"\\[pP](?:\{[^}]*\}|.)|\\[dDsSwW]|\[:\^?\w+:\]|\\.", regex.DOTALL)
_PROPERTY = "pPdDsSwW:"  # the second character of the tokens that name classes
# Tokens every table holds (a general category, a group of them, or a class escape).
_CATEGORY = regex.compile(r"\\[dDsSwW]|\\[pP](?:[LMNPSZC]|\{\^?(?:[LMNPSZC]|L&|LC|"
                          + "|".join(GENERAL_CATEGORIES) + r")\})")


@functools.lru_cache(maxsize=256)
def _lacks(token: str, unicode: UnicodeTable) -> bool:
    """Whether the table cannot give the class ``token`` (not a union of general categories
    or a class escape as the ``regex`` module reads it)."""
    member = _under(token if token[0] == "\\" else f"[{token}]", unicode)
    return member is None or not member.any()


@functools.lru_cache(maxsize=256)
def _rewrite(source: str, unicode: UnicodeTable) -> str:
    """``source`` (one character set) with each property replaced by the table's ranges."""
    in_class = source.startswith("[")
    parts, pos = [], 0
    for m in _TOKEN.finditer(source):
        token = m.group()
        if token[1] not in _PROPERTY or _lacks(token, unicode):
            continue  # kept as written: the regex module reads it
        member = _under(token if token[0] == "\\" else f"[{token}]", unicode)
        ranges = "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges_of(member))
        parts += [source[pos : m.start()], ranges if in_class else f"[{ranges}]"]
        pos = m.end()
    return "".join(parts) + source[pos:]


def classes_that_differ(pat_str: str, unicode: UnicodeTable) -> list[str]:
    """The property and class escapes of ``pat_str`` (anywhere in it) whose members under
    ``unicode`` are not the installed ``regex`` module's, or that the table lacks: what
    splitting ``pat_str`` with the ``regex`` module would read differently."""
    import numpy as np

    found = []
    for m in _TOKEN.finditer(pat_str):
        token = m.group()
        if token[1] in _PROPERTY and token not in found:
            live = token if token[0] == "\\" else f"[{token}]"
            member = _under(live, unicode)
            if member is None or not np.array_equal(member, _live(live)):
                found.append(token)
    return found


def _under(token: str, unicode: UnicodeTable) -> np.ndarray | None:
    """The members of the property ``token`` under ``unicode``, or None if the table lacks it."""
    import numpy as np

    live = _live(token)
    live_category = regex_table().general_category
    inside = np.bincount(live_category[live], minlength=len(GENERAL_CATEGORIES))
    total = np.bincount(live_category, minlength=len(GENERAL_CATEGORIES))
    if np.all((inside == 0) | (inside == total)):  # a union of general categories
        return np.isin(unicode.general_category, np.flatnonzero(inside))
    for name in ESCAPES:
        for negated in (False, True):
            if np.array_equal(live, regex_table().member(name) ^ negated):
                return unicode.member(name) ^ negated
    return None
