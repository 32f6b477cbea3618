"""Argument checks the modules of :mod:`bpetrain.encoding` share, with tiktoken's exceptions."""
from __future__ import annotations

from numbers import Integral  # numpy's integers are registered as Integral

__all__ = ["as_bytes", "check_count", "check_text"]


def check_text(text) -> None:
    """Raise TypeError unless ``text`` is a ``str``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


def check_count(name: str, value: int, minimum: int) -> int:
    """``value`` as an int64 (a token count beyond 2**63 - 1 means no limit: it is clamped).

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If it is below ``minimum``.
    """
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return min(int(value), 2**63 - 1)


def as_bytes(text_or_bytes, name: str) -> bytes:
    """``text_or_bytes`` as bytes (a ``str`` as strict UTF-8, as tiktoken encodes it)."""
    if isinstance(text_or_bytes, str):
        return text_or_bytes.encode("utf-8")
    if not isinstance(text_or_bytes, bytes):
        raise TypeError(f"{name} must be str or bytes, got {type(text_or_bytes).__name__}")
    return text_or_bytes
