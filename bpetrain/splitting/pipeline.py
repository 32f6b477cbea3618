"""Hugging Face pre-tokenizers: splits applied one after another, as a value and a splitter.

A ``tokenizer.json``'s ``pre_tokenizer`` is a ``Split``, a ``Digits``, a ``ByteLevel`` or a
``Sequence`` of them; each step splits every piece the previous step made
(``tokenizers/src/pre_tokenizers/sequence.rs``). :class:`PreTokenizer` holds such a
pipeline (:class:`Split`, :class:`Digits` and :class:`ByteLevel` steps), reads and writes
Hugging Face's JSON (:meth:`PreTokenizer.from_hf`, :meth:`PreTokenizer.to_hf`), and goes
wherever a ``pat_str`` goes (``Encoding``, ``Tokenizer``, ``BpeTrainer``, ``PieceCounter``), with the file's
``normalizer`` (:class:`~bpetrain.splitting.normalizers.Normalizer`, applied to each text
before it is split):
:func:`bpetrain.splitting.pattern.resolve_pattern` turns one that is a single pattern
(:meth:`PreTokenizer.as_pat_str`) into that string, and
:func:`~bpetrain.splitting.pattern.split_pattern` gives the others a
:class:`PipelineSplitter`.

What each step does, as ``tokenizers`` does it:

- ``Split(pattern, behavior, invert)`` (``split.rs``): the regex (Oniguruma syntax;
  ``{"String": s}`` is ``s`` literally) runs over each piece as a string of its own; the
  text it does not match is kept, as pieces between the matches (``Pattern::find_matches``,
  ``tokenizer/pattern.rs``; tiktoken and a bpetrain ``pat_str`` drop it). ``invert`` swaps
  matches and gaps; the behavior (``NormalizedString::split``, ``normalizer.rs``) then
  keeps each (``Isolated``), drops the matches (``Removed``), joins neighbours of one kind
  (``Contiguous``), or joins a match to the gap before (``MergedWithPrevious``) or after
  it (``MergedWithNext``).
- ``Digits(individual_digits)`` (``digits.rs``): numeric characters (``char::is_numeric``,
  ``\\p{N}``) one by one, or runs of them, apart from the rest.
- ``ByteLevel(add_prefix_space, use_regex)`` (``byte_level.rs``): a space before each
  piece that does not start with one (each piece, not only the first), then GPT-2's
  regex (:data:`BYTE_LEVEL_PATTERN`, ``Isolated``); then the byte-level alphabet, which
  changes the characters but not the pieces. A step after it would split that alphabet
  instead of the text, so a ``ByteLevel`` must come last.

The splitter runs the pipeline in the compiled kernel (:mod:`bpetrain.splitting._pipeline`)
without the GIL; when a step's regex is beyond the compiled matcher
(:attr:`PipelineSplitter.fallback_reason`), or backtracks catastrophically on a text,
the ``regex`` module runs the same rules in Python (:meth:`PipelineSplitter.split_by_regex`,
also the reference the tests compare with).

Oniguruma and the ``regex`` module read split patterns alike, except ``^`` and ``$``
(Oniguruma's match at every line start and end: the pattern is run with ``(?m)``),
``X{n,m}+`` (Oniguruma's repeats the interval; refused), and the edges of the shorthand
classes: Oniguruma's ``\\w`` holds no ``No`` numbers (``¼``), the ``regex`` module's does;
``\\p{..}`` properties and ``\\s`` agree, which is what published patterns use.
"""
from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import regex

from bpetrain.splitting import _pipeline
from bpetrain.splitting._compiler import Unsupported, _Parser
from bpetrain.splitting._charsets import members
from bpetrain.splitting._matcher import BacktrackLimitExceeded
from bpetrain.splitting.normalizers import Normalizer
from bpetrain.splitting.pattern import SplitPattern, encode_utf8, split_pattern

__all__ = ["BEHAVIORS", "BYTE_LEVEL_PATTERN", "ByteLevel", "Digits", "PipelineSplitter", "PreTokenizer", "Split"]

