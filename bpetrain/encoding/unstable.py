"""The end of an encoding that more text can change, and what it can become.

BPE never merges across pieces, so appending text to an encoded text can change only
the tokens of its last piece, and with patterns whose splits move (cl100k's
``\\s*[\\r\\n]`` joins ``"\\n"`` and ``" "`` once another ``"\\n"`` follows) the whitespace
tokens just before it. This module finds that *unstable* end and lists the token
sequences it may turn into, for :meth:`bpetrain.Encoding.encode_with_unstable` (a
prompt's stable tokens plus every way a completion may continue it,
:func:`encode_with_unstable`) and :meth:`bpetrain.Encoding._encode_bytes` (bytes cut
inside a character, :func:`encode_bytes`).

The rules are tiktoken's (``_increase_last_piece_token_len`` and
``_encode_unstable_native`` in tiktoken's ``src/lib.rs``), heuristics included, so that
the results are the same as tiktoken's; the functions take a
:class:`~bpetrain.Encoding` and use its encoder. The completions take one batch encoding
of every token that may straddle the end; the most are for a text ending in one space
(with o200k_base, 106,529 completions in 0.15 s, about twice tiktoken's time).
"""
from __future__ import annotations

from bisect import bisect_left

import regex

from bpetrain.encoding.merge_rule import split_with_ranks
from bpetrain.encoding.special import special_regex
from bpetrain.splitting.pattern import replace_surrogates

__all__ = ["byte_pair_encode", "completions", "encode_bytes", "encode_with_unstable", "unstable_token_count"]

#: Bytes of the tokens that extend the unstable end backwards (tiktoken's choice).
BLANK_BYTES = b" \n\t"

_WHITESPACE = regex.compile(r"\p{White_Space}")


def encode_with_unstable(enc, text: str, allowed: set[str]) -> tuple[list[int], list[list[int]]]:
    """The tokens of ``text`` that more text cannot change, and how the rest may continue
    (:meth:`bpetrain.Encoding.encode_with_unstable`; ``allowed``: the special tokens
    encoded as such)."""
    tokens, n_last_piece = _encode_with_last_piece(enc, text, allowed)
    n_unstable = unstable_token_count(enc, tokens, n_last_piece)
    if not n_unstable:
        return tokens, []
    stable, unstable = tokens[: len(tokens) - n_unstable], tokens[len(tokens) - n_unstable :]
    return stable, completions(enc, enc.decode_bytes(unstable))


