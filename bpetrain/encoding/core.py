"""Encoding: tiktoken's interface over the compiled encoder, plus counting and chunking.

:class:`Encoding` takes what ``tiktoken.Encoding`` takes and gives the same token ids
(the same rule: inside each piece, merge the adjacent pair whose joined bytes have the
lowest rank, leftmost first; ``bpetrain.encoding._encoder`` holds the loops). The policy
lives here: argument checks, and one kernel call per public method through one helper
that owns the fallback ladder (:meth:`Encoding._encode`). The special-token rules are in
:mod:`bpetrain.encoding.special`, batches in :mod:`bpetrain.encoding.batching`, streams in
:mod:`bpetrain.encoding.stream`, token-limit chunks in :mod:`bpetrain.encoding.chunking`
and the unstable end of an encoding in :mod:`bpetrain.encoding.unstable`.

Any pattern within the compiled matcher's syntax (:mod:`bpetrain.splitting._compiler`)
splits text with the compiled splitter, without the GIL; other patterns split with the
``regex`` module (``concurrent=True``). Text the pattern does not match is dropped, as in
tiktoken. Lone surrogates in a ``str`` are replaced by U+FFFD before encoding, as
tiktoken does.

The piece cache (:attr:`Encoding.cache_size`): the encoder remembers the ids of every
piece of 3 to 255 bytes it has seen, one token or several (one of up to 8 bytes and three
ids in an entry of 16 bytes, of up to 16 bytes and five ids in an entry of 32 bytes; a
longer one with its bytes and ids in an arena of up to 16 bytes per entry; a piece of up
to 16 bytes with more ids is not kept). Real text repeats its pieces, so most are then
found with one probe of this table, without a probe of the vocabulary's whole-token table
or a merge. Each of the cache's two parts (pieces of up to 8 bytes, and longer) starts
with 1,024 entries and doubles when half full, up to ``cache_size`` entries (by default
262,144: 4 and 8 MiB, 131,072 pieces each, and an arena of up to 4 MiB); once one is full
at that size that part is emptied and refilled from the pieces that come next (the other
keeps its pieces). Each call that runs takes a cache of its own and gives it back
when it returns, so threads never share one while they encode, and a thread's next call
finds the pieces its last one stored: there are as many caches as calls ran at once. The
cache never changes an id (an entry is used only if all its bytes equal the piece).
Once the encoder has read 64 KiB, the caches of its next calls start with every token of
3 to 16 bytes (if ``cache_size`` is at least their number): a piece not seen before
that is one token is then found with one probe, and one not found is merged at once.
Each part of such a cache has from the start ``max(cache_size / 2, 2 * tokens)`` entries
of its tokens, a power of two (cl100k_base: 262,144 short entries and 131,072 others,
4 + 4 MiB; o200k_base: 524,288 and 131,072, 8 + 4 MiB), and when a part is three
quarters full that part is emptied back to its tokens.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
import copyreg
import threading
from functools import cached_property
from itertools import repeat
from typing import TYPE_CHECKING, Literal

from bpetrain._util.threads import DEFAULT_THREADS
from bpetrain.encoding import stream, unstable
from bpetrain.encoding._args import as_bytes, check_text
from bpetrain.encoding._encoder import (
    BATCH_ARRAYS,
    BATCH_COUNTS,
    BATCH_LISTS,
    DEFAULT_CACHE_SIZE,
    KERNEL_GAVE_UP,
    BytePairEncoder,
    DisallowedText,
    DocumentCalls,
)
from bpetrain.encoding._incremental import TokenAutomaton
from bpetrain.encoding.decoding import Decoding, decoder_of
from bpetrain.encoding.batching import encode_batch, encode_range
from bpetrain.encoding.special import (
    SpecialTokens,
    Strings,
    allowed_special_tokens,
    check_disallowed,
    check_special,
    special_regex,
)
from bpetrain.encoding.token_counting import TokenCounting
from bpetrain.splitting._matcher import BacktrackLimitExceeded
from bpetrain.splitting.pattern import replace_surrogates, resolve_pattern, split_pattern
from bpetrain.splitting.unicode import check_unicode_version

if TYPE_CHECKING:
    import numpy as np  # imported where a call returns arrays: loading and encode() do without

__all__ = ["Encoding"]



class Encoding(DocumentCalls, TokenCounting, Decoding):
    """A byte-level BPE encoding with tiktoken's interface and tiktoken's token ids.

    A drop-in for ``tiktoken.Encoding`` (tiktoken 0.14, ``tiktoken/core.py``): the same
    constructor, methods, exceptions and private names that code reads (``_pat_str``,
    ``_mergeable_ranks``, ``_special_tokens``, ``_encode_bytes``, ``_encode_single_piece``),
    plus counting and chunking (:meth:`count`, :meth:`count_till_limit`,
    :meth:`split_at_token_limit`, :meth:`split_into_chunks`) and incremental counting
    (:meth:`appendable`, :meth:`interval_counter`).

    Thread safety: an ``Encoding`` may be shared by threads (its tables are read-only once
    built, the ones a first short encode does not read are built on first use under a
    lock, and each call takes a piece cache of its own), and so may the
    :class:`~bpetrain.AppendableEncoder` and :class:`~bpetrain.IntervalCounter` it makes
    (each holds a lock). The iterator of :meth:`encode_stream` is a generator: a thread
    that calls ``next`` on it while another does gets ``ValueError: generator already executing``.

    Parameters
    ----------
    name : str
        A name for the encoding (shown by ``repr``).
    pat_str : str, PreTokenizer or None
        The split pattern: a regex for the ``regex`` module, a name from
        :data:`bpetrain.PATTERNS`, a pipeline of Hugging Face pre-tokenizers
        (:class:`bpetrain.splitting.pipeline.PreTokenizer`: each text between special
        tokens is split as ``tokenizers`` splits it), or ``None`` for no pre-tokenization
        (each text between special tokens is one piece, as bpetrain trains with
        ``pat_str=None``).
    mergeable_ranks : mapping of bytes to int
        Token bytes -> rank (= token id). Every single byte must have a rank.
    special_tokens : mapping of str to int, optional
        Special token strings -> ids. As in tiktoken, two special tokens may share an id
        (``o200k_harmony`` gives ``<|endofprompt|>`` and ``<|reserved_200018|>`` the id
        200018; the id decodes to the first of them), and a special token may have the
        id of a rank (encoding gives that id; decoding gives the rank's bytes).
        :class:`bpetrain.Tokenizer`, which builds vocabularies, refuses both.
    explicit_n_vocab : int, optional
        If given (and not 0), checked against the number of ranks plus the number of
        special tokens and against the largest id + 1 (tiktoken's option).
    cache_size : int, optional
        Most entries of each piece cache (:attr:`cache_size`; default ``DEFAULT_CACHE_SIZE``,
        262,144 entries, 8 MiB, and an arena of up to 4 MiB; 0: none).
    unicode_version : {"tiktoken", "regex"} or bpetrain.splitting.unicode.UnicodeTable, default "tiktoken"
        Whose character classes (``\\p{L}``, ``\\s``, ...) split the text: tiktoken's
        engine's, as tiktoken splits (the ids are tiktoken's on every code point), the
        installed ``regex`` module's (what bpetrain trains with), or a table's
        (:mod:`bpetrain.splitting.unicode`; a trained model records one). Not tiktoken's.

    Raises
    ------
    TypeError
        If a key of ``mergeable_ranks`` is not ``bytes``, or a special token's id is not
        an integer.
    OverflowError
        If a special token's id is outside ``[0, 2**32)`` (tiktoken's ids are 32-bit).
    ValueError
        If a byte has no rank, a rank repeats or is out of ``[0, 2**21 - 2]`` (the
        encoder packs two ids and a rank into 64 bits), a special token is not a
        non-empty string, the pattern does not compile, ``explicit_n_vocab`` does not
        match (tiktoken checks it with ``assert``, which ``python -O`` skips), or
        ``unicode_version`` is unknown.
    """

    def __init__(
        self,
        name: str,
        *,
        pat_str: str | None,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | None = None,
        explicit_n_vocab: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        unicode_version="tiktoken",
    ):
        self.name = name
        self.pat_str = resolve_pattern(pat_str)
        self.unicode_version = check_unicode_version(unicode_version)
        self._split = None if self.pat_str is None else split_pattern(self.pat_str, unicode_version)
        self._pattern = None if self._split is None else self._split.program  # None: no compiled splitter
        self.mergeable_ranks: dict[bytes, int] = dict(mergeable_ranks)
        if not all(map(isinstance, self.mergeable_ranks, repeat(bytes))):  # a C loop; the key below
            wrong = next(token for token in self.mergeable_ranks if not isinstance(token, bytes))
            raise TypeError(f"mergeable_ranks maps token bytes to ranks; got the key {wrong!r}, not bytes")
        self._bpe = BytePairEncoder(self.mergeable_ranks, cache_size)
        self._token_automaton: TokenAutomaton | None = None
        self.special_tokens: dict[str, int] = {
            check_special(token, token_id): int(token_id) for token, token_id in (special_tokens or {}).items()
        }
        self._special_token_values = set(self.special_tokens.values())
        #: The special-token strings to look for, per pair of arguments (and the kernel's needles).
        self._specials = SpecialTokens(self.special_tokens)
        #: encode's default strings for its one kernel call, and whether the kernel can look for them
        self._default_needles, self._default_kernel = self._specials.default.needles, self._specials.default.kernel
        every = self._specials.strings("all", "all")  # ... and with allowed_special="all"
        self._all_needles, self._all_specials, self._all_kernel = every.needles, every.specials, every.kernel
        self.max_token_value = max([self._bpe.n_ranks - 1, *self._special_token_values])
        if explicit_n_vocab and (
            len(self.mergeable_ranks) + len(self.special_tokens) != explicit_n_vocab
            or self.max_token_value != explicit_n_vocab - 1
        ):
            raise ValueError(
                f"explicit_n_vocab={explicit_n_vocab}, but there are {len(self.mergeable_ranks)} ranks + "
                f"{len(self.special_tokens)} special tokens and the largest id is {self.max_token_value}"
            )
        self._decoder_lock = threading.Lock()

    @property
    def _decoder(self) -> dict[int, bytes]:
        """Token id -> bytes (:func:`~bpetrain.encoding.decoding.decoder_of`), built on first
        use under a lock (encoding does not read it, so a first encode does not pay for it)."""
        decoder = self.__dict__.get("_decoder_table")
        if decoder is None:
            with self._decoder_lock:
                decoder = self.__dict__.get("_decoder_table")
                if decoder is None:
                    decoder = self.__dict__["_decoder_table"] = decoder_of(self.mergeable_ranks, self.special_tokens)
        return decoder

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def __getstate__(self) -> dict:
        """Pickle the constructor's arguments (the compiled tables are rebuilt on load)."""
        return {
            "name": self.name,
            "pat_str": self.pat_str,
            "mergeable_ranks": self.mergeable_ranks,
            "special_tokens": self.special_tokens,
            "cache_size": self.cache_size,
            "unicode_version": self.unicode_version,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def __reduce__(self):
        """Pickle by :meth:`__getstate__` in every protocol (the compiled base class,
        :class:`~bpetrain.encoding._encoder.DocumentCalls`, has no default reduction in
        protocols 0 and 1)."""
        return copyreg.__newobj__, (type(self),), self.__getstate__()

    # ---------------------------------------------------------------- properties

    @property
    def cache_size(self) -> int:
        """Most entries of the piece cache (one per running call, grown on demand, or, once
        seeded with the vocabulary's tokens, of at least twice their number: see the module
        notes), 0 if there is none; settable. Setting the size drops every cache (the new size is
        rounded up to a power of two; 0 turns them off); calls already running finish
        with theirs.

        Raises
        ------
        TypeError
            If set to a non-integer.
        ValueError
            If set to a negative number or one above 2**32.
        """
        return self._bpe.cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        self._bpe.cache_size = size

    def clear_cache(self) -> None:
        """Drop the piece caches (keeping their size): the next calls start with empty ones."""
        self._bpe.cache_size = self._bpe.cache_size

    @property
    def n_vocab(self) -> int:
        """The largest token id + 1 (tiktoken's name)."""
        return self.max_token_value + 1

    @property
    def special_tokens_set(self) -> set[str]:
        """The special token strings."""
        return set(self.special_tokens)

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>``; KeyError if the encoding has none."""
        return self.special_tokens["<|endoftext|>"]

    def is_special_token(self, token: int) -> bool:
        """Whether ``token`` is the id of a special token."""
        return token in self._special_token_values

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ranked token, sorted as byte strings (as tiktoken's)."""
        return list(self._sorted_token_bytes)

    @cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        """The ranked tokens' bytes in byte-string order (sorted on first use)."""
        return sorted(self.mergeable_ranks)

    # tiktoken keeps its constructor's arguments under these private names, and code
    # reads them: tiktoken's README extends an encoding with
    # ``Encoding(pat_str=enc._pat_str, mergeable_ranks=enc._mergeable_ranks, ...)``.

    @property
    def _pat_str(self) -> str | None:
        """:attr:`pat_str` under tiktoken's private name."""
        return self.pat_str

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """:attr:`mergeable_ranks` under tiktoken's private name."""
        return self.mergeable_ranks

    @property
    def _special_tokens(self) -> dict[str, int]:
        """:attr:`special_tokens` under tiktoken's private name."""
        return self.special_tokens

    # ------------------------------------------------------------------ encoding

    def _encode(self, text: str, as_list: bool, strings: Strings) -> np.ndarray | list[int]:
        """Token ids of ``text`` (a uint32 array, or a list with ``as_list``), with the special-token
        ``strings`` of the call (:class:`~bpetrain.encoding.special.Strings`): most calls are one kernel
        call (``BytePairEncoder.encode_doc``: split, look for the strings and encode, without the GIL)."""
        if not strings.kernel:
            return self._encode_other(text, as_list, strings, None)
        try:
            return self._bpe.encode_doc(text, self._pattern, as_list, strings.needles, strings.specials)
        except KERNEL_GAVE_UP as error:
            return self._encode_other(text, as_list, strings, error)

    def _encode_other(self, text: str, as_list: bool, strings: Strings, error: Exception | None):
        """:meth:`_encode` after the kernel call raised ``error`` (None: no call): the fallback ladder.

        1. the kernel found a disallowed string: tiktoken's error (the regex finds it again
           for the message);
        2. the compiled matcher gave up on a catastrophically backtracking pattern (after
           looking for the disallowed strings): the ``regex`` module splits;
        3. no compiled pattern, a long text (threads, :func:`~bpetrain.encoding.batching.encode_range`), strings the
           kernel cannot look for, or lone surrogates: the ``regex`` module checks the
           disallowed strings, the text is cut at the allowed special tokens, and each
           part is encoded with lone surrogates replaced by U+FFFD, as tiktoken does.
        """
        if isinstance(error, DisallowedText):
            check_disallowed(text, strings.disallowed)
            raise RuntimeError("bpetrain bug: the kernel found a disallowed string that the regex does not")
        if isinstance(error, BacktrackLimitExceeded) and not strings.allowed:
            return self._encode_split_by_regex(text, as_list)
        check_text(text)
        check_disallowed(text, strings.disallowed)
        if strings.allowed:
            parts = special_regex(strings.allowed).split(text)
            none = self._specials.none
            if as_list:
                return [i for k, part in enumerate(parts)
                        for i in ([self.special_tokens[part]] if k % 2 else self._encode(part, True, none))]
            import numpy as np

            return np.concatenate([
                np.array([self.special_tokens[part]], dtype=np.uint32) if k % 2 else self._encode(part, False, none)
                for k, part in enumerate(parts)
            ])
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            text = replace_surrogates(text)
            data = text.encode("utf-8")
        if self._pattern is not None:
            try:
                return encode_range(self._bpe, self._pattern, data, 0, as_list)
            except BacktrackLimitExceeded:
                pass  # a catastrophically backtracking pattern: the regex module's guards may cope
        from bpetrain.splitting.pipeline import PipelineSplitter  # not at import: a rank file's encoding has none

        if isinstance(self._split, PipelineSplitter):
            return self._encode_pipeline(data, as_list)
        return self._encode_split_by_regex(text, as_list)

    def _encode_pipeline(self, data: bytes, as_list: bool) -> np.ndarray | list[int]:
        """Token ids of ``data`` split by a pipeline of pre-tokenizers: its kernel gives every
        piece in one buffer (:meth:`~bpetrain.splitting.pipeline.PipelineSplitter.table`),
        which the encoder encodes piece by piece in one call."""
        pieces, offsets = self._split.table(data)
        return self._bpe.encode_table(pieces, offsets, True, as_list)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS) -> list[list[int]]:
        """:meth:`encode_ordinary` of every text, on up to ``num_threads`` threads (the
        calling thread among them, and no more than the CPUs this process may use), in
        chunks of texts of one kernel call each (:mod:`bpetrain.encoding.batching`).

        Raises
        ------
        TypeError
            If an item of ``text`` is not a ``str``.
        ValueError
            If ``num_threads`` < 1.
        """
        return encode_batch(self, text, num_threads, BATCH_LISTS, self._specials.none)

    def encode_batch_to_numpy(
        self,
        text: Sequence[str],
        *,
        num_threads: int = DEFAULT_THREADS,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode` of every text, as one array of ids and the offsets of each text.

        No Python list or int is made per token (toktok's ``encode_batch_to_numpy``
        returns the same shape). Threads as in :meth:`encode_ordinary_batch`.

        Returns
        -------
        ids : numpy.ndarray of uint32, shape (n_tokens,)
            The ids of every text, one after the other.
        offsets : numpy.ndarray of int64, shape (len(text) + 1,)
            Text ``i`` has ``ids[offsets[i]:offsets[i + 1]]``; ``offsets[0] == 0``.

        Raises
        ------
        TypeError, ValueError
            As :meth:`encode_batch`.
        """
        strings = self._specials.strings(allowed_special, disallowed_special)
        return encode_batch(self, text, num_threads, BATCH_ARRAYS, strings)

    def count_batch(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS) -> list[int]:
        """:meth:`count` of every text (special token strings count as ordinary text),
        without keeping any ids; threads as in :meth:`encode_ordinary_batch`.

        Returns
        -------
        list of int

        Raises
        ------
        TypeError
            If an item of ``text`` is not a ``str``.
        ValueError
            If ``num_threads`` < 1.
        """
        return encode_batch(self, text, num_threads, BATCH_COUNTS, self._specials.none).tolist()

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = DEFAULT_THREADS,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[list[int]]:
        """:meth:`encode` of every text, on up to ``num_threads`` threads (the kernel releases the GIL).

        Raises
        ------
        ValueError
            As :meth:`encode`, for the first text that holds a disallowed special token.
        """
        strings = self._specials.strings(allowed_special, disallowed_special)
        return encode_batch(self, text, num_threads, BATCH_LISTS, strings)

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """The tokens of ``text`` that more text cannot change, and how the rest may continue.

        For completing a prompt: the stable tokens encode a prefix of ``text``; each
        completion is a token sequence that, after them, encodes the rest of ``text``
        followed by more. The rules are tiktoken's (:mod:`bpetrain.encoding.unstable`, which
        says what they cost), which calls this API unstable itself. Lone surrogates are
        replaced by U+FFFD first, as :meth:`encode` does (tiktoken raises ``UnicodeEncodeError`` here).

        Parameters
        ----------
        text : str
        allowed_special, disallowed_special
            As in :meth:`encode`. A text that ends with an allowed special token is all
            stable.

        Returns
        -------
        stable : list of int
            ``decode_bytes(stable)`` is a prefix of ``text`` as UTF-8.
        completions : list of list of int
            Distinct, in the order of :func:`bpetrain.encoding.unstable.completions` (tiktoken's
            is a hash set's); ``decode_bytes(stable + c)`` starts with ``text`` as UTF-8
            for each completion ``c``.

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        ValueError
            As :meth:`encode`, if ``text`` holds a disallowed special token.
        """
        allowed = allowed_special_tokens(text, self.special_tokens, allowed_special, disallowed_special)
        return unstable.encode_with_unstable(self, text, allowed)

    def _encode_bytes(self, data: bytes) -> list[int]:
        """Token ids of ``data``, which may be invalid UTF-8 (tiktoken's private method).

        Invalid UTF-8 is joined with the unstable end of the valid head and encoded as
        one piece (:func:`bpetrain.encoding.unstable.encode_bytes`, tiktoken's rule).
        ``decode_bytes`` of the result is ``data``.

        Raises
        ------
        TypeError
            If ``data`` is not ``bytes``.
        """
        if not isinstance(data, bytes):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        return unstable.encode_bytes(self, data)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the token spelled by ``text_or_bytes``, special tokens included.

        As in tiktoken, the bytes (a ``str`` as UTF-8) are looked up in the ranks first,
        then, read as UTF-8, in the special tokens: ``b"<|endoftext|>"`` gives the id of
        ``<|endoftext|>``.

        Raises
        ------
        TypeError
            If ``text_or_bytes`` is neither ``str`` nor ``bytes``.
        KeyError
            If no token is spelled that way.
        """
        data = as_bytes(text_or_bytes, "text_or_bytes")
        rank = self.mergeable_ranks.get(data)
        if rank is not None:
            return rank
        try:
            return self.special_tokens[data.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise KeyError(f"{data!r} is not a single token of encoding {self.name!r}") from None

    def encode_stream(
        self,
        chunks: Iterable[str],
        *,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
        block_chars: int | None = None,
    ) -> Iterator[np.ndarray]:
        """Encode a text that arrives in parts (a file read block by block) without holding it whole.

        Whenever ``block_chars`` characters are waiting, the text is encoded up to its last
        cut point, as counting cuts a corpus (:mod:`bpetrain.encoding.stream`); the rest
        waits for the next parts. A raw-mode encoding (no pattern) or a pattern split by
        the ``regex`` module has no cut points: its text is held whole, as :meth:`encode` would.

        Parameters
        ----------
        chunks : iterable of str
            The text, in consecutive parts of any length (cut anywhere).
        allowed_special, disallowed_special
            As in :meth:`encode`.
        block_chars : int, optional
            Characters to gather before looking for a cut (default
            :data:`bpetrain.encoding.stream.STREAM_BLOCK`, 4 Mi; memory is a few times this).

        Yields
        ------
        numpy.ndarray of uint32
            Token ids; joined, they are ``encode_to_numpy("".join(chunks), ...)``.

        Raises
        ------
        ValueError
            As :meth:`encode`, for a disallowed special token (ids of the text before it
            may have been yielded already).

        Notes
        -----
        A surrogate pair whose halves arrive in different parts is one character, as in
        the text joined. The iterator is a generator, for one thread at a time.
        """
        if self._pattern is None:  # no safe cuts: the text whole
            yield self.encode_to_numpy("".join(chunks), allowed_special=allowed_special,
                                       disallowed_special=disallowed_special)
            return
        yield from stream.encode_stream(self, chunks, self._specials.strings(allowed_special, disallowed_special),
                                        block_chars)

    def _encode_split_by_regex(self, text: str, as_list: bool) -> np.ndarray | list[int]:
        """Token ids of ``text`` split by the ``regex`` module (raw mode: one piece)."""
        if self._split is None:
            return self._bpe.encode_bytes(text.encode("utf-8"), as_list)
        return self._bpe.encode_pieces(self._split.pieces(text), as_list)

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """Token ids of ``text_or_bytes`` (a ``str`` as UTF-8) as one piece: no split,
        no special tokens (tiktoken's private method of that name).

        The whole piece is looked up in the ranks first, as tiktoken does (so ``b""``
        gives ``[rank]`` of an empty token, if the ranks hold one, else ``[]``).

        Raises
        ------
        TypeError
            If ``text_or_bytes`` is neither ``str`` nor ``bytes``.
        UnicodeEncodeError
            If a ``str`` holds a lone surrogate (as in tiktoken).
        """
        data = as_bytes(text_or_bytes, "text_or_bytes")
        if not data and b"" in self.mergeable_ranks:
            return [self.mergeable_ranks[b""]]
        return self._bpe.encode_bytes(data, True)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """:meth:`encode_ordinary` with the pieces found by the ``regex`` module instead of
        the compiled splitter (tiktoken's private method of that name, a cross-check).

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        check_text(text)
        return self._encode_split_by_regex(text, True)
