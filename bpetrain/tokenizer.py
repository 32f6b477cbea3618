"""The trained tokenizer: merges, ranks, vocab, special tokens, and a reference encoder."""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Literal

from . import _reference
from .encoding import Encoding, allowed_special_tokens
from .model_file import read_model, write_model, write_tiktoken
from .patterns import compile_pattern

__all__ = ["Tokenizer"]


class Tokenizer:
    """A byte-level BPE tokenizer: the merges, the split pattern and the special tokens.

    Token ids 0..255 are the bytes; merge ``i`` (a pair of earlier ids) makes id
    ``256 + i``; special tokens take the ids after the merges. The vocabulary is
    derived from the merges, never stored twice (as in minbpe).

    Parameters
    ----------
    merges : sequence of (int, int)
        The merged pairs in rank order.
    pat_str : str or None
        The split pattern used in training (``None``: raw mode, no pre-tokenization).
    special_tokens : mapping of str to int, optional
        Special token strings and their ids (normally ``256 + len(merges)`` onwards).

    Raises
    ------
    ValueError
        If a merge names an id that does not exist yet, or a special token id collides
        with a byte or merge id or with another special token.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        *,
        pat_str: str | None,
        special_tokens: Mapping[str, int] | None = None,
    ):
        self.merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in merges]
        for i, (a, b) in enumerate(self.merges):
            if not (0 <= a < 256 + i and 0 <= b < 256 + i):
                raise ValueError(
                    f"merge {i} ({a}, {b}) names an id that is neither a byte nor an earlier merge "
                    f"(ids must be below {256 + i})"
                )
        if pat_str is not None:
            compile_pattern(pat_str)
        self.pat_str = pat_str
        self.special_tokens: dict[str, int] = dict(special_tokens or {})
        n_ranked = 256 + len(self.merges)
        seen: dict[int, str] = {}
        for token, token_id in self.special_tokens.items():
            if not isinstance(token, str) or not token:
                raise ValueError(f"special tokens must be non-empty strings, got {token!r}")
            if token_id < n_ranked:
                raise ValueError(
                    f"special token {token!r} has id {token_id}, which is a byte or merge id "
                    f"(special ids start at {n_ranked})"
                )
            if token_id in seen:
                raise ValueError(f"special tokens {seen[token_id]!r} and {token!r} share id {token_id}")
            seen[token_id] = token

    # ------------------------------------------------------------- vocabulary

    @cached_property
    def _merge_ids(self) -> dict[tuple[int, int], int]:
        return {pair: 256 + i for i, pair in enumerate(self.merges)}

    @cached_property
    def vocab(self) -> dict[int, bytes]:
        """Token id -> token bytes, for bytes, merges and special tokens (UTF-8)."""
        vocab = {i: bytes([i]) for i in range(256)}
        for i, (a, b) in enumerate(self.merges):
            vocab[256 + i] = vocab[a] + vocab[b]
        for token, token_id in self.special_tokens.items():
            vocab[token_id] = token.encode("utf-8")
        return vocab

    @cached_property
    def mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank (= token id), for bytes and merges: tiktoken's ``mergeable_ranks``.

        When two merges spell the same bytes (rare, but BPE allows it) the lower rank is
        kept; :meth:`duplicate_tokens` lists such cases and exports that need unique bytes
        refuse them.
        """
        ranks: dict[bytes, int] = {}
        for token_id in range(256 + len(self.merges)):
            ranks.setdefault(self.vocab[token_id], token_id)
        return ranks

    def duplicate_tokens(self) -> list[tuple[int, int]]:
        """Pairs ``(first id, later id)`` of merge tokens that spell the same bytes."""
        ranks = self.mergeable_ranks
        return [
            (ranks[self.vocab[i]], i)
            for i in range(256, 256 + len(self.merges))
            if ranks[self.vocab[i]] != i
        ]

    @property
    def n_vocab(self) -> int:
        """Number of token ids: 256 + merges + special tokens (tiktoken's name)."""
        return max([255 + len(self.merges), *self.special_tokens.values()]) + 1

    def __repr__(self) -> str:
        return (
            f"Tokenizer(n_vocab={self.n_vocab}, merges={len(self.merges)}, "
            f"pat_str={self.pat_str!r:.40}, special_tokens={len(self.special_tokens)})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (self.merges, self.pat_str, self.special_tokens) == (
            other.merges,
            other.pat_str,
            other.special_tokens,
        )

    __hash__ = None  # mutable lists inside

    # ---------------------------------------------------------------- encoding

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Encode ``text`` to token ids, with tiktoken's rules for special tokens.

        This is the simple reference encoder (the merges applied in rank order inside
        each piece, minbpe's method): exact and slow.

        Parameters
        ----------
        text : str
        allowed_special : "all" or collection of str
            Special tokens that are encoded as their id when they appear in ``text``.
        disallowed_special : "all" or collection of str
            Special tokens whose appearance raises; "all" means every special token
            not allowed.

        Returns
        -------
        list of int

        Raises
        ------
        ValueError
            If ``text`` contains a disallowed special token.
        """
        allowed = self._allowed_special(text, allowed_special, disallowed_special)
        return _reference.encode(
            text, self._merge_ids, self.pat_str, {s: self.special_tokens[s] for s in allowed}
        )

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special token strings as ordinary text."""
        return _reference.encode(text, self._merge_ids, self.pat_str, None)

    def _allowed_special(self, text, allowed_special, disallowed_special) -> set[str]:
        return allowed_special_tokens(text, self.special_tokens, allowed_special, disallowed_special)

    def encoding(self, name: str = "bpetrain") -> Encoding:
        """The fast encoder for this vocabulary: an :class:`~bpetrain.Encoding` (tiktoken's interface).

        It applies tiktoken's rule (lowest rank of the joined pair first) to
        :attr:`mergeable_ranks`; on the pieces training saw it reproduces training's
        segmentation, as :meth:`encode` does (the tests check both on trained vocabularies).

        Raises
        ------
        ValueError
            If two merges spell the same bytes (:meth:`duplicate_tokens`).
        """
        return Encoding(name, pat_str=self.pat_str, mergeable_ranks=self._unique_ranks(),
                        special_tokens=self.special_tokens)

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """Concatenate the bytes of ``tokens``.

        Raises
        ------
        ValueError
            If a token id is not in the vocabulary.
        """
        vocab = self.vocab
        try:
            return b"".join(vocab[t] for t in tokens)
        except KeyError as exc:
            raise ValueError(
                f"token id {exc.args[0]!r} is not in the vocabulary (ids 0..{self.n_vocab - 1})"
            ) from None

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """Decode ``tokens`` to text; invalid UTF-8 is handled by ``errors`` (as in ``bytes.decode``)."""
        return self.decode_bytes(tokens).decode("utf-8", errors)

    # ------------------------------------------------------------------ files

    def save(self, path) -> None:
        """Write the model file (format in :mod:`bpetrain.model_file`), atomically."""
        write_model(path, merges=self.merges, pat_str=self.pat_str, special_tokens=self.special_tokens)

    @classmethod
    def load(cls, path) -> Tokenizer:
        """Read a model file written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is not a bpetrain model file, or is damaged (the message names
            the file and line).
        """
        return cls(**read_model(path))

    def save_tiktoken(self, path) -> None:
        """Write a tiktoken rank file (``base64(token) rank`` per line, dense ranks), atomically.

        The file loads with ``tiktoken.load.load_tiktoken_bpe``; it carries neither the
        pattern nor the special tokens (pass :attr:`pat_str` and :attr:`special_tokens`
        to ``tiktoken.Encoding``).

        Raises
        ------
        ValueError
            If two merges spell the same bytes (:meth:`duplicate_tokens`): the format maps
            each byte string to one rank.
        """
        self._unique_ranks()
        write_tiktoken(path, [self.vocab[i] for i in range(256 + len(self.merges))])

    def _unique_ranks(self) -> dict[bytes, int]:
        """:attr:`mergeable_ranks`, or ValueError if two merges spell the same bytes."""
        duplicates = self.duplicate_tokens()
        if duplicates:
            first, later = duplicates[0]
            raise ValueError(
                f"{len(duplicates)} merge tokens spell the same bytes as earlier ones (first: ids {first} "
                f"and {later}, {self.vocab[later]!r}); tiktoken's ranks need unique token bytes"
            )
        return self.mergeable_ranks