def encode_bytes(enc, data: bytes) -> list[int]:
    """Token ids of ``data``, which may be invalid UTF-8 (:meth:`bpetrain.Encoding._encode_bytes`).

    Valid UTF-8 is encoded as text. Otherwise the valid head is encoded as text, and its
    unstable end joined with the rest of the bytes is encoded as one piece.
    """
    try:
        return enc.encode_ordinary(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        valid = exc.start
    tokens, n_last_piece = _encode_with_last_piece(enc, data[:valid].decode("utf-8"), set())
    n_unstable = unstable_token_count(enc, tokens, n_last_piece)
    stable, unstable = tokens[: len(tokens) - n_unstable], tokens[len(tokens) - n_unstable :]
    return stable + enc._encode_single_piece(enc.decode_bytes(unstable) + data[valid:])


def _encode_with_last_piece(enc, text: str, allowed: set[str]) -> tuple[list[int], int]:
    """:meth:`bpetrain.Encoding.encode` of ``text`` (``allowed``: the special tokens encoded
    as such), and how many of the tokens encode its last piece: 0 if the text after the
    last special token has no piece."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = replace_surrogates(text)
    tokens = enc._encode(text, True, enc._specials.strings(allowed, ()) if allowed else enc._specials.none)
    tail = (special_regex(frozenset(allowed)).split(text)[-1] if allowed else text).encode("utf-8")
    pieces = [tail] if enc._split is None else enc._split.split(tail)
    return tokens, len(enc._encode_single_piece(pieces[-1])) if pieces else 0


def unstable_token_count(enc, tokens: list[int], n_last_piece: int) -> int:
    """How many tokens at the end of ``tokens`` more text may change.

    Parameters
    ----------
    enc : bpetrain.Encoding
    tokens : list of int
        The encoding of a text.
    n_last_piece : int
        How many of them encode the text's last piece (0 if the text ends with a special
        token or has no piece).

    Returns
    -------
    int
        ``n_last_piece``, plus, when the last piece starts with a token made only of
        spaces, tabs and newlines, the run of such tokens right before it.
    """
    n = n_last_piece
    if n and _is_blank(enc, tokens[len(tokens) - n]):
        while n < len(tokens) and _is_blank(enc, tokens[len(tokens) - n - 1]):
            n += 1
    return n


def completions(enc, unstable: bytes) -> list[list[int]]:
    """The token sequences that may follow the stable tokens when text is appended.

    Each sequence encodes ``unstable`` followed by more bytes, cut after the first token
    that reaches the end of ``unstable``. They are, as in tiktoken:

    1. every token that starts with ``unstable``;
    2. for each cut ``0 < i < len(unstable)`` and each token ``t`` that starts with
       ``unstable[i:]``: the encoding of ``unstable[:i] + t`` (split by the pattern if it
       is valid UTF-8, else one piece by the merge rule alone);
    3. if ``unstable`` ends with a whitespace character after other bytes: the two parts
       encoded apart (the pattern's ``\\s+(?!\\S)`` can split there once text follows).

    Parameters
    ----------
    enc : bpetrain.Encoding
    unstable : bytes
        The bytes of the unstable tokens (non-empty).

    Returns
    -------
    list of list of int
        The distinct sequences, in the order above (tokens in byte order within each
        step); tiktoken returns them in a hash set's order.
    """
    ranks, tokens = enc.mergeable_ranks, enc._sorted_token_bytes
    found = dict.fromkeys((ranks[token],) for token in _starting_with(tokens, unstable))  # an ordered set
    joined = [unstable[:i] + token for i in range(1, len(unstable)) for token in _starting_with(tokens, unstable[i:])]
    texts, raw = [], []
    for data in joined:
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            raw.append(data)
    encoded = enc.encode_ordinary_batch(texts) + [byte_pair_encode(enc, data) for data in raw]
    found.update(dict.fromkeys(_covering(enc, ids, len(unstable)) for ids in encoded))
    last = _last_character(unstable)
    if last is not None and len(last) < len(unstable) and _WHITESPACE.fullmatch(last.decode("utf-8")):
        head = unstable[: len(unstable) - len(last)]
        found[(*byte_pair_encode(enc, head), *byte_pair_encode(enc, last))] = None
    return [list(ids) for ids in found]


def byte_pair_encode(enc, piece: bytes) -> list[int]:
    """The merge rule alone on ``piece``, without first looking the whole piece up in the
    ranks (tiktoken's ``byte_pair_encode``).

    The two differ only when ``piece`` is a token that the rule does not make (the
    vocabularies bpetrain trains have none: :meth:`bpetrain.Tokenizer.encoding` refuses
    them); then the pure-Python rule answers (:func:`bpetrain.encoding.merge_rule.split_with_ranks`).
    """
    if len(piece) > 1 and piece in enc.mergeable_ranks:
        return [enc.mergeable_ranks[part] for part in split_with_ranks(piece, enc.mergeable_ranks)]
    return enc._encode_single_piece(piece)


def _is_blank(enc, token: int) -> bool:
    """Whether ``token`` is a ranked token made only of :data:`BLANK_BYTES`."""
    data = enc._decoder[token]
    return enc.mergeable_ranks.get(data) == token and not data.strip(BLANK_BYTES)


def _starting_with(sorted_tokens: list[bytes], prefix: bytes) -> list[bytes]:
    """The tokens of ``sorted_tokens`` (sorted) that start with ``prefix``: those from
    ``prefix`` up to the first byte string past every extension of it (``b"ab\xff"`` ->
    ``b"ac"``)."""
    start = bisect_left(sorted_tokens, prefix)
    stem = prefix.rstrip(b"\xff")
    if not stem:
        return sorted_tokens[start:]
    return sorted_tokens[start : bisect_left(sorted_tokens, stem[:-1] + bytes([stem[-1] + 1]), start)]


def _covering(enc, ids: list[int], n_bytes: int) -> tuple[int, ...]:
    """The shortest head of ``ids`` whose bytes reach ``n_bytes`` (all of them if none does)."""
    length = 0
    for k, token in enumerate(ids, 1):
        length += len(enc._decoder[token])
        if length >= n_bytes:
            return tuple(ids[:k])
    return tuple(ids)


def _last_character(data: bytes) -> bytes | None:
    """The UTF-8 bytes of the character ``data`` ends with, or None if it ends with
    invalid UTF-8 (as the ``bstr`` crate's ``decode_last_utf8``, which tiktoken uses)."""
    start = len(data) - 1
    while start > max(0, len(data) - 4) and data[start] & 0xC0 == 0x80:
        start -= 1
    try:
        character = data[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data[start:] if len(character) == 1 else None
