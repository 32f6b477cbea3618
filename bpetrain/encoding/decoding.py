"""Decoding: token ids to bytes and text, with tiktoken's methods and exceptions.

:class:`Decoding` is the decoding half of :class:`bpetrain.Encoding`: a table from token
id to bytes (:func:`decoder_of`) and the methods that read it, under the GIL (dictionary
lookups, which threads would only slow down).
"""
from __future__ import annotations

import array
import sys
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral  # numpy's integers are registered as Integral

from bpetrain._util.threads import DEFAULT_THREADS, check_num_threads

__all__ = ["Decoding", "as_token_ids", "decoder_of", "joined_token_bytes", "unknown_token"]


def decoder_of(mergeable_ranks: Mapping[bytes, int], special_tokens: Mapping[str, int]) -> dict[int, bytes]:
    """Token id -> bytes. An id two special tokens share decodes to the first of them; a
    rank decodes to its token even if a special token has that id too (as in tiktoken)."""
    decoder: dict[int, bytes] = {}
    for token, token_id in special_tokens.items():
        decoder.setdefault(token_id, token.encode("utf-8"))
    decoder.update((rank, token) for token, rank in mergeable_ranks.items())
    return decoder


class Decoding:
    """Token ids to bytes and text (tiktoken's decode methods).

    Subclasses set ``name``, ``max_token_value`` (for messages) and ``_decoder`` (token id
    -> bytes, :func:`decoder_of`).
    """

    name: str
    max_token_value: int
    _decoder: dict[int, bytes]

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """The bytes of ``tokens`` joined.

        Parameters
        ----------
        tokens : iterable of int, or numpy.ndarray of integers

        Raises
        ------
        KeyError
            If a token id is not in the vocabulary (tiktoken's exception).
        OverflowError
            If a token id is outside ``[0, 2**32)`` (tiktoken's ids are 32-bit).
        TypeError
            If a token id is not an integer.
        """
        return joined_token_bytes(self._decoder, tokens, f"encoding {self.name!r}", self.max_token_value)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """Decode ``tokens`` to text; invalid UTF-8 is handled by ``errors`` (as ``bytes.decode``).

        Raises
        ------
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.
        """
        return self.decode_bytes(tokens).decode("utf-8", errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included.

        Raises
        ------
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`: KeyError for an id that is no token.
        """
        try:
            return self._decoder[token]
        except KeyError:
            raise self._unknown_token(token) from None

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each token, as a list.

        Raises
        ------
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.
        """
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """Decode ``tokens`` to text, with the index in the text where each token starts.

        A token that starts inside a character (its first byte is a UTF-8 continuation
        byte) starts at that character's index, as in tiktoken. An empty token (a rank
        whose bytes are ``b""``) starts where the next byte's character does, or at
        ``len(text)`` at the end (tiktoken raises IndexError on it).

        Returns
        -------
        text : str
        offsets : list of int, length ``len(tokens)``
            Character index of each token's first character.

        Raises
        ------
        UnicodeDecodeError
            If the tokens' bytes are not valid UTF-8 (as in tiktoken).
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.

        Examples
        --------
        If ``"é"`` (bytes ``c3 a9``) is the two tokens ``c3`` and ``a9``, both start at
        character 0; in ``"aé"`` encoded as ``a``, ``c3``, ``a9`` the offsets are
        ``[0, 1, 1]``.
        """
        import numpy as np

        token_bytes = self.decode_tokens_bytes(tokens)
        data = b"".join(token_bytes)
        text = data.decode("utf-8")
        # The character a byte belongs to is the number of character starts (bytes that
        # are not 10xxxxxx) up to and including it, minus one.
        # A start after the last byte gives an empty token at the end its offset, len(text).
        starts = np.cumsum((np.frombuffer(data + b"\0", dtype=np.uint8) & 0xC0) != 0x80)
        firsts = np.cumsum([0, *map(len, token_bytes[:-1])]) if token_bytes else np.zeros(0, dtype=np.int64)
        return text, (starts[firsts] - 1).tolist()

    def decode_batch(
        self, batch: Iterable[Sequence[int]], *, errors: str = "replace", num_threads: int = DEFAULT_THREADS
    ) -> list[str]:
        """:meth:`decode` of every token list.

        ``num_threads`` is checked as in :meth:`bpetrain.Encoding.encode_ordinary_batch`, but decoding runs
        on the calling thread: it is dictionary lookups under the GIL, which threads
        would only slow down.

        Raises
        ------
        ValueError
            If ``num_threads`` < 1.
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.
        """
        check_num_threads(num_threads)
        return [self.decode(tokens, errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Iterable[Sequence[int]], *, num_threads: int = DEFAULT_THREADS) -> list[bytes]:
        """:meth:`decode_bytes` of every token list (``num_threads`` as in :meth:`decode_batch`).

        Raises
        ------
        ValueError
            If ``num_threads`` < 1.
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.
        """
        check_num_threads(num_threads)
        return [self.decode_bytes(tokens) for tokens in batch]

    def _unknown_token(self, token) -> Exception:
        """The error for a token id the decoder does not hold (:func:`unknown_token`)."""
        return unknown_token(token, f"encoding {self.name!r}", self.max_token_value)


def joined_token_bytes(table: Mapping[int, bytes], tokens: Iterable[int], owner: str, max_token_value: int) -> bytes:
    """The bytes of ``tokens`` (:func:`as_token_ids`) looked up in ``table``, joined; an id
    ``table`` lacks raises :func:`unknown_token`'s error (``owner`` names the table's owner)."""
    try:
        return b"".join(map(table.__getitem__, as_token_ids(tokens)))
    except KeyError as exc:
        raise unknown_token(exc.args[0], owner, max_token_value) from None


def unknown_token(token, owner: str, max_token_value: int) -> Exception:
    """The error for a token id that ``owner`` (``"encoding 'x'"``, for the message) does
    not hold, of tiktoken's type: ``TypeError`` for a non-integer, ``OverflowError``
    outside ``[0, 2**32)``, ``KeyError`` otherwise."""
    if not isinstance(token, Integral):
        return TypeError(f"token ids are integers, got {token!r} ({type(token).__name__})")
    if not 0 <= token < 2**32:
        return OverflowError(f"token id {token} is out of range: ids are 32-bit unsigned integers")
    return KeyError(
        f"token id {token} is not in the vocabulary of {owner} "
        f"(the largest id is {max_token_value}; not every id below it need be a token)"
    )


def as_token_ids(tokens) -> Iterable[int]:
    """``tokens`` as Python ints, refusing what is not an integer (a float ``1.0`` would
    otherwise find id 1 in a dict, where tiktoken raises ``TypeError``).

    Raises
    ------
    TypeError
        If an id is not an integer (or an array's dtype is not an integer type).
    OverflowError
        If an id does not fit in 64 bits.
    """
    numpy = sys.modules.get("numpy")  # not imported: ``tokens`` is no array
    if numpy is not None and isinstance(tokens, numpy.ndarray):
        if tokens.dtype.kind not in "iu":
            raise TypeError(f"token ids must be integers, got an array of {tokens.dtype}")
        return tokens.tolist()
    try:
        return array.array("q", tokens)
    except TypeError as exc:
        raise TypeError(f"token ids must be integers ({exc})") from None
