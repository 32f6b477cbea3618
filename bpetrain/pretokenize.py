"""Which split patterns have a compiled splitter, and splitting text into pieces.

The named patterns (``gpt2``, ``cl100k``/``gpt4``, ``o200k``) are matched by the
compiled splitter :mod:`bpetrain._pretok` directly on UTF-8 bytes; any other pattern
goes through the ``regex`` module. Both give the same pieces: those of
``regex.finditer(pat_str, text)`` on the text decoded with
``errors="surrogateescape"`` (each invalid byte is one lone-surrogate character, which
is not a letter, number or space), re-encoded the same way.
"""
from __future__ import annotations

from . import _pretok
from .patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, compile_pattern

__all__ = ["encode_utf8", "pattern_id", "split"]

_COMPILED = {GPT2_PATTERN: _pretok.GPT2, CL100K_PATTERN: _pretok.CL100K, O200K_PATTERN: _pretok.O200K}


def pattern_id(pat_str: str | None) -> int:
    """The compiled splitter's id for ``pat_str``, or 0 when the ``regex`` module must split.

    Only the exact strings of :data:`bpetrain.PATTERNS` have a compiled splitter.
    """
    return _COMPILED.get(pat_str, 0)


def split(text: str | bytes, pat_str: str) -> list[bytes]:
    """Split ``text`` into pieces with ``pat_str``: the pieces as UTF-8 bytes.

    Parameters
    ----------
    text : str or bytes
        ``bytes`` need not be valid UTF-8 (see the module docstring).
    pat_str : str
        A split pattern (a name's ``pat_str`` from :data:`bpetrain.PATTERNS` or any regex).

    Returns
    -------
    list of bytes
        The pieces, in order; they concatenate to the text's bytes.

    Raises
    ------
    ValueError
        If ``pat_str`` is not a valid pattern, or a ``str`` holds a lone surrogate.
    """
    data = text if isinstance(text, bytes) else encode_utf8(text)
    pid = pattern_id(pat_str)
    if pid:
        return _pretok.split_bytes(data, pid)
    decoded = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in compile_pattern(pat_str).finditer(decoded)]


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
