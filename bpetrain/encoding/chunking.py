"""Cutting a text into chunks of at most so many tokens (:meth:`bpetrain.Encoding.split_into_chunks`).

A cut falls at the end of a token of the whole text's encoding that is also a UTF-8
character boundary (never inside a character), the last such end within the limit whose
head, encoded alone, has at most the limit's tokens.
"""
from __future__ import annotations

import numpy as np

from bpetrain.encoding._args import check_count, check_text
from bpetrain.splitting.pattern import replace_surrogates

__all__ = ["chunks"]


def chunks(enc, text: str, max_tokens: int, first_only: bool) -> tuple[str, list[str]]:
    """The text (lone surrogates replaced) and its chunks of at most ``max_tokens`` tokens
    of ``enc`` (a :class:`bpetrain.Encoding`; only the first chunk if ``first_only``).

    Raises
    ------
    TypeError
        If ``text`` is not a ``str``.
    ValueError
        If ``max_tokens`` < 1, or a character alone needs more than ``max_tokens`` tokens.
    """
    check_text(text)
    max_tokens = check_count("max_tokens", max_tokens, 1)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        text = replace_surrogates(text)
        data = text.encode("utf-8")
    ends = _token_ends(enc, text, data)
    # A token end is a cut candidate when it falls on a character boundary.
    padded = np.frombuffer(data + b"\0", dtype=np.uint8)
    on_char = (padded[ends] & 0xC0) != 0x80
    found: list[str] = []
    start, first = 0, 0  # byte offset of the chunk, index of its first token
    while start < len(data):
        last = min(first + max_tokens, len(ends))
        for k in first + np.flatnonzero(on_char[first:last])[::-1]:
            chunk = data[start : ends[k]].decode("utf-8")
            if enc.count_till_limit(chunk, max_tokens) is not None:
                break
        else:
            raise ValueError(
                f"the character at byte {start} of the text needs more than {max_tokens} "
                "tokens on its own, so no chunk of at most that many tokens can hold it; raise the limit"
            )
        found.append(chunk)
        if first_only:
            break
        start, first = int(ends[k]), int(k) + 1
    return text, found


def _token_ends(enc, text: str, data: bytes) -> np.ndarray:
    """Byte offset in ``data`` (``text`` as UTF-8) of the end of each token of ``text``."""
    lengths = enc._bpe.token_lengths
    if enc._split is None:
        return np.cumsum(lengths[enc._bpe.encode_bytes(data)])
    if enc._pattern is not None:
        ends = np.cumsum(lengths[enc._encode(text, False, enc._specials.none)])
        if (ends[-1] if len(ends) else 0) == len(data):  # the pieces tile the text
            return ends
    else:
        pieces = enc._split.pieces(text)
        if sum(map(len, pieces)) == len(text):  # the pieces tile the text
            return np.cumsum(lengths[enc._bpe.encode_pieces(pieces)])
    ends, char_at, byte_at = [], 0, 0  # the pattern skips some text: follow each match
    for match in enc._split.finditer(text):
        byte_at += len(text[char_at : match.start()].encode("utf-8"))
        ends.append(byte_at + np.cumsum(lengths[enc._bpe.encode_pieces([match.group()])]))
        byte_at += len(match.group().encode("utf-8"))
        char_at = match.end()
    return np.concatenate([*ends, np.array([len(data)])])
