"""Pre-tokenization and piece counting: documents in, a table of unique pieces out.

A *piece* is what the split pattern cuts a document into (or the whole document in
raw mode, ``pat_str=None``); BPE never merges across pieces, so training needs only
each unique piece and how often it occurs. :class:`PieceTable` holds them as three
numpy arrays, the input of the compiled trainer (:mod:`bpetrain._core`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import regex

from .patterns import compile_pattern
from .pretokenize import encode_utf8

__all__ = ["PieceCounter", "PieceTable"]


@dataclass(frozen=True)
class PieceTable:
    """Unique pieces with their counts.

    Attributes
    ----------
    data : numpy.ndarray of uint8, shape (n_unique_bytes,)
        The bytes of all pieces, concatenated.
    offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
        Piece ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    counts : numpy.ndarray of int64, shape (n_pieces,)
        How often each piece occurs in the corpus.
    """

    data: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> PieceTable:
        """Build a table from a mapping ``piece bytes -> count``.

        Raises
        ------
        TypeError
            If a piece is not ``bytes`` or a count not an integer.
        ValueError
            If a count is negative or does not fit in int64.
        """
        pieces = list(counts)
        try:
            data = b"".join(pieces)
        except TypeError:
            bad = next(p for p in pieces if not isinstance(p, (bytes, bytearray, memoryview)))
            raise TypeError(f"pieces must be bytes, got {type(bad).__name__}: {bad!r:.60}") from None
        values = np.array(list(counts.values()))
        if values.size and values.dtype.kind not in "iu":
            for value in counts.values():
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise TypeError(f"each count must be an int, got {type(value).__name__}: {value!r}")
            raise ValueError("counts must be in [0, 2**63): a count does not fit in int64")
        if values.size and (values.min() < 0 or values.max() >= 2**63):
            raise ValueError(f"counts must be in [0, 2**63), got {values.min()}..{values.max()}")
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=offsets[1:])
        return cls(np.frombuffer(data, dtype=np.uint8), offsets, values.astype(np.int64).reshape(len(pieces)))

    @property
    def n_pieces(self) -> int:
        """Number of unique pieces."""
        return len(self.counts)

    @property
    def n_bytes(self) -> int:
        """Bytes of text the table stands for: sum of piece length times count (exact)."""
        lengths = np.diff(self.offsets)  # (np.dot would wake the BLAS threads: avoid it)
        if float(np.sum(lengths.astype(np.float64) * self.counts)) < 2.0**62:
            return int(np.sum(lengths * self.counts))
        return sum(int(n) * int(c) for n, c in zip(lengths, self.counts))  # beyond int64

    def piece(self, i: int) -> bytes:
        """The bytes of piece ``i``."""
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()


class PieceCounter:
    """Split documents into pieces and count them.

    Parameters
    ----------
    pat_str : str or None
        The split pattern (a ``regex`` module regex), or ``None`` for raw mode, where
        every document (between special tokens) is one piece.
    special_tokens : iterable of str
        Strings cut out of every document before splitting; they split the text and
        are not counted.

    Notes
    -----
    Text given as ``bytes`` is decoded as UTF-8 with ``errors="surrogateescape"``, so
    invalid bytes survive as lone surrogates that the named patterns class with
    punctuation, and every piece is encoded back to the original bytes.
    """

    def __init__(self, pat_str: str | None, special_tokens: Iterable[str] = ()):
        self.pat_str = pat_str
        self._pattern = None if pat_str is None else compile_pattern(pat_str)
        specials = sorted(special_tokens, key=len, reverse=True)
        self._special = None
        self._special_bytes = None
        if specials:
            self._special = regex.compile("|".join(regex.escape(s) for s in specials))
            self._special_bytes = regex.compile(
                b"|".join(regex.escape(s.encode("utf-8")) for s in specials)
            )
        self._counts: Counter = Counter()
        #: Bytes of documents seen so far (UTF-8 bytes, special tokens included).
        self.n_input_bytes = 0
        #: Documents seen so far.
        self.n_documents = 0

    def update(self, documents: Iterable[str | bytes]) -> None:
        """Count the pieces of every document in ``documents``.

        Raises
        ------
        TypeError
            If a document is neither ``str`` nor ``bytes``.
        ValueError
            If a ``str`` holds a lone surrogate that is not an escaped byte.
        """
        counts = self._counts
        get = counts.get
        special_bytes = self._special_bytes
        for document in documents:
            self.n_documents += 1
            if self._pattern is not None:
                self._add_split(document)
                continue
            if type(document) is not bytes:
                document = encode_utf8(document) if isinstance(document, str) else _as_bytes(document)
            self.n_input_bytes += len(document)
            if special_bytes is None:  # the common raw-mode case: one dict update
                if document:
                    counts[document] = get(document, 0) + 1
            else:
                counts.update(part for part in special_bytes.split(document) if part)

    def _add_split(self, document) -> None:
        if isinstance(document, str):
            self.n_input_bytes += len(document) if document.isascii() else len(encode_utf8(document))
        else:
            document = _as_bytes(document)
            self.n_input_bytes += len(document)
            document = document.decode("utf-8", "surrogateescape")
        parts = [document] if self._special is None else self._special.split(document)
        finditer = self._pattern.finditer
        for part in parts:
            self._counts.update(m.group() for m in finditer(part))

    def clear(self) -> None:
        """Forget the counted pieces (the totals stay)."""
        self._counts = Counter()

    def table(self) -> PieceTable:
        """The counted pieces as a :class:`PieceTable` (pieces as UTF-8 bytes)."""
        if self._pattern is None:  # raw mode counts bytes already
            return PieceTable.from_counts(self._counts)
        counts: Counter = Counter()
        for piece, count in self._counts.items():
            if piece:
                counts[encode_utf8(piece)] += count
        return PieceTable.from_counts(counts)


def _as_bytes(document) -> bytes:
    if isinstance(document, (bytes, bytearray, memoryview)):
        return bytes(document)
    raise TypeError(
        f"documents must be str or bytes, got {type(document).__name__}; "
        "iterate over the text field of your records"
    )