#: Hugging Face's split behaviors (``SplitDelimiterBehavior``), by their JSON names.
BEHAVIORS = {
    "Isolated": _pipeline.ISOLATED,
    "Removed": _pipeline.REMOVED,
    "MergedWithPrevious": _pipeline.MERGED_WITH_PREVIOUS,
    "MergedWithNext": _pipeline.MERGED_WITH_NEXT,
    "Contiguous": _pipeline.CONTIGUOUS,
}
#: The regex of ``ByteLevel(use_regex=true)`` (``byte_level.rs``, GPT-2's ``encoder.py``).
BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_SUPPORTED = "Split, Digits, ByteLevel, or a Sequence of them ending in at most one ByteLevel"
# ``X{n,m}+``: a possessive interval in the regex module, a repeated one in Oniguruma.
_INTERVAL_REPEAT = regex.compile(r"(?<!\\)\{\d*(?:,\d*)?\}\+")


@dataclass(frozen=True)
class Split:
    """Hugging Face's ``Split`` pre-tokenizer.

    Parameters
    ----------
    pattern : str
        A regex in Oniguruma syntax (as ``{"Regex": ...}`` in ``tokenizer.json``), or with
        ``literal`` the text to split on (``{"String": ...}``).
    behavior : str, default "Isolated"
        One of :data:`BEHAVIORS`.
    invert : bool, default False
        Split on the text the pattern does not match.
    literal : bool, default False
    """

    pattern: str
    behavior: str = "Isolated"
    invert: bool = False
    literal: bool = False

    def __post_init__(self):
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ValueError(f"Split.pattern must be a non-empty string, got {self.pattern!r}")
        if self.behavior not in BEHAVIORS:
            raise ValueError(f"Split.behavior is {self.behavior!r}; Hugging Face's are {', '.join(BEHAVIORS)}")
        if type(self.invert) is not bool or type(self.literal) is not bool:
            raise TypeError("Split.invert and Split.literal must be bool")

    def regex_source(self) -> str:
        """The pattern for the ``regex`` module, matching as Oniguruma does.

        Raises
        ------
        ValueError
            If the pattern has a repeated interval ``X{n,m}+`` (possessive in the ``regex``
            module): write ``(?:X{n,m})+`` or ``(?>X{n,m})``.
        """
        if self.literal:
            return regex.escape(self.pattern)
        if _INTERVAL_REPEAT.search(self.pattern):
            raise ValueError(
                f"the Split pattern {self.pattern!r:.80} has X{{n,m}}+, which Oniguruma reads as (?:X{{n,m}})+ and the "
                "regex module as a possessive X{n,m}; write the one you mean"
            )
        return "(?m)" + self.pattern if _has_line_anchor(self.pattern) else self.pattern

    def to_hf(self) -> dict:
        """This step as a ``tokenizer.json`` pre-tokenizer object."""
        return {"type": "Split", "pattern": {"String" if self.literal else "Regex": self.pattern},
                "behavior": self.behavior, "invert": self.invert}


@dataclass(frozen=True)
class Digits:
    """Hugging Face's ``Digits`` pre-tokenizer: numeric characters apart from the rest,
    each alone with ``individual_digits``, else in runs."""

    individual_digits: bool = False

    def to_hf(self) -> dict:
        """This step as a ``tokenizer.json`` pre-tokenizer object."""
        return {"type": "Digits", "individual_digits": self.individual_digits}


