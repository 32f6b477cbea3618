"""Special tokens in text: tiktoken's rules, its error message, and finding them.

``allowed_special`` names the special tokens that :meth:`bpetrain.Encoding.encode` encodes
as their ids; ``disallowed_special`` the strings whose appearance in a text raises
(``"all"``: every special token not allowed), as in tiktoken's ``Encoding.encode``
(``tiktoken/core.py``). The compiled encoder looks for both while it encodes, as
:class:`~bpetrain.encoding._encoder.Needles`; the ``regex`` module finds them where it
cannot, and for the error message.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import lru_cache
from numbers import Integral  # numpy's integers are registered as Integral
from typing import Literal, NamedTuple

import regex

from bpetrain.encoding._args import check_text
from bpetrain.encoding._encoder import Needles
from bpetrain.encoding.errors import DisallowedSpecialTokenError

__all__ = [
    "SpecialTokens",
    "Strings",
    "allowed_special_tokens",
    "check_disallowed",
    "check_special",
    "needles",
    "special_regex",
    "special_sets",
]


class Strings(NamedTuple):
    """What to look for in a text, for one pair of ``allowed_special`` and
    ``disallowed_special`` arguments."""

    #: The special tokens to encode as their ids.
    allowed: frozenset[str]
    #: The strings no text may hold.
    disallowed: frozenset[str]
    #: ``allowed`` with their ids, for the kernel (None if empty).
    specials: Needles | None
    #: ``disallowed``, for the kernel (None if empty).
    needles: Needles | None
    #: Whether the kernel can look for all of them (not where one is empty or holds a
    #: lone surrogate: then the ``regex`` module does).
    kernel: bool


class SpecialTokens:
    """An encoding's special tokens (token -> id) and the :class:`Strings` of the arguments
    it is called with, kept for the last 64 pairs (a collection as a frozenset)."""

    def __init__(self, special_tokens: Mapping[str, int]):
        self.ids = special_tokens
        #: Nothing to look for: ``encode_ordinary``.
        self.none = Strings(frozenset(), frozenset(), None, None, True)
        #: ``encode``'s defaults: no special token allowed, every one disallowed.
        self.default = self._strings(frozenset(), frozenset(special_tokens))
        self._kept: dict[tuple, Strings] = {}

    def strings(
        self, allowed_special: Literal["all"] | Collection[str], disallowed_special: Literal["all"] | Collection[str]
    ) -> Strings:
        """The :class:`Strings` of these arguments (tiktoken's rules: :func:`special_sets`)."""
        if (isinstance(disallowed_special, str) and disallowed_special == "all"
                and isinstance(allowed_special, (frozenset, set, tuple, list)) and not allowed_special):
            return self.default
        if not isinstance(allowed_special, str):
            allowed_special = frozenset(allowed_special)
        if not isinstance(disallowed_special, str):
            disallowed_special = frozenset(disallowed_special)
        key = (allowed_special, disallowed_special)
        found = self._kept.get(key)
        if found is None:
            found = self._strings(*map(frozenset, special_sets(self.ids, allowed_special, disallowed_special)))
            if len(self._kept) >= 64:
                self._kept.clear()
            self._kept[key] = found
        return found

    def _strings(self, allowed: frozenset[str], disallowed: frozenset[str]) -> Strings:
        found_needles = needles(disallowed) if disallowed else None
        specials = needles(allowed, tuple(self.ids[token] for token in sorted(allowed))) if allowed else None
        kernel = not ((disallowed and found_needles is None) or (allowed and specials is None))
        return Strings(allowed, disallowed, specials, found_needles, kernel)


def allowed_special_tokens(
    text: str,
    special_tokens: Collection[str],
    allowed_special: Literal["all"] | Collection[str],
    disallowed_special: Literal["all"] | Collection[str],
) -> set[str]:
    """The special tokens to encode as such in ``text``, after tiktoken's check for disallowed ones.

    Names in ``allowed_special`` that are not special tokens are ignored, as tiktoken
    ignores them; strings in ``disallowed_special`` raise when ``text`` holds them,
    special tokens or not, as in tiktoken (``Encoding.encode`` in ``tiktoken/core.py``).

    Raises
    ------
    ValueError
        If ``text`` holds a disallowed string (tiktoken's message, which says how to
        allow it).
    """
    check_text(text)
    allowed, disallowed = special_sets(special_tokens, allowed_special, disallowed_special)
    check_disallowed(text, disallowed)
    return allowed


def special_sets(
    special_tokens: Collection[str],
    allowed_special: Literal["all"] | Collection[str],
    disallowed_special: Literal["all"] | Collection[str],
) -> tuple[set[str], set[str]]:
    """The special tokens to encode as such, and the strings no text may hold (tiktoken's rules)."""
    allowed = set(special_tokens) if allowed_special == "all" else set(special_tokens).intersection(allowed_special)
    disallowed = set(special_tokens) - allowed if disallowed_special == "all" else set(disallowed_special)
    return allowed, disallowed


def check_disallowed(text: str, disallowed: Collection[str]) -> None:
    """Raise tiktoken's error if ``text`` holds a string of ``disallowed``."""
    if not disallowed:
        return
    found = special_regex(frozenset(disallowed)).search(text)
    if found:
        raise DisallowedSpecialTokenError(found.group())


@lru_cache(maxsize=64)
def needles(strings: frozenset[str], ids: tuple[int, ...] | None = None) -> Needles | None:
    """``strings`` as the kernel's :class:`~bpetrain.encoding._encoder.Needles` (with ``ids``, the
    token id of each in sorted order, for allowed special tokens), or None where the
    kernel cannot look for them: none, an empty string (found everywhere, as by the
    regex) or one with a lone surrogate (no UTF-8)."""
    try:
        encoded = [item.encode("utf-8") for item in sorted(strings)]
    except UnicodeEncodeError:
        return None
    if not encoded or not all(encoded):
        return None
    return Needles(encoded, ids)


@lru_cache(maxsize=64)
def special_regex(tokens: frozenset[str]) -> regex.Pattern:
    """A regex that finds any of ``tokens`` (longest first) and, in ``split``, keeps it."""
    return regex.compile("(" + "|".join(regex.escape(t) for t in sorted(tokens, key=len, reverse=True)) + ")")


def check_special(token, token_id) -> str:
    """``token`` after checking it is a non-empty string with an id tiktoken accepts.

    Raises
    ------
    TypeError
        If ``token`` is not a string or ``token_id`` not an integer.
    ValueError
        If ``token`` is empty.
    OverflowError
        If ``token_id`` is outside ``[0, 2**32)``.
    """
    if not isinstance(token, str):
        raise TypeError(f"special tokens are strings, got {token!r} ({type(token).__name__})")
    if not token:
        raise ValueError("a special token is the empty string; special tokens must be non-empty")
    if not isinstance(token_id, Integral) or isinstance(token_id, bool):
        raise TypeError(f"special token {token!r} has id {token_id!r}; ids are integers")
    if not 0 <= token_id < 2**32:
        raise OverflowError(f"special token {token!r} has id {token_id}; ids are in [0, 2**32)")
    return token
