"""The trained tokenizer: merges, ranks, vocab, special tokens, and an encoder by the merges."""
from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from bpetrain.encoding.added_tokens import AddedToken, split_added
from bpetrain.encoding.core import Encoding
from bpetrain.encoding.decoding import joined_token_bytes
from bpetrain.encoding.merge_rule import unreachable_tokens
from bpetrain.encoding.pair_model import PairModel
from bpetrain.encoding.special import allowed_special_tokens, special_regex
from bpetrain.splitting.names import describe_pattern
from bpetrain.splitting.pattern import encode_utf8, resolve_pattern, split_pattern
from bpetrain.splitting.unicode import check_unicode_version

if TYPE_CHECKING:
    from bpetrain.formats import Model

__all__ = ["Tokenizer"]


class Tokenizer:
    """A byte-level BPE tokenizer: the merges, the split pattern and the special tokens.

    Two layouts. **Trained** (the default, how bpetrain and minbpe train): token ids
    0..255 are the bytes, merge ``i`` (a pair of earlier ids) makes id ``256 + i``,
    special tokens take the ids after the merges; the vocabulary is derived from the
    merges, never stored twice. **Imported** (``tokens`` given: a ``tokenizer.json`` or
    a rank file whose ids do not fit the trained layout): every token keeps the id its
    file gives it, the merges are pairs of those ids in priority order, each making the
    token its two parts spell, and the pieces are encoded by Hugging Face's BPE rule
    (:mod:`bpetrain.encoding.pair_model`): ``ignore_merges``, tokens reached only whole,
    bytes without a token (dropped), added tokens at any ids with their flags.

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
        Trained layout: ``byte_ids[b]`` is the id of the one-byte token ``b``, a
        permutation of 0..255. Default: ``b`` itself (how bpetrain and minbpe train).
        Imported vocabularies such as cl100k_base and GPT-2 order the bytes differently
        (``b"!"`` is id 0); this keeps their ids (minbpe's ``GPT4Tokenizer`` calls it
        ``byte_shuffle``).
    tokens : mapping of int to bytes, optional
        Imported layout: every ordinary token (not a special or added token) by id.
        Token bytes must be unique; the one-byte tokens are the bytes (``byte_ids`` is
        derived).
    ignore_merges : bool, default False
        Imported layout: a piece that is a token encodes to it whole, as in Hugging
        Face's ``ignore_merges`` and tiktoken (tokens no merge makes are then reached).
    added_tokens : sequence of AddedToken, optional
        The special tokens with Hugging Face's flags (:class:`bpetrain.encoding.added_tokens.AddedToken`),
        in the order of the file; gives ``special_tokens`` when that is not given. Every
        added token, special or not in Hugging Face's sense, is a special token here.
    origin : mapping, optional
        What the file the tokenizer came from holds beyond the model, kept for exports
        (for a ``tokenizer.json``: its other sections and the ``tokenizer_config.json``
        fields; see :mod:`bpetrain.formats.hf`). Not compared by ``==``.
    unicode_version : {"regex", "tiktoken"} or bpetrain.splitting.unicode.UnicodeTable, default "regex"
        Whose character classes (``\\p{L}``, ``\\s``, ...) the pattern splits with: the
        installed ``regex`` module's (what training uses), tiktoken's engine's (a tiktoken
        rank file's default), or a table's (a saved model's: :meth:`save` records the
        classes, so a model splits the same way after the ``regex`` module updates).
        Equality (``==``) compares the vocabularies, not this.

    Raises
    ------
    ValueError
        If a merge names an id that does not exist yet (trained) or is not a token
        (imported), a special token id collides with a token id or with another special
        token, ``byte_ids`` is not a permutation of 0..255, or token bytes repeat.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        *,
        pat_str: str | None,
        special_tokens: Mapping[str, int] | None = None,
        byte_ids: Sequence[int] | None = None,
        tokens: Mapping[int, bytes] | None = None,
        ignore_merges: bool = False,
        added_tokens: Sequence[AddedToken] | None = None,
        origin: Mapping | None = None,
        unicode_version="regex",
    ):
        self.unicode_version = check_unicode_version(unicode_version)
        if tokens is not None and byte_ids is not None:
            raise ValueError("pass byte_ids or tokens, not both: with tokens, the one-byte tokens are the bytes")
        if tokens is None and ignore_merges:
            raise ValueError("ignore_merges applies to the imported layout: pass tokens too")
        if byte_ids is not None and sorted(byte_ids) != list(range(256)):
            raise ValueError("byte_ids must be a permutation of 0..255 (byte_ids[b] is the id of the byte b)")
        #: ``bytes(byte_ids)``, or None for the identity: ``piece.translate(self._byte_table)`` gives byte ids.
        self._byte_table = None if byte_ids is None or list(byte_ids) == list(range(256)) else bytes(byte_ids)
        self.merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in merges]
        #: Imported layout: id -> bytes of every ordinary token; None in the trained layout.
        self.tokens: dict[int, bytes] | None = None
        self.ignore_merges = bool(ignore_merges)
        if tokens is None:
            for i, (a, b) in enumerate(self.merges):
                if not (0 <= a < 256 + i and 0 <= b < 256 + i):
                    raise ValueError(
                        f"merge {i} ({a}, {b}) names an id that is neither a byte nor an earlier merge "
                        f"(ids must be below {256 + i})"
                    )
        else:
            self.tokens = {}
            for token_id, token in tokens.items():
                if type(token_id) is not int or not 0 <= token_id < 2**32:
                    raise ValueError(f"token {token!r} has id {token_id!r}; ids are integers in [0, 2**32)")
                if not isinstance(token, bytes) or not token:
                    raise ValueError(f"token {token_id} is {token!r}; tokens are non-empty bytes")
                self.tokens[token_id] = token
            self._model  # checks the merges and that token bytes are unique  # noqa: B018
        self.pat_str = resolve_pattern(pat_str)
        if added_tokens is not None:
            added = {t.content: t.id for t in added_tokens}
            if special_tokens is not None and dict(special_tokens) != added:
                raise ValueError("special_tokens and added_tokens name different tokens or ids; pass one of them")
            special_tokens = added
        self.special_tokens: dict[str, int] = dict(special_tokens or {})
        flags = {t.content: t for t in added_tokens or ()}
        #: The special tokens with Hugging Face's flags, in their file's order.
        self.added_tokens: tuple[AddedToken, ...] = tuple(
            flags.get(content) or AddedToken(content, token_id) for content, token_id in self.special_tokens.items()
        )
        self.origin = None if origin is None else dict(origin)
        seen: dict[int, str] = {}
        for token, token_id in self.special_tokens.items():
            if not isinstance(token, str) or not token:
                raise ValueError(f"special tokens must be non-empty strings, got {token!r}")
            if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**32:
                raise ValueError(
                    f"special token {token!r} has id {token_id!r}; ids are integers below 2**32, not negative"
                )
            if self.tokens is None and token_id < 256 + len(self.merges):
                raise ValueError(
                    f"special token {token!r} has id {token_id}, which is a byte or merge id "
                    f"(special ids start at {256 + len(self.merges)})"
                )
            if self.tokens is not None and token_id in self.tokens:
                raise ValueError(
                    f"special token {token!r} has id {token_id}, which is the token {self.tokens[token_id]!r}"
                )
            if token_id in seen:
                raise ValueError(f"special tokens {seen[token_id]!r} and {token!r} share id {token_id}")
            seen[token_id] = token

    # ------------------------------------------------------------- vocabulary

    @cached_property
    def _model(self) -> PairModel:
        """The merges and tokens as Hugging Face's BPE model (the plain-Python rule)."""
        if self.tokens is not None:
            return PairModel(self.tokens, self.merges, ignore_merges=self.ignore_merges)
        vocab = self.vocab
        return PairModel({i: vocab[i] for i in range(256 + len(self.merges))}, self.merges,
                         made=range(256, 256 + len(self.merges)))

    @property
    def byte_ids(self) -> list[int]:
        """``byte_ids[b]``: the id of the one-byte token ``b`` (``list(range(256))`` unless imported;
        -1 for a byte an imported vocabulary has no token for)."""
        if self.tokens is not None:
            return list(self._model.byte_ids)
        return list(range(256)) if self._byte_table is None else list(self._byte_table)

    @cached_property
    def vocab(self) -> dict[int, bytes]:
        """Token id -> token bytes, for bytes, merges and special tokens (UTF-8)."""
        if self.tokens is not None:
            vocab = dict(self.tokens)
        else:
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
        refuse them. In the imported layout: every ordinary token and its id.
        """
        if self.tokens is not None:
            return dict(self._model.ids_of)
        ranks: dict[bytes, int] = {}
        for token_id in range(256 + len(self.merges)):
            ranks.setdefault(self.vocab[token_id], token_id)
        return ranks

    def duplicate_tokens(self) -> list[tuple[int, int]]:
        """Pairs ``(first id, later id)`` of merge tokens that spell the same bytes."""
        if self.tokens is not None:
            return []  # refused by the constructor
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
        if self.tokens is not None:
            return self._model.unreachable()
        return unreachable_tokens(self.merges)

    def check_exportable(self, format_name: str) -> None:
        """Refuse a vocabulary that ``format_name`` (for the message) cannot carry faithfully:
        duplicate token bytes (:meth:`duplicate_tokens`), tokens that do not encode to
        themselves (:meth:`unreachable_tokens`), or the imported layout (which only a
        ``tokenizer.json`` holds: ids in any order, added tokens, Hugging Face's rule).

        Raises
        ------
        ValueError
            Naming the first offending token and the count.
        """
        if self.tokens is not None:
            raise ValueError(
                f"this tokenizer keeps the ids of an imported vocabulary (not bytes at 0..255 and merge i at "
                f"256 + i) and Hugging Face's BPE rule, which a {format_name} file cannot hold; export it as hf"
            )
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
        """Number of token ids: the largest id + 1 (256 + merges + special tokens when trained; tiktoken's name)."""
        if self.tokens is not None:
            return max([*self.tokens, *self.special_tokens.values()]) + 1
        return max([255 + len(self.merges), *self.special_tokens.values()]) + 1

    def __repr__(self) -> str:
        return (
            f"Tokenizer(n_vocab={self.n_vocab}, merges={len(self.merges)}, "
            f"pat_str={describe_pattern(self.pat_str)}, special_tokens={len(self.special_tokens)})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self._key() == other._key()

    def _key(self) -> tuple:
        return (self.merges, self.pat_str, self.special_tokens, self._byte_table, self.tokens, self.ignore_merges,
                frozenset(self.added_tokens))

    __hash__ = None  # mutable lists inside

    def truncate(self, vocab_size: int) -> Tokenizer:
        """The tokenizer that training to ``vocab_size`` would have given: the first merges,
        the special tokens numbered after them (in id order), every other field kept.

        ``vocab_size`` counts as ``BpeTrainer``'s does (bytes + merges + special tokens).
        Exact for every training option (the proof, and what an imported vocabulary
        allows: :mod:`bpetrain.truncation`).

        Raises
        ------
        ValueError
            If ``vocab_size`` is below the bytes + special tokens or above this
            tokenizer's size, or an imported vocabulary's ids do not follow its merges.
        """
        from bpetrain.truncation import truncated_fields

        return Tokenizer(**truncated_fields(self, vocab_size))

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
        ~100x slower) with a ``RuntimeWarning`` on the first call. In the imported layout
        the rule is Hugging Face's (:mod:`bpetrain.encoding.pair_model`), compiled where
        tiktoken's rule gives the same ids, and special tokens with ``lstrip``,
        ``rstrip`` or ``single_word`` are cut out as ``tokenizers`` does
        (:mod:`bpetrain.encoding.added_tokens`).

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
        compiled, rank_ids = self._compiled
        if compiled is not None and rank_ids is None and self._plain_added:
            return compiled.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        allowed = allowed_special_tokens(text, self.special_tokens, allowed_special, disallowed_special)
        return self._encode_allowed(text, allowed)

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special token strings as ordinary text (compiled, as :meth:`encode`)."""
        compiled, rank_ids = self._compiled
        if compiled is None:
            return self._encode_with_merges(text)
        ids = compiled.encode_ordinary(text)
        return ids if rank_ids is None else [rank_ids.get(i, i) for i in ids]

    @cached_property
    def _plain_added(self) -> bool:
        """Whether the compiled encoder cuts the special tokens out as Hugging Face does: no
        flag changes a match and all are found in one pass (:mod:`bpetrain.encoding.added_tokens`)."""
        if self._normalizer is not None and any(t.normalized for t in self.added_tokens):
            return False  # those are found in the normalized text
        return all(t.plain for t in self.added_tokens) and len({t.normalized for t in self.added_tokens}) <= 1

    @property
    def _normalizer(self):
        """The normalizer of the pipeline :attr:`pat_str` (None: none)."""
        return getattr(self.pat_str, "normalizer", None)

    def _encode_allowed(self, text: str, allowed: Collection[str]) -> list[int]:
        """The ids of ``text``, each special token of ``allowed`` as its id, the text between
        them by :meth:`encode_ordinary`."""
        if not allowed:
            return self.encode_ordinary(text)
        if self._plain_added:
            parts = special_regex(frozenset(allowed)).split(text)
            parts = [self.special_tokens[p] if i % 2 else p for i, p in enumerate(parts)]
        else:
            tokens = (t for t in self.added_tokens if t.content in allowed)
            parts = [p if isinstance(p, str) else p.id for p in split_added(text, tokens, self._normalizer)]
        # split_added gives text the normalizer normalized, which is not normalized twice
        # (NFD, Lowercase, NFKC makes 'ℌ' 'H', and then 'h')
        encode = self.encode_ordinary if self._plain_added or self._normalizer is None else self._encode_normalized
        ids: list[int] = []
        for part in parts:
            if isinstance(part, int):
                ids.append(part)
            elif part:
                ids.extend(encode(part))
        return ids

    def _encode_normalized(self, text: str) -> list[int]:
        """:meth:`encode_ordinary` of ``text`` that the pipeline's normalizer has normalized:
        split by the pipeline without its normalizer."""
        compiled, rank_ids = self._compiled
        if compiled is None:
            return self._encode_with_merges(text, normalized=True)
        ids = self._unnormalized.encode_ordinary(text)
        return ids if rank_ids is None else [rank_ids.get(i, i) for i in ids]

    @cached_property
    def _unnormalized(self) -> Encoding:
        """The compiled encoder, splitting by the pipeline without its normalizer."""
        compiled = self._compiled[0]
        return Encoding("bpetrain", pat_str=replace(self.pat_str, normalizer=None),
                        mergeable_ranks=compiled.mergeable_ranks, special_tokens=compiled.special_tokens)

    def _encode_with_merges(self, text: str, normalized: bool = False) -> list[int]:
        """The ids of ``text`` by the merges (Hugging Face's rule, trained ids ranking as their
        merges), in plain Python: :meth:`encode_ordinary` where the compiled encoder cannot hold
        the vocabulary. Text is UTF-8 with ``errors="surrogateescape"``, as training reads it."""
        pat_str = replace(self.pat_str, normalizer=None) if normalized else self.pat_str  # see _encode_normalized
        split = None if pat_str is None else split_pattern(pat_str, self.unicode_version).split
        encode_piece = self._model.encode_piece
        ids: list[int] = []
        for piece in [encode_utf8(text)] if split is None else split(text):
            ids.extend(encode_piece(piece))
        return ids

    @cached_property
    def _compiled(self) -> tuple[Encoding | None, dict[int, int] | None]:
        """The compiled encoder and its rank -> id map (None: ranks are ids), or (None, None)
        with a warning when its rule would give other ids than the merges."""
        try:
            if self.tokens is None:
                return self.encoding(), None
            ranks, rank_ids = self._model.compiled_ranks()
            return Encoding("bpetrain", pat_str=self.pat_str, mergeable_ranks=ranks,
                            special_tokens=self.special_tokens), rank_ids
        except ValueError as exc:
            warnings.warn(
                f"Tokenizer.encode falls back to the pure-Python reference encoder (exact, ~100x slower): {exc}",
                RuntimeWarning,
                stacklevel=4,
            )
            return None, None

    def encoding(self, name: str = "bpetrain") -> Encoding:
        """The fast encoder for this vocabulary: an :class:`~bpetrain.Encoding` (tiktoken's interface).

        It applies tiktoken's rule (lowest rank of the joined pair first) to
        :attr:`mergeable_ranks`; on the pieces training saw it reproduces training's
        segmentation, as :meth:`encode` does (the tests check both on trained vocabularies).
        In the imported layout it is made when tiktoken's rule gives Hugging Face's ids
        (:meth:`bpetrain.encoding.pair_model.PairModel.compiled_ranks`) with ranks equal to
        the ids; its special tokens are then cut out without Hugging Face's flags.

        Raises
        ------
        ValueError
            If two merges spell the same bytes (:meth:`duplicate_tokens`) or a token does
            not encode to itself (:meth:`unreachable_tokens`): tiktoken's rule would give
            other ids than the merges, as for a tiktoken export. In the imported layout,
            saying why tiktoken's rule would give other ids.
        """
        if self.tokens is not None:
            ranks, rank_ids = self._model.compiled_ranks()
            if rank_ids is not None:
                raise ValueError("the merge order is not the id order, so tiktoken's ranks cannot be the ids")
            return Encoding(name, pat_str=self.pat_str, mergeable_ranks=ranks, special_tokens=self.special_tokens,
                            unicode_version=self.unicode_version)
        self.check_exportable("tiktoken")
        return Encoding(name, pat_str=self.pat_str, mergeable_ranks=self.mergeable_ranks,
                        special_tokens=self.special_tokens, unicode_version=self.unicode_version)

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """Concatenate the bytes of ``tokens``.

        Raises
        ------
        KeyError
            If a token id is not in the vocabulary (as :meth:`bpetrain.Encoding.decode_bytes`
            and tiktoken).
        TypeError
            If a token id is not an integer.
        OverflowError
            If a token id is outside ``[0, 2**32)``.
        """
        return joined_token_bytes(self.vocab, tokens, "this tokenizer", self.n_vocab - 1)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """Decode ``tokens`` to text; invalid UTF-8 is handled by ``errors`` (as in ``bytes.decode``).

        Raises
        ------
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.
        """
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
                       byte_ids=model.byte_ids, tokens=model.tokens, ignore_merges=model.ignore_merges,
                       added_tokens=model.added_tokens, origin=model.origin,
                       unicode_version=model.unicode_version or "regex")
        except ValueError as exc:
            raise ValueError(f"{model.source}: {exc}") from None

    def save(self, path) -> None:
        """Write the model file (format in :mod:`bpetrain.formats.model_file`), atomically,
        with :attr:`unicode_version` (the installed ``regex`` module's classes as a table)."""
        from bpetrain.formats.model_file import write_model

        plain = all(t == AddedToken(t.content, t.id) for t in self.added_tokens)
        write_model(
            path,
            merges=self.merges,
            pat_str=self.pat_str,
            special_tokens=self.special_tokens,
            byte_ids=None if self._byte_table is None else self.byte_ids,
            tokens=self.tokens,
            ignore_merges=self.ignore_merges,
            added_tokens=None if plain else self.added_tokens,
            origin=self.origin,
            unicode_version=self.unicode_version,
        )

    @classmethod
    def load(cls, path) -> Tokenizer:
        """Read a model file written by :meth:`save`, or any model :meth:`from_file` reads.

        Raises
        ------
        FileNotFoundError, ValueError
            As :meth:`from_file`.
        """
        return cls.from_file(path)

    def save_tiktoken(self, path) -> None:
        """Write a tiktoken rank file and its sidecar ``path.json``: ``export(path, format="tiktoken")``."""
        self.export(path, format="tiktoken")

    def export(self, path, *, format: str, **options) -> None:
        """Write the tokenizer in a format other libraries load, atomically.

        Parameters
        ----------
        path : str or os.PathLike
            ``tiktoken``: the rank file (the sidecar goes to ``path.json``); ``hf``: the
            ``tokenizer.json`` file; ``gpt2``: a directory for ``vocab.json`` and
            ``merges.txt``; ``minbpe``: the prefix of ``.model`` and ``.vocab``.
        format : {"tiktoken", "hf", "gpt2", "minbpe"}
            See :mod:`bpetrain.formats` for what each can carry.
        options
            ``hf`` folders: ``tokenizer_config.json`` fields (``bos_token``, ``eos_token``,
            ``pad_token``, ``unk_token``, ``chat_template``, ``model_max_length``;
            :func:`bpetrain.formats.hf.save`).

        Raises
        ------
        ValueError
            If the format is unknown, two merges spell the same bytes, a token does not
            encode to itself, or the format cannot carry this tokenizer.
        """
        from bpetrain import formats

        formats.export(self, path, format, **options)

    @classmethod
    def from_file(cls, path, *, format: str | None = None, **options) -> Tokenizer:
        """Read a tokenizer from a model reference: a :meth:`save` model file, any format
        :meth:`export` writes (file or folder), or an OpenAI encoding name (``"cl100k_base"``).

        Every command and function that takes a model resolves it this way
        (:func:`bpetrain.registry.locate_model`). ``format`` (``"bpetrain"``,
        ``"tiktoken"``, ``"hf"``, ``"gpt2"``, ``"minbpe"``) defaults to what the path
        shows (:func:`bpetrain.formats.detect_format`); ``options`` go to the format's
        reader (:func:`bpetrain.formats.load`), e.g. ``pat_str="cl100k"`` for a rank file
        without a sidecar. OpenAI's rank files (``cl100k_base.tiktoken``, recognised by
        their SHA-256) get their encoding's pattern and special tokens without options.

        Raises
        ------
        FileNotFoundError
            If ``path`` is neither a file or folder nor an encoding name (or the
            encoding's files are not on this machine).
        ValueError
            If the file is malformed (naming the file and line) or does not describe a
            byte-level BPE bpetrain can hold.
        """
        from bpetrain.registry import resolve_model

        return cls.from_model(resolve_model(path, format=format, **options))
