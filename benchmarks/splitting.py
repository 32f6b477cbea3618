"""The split patterns the benchmarks compare, and the one place that calls bpetrain's splitter.

:data:`SPLIT_PATTERNS` names every pattern the pre-tokenization, training and encoding
benchmarks offer (``--pattern NAME``), by the names of :data:`bpetrain.PATTERNS`. The functions below are the only code in
``benchmarks/`` that reaches into bpetrain's splitter. bpetrain compiles every pattern
within its matcher's syntax (``bpetrain.splitting._compiler``); for the exact strings of
:data:`bpetrain.PATTERNS` (gpt2, cl100k, o200k) the compiled splitter hands over to
hand-written matchers (``bpetrain.splitting._blocks``), for those and for minbpe's, nanochat's and
Llama 3's strings their ASCII text is read 64 bytes at a time (``_ascii_blocks.h``), and
:func:`engine_n_pieces` times the compiled program alone on those too. :func:`count_pieces` goes through the public
:class:`bpetrain.PieceCounter`, the trainer's own path.
"""
from __future__ import annotations

import functools

import regex

from bpetrain import PATTERNS, PieceCounter
from bpetrain.splitting._compiler import compile_program
from bpetrain.splitting._matcher import Program
from bpetrain.splitting.pattern import split_pattern

#: name -> ``pat_str``. The first three are tiktoken's; the others are the strings their
#: projects pass to their regex engines (``minbpe``: cl100k as minbpe writes it, rustbpe's
#: default pattern; ``nanochat``: that with at most two digits a piece; ``llama3``).
SPLIT_PATTERNS: dict[str, str] = {
    name: PATTERNS[name] for name in ("gpt2", "cl100k", "o200k", "minbpe", "nanochat", "llama3")
}


def resolve(pattern: str) -> tuple[str, str]:
    """``(name, pat_str)`` for a name of :data:`SPLIT_PATTERNS` or a regex.

    A regex that is not one of the named strings is called ``custom``; one that is gets
    its name, so a table says which pattern ran whichever way it was given.

    Raises
    ------
    ValueError
        If ``pattern`` looks like a name (lower-case letters, digits, ``-``, ``_``) but
        is not one, or does not compile.
    """
    if pattern in SPLIT_PATTERNS:
        return pattern, SPLIT_PATTERNS[pattern]
    if regex.fullmatch(r"[a-z][a-z0-9_-]*", pattern):
        raise ValueError(f"unknown pattern name {pattern!r}; the names are {', '.join(SPLIT_PATTERNS)}")
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"pattern {pattern!r} does not compile: {exc}") from None
    name = next((name for name, pat_str in SPLIT_PATTERNS.items() if pat_str == pattern), "custom")
    return name, pattern


def resolve_all(patterns: list[str] | None, default: str) -> list[tuple[str, str]]:
    """The ``--pattern`` options of a script: ``all`` means every named pattern; none, ``default``."""
    if not patterns:
        patterns = [default]
    if "all" in patterns:
        patterns = [p for p in patterns if p != "all"] + [n for n in SPLIT_PATTERNS if n not in patterns]
    return [resolve(p) for p in patterns]


# ------------------------------------------------------- bpetrain's splitter


def has_compiled_splitter(pat_str: str) -> bool:
    """Whether bpetrain splits ``pat_str`` with compiled code (not the ``regex`` module)."""
    return split_pattern(pat_str).program is not None


def splitter_kind(pat_str: str) -> str:
    """How bpetrain splits ``pat_str``: "64-byte blocks + hand-written" (the named patterns,
    ``bpetrain.splitting._blocks``), "64-byte blocks + compiled" (minbpe's, nanochat's and Llama 3's
    strings), "compiled", or "regex module"."""
    program = split_pattern(pat_str).program
    if program is None:
        return "regex module"
    if program.blocks:
        return "64-byte blocks + " + ("hand-written" if program.native else "compiled")
    return "compiled"


def pieces(pat_str: str, data: bytes) -> list[bytes]:
    """The pieces bpetrain's splitter cuts the UTF-8 bytes ``data`` into."""
    return split_pattern(pat_str).split(data)


def n_pieces(pat_str: str, data: bytes) -> int:
    """How many pieces bpetrain's splitter cuts ``data`` into: the splitter alone, one thread
    (a pattern the compiled splitter does not run is decoded and split by the ``regex`` module)."""
    program = split_pattern(pat_str).program
    if program is not None:
        return program.n_pieces(data)
    return regex_n_pieces(pat_str, data.decode("utf-8", "surrogateescape"))


@functools.cache
def _engine(pat_str: str) -> Program:
    return Program(pat_str, compile_program(pat_str))


def engine_n_pieces(pat_str: str, data: bytes) -> int:
    """:func:`n_pieces` with the compiled program alone, never a hand-written matcher."""
    return _engine(pat_str).n_pieces(data)


# ------------------------------------------------------- through bpetrain's public API


def count_pieces(pat_str: str, data: bytes) -> PieceCounter:
    """Split ``data`` (one text) and count its pieces in bpetrain's table, as training
    does (one thread); the counter."""
    counter = PieceCounter(pat_str)
    counter.count_text(data, len(data), final=True)
    return counter


# ------------------------------------------------------- the reference: the regex module


def regex_pieces(pat_str: str, data: bytes) -> list[bytes]:
    """``regex.finditer``'s pieces of ``data`` decoded with ``surrogateescape`` (each
    invalid byte one character), re-encoded the same way: what every splitter must give."""
    text = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text)]


def regex_n_pieces(pat_str: str, text: str) -> int:
    """How many matches ``regex.finditer`` finds in ``text`` (a ``str``: decoding is not timed)."""
    return sum(1 for _ in regex.compile(pat_str).finditer(text))
