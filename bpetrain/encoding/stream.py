"""Encoding a text that arrives in parts, without holding it whole.

Whenever enough characters wait, the text is encoded up to its last cut point
(:class:`bpetrain.splitting.cuts.Cuts`: the last safe cut of the split pattern, or the end
of a special token that would straddle it, as counting cuts a corpus); the rest waits
for the next parts (:meth:`bpetrain.Encoding.encode_stream`).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from bpetrain.encoding.batching import encode_range
from bpetrain.encoding.special import Strings, check_disallowed, special_regex
from bpetrain.splitting.cuts import Cuts
from bpetrain.splitting.pattern import replace_surrogates

if TYPE_CHECKING:
    import numpy as np

__all__ = ["STREAM_BLOCK", "encode_stream"]

#: Characters :meth:`bpetrain.Encoding.encode_stream` gathers before it looks for a cut.
STREAM_BLOCK = 1 << 22


def encode_stream(enc, chunks: Iterable[str], strings: Strings, block_chars: int | None) -> Iterator[np.ndarray]:
    """The ids of the text in ``chunks``, encoded by ``enc`` (a :class:`bpetrain.Encoding`
    with a compiled split pattern) under ``strings``, block by block (see
    :meth:`bpetrain.Encoding.encode_stream`)."""
    block_chars = STREAM_BLOCK if block_chars is None else block_chars
    if block_chars < 1:
        raise ValueError(f"block_chars must be at least 1, got {block_chars}")
    cuts = Cuts(enc.pat_str, strings.allowed | strings.disallowed, unicode_version=enc.unicode_version)
    blocks = map(_utf8, _gathered(chunks, block_chars))
    context = ""  # the character before a block that does not start a string (for ^ and \A)
    for data, stop, final, continued in cuts.cut_blocks(blocks):
        text = bytes(data[:stop]).decode("utf-8")
        check_disallowed(text, strings.disallowed)
        following = b"" if final else bytes(data[stop:])
        yield _encode_after(enc, context if continued else "", text, strings.allowed, following)
        context = text[-1:] if text else context


def _encode_after(enc, context: str, text: str, allowed: frozenset[str], following: bytes) -> np.ndarray:
    """Ids of ``text`` where it follows ``context`` (one character, or "" at the start)
    and is followed by ``following`` (UTF-8 bytes; empty at the text's end): each stretch
    between special tokens is encoded in place, the first after ``context``, the last
    with ``following`` in view of the split pattern (``$``, lookaheads), which a safe cut
    lets no piece cross. ``context`` and ``text`` come from valid UTF-8 (no lone surrogates)."""
    import numpy as np

    parts = special_regex(allowed).split(text, maxsplit=1) if allowed else [text]
    before = context.encode("utf-8")
    stretch = parts[0].encode("utf-8")
    last = len(parts) == 1
    data = before + stretch + (following if last else b"")
    first = encode_range(enc._bpe, enc._pattern, data, len(before), False, stop=len(before) + len(stretch))
    if last:
        return first
    rest = _encode_after(enc, "", parts[2], allowed, following)
    return np.concatenate([first, [enc.special_tokens[parts[1]]], rest])


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates replaced by U+FFFD first (as :meth:`bpetrain.Encoding.encode` does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return replace_surrogates(text).encode("utf-8")


def _gathered(chunks: Iterable[str], size: int) -> Iterator[str]:
    """``chunks`` joined into parts of at least ``size`` characters (the last may be shorter).

    A part that would end with the high half of a surrogate pair keeps it for the next part,
    which may hold the low half: the pair is then one character, as in the text joined."""
    waiting: list[str] = []
    n = 0
    for chunk in chunks:
        waiting.append(chunk)
        n += len(chunk)
        if n >= size:
            part = "".join(waiting)
            waiting, n = ([part[-1]], 1) if "\ud800" <= part[-1] <= "\udbff" else ([], 0)
            if len(part) > n:
                yield part[: len(part) - n]
    if waiting:
        yield "".join(waiting)
