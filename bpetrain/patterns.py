"""Split patterns (pre-tokenization regexes) by name, and how a pattern splits text.

The named patterns are the ones OpenAI's tokenizers use, as published in tiktoken's
``tiktoken_ext/openai_public.py``: ``gpt2`` (r50k/p50k), ``cl100k`` (alias ``gpt4``)
and ``o200k``. They are written for the ``regex`` module (possessive quantifiers,
Unicode properties).
"""
from __future__ import annotations

import regex

__all__ = ["PATTERNS", "compile_pattern", "resolve_pattern"]

GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(  # noqa: FLY002 (one alternative a line)
    [
        (
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
        ),
        (
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
        ),
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: Named split patterns: name -> ``pat_str``.
PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "gpt4": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
}


def resolve_pattern(pattern: str | None) -> str | None:
    """Return the ``pat_str`` for a pattern name, a custom regex, or ``None``.

    Parameters
    ----------
    pattern : str or None
        A name from :data:`PATTERNS` (``"gpt2"``, ``"cl100k"``, ``"gpt4"``, ``"o200k"``),
        ``"none"`` or ``None`` for no pre-tokenization (raw mode), or any regular
        expression the ``regex`` module accepts.

    Returns
    -------
    str or None
        The regex source, or ``None`` for raw mode.

    Raises
    ------
    TypeError
        If ``pattern`` is not a string or ``None``.
    ValueError
        If ``pattern`` looks like a name (lower-case letters, digits, ``_``) but is not
        one, does not compile, or matches the empty string.
    """
    if pattern is None or pattern == "none":
        return None
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or None, got {type(pattern).__name__}")
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    if regex.fullmatch(r"[a-z][a-z0-9_]*", pattern):
        raise ValueError(
            f"unknown pattern name {pattern!r}: the names are {', '.join(PATTERNS)} and none; to split on "
            f"the literal text, pass the regex as (?:{pattern})"
        )
    compile_pattern(pattern)
    return pattern


def compile_pattern(pat_str: str) -> regex.Pattern:
    """Compile ``pat_str`` with the ``regex`` module, with an error that says what to pass.

    Raises
    ------
    ValueError
        If the regex does not compile or can match the empty string.
    """
    try:
        compiled = regex.compile(pat_str)
    except regex.error as exc:
        names = ", ".join(sorted(PATTERNS))
        raise ValueError(
            f"pattern {pat_str!r} is neither a known name ({names}, none) nor a valid "
            f"regular expression: {exc}"
        ) from None
    if compiled.fullmatch(""):
        raise ValueError(f"pattern {pat_str!r} matches the empty string; it must match at least one character")
    return compiled
