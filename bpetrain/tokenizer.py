"""The trained tokenizer: merges, ranks, vocab, special tokens, and an encoder by the merges."""
from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from bpetrain.encoding.core import Encoding
from bpetrain.encoding.decoding import as_token_ids
from bpetrain.encoding.merge_rule import encode_with_merges, unreachable_tokens
from bpetrain.encoding.special import allowed_special_tokens, special_regex
from bpetrain.splitting.pattern import encode_utf8, resolve_pattern, split_pattern
from bpetrain.splitting.unicode import check_unicode_version

if TYPE_CHECKING:
    from bpetrain.formats import Model

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
        The split pattern used in training: a regex, a name from :data:`bpetrain.PATTERNS`
        (resolved as everywhere else, :func:`bpetrain.splitting.pattern.resolve_pattern`), or
        ``None``/``"none"`` for raw mode (no pre-tokenization).
    special_tokens : mapping of str to int, optional
        Special token strings and their ids (normally ``256 + len(merges)`` onwards).
    byte_ids : sequence of 256 int, optional
        ``byte_ids[b]`` is the id of the one-byte token ``b``: a permutation of 0..255.
        Default: ``b`` itself (how bpetrain and minbpe train). Imported vocabularies
        such as cl100k_base and GPT-2 order the bytes differently (``b"!"`` is id 0);
        this keeps their ids (minbpe's ``GPT4Tokenizer`` calls it ``byte_shuffle``).
    unicode_version : {"regex", "tiktoken"} or bpetrain.splitting.unicode.UnicodeTable, default "regex"
        Whose character classes (``\\p{L}``, ``\\s``, ...) the pattern splits with: the
        installed ``regex`` module's (what training uses), tiktoken's engine's (a tiktoken
        rank file's default), or a table's (a saved model's: :meth:`save` records the
        classes, so a model splits the same way after the ``regex`` module updates).
        Equality (``==``) compares the vocabularies, not this.

    Raises
    ------
    ValueError
        If a merge names an id that does not exist yet, a special token id collides
        with a byte or merge id or with another special token, or ``byte_ids`` is not
        a permutation of 0..255.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        *,
        pat_str: str | None,
        special_tokens: Mapping[str, int] | None = None,
        byte_ids: Sequence[int] | None = None,
        unicode_version="regex",
    ):
        self.unicode_version = check_unicode_version(unicode_version)
        if byte_ids is not None and sorted(byte_ids) != list(range(256)):
            raise ValueError("byte_ids must be a permutation of 0..255 (byte_ids[b] is the id of the byte b)")
        #: ``bytes(byte_ids)``, or None for the identity: ``piece.translate(self._byte_table)`` gives byte ids.
        self._byte_table = None if byte_ids is None or list(byte_ids) == list(range(256)) else bytes(byte_ids)
        self.merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in merges]
        for i, (a, b) in enumerate(self.merges):
            if not (0 <= a < 256 + i and 0 <= b < 256 + i):
                raise ValueError(
                    f"merge {i} ({a}, {b}) names an id that is neither a byte nor an earlier merge "
                    f"(ids must be below {256 + i})"
                )
        self.pat_str = resolve_pattern(pat_str)
        self.special_tokens: dict[str, int] = dict(special_tokens or {})
        n_ranked = 256 + len(self.merges)
        seen: dict[int, str] = {}
        for token, token_id in self.special_tokens.items():
            if not isinstance(token, str) or not token:
                raise ValueError(f"special tokens must be non-empty strings, got {token!r}")
            if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id >= 2**32:
                raise ValueError(f"special token {token!r} has id {token_id!r}; ids are integers below 2**32")
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

    @property
    def byte_ids(self) -> list[int]:
        """``byte_ids[b]``: the id of the one-byte token ``b`` (``list(range(256))`` unless imported)."""
        return list(range(256)) if self._byte_table is None else list(self._byte_table)

    @cached_property
    def vocab(self) -> dict[int, bytes]:
        """Token id -> token bytes, for bytes, merges and special tokens (UTF-8)."""
        vocab = {token_id: bytes([b]) for b, token_id in enumerate(self.byte_ids)}
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

    def unreachable_tokens(self) -> list[int]:
        """Merge token ids whose own bytes do not encode to them (with :meth:`encode`'s rule).

        Such a token can never appear in an encoding; encoders that look a whole piece up
        in the vocabulary first (tiktoken, Hugging Face with ``ignore_merges``) would
        output it anyway, so exports refuse vocabularies that have any.
        """
        return unreachable_tokens(self.merges)

    def check_exportable(self, format_name: str) -> None:
        """Refuse a vocabulary that ``format_name`` (for the message) cannot carry faithfully:
        duplicate token bytes (:meth:`duplicate_tokens`), or tokens that do not encode to
        themselves (:meth:`unreachable_tokens`).

        Raises
        ------
        ValueError
            Naming the first offending token and the count.
        """
        duplicates = self.duplicate_tokens()
        if duplicates:
            first, later = duplicates[0]
            raise ValueError(
                f"{len(duplicates)} merge tokens spell the same bytes as earlier ones (first: ids {first} and "
                f"{later}, {self.vocab[later]!r}); a {format_name} file needs unique token bytes"
            )
        unreachable = self.unreachable_tokens()
        if unreachable:
            first = unreachable[0]
            raise ValueError(
                f"{len(unreachable)} tokens do not encode to themselves with the merges (first: id {first}, "
                f"{self.vocab[first]!r}); a {format_name} encoder that looks whole pieces up in the vocab "
                "would give different ids than the merges"
            )

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
        return (self.merges, self.pat_str, self.special_tokens, self._byte_table) == (
            other.merges,
            other.pat_str,
            other.special_tokens,
            other._byte_table,
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

        Runs the compiled encoder (:meth:`encoding`, made on the first call and kept):
        tiktoken's rule on :attr:`mergeable_ranks`, which gives the ids of applying the
        merges in rank order (minbpe's method; the tests compare both). A vocabulary
        the compiled encoder cannot represent (two merges that spell the same bytes, or
        a token that does not encode to itself) falls back to applying the merges in
        plain Python (:func:`bpetrain.encoding.merge_rule.encode_with_merges`, exact and
        ~100x slower) with a ``RuntimeWarning`` on the first call.

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
            If ``text`` contains a disallowed special token, or ``allowed_special``
            names a string that is not a special token.
        """
        if allowed_special != "all":  # stricter than tiktoken, which ignores unknown names
            unknown = set(allowed_special).difference(self.special_tokens)
            if unknown:
                raise ValueError(
                    f"allowed_special names tokens that are not special tokens: {sorted(unknown)}; "
                    f"the special tokens are {sorted(self.special_tokens)}"
                )
        if self._compiled is not None:
            return self._compiled.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        allowed = allowed_special_tokens(text, self.special_tokens, allowed_special, disallowed_special)
        return self._encode_with_merges(text, allowed)

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special token strings as ordinary text (compiled, as :meth:`encode`)."""
        if self._compiled is not None:
            return self._compiled.encode_ordinary(text)
        return self._encode_with_merges(text, ())

    def _encode_with_merges(self, text: str, allowed: Collection[str]) -> list[int]:
        """The ids of ``text`` by the merges in training order, in plain Python, each special
        token of ``allowed`` as its id: :meth:`encode` where the compiled encoder cannot
        hold the vocabulary. Text is UTF-8 with ``errors="surrogateescape"``, as training reads it."""
        parts = special_regex(frozenset(allowed)).split(text) if allowed else [text]
        split = None if self.pat_str is None else split_pattern(self.pat_str, self.unicode_version).split
        ids: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self.special_tokens[part])
                continue
            for piece in [encode_utf8(part)] if split is None else split(part):
                ids.extend(encode_with_merges(
                    piece if self._byte_table is None else piece.translate(self._byte_table), self._merge_ids))
        return ids

    @cached_property
    def _compiled(self) -> Encoding | None:
        """:meth:`encoding`, or None (with a warning) when the vocabulary needs the reference."""
        try:
            return self.encoding()
        except ValueError as exc:
            warnings.warn(
                f"Tokenizer.encode falls back to the pure-Python reference encoder (exact, ~100x slower): {exc}",
                RuntimeWarning,
                stacklevel=4,
            )
            return None

    def encoding(self, name: str = "bpetrain") -> Encoding:
        """The fast encoder for this vocabulary: an :class:`~bpetrain.Encoding` (tiktoken's interface).

        It applies tiktoken's rule (lowest rank of the joined pair first) to
        :attr:`mergeable_ranks`; on the pieces training saw it reproduces training's
        segmentation, as :meth:`encode` does (the tests check both on trained vocabularies).

        Raises
        ------
        ValueError
            If two merges spell the same bytes (:meth:`duplicate_tokens`) or a token does
            not encode to itself (:meth:`unreachable_tokens`): tiktoken's rule would give
            other ids than the merges, as for a tiktoken export.
        """
        self.check_exportable("tiktoken")
        return Encoding(name, pat_str=self.pat_str, mergeable_ranks=self.mergeable_ranks,
                        special_tokens=self.special_tokens, unicode_version=self.unicode_version)

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """Concatenate the bytes of ``tokens``.

        Raises
        ------
        ValueError
            If a token id is not in the vocabulary.
        TypeError
            If a token id is not an integer.
        OverflowError
            If a token id does not fit in 64 bits.
        """
        vocab = self.vocab
        try:
            return b"".join(map(vocab.__getitem__, as_token_ids(tokens)))
        except KeyError as exc:
            raise ValueError(
                f"token id {exc.args[0]!r} is not in the vocabulary (ids 0..{self.n_vocab - 1})"
            ) from None

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """Decode ``tokens`` to text; invalid UTF-8 is handled by ``errors`` (as in ``bytes.decode``)."""
        return self.decode_bytes(tokens).decode("utf-8", errors)

    # ------------------------------------------------------------------ files

    @classmethod
    def from_model(cls, model: Model) -> Tokenizer:
        """The tokenizer of what a file format's reader returns (:class:`bpetrain.formats.Model`).

        Raises
        ------
        ValueError
            As the constructor, with the model's file in front of the message.
        """
        try:
            return cls(model.merges, pat_str=model.pat_str, special_tokens=model.special_tokens,
                       byte_ids=model.byte_ids, unicode_version=model.unicode_version or "regex")
        except ValueError as exc:
            raise ValueError(f"{model.source}: {exc}") from None

    def save(self, path) -> None:
        """Write the model file (format in :mod:`bpetrain.formats.model_file`), atomically,
        with :attr:`unicode_version` (the installed ``regex`` module's classes as a table)."""
        from bpetrain.formats.model_file import write_model

        write_model(
            path,
            merges=self.merges,
            pat_str=self.pat_str,
            special_tokens=self.special_tokens,
            byte_ids=None if self._byte_table is None else self.byte_ids,
            unicode_version=self.unicode_version,
        )

    @classmethod
    def load(cls, path) -> Tokenizer:
        """Read a model file written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is not a bpetrain model file, or is damaged (the message names
            the file and line).
        """
        from bpetrain.formats.model_file import read_model

        return cls.from_model(read_model(path))

    def save_tiktoken(self, path) -> None:
        """Write a tiktoken rank file and its sidecar ``path.json``: ``export(path, format="tiktoken")``."""
        self.export(path, format="tiktoken")

    def export(self, path, *, format: str) -> None:
        """Write the tokenizer in a format other libraries load, atomically.

        Parameters
        ----------
        path : str or os.PathLike
            ``tiktoken``: the rank file (the sidecar goes to ``path.json``); ``hf``: the
            ``tokenizer.json`` file; ``gpt2``: a directory for ``vocab.json`` and
            ``merges.txt``; ``minbpe``: the prefix of ``.model`` and ``.vocab``.
        format : {"tiktoken", "hf", "gpt2", "minbpe"}
            See :mod:`bpetrain.formats` for what each can carry.

        Raises
        ------
        ValueError
            If the format is unknown, two merges spell the same bytes, a token does not
            encode to itself, or the format cannot carry this tokenizer.
        """
        from bpetrain import formats

        formats.export(self, path, format)

    @classmethod
    def from_file(cls, path, *, format: str | None = None, **options) -> Tokenizer:
        """Read a tokenizer from any format :meth:`export` writes, or a :meth:`save` model file.

        ``format`` (``"bpetrain"``, ``"tiktoken"``, ``"hf"``, ``"gpt2"``, ``"minbpe"``)
        defaults to what the path shows (:func:`bpetrain.formats.detect_format`);
        ``options`` go to the format's reader (:func:`bpetrain.formats.load`), e.g.
        ``pat_str="cl100k"`` for a rank file without a sidecar such as ``cl100k_base.tiktoken``.

        Raises
        ------
        ValueError
            If the file is malformed (naming the file and line) or does not describe a
            byte-level BPE bpetrain can hold.
        """
        from bpetrain import formats

        return cls.from_model(formats.load(path, format, **options))
