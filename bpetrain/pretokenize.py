"""Which split patterns have a compiled splitter, and text as the bytes the splitters take.

The named patterns (``gpt2``, ``cl100k``/``gpt4``, ``o200k``) are matched by the
compiled splitter :mod:`bpetrain._pretok` directly on UTF-8 bytes; any other pattern
goes through the ``regex`` module. Both give the same pieces: those of
``regex.finditer(pat_str, text)`` on the text decoded with
``errors="surrogateescape"`` (each invalid byte is one lone-surrogate character, which
is not a letter, number or space), re-encoded the same way.
"""
from __future__ import annotations

from . import _pretok
from .patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

__all__ = ["encode_utf8", "pattern_id"]

_COMPILED = {GPT2_PATTERN: _pretok.GPT2, CL100K_PATTERN: _pretok.CL100K, O200K_PATTERN: _pretok.O200K}


def pattern_id(pat_str: str | None) -> int:
    """The compiled splitter's id for ``pat_str``, or 0 when the ``regex`` module must split.

    Only the exact strings of :data:`bpetrain.PATTERNS` have a compiled splitter.
    """
    return _COMPILED.get(pat_str, 0)


def encode_utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes; escaped bytes (``surrogateescape``) become those bytes again.

    Raises
    ------
    ValueError
        If ``text`` holds a lone surrogate that is not an escaped byte.
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValueError(
            f"text holds the lone surrogate U+{ord(bad):04X} at character {exc.start}, which is not "
            "valid Unicode and has no UTF-8 bytes; pass such text as bytes, or decode it with "
            "errors='surrogateescape'"
        ) from None