@dataclass(frozen=True)
class ByteLevel:
    """Hugging Face's ``ByteLevel`` pre-tokenizer: a space before each piece that does not
    start with one (``add_prefix_space``), then GPT-2's regex (``use_regex``).
    ``trim_offsets`` changes offsets only, never the pieces; it is kept for writing back."""

    add_prefix_space: bool = False
    use_regex: bool = True
    trim_offsets: bool = True

    def to_hf(self) -> dict:
        """This step as a ``tokenizer.json`` pre-tokenizer object."""
        return {"type": "ByteLevel", "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}


_STEP_TYPES = (Split, Digits, ByteLevel)


@dataclass(frozen=True)
class PreTokenizer:
    """A pre-tokenization pipeline: Hugging Face's pre-tokenizers, applied one after another.

    Pass it as ``pat_str`` to ``Encoding``, ``Tokenizer``, ``BpeTrainer`` or
    ``PieceCounter``; each splits text as ``tokenizers`` does.

    Parameters
    ----------
    steps : tuple of Split, Digits or ByteLevel
        At most one :class:`ByteLevel`, and only last.
    normalizer : Normalizer or None, default None
        Applied to each text (between special tokens) before the steps split it, as
        ``tokenizers`` applies a ``tokenizer.json``'s ``normalizer``.

    Raises
    ------
    TypeError
        If a step is of another type, or ``normalizer`` is not a ``Normalizer``.
    ValueError
        If a ``ByteLevel`` is not the last step.

    Examples
    --------
    >>> pre = PreTokenizer((Split(r"\\p{N}{1,3}"), ByteLevel(use_regex=False)))
    >>> pre.splitter().split(b"year 2024!")
    [b'year ', b'202', b'4', b'!']
    """

    steps: tuple
    normalizer: Normalizer | None = None

    def __post_init__(self):
        object.__setattr__(self, "steps", tuple(self.steps))
        if self.normalizer is not None and not isinstance(self.normalizer, Normalizer):
            raise TypeError(f"normalizer is a {type(self.normalizer).__name__}; pass a Normalizer or None")
        for k, step in enumerate(self.steps):
            if not isinstance(step, _STEP_TYPES):
                raise TypeError(f"step {k} is a {type(step).__name__}; the steps are Split, Digits and ByteLevel")
            if isinstance(step, ByteLevel) and k != len(self.steps) - 1:
                raise ValueError(
                    f"step {k} is a ByteLevel but not the last step: the steps after it would split the byte-level "
                    "alphabet, not the text; bpetrain reads ByteLevel only as the last step"
                )

    @classmethod
    def from_hf(cls, pre_tokenizer: dict, where: str = "pre_tokenizer", normalizer=None,
                normalizer_where: str = "normalizer") -> PreTokenizer:
        """The pipeline of a ``tokenizer.json``'s ``pre_tokenizer`` object, and its ``normalizer`` object.

        Raises
        ------
        ValueError
            If it is not one :data:`_SUPPORTED` reads, or the normalizer is not one
            :meth:`Normalizer.from_hf` reads, naming the field (``where``, ``normalizer_where``).
        """
        if not isinstance(pre_tokenizer, dict):
            raise ValueError(f"{where} is {pre_tokenizer!r}; bpetrain reads {_SUPPORTED}")  # noqa: TRY004 (a file)
        steps = _steps_from_hf(pre_tokenizer, where)
        normalizer = Normalizer.from_hf(normalizer, normalizer_where)
        try:
            pre = cls(tuple(steps), normalizer)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        try:
            pre.splitter()
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        return pre

    def to_hf(self) -> dict:
        """The ``pre_tokenizer`` object of a ``tokenizer.json`` (a ``Sequence``, or the step alone)."""
        if len(self.steps) == 1:
            return self.steps[0].to_hf()
        return {"type": "Sequence", "pretokenizers": [step.to_hf() for step in self.steps]}

    def as_pat_str(self, aliases: Mapping[str, str] | None = None) -> str | None | PreTokenizer:
        """The ``pat_str`` that splits as this pipeline does, if there is one, else the pipeline.

        ``self`` when it has a normalizer (no pattern normalizes); ``None`` (raw mode) for
        no split at all; the pattern of a single ``Isolated`` split
        (a ``Split``, or ``ByteLevel(use_regex=true)`` without the prefix space) when that
        pattern matches at every character (:func:`matches_everywhere`), so no text falls
        between its matches; the pattern of a single ``Split`` with behavior ``Removed`` and
        ``invert`` (it keeps the matches and drops the rest, as a ``pat_str`` does); else
        ``self``. ``aliases`` maps a ``Split`` pattern as written
        (Oniguruma) to the ``pat_str`` it stands for, taken as is.
        """
        if self.normalizer is not None:
            return self
        splits = [step for step in self.steps if not (isinstance(step, ByteLevel) and not step.add_prefix_space
                                                       and not step.use_regex)]
        if not splits:
            return None
        if len(splits) != 1:
            return self
        step = splits[0]
        if isinstance(step, ByteLevel) and not step.add_prefix_space:
            source = BYTE_LEVEL_PATTERN
        elif isinstance(step, Split) and not step.literal and (step.behavior, step.invert) in (
                ("Isolated", False), ("Removed", True)):
            if aliases and step.pattern in aliases:
                return aliases[step.pattern]
            source = step.regex_source()
            if step.invert:
                return source
        else:
            return self
        return source if matches_everywhere(source) else self

    def splitter(self) -> PipelineSplitter:
        """The splitter of this pipeline, compiled once per process."""
        return _splitter(self)


@functools.lru_cache(maxsize=64)
def _splitter(pre: PreTokenizer) -> PipelineSplitter:
    return PipelineSplitter(pre)


class PipelineSplitter:
    """Splits text by a :class:`PreTokenizer`, as :class:`~bpetrain.splitting.pattern.SplitPattern`
    splits by one pattern.

    Attributes
    ----------
    pre_tokenizer : PreTokenizer
    program : None
        No single program splits a pipeline (callers that run one fall back to :meth:`split`).
    fallback_reason : str or None
        Why the ``regex`` module splits (a step's pattern is beyond the compiled matcher);
        None when the compiled kernel does.

    Raises
    ------
    ValueError
        If a step's regex does not compile or can match the empty string.
    """

    program = None

    def __init__(self, pre: PreTokenizer):
        self.pre_tokenizer = pre
        #: (kind, SplitPattern or None, behavior, invert) for each step of the kernel.
        self.steps: list[tuple[int, SplitPattern | None, int, bool]] = []
        for step in pre.steps:
            if isinstance(step, Split):
                source = step.regex_source()
                self.steps.append((_pipeline.STEP_SPLIT, _compile(source), BEHAVIORS[step.behavior], step.invert))
            elif isinstance(step, Digits):
                source = r"\p{N}" if step.individual_digits else r"\p{N}+"  # Contiguous single digits: runs
                self.steps.append((_pipeline.STEP_SPLIT, split_pattern(source), _pipeline.ISOLATED, False))
            else:
                if step.add_prefix_space:
                    self.steps.append((_pipeline.STEP_PREFIX, None, _pipeline.ISOLATED, False))
                if step.use_regex:
                    self.steps.append((_pipeline.STEP_SPLIT, split_pattern(BYTE_LEVEL_PATTERN), _pipeline.ISOLATED,
                                       False))
        slow = [split.fallback_reason for _, split, _, _ in self.steps if split is not None and split.program is None]
        self.fallback_reason = slow[0] if slow else None
        self._kernel = None
        if not slow:
            self._kernel = _pipeline.Pipeline([(kind, None if split is None else split.program, behavior, invert)
                                               for kind, split, behavior, invert in self.steps])

    def __repr__(self) -> str:
        how = "compiled" if self._kernel is not None else f"regex module: {self.fallback_reason}"
        return f"<PipelineSplitter {len(self.pre_tokenizer.steps)} steps ({how})>"

    def table(self, data: bytes) -> tuple[bytes, np.ndarray]:
        """The pieces of UTF-8 ``data``, normalized by the pipeline's normalizer, as one buffer and offsets.

        Returns
        -------
        pieces : bytes
            The pieces one after another (the text normalized, less removed parts, plus prefix spaces).
        offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
            Piece ``i`` is ``pieces[offsets[i]:offsets[i + 1]]``.
        """
        normalizer = self.pre_tokenizer.normalizer
        if normalizer is not None:
            data = normalizer.normalize_utf8(data)
        if self._kernel is not None:
            try:
                return self._kernel.table(data)
            except BacktrackLimitExceeded:
                pass  # catastrophic backtracking: the regex module's guards may cope
        found = self._split_by_regex(data.decode("utf-8", "surrogateescape"))
        offsets = np.zeros(len(found) + 1, dtype=np.int64)
        np.cumsum([len(piece) for piece in found], out=offsets[1:])
        return b"".join(found), offsets

    def split(self, data: bytes | str) -> list[bytes]:
        """The pieces of ``data`` (UTF-8 bytes, or a ``str``) as ``bytes``."""
        pieces, offsets = self.table(encode_utf8(data) if isinstance(data, str) else data)
        bounds = offsets.tolist()
        return [pieces[a:b] for a, b in zip(bounds, bounds[1:])]

    def pieces(self, text: str) -> list[str]:
        """The pieces of ``text`` as ``str`` (escaped bytes stay escaped)."""
        return [piece.decode("utf-8", "surrogateescape") for piece in self.split(text)]

    def finditer(self, text: str) -> Iterator[PieceMatch]:
        """The pieces of ``text`` read as ``regex`` matches are read (``group()``, ``start()``,
        ``end()``, in characters), for the callers of :meth:`SplitPattern.finditer`."""
        keeps_text = self.pre_tokenizer.normalizer is None and not any(
            kind == _pipeline.STEP_PREFIX or behavior == _pipeline.REMOVED for kind, _, behavior, _ in self.steps)
        at = 0
        for piece in self.pieces(text):
            yield PieceMatch(piece, at if keeps_text else -1)
            at += len(piece)

    def split_by_regex(self, data: bytes | str) -> list[bytes]:
        """:meth:`split` by the ``regex`` module, step by step in Python (the reference).

        Raises
        ------
        PatternTimeoutError
            If a step's pattern runs past its time limit (catastrophic backtracking).
        """
        text = data if isinstance(data, str) else data.decode("utf-8", "surrogateescape")
        normalizer = self.pre_tokenizer.normalizer
        return self._split_by_regex(text if normalizer is None else normalizer(text))

    def _split_by_regex(self, text: str) -> list[bytes]:
        """:meth:`split_by_regex` of ``text`` already normalized."""
        pieces = [text] if text else []
        for kind, split, behavior, invert in self.steps:
            if kind == _pipeline.STEP_PREFIX:
                pieces = [piece if piece.startswith(" ") else " " + piece for piece in pieces]
            else:
                pieces = [part for piece in pieces for part in _split_piece(piece, split, behavior, invert)]
        return [encode_utf8(piece) for piece in pieces]


class PieceMatch(NamedTuple):
    """A piece of :meth:`PipelineSplitter.finditer`."""

    piece: str
    at: int  # where it starts in the text, in characters (-1: the pipeline adds or removes text)

    def group(self) -> str:
        """The piece."""
        return self.piece

    def start(self) -> int:
        """Where the piece starts in the text.

        Raises
        ------
        ValueError
            If the pipeline adds text (``ByteLevel``'s prefix space), removes some
            (``Removed``) or normalizes it: its pieces have no place in the text.
        """
        if self.at < 0:
            raise ValueError("this pre-tokenizer adds text (ByteLevel's add_prefix_space), removes some (a Split "
                             "with behavior Removed) or normalizes it (a normalizer): its pieces have no place in the "
                             "text")
        return self.at

    def end(self) -> int:
        """Where the piece ends in the text (:meth:`start` says what is raised)."""
        return self.start() + len(self.piece)


def _split_piece(piece: str, split: SplitPattern, behavior: int, invert: bool) -> list[str]:
    """The parts ``behavior`` makes of ``piece``: the matches of ``split`` and the gaps
    between them (swapped by ``invert``), grouped as ``_pipeline._group`` groups them."""
    entries = []  # (start, end, is_match)
    gap = 0
    for m in split.finditer(piece):
        if m.start() > gap:
            entries.append((gap, m.start(), invert))
        entries.append((m.start(), m.end(), not invert))
        gap = m.end()
    if gap < len(piece):
        entries.append((gap, len(piece), invert))
    parts = []
    k = 0
    while k < len(entries):
        start, end, is_match = entries[k]
        k += 1
        if behavior == _pipeline.REMOVED and is_match:
            continue
        if behavior == _pipeline.CONTIGUOUS:
            while k < len(entries) and entries[k][2] == is_match:
                end = entries[k][1]
                k += 1
        elif k < len(entries) and (
            (behavior == _pipeline.MERGED_WITH_PREVIOUS and entries[k][2] and not is_match)
            or (behavior == _pipeline.MERGED_WITH_NEXT and is_match and not entries[k][2])
        ):
            end = entries[k][1]
            k += 1
        parts.append(piece[start:end])
    return parts


def _compile(source: str) -> SplitPattern:
    """The compiled ``Split`` pattern ``source``; a ValueError names it."""
    try:
        return split_pattern(source)
    except ValueError as exc:
        raise ValueError(f"Split pattern {source!r:.80}: {exc}") from None


def _steps_from_hf(item, where: str) -> list:
    """The steps of a pre-tokenizer of a ``tokenizer.json``; a ``Sequence`` (within a
    ``Sequence`` too) gives the steps of its items in order."""
    if isinstance(item, dict) and item.get("type") == "Sequence":
        items = item.get("pretokenizers")
        if not isinstance(items, list):
            raise ValueError(f"{where}.pretokenizers must be a list")  # noqa: TRY004 (a malformed file)
        return [step for k, part in enumerate(items) for step in _steps_from_hf(part, f"{where}.pretokenizers[{k}]")]
    return [_step_from_hf(item, where)]


def _step_from_hf(item, where: str):
    """One pre-tokenizer of a ``tokenizer.json``, not a ``Sequence``, as a step."""
    kind = item.get("type") if isinstance(item, dict) else None
    try:
        if kind == "Split":
            pattern = item.get("pattern")
            if not (isinstance(pattern, dict) and len(pattern) == 1 and set(pattern) <= {"Regex", "String"}):
                raise ValueError(f"pattern must be {{'Regex': ...}} or {{'String': ...}}, got {pattern!r}")
            (key, source), = pattern.items()
            return Split(source, item.get("behavior"), item.get("invert", False), key == "String")
        if kind == "Digits":
            return Digits(_flag(item, "individual_digits", False))
        if kind == "ByteLevel":
            return ByteLevel(_flag(item, "add_prefix_space", True), _flag(item, "use_regex", True),
                             _flag(item, "trim_offsets", True))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    raise ValueError(f"{where} is a {kind!r} pre-tokenizer; bpetrain reads {_SUPPORTED}")


def _flag(item: dict, key: str, default: bool) -> bool:
    """The boolean ``item[key]`` (``default`` when absent); a TypeError for another value."""
    value = item.get(key, default)
    if type(value) is not bool:
        raise TypeError(f"{key} must be true or false, got {value!r}")
    return value


def _has_line_anchor(pattern: str) -> bool:
    """Whether ``pattern`` has ``^`` or ``$`` outside a character class."""
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c in "^$":
            return True
        i += 1
    return False


def matches_everywhere(pat_str: str) -> bool:
    """Whether ``pat_str`` matches at every character of every text, so that no text falls
    between its matches (a ``Split`` then keeps no gap, and drops none as a ``pat_str``).

    A sufficient test on the parsed pattern (:mod:`bpetrain.splitting._compiler`): the
    characters an alternative surely matches at, whatever follows, are those of its first
    run or set after optional sets that do not take them, when everything after it is
    optional (``X?``, ``X*``); the union over the alternatives must be every code point.
    False when unsure (a pattern the compiler does not parse).
    """
    try:
        parser = _Parser(pat_str)
        root = parser.parse()
    except Unsupported:
        return False
    sources = {index: key for key, index in parser.sets.items()}

    def bits(index: int) -> np.ndarray:
        return np.frombuffer(members(*sources[index]), dtype=np.uint8)

    covered = np.zeros(len(members(".", "s")), dtype=np.uint8)
    for alternative in root.children if root.kind == "alt" else [root]:
        items = alternative.children if alternative.kind == "seq" else [alternative]
        taken = np.zeros_like(covered)  # characters an optional set before may take
        for k, item in enumerate(items):
            target = item.children[0] if item.kind == "atomic" and len(item.children) == 1 else item
            one = target if target.kind == "set" else (
                target.children[0] if target.kind == "rep" and target.children[0].kind == "set" else None)
            if one is None:
                break
            if target.kind == "rep" and target.lo == 0:
                taken |= bits(one.value)
                continue
            if all(rest.kind == "rep" and rest.lo == 0 for rest in items[k + 1 :]):  # can match nothing
                covered |= bits(one.value) & ~taken
            break
    return bool(np.all(covered == 0xFF))


def pat_str_to_json(pat_str: str | PreTokenizer | None) -> str | dict | None:
    """``pat_str`` as the JSON value of a model file's or sidecar's ``pat_str`` field: the
    string, null, or for a pipeline ``{"pre_tokenizer": <Hugging Face's JSON>}`` (and
    ``"normalizer": <Hugging Face's JSON>`` when it has one)."""
    if isinstance(pat_str, PreTokenizer):
        if pat_str.normalizer is not None:
            return {"pre_tokenizer": pat_str.to_hf(), "normalizer": pat_str.normalizer.to_hf()}
        return {"pre_tokenizer": pat_str.to_hf()}
    return pat_str


def pat_str_from_json(value, where: str) -> str | PreTokenizer | None:
    """The ``pat_str`` that :func:`pat_str_to_json` wrote as ``value``.

    Raises
    ------
    ValueError
        If ``value`` is not a string, null or ``{"pre_tokenizer": ...}`` (with an optional
        ``"normalizer"``) of a pipeline bpetrain reads, naming ``where``.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and "pre_tokenizer" in value and set(value) <= {"pre_tokenizer", "normalizer"}:
        return PreTokenizer.from_hf(value["pre_tokenizer"], f"{where}.pre_tokenizer", value.get("normalizer"),
                                    f"{where}.normalizer")
    raise ValueError(f"{where} must be a string, null or {{\"pre_tokenizer\": ...}}, got {value!r:.80}")
