"""Encoding: tiktoken's interface over the compiled encoder, plus counting and chunking.

:class:`Encoding` takes what ``tiktoken.Encoding`` takes and gives the same token ids
(the same rule: inside each piece, merge the adjacent pair whose joined bytes have the
lowest rank, leftmost first; ``bpetrain.encoding._encoder`` holds the loops and
``_reference.encode_piece_ranks`` the plain version). The policy lives here: special
tokens, argument checks, error messages, threads.
"""
from __future__ import annotations

import array
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from functools import cached_property, lru_cache, partial
from itertools import islice
from typing import Literal

import numpy as np
import regex

from bpetrain.encoding._encoder import (
    BATCH_ARRAYS,
    BATCH_COUNTS,
    BATCH_LISTS,
    DEFAULT_CACHE_SIZE,
    BytePairEncoder,
    DisallowedText,
    Needles,
    text_lengths,
    track_lists,
)
from bpetrain.encoding._incremental import AppendableEncoder, IntervalCounter, TokenAutomaton
from bpetrain.splitting._matcher import BacktrackLimitExceeded
from bpetrain.encoding.errors import DisallowedSpecialTokenError
from bpetrain._util.threads import DEFAULT_THREADS, thread_map, usable_cores
from bpetrain.splitting.pattern import replace_surrogates, resolve_pattern, split_pattern
from bpetrain.encoding.unstable import completions, unstable_token_count

__all__ = ["Encoding", "allowed_special_tokens", "as_token_ids"]

#: Pieces counted per kernel call by :meth:`Encoding.count_till_limit` between checks of the limit.
COUNT_BATCH = 4096
#: Texts of at least this many bytes (UTF-8) are encoded on one thread per core, cut at
#: safe cuts of the split pattern.
LONG_TEXT = 1 << 20
#: Most characters of text per kernel call when a batch runs on several threads. The
#: threads take chunks as they come free (:func:`bpetrain._util.threads.thread_map`), so small
#: chunks balance them; but each chunk costs a set-up (4-10 us) and, for lists, a switch
#: of the core's caches from the kernel's tables to the lists and back: on one thread, 3 MB
#: of 1 KB documents in 46 chunks took 9% longer than in one as lists, 4.5% as counts. On
#: 2 threads (40 rotated rounds, mix-10M and fortunes, cl100k_base and o200k_base), chunks
#: of 2**17 characters ran 1.3-4% faster than 2**16, 2**18 -4..+3%, 2**19 -4..+2%.
BATCH_CHUNK = 1 << 17
#: Fewest characters per chunk when a batch is cut into more chunks than ``BATCH_CHUNK``
#: asks for, so that each thread gets several.
SMALLEST_CHUNK = 1 << 14
#: Characters :meth:`Encoding.encode_stream` gathers before it looks for a cut.
STREAM_BLOCK = 1 << 22


class Encoding:
    """A byte-level BPE encoding with tiktoken's interface and tiktoken's token ids.

    A drop-in for ``tiktoken.Encoding`` (tiktoken 0.14, ``tiktoken/core.py``): the same
    constructor, methods, exceptions and private names that code reads (``_pat_str``,
    ``_mergeable_ranks``, ``_special_tokens``, ``_encode_bytes``, ``_encode_single_piece``),
    plus counting and chunking (:meth:`count`, :meth:`count_till_limit`,
    :meth:`split_at_token_limit`, :meth:`split_into_chunks`) and incremental counting
    (:meth:`appendable`, :meth:`interval_counter`).

    Parameters
    ----------
    name : str
        A name for the encoding (shown by ``repr``).
    pat_str : str or None
        The split pattern: a regex for the ``regex`` module, a name from
        :data:`bpetrain.PATTERNS`, or ``None`` for no pre-tokenization (each text between
        special tokens is one piece, as bpetrain trains with ``pat_str=None``).
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
        Entries of the piece cache (:attr:`cache_size`; default ``DEFAULT_CACHE_SIZE``,
        16384 entries, 512 KiB; 0: none).

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
        non-empty string, the pattern does not compile, or ``explicit_n_vocab`` does not
        match (tiktoken checks it with ``assert``, which ``python -O`` skips).

    Notes
    -----
    Any pattern within the compiled matcher's syntax (:mod:`bpetrain.splitting._compiler`)
    splits text with the compiled splitter, without the GIL; other patterns split with
    the ``regex`` module (``concurrent=True``). Text the pattern does not match is
    dropped, as in tiktoken. Lone surrogates in a ``str`` are replaced by U+FFFD before
    encoding, as tiktoken does.
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
    ):
        self.name = name
        self.pat_str = resolve_pattern(pat_str)
        self._split = None if self.pat_str is None else split_pattern(self.pat_str)
        self._pattern = None if self._split is None else self._split.program  # None: no compiled splitter
        self.mergeable_ranks: dict[bytes, int] = dict(mergeable_ranks)
        wrong = next((token for token in self.mergeable_ranks if not isinstance(token, bytes)), None)
        if wrong is not None:
            raise TypeError(f"mergeable_ranks maps token bytes to ranks; got the key {wrong!r}, not bytes")
        self._bpe = BytePairEncoder(self.mergeable_ranks, cache_size)
        self._token_automaton: TokenAutomaton | None = None
        self.special_tokens: dict[str, int] = {
            _check_special(token, token_id): int(token_id) for token, token_id in (special_tokens or {}).items()
        }
        self._special_token_values = set(self.special_tokens.values())
        # What encode looks for by default (every special token), for the kernel; None: none,
        # or one it cannot look for (a lone surrogate), then the regex does.
        self._all_needles = _needles(frozenset(self.special_tokens))
        self._strings_for: dict[tuple, tuple] = {}  # _kernel_strings, by its arguments
        self.max_token_value = max([self._bpe.n_ranks - 1, *self._special_token_values])
        if explicit_n_vocab and (
            len(self.mergeable_ranks) + len(self.special_tokens) != explicit_n_vocab
            or self.max_token_value != explicit_n_vocab - 1
        ):
            raise ValueError(
                f"explicit_n_vocab={explicit_n_vocab}, but there are {len(self.mergeable_ranks)} ranks + "
                f"{len(self.special_tokens)} special tokens and the largest id is {self.max_token_value}"
            )
        # Token id -> bytes. An id two special tokens share decodes to the first of them; a
        # rank decodes to its token even if a special token has that id too (as in tiktoken).
        self._decoder: dict[int, bytes] = {}
        for token, token_id in self.special_tokens.items():
            self._decoder.setdefault(token_id, token.encode("utf-8"))
        self._decoder.update((rank, token) for token, rank in self.mergeable_ranks.items())

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
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    # ---------------------------------------------------------------- properties

    @property
    def cache_size(self) -> int:
        """Entries of the piece cache, 0 if there is none; settable.

        The encoder remembers the ids of the pieces of 3 to 16 bytes it had to merge (up
        to three ids each; 32 bytes an entry, one entry per hash value, the newest
        wins; a piece that is one token is found in the vocabulary's table first). Real
        text repeats its pieces, so many are then found without a merge. Each call that
        runs takes a cache of its own and gives it back when it returns, so threads never
        share one while they encode, and a thread's next call finds the pieces its last
        one stored: there are as many caches as calls ran at once (512 KiB each at the
        default size). The cache never changes
        an id (an entry is used only if its bytes equal the piece). Setting the size drops
        every cache (the new size is rounded up to a power of two; 0 turns them off);
        calls already running finish with theirs.

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

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text``, treating special token strings as ordinary text.

        Returns
        -------
        list of int
        """
        return self._ordinary(text, as_list=True)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Encode ``text``, with tiktoken's rules for special tokens.

        Parameters
        ----------
        text : str
        allowed_special : "all" or collection of str
            Special tokens encoded as their id where they appear in ``text``. Strings
            that are not special tokens are ignored, as in tiktoken.
        disallowed_special : "all" or collection of str
            Strings whose appearance raises; "all": every special token not allowed.

        Returns
        -------
        list of int

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        ValueError
            If ``text`` holds a disallowed string (tiktoken's message, which says how to
            allow it).
        """
        if _by_default(allowed_special, disallowed_special):
            return self._ordinary(text, as_list=True, checked=True)
        return self._special_args(text, allowed_special, disallowed_special, as_list=True)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | Collection[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> np.ndarray:
        """Encode ``text`` as :meth:`encode` does, into an array (no list in between).

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
        """
        if _by_default(allowed_special, disallowed_special):
            return self._ordinary(text, checked=True)
        return self._special_args(text, allowed_special, disallowed_special, as_list=False)

    def _special_args(self, text: str, allowed_special, disallowed_special, as_list: bool) -> np.ndarray | list[int]:
        """:meth:`encode` (``as_list``) or :meth:`encode_to_numpy` with other special-token
        arguments than the defaults. The kernel looks for both sets of strings where it
        can, on the UTF-8 it encodes (:meth:`_kernel_strings`); else the regex module does."""
        allowed, disallowed, specials, needles = self._kernel_strings(allowed_special, disallowed_special)
        if specials is not False and type(text) is str and self._pattern is not None and len(text) < LONG_TEXT // 4:
            try:
                return self._bpe.encode_str(text, self._pattern, as_list, needles, specials)
            except DisallowedText:
                _check_disallowed(text, disallowed)
                raise RuntimeError("bpetrain bug: the kernel found a disallowed string that the regex does not")
            except BacktrackLimitExceeded:  # after the kernel looked for the disallowed strings
                if not allowed:  # as _ordinary copes, without running the kernel again
                    return self._encode_split_by_regex(text, as_list)
            except UnicodeEncodeError:
                pass  # lone surrogates: replaced below
        _check_text(text)
        _check_disallowed(text, disallowed)
        if not allowed:
            return self._ordinary(text, as_list)
        ids = self._with_specials(text, allowed)
        return ids.tolist() if as_list else ids

    def _kernel_strings(self, allowed_special, disallowed_special) -> tuple:
        """``(allowed, disallowed, specials, needles)`` for these arguments: the special
        tokens to encode as such and the strings no text may hold (tiktoken's rules), and
        both as the kernel's :class:`~bpetrain.encoding._encoder.Needles` (the allowed ones with
        their ids; None for an empty set). ``specials`` is False where the kernel cannot
        look for one of the strings (an empty one, or one with a lone surrogate). Kept for
        the last 64 pairs of arguments (a collection as a frozenset of its strings)."""
        if not isinstance(allowed_special, str):
            allowed_special = frozenset(allowed_special)
        if not isinstance(disallowed_special, str):
            disallowed_special = frozenset(disallowed_special)
        key = (allowed_special, disallowed_special)
        found = self._strings_for.get(key)
        if found is None:
            allowed, disallowed = _special_sets(self.special_tokens, allowed_special, disallowed_special)
            needles = _needles(frozenset(disallowed)) if disallowed else None
            specials = self._special_needles(frozenset(allowed)) if allowed else None
            if (disallowed and needles is None) or (allowed and specials is None):
                specials = False
            found = (allowed, disallowed, specials, needles)
            if len(self._strings_for) >= 64:
                self._strings_for.clear()
            self._strings_for[key] = found
        return found

    def _special_needles(self, allowed: frozenset[str]) -> Needles | None:
        """The special tokens of ``allowed`` with their ids, as the kernel's
        :class:`~bpetrain.encoding._encoder.Needles` (:func:`_needles`)."""
        return _needles(allowed, tuple(self.special_tokens[token] for token in sorted(allowed)))

    def _with_specials(self, text: str, allowed: Collection[str]) -> np.ndarray:
        """Token ids of ``text`` where every special token of ``allowed`` is its id."""
        parts = _special_regex(frozenset(allowed)).split(text)
        arrays = [
            np.array([self.special_tokens[part]], dtype=np.uint32) if i % 2 else self._ordinary(part)
            for i, part in enumerate(parts)
        ]
        return np.concatenate(arrays)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS) -> list[list[int]]:
        """:meth:`encode_ordinary` of every text, on up to ``num_threads`` threads (the
        calling thread among them, and no more than the CPUs this process may use).

        With a compiled split pattern the texts are cut into chunks of at most about
        ``BATCH_CHUNK`` characters, which the threads take as they come free; each chunk
        is encoded in one kernel call without the GIL, then turned into lists, so one
        thread builds lists while another encodes (the lists are kept from the garbage
        collector until the last is built, so the collections that building them sets off
        do not walk them).

        Raises
        ------
        TypeError
            If an item of ``text`` is not a ``str``.
        ValueError
            If ``num_threads`` < 1.
        """
        return self._batch(text, num_threads, BATCH_LISTS)

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
        return self._special_batch(text, num_threads, allowed_special, disallowed_special, BATCH_ARRAYS)

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
        return self._batch(text, num_threads, BATCH_COUNTS).tolist()

    def _batch(self, text: Sequence[str], num_threads: int, output: int, disallowed: frozenset[str] = frozenset(),
               allowed: frozenset[str] = frozenset()):
        """The batch kernel's ``output`` for every text, in chunks on up to ``num_threads``
        threads; a text holding a string of ``disallowed`` raises as :meth:`encode` (the
        first such text; the kernel looks for them without the GIL). The special tokens of
        ``allowed`` are their ids (only with a compiled pattern, and strings the kernel can
        look for: :meth:`_kernel_strings`)."""
        _check_threads(num_threads)
        texts = list(text)
        lengths = text_lengths(texts)  # raises as _check_text
        if self._pattern is None or (disallowed and _needles(disallowed) is None):
            for item in texts:
                _check_disallowed(item, disallowed)
            disallowed = frozenset()
        if self._pattern is None:  # the regex module splits, or no pattern: text by text
            if num_threads == 1 or len(texts) < 2:
                return _batch_output([self._ordinary(item) for item in texts], output)
            return _batch_output(thread_map(self._ordinary, texts, num_threads=num_threads), output)
        chunks = _batch_chunks(texts, lengths, min(num_threads, usable_cores()))
        if len(chunks) == 1:
            parts = [self._batch_chunk(texts, output, disallowed, allowed)]
        else:
            parts = thread_map(partial(self._batch_chunk, output=output, disallowed=disallowed, allowed=allowed),
                               chunks, num_threads=num_threads)
        if output == BATCH_LISTS:
            lists = [ids for part in parts for ids in part]
            track_lists(lists)  # the kernel leaves them untracked while it builds (track_lists)
            return lists
        if len(parts) == 1:
            return parts[0]
        if output == BATCH_COUNTS:
            return np.concatenate(parts)
        starts = np.cumsum([0] + [len(ids) for ids, _ in parts[:-1]])
        offsets = np.concatenate([[0]] + [part_offsets[1:] + start for (_, part_offsets), start in zip(parts, starts)])
        return np.concatenate([ids for ids, _ in parts]), offsets.astype(np.int64)

    def _batch_chunk(self, texts: list[str], output: int, disallowed: frozenset[str], allowed: frozenset[str]):
        needles = _needles(disallowed) if disallowed else None
        specials = self._special_needles(allowed) if allowed else None
        try:
            try:
                return self._bpe.encode_batch(texts, self._pattern, output, needles, specials)
            except UnicodeEncodeError:
                # Replacing lone surrogates neither makes nor breaks a match: no needle holds one.
                return self._bpe.encode_batch([replace_surrogates(item) for item in texts], self._pattern, output,
                                              needles, specials)
        except DisallowedText as found:
            _check_disallowed(texts[found.index], disallowed)
            raise RuntimeError(f"bpetrain bug: the kernel found a disallowed string in text {found.index} that the regex does not")
        except BacktrackLimitExceeded:  # each text as encode_ordinary (or encode, with specials) copes
            for item in texts:
                _check_disallowed(item, disallowed)
            if allowed:
                return _batch_output([self._with_specials(item, allowed) for item in texts], output)
            return _batch_output([self._ordinary(item) for item in texts], output)

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
        return self._special_batch(text, num_threads, allowed_special, disallowed_special, BATCH_LISTS)

    def _special_batch(self, text: Sequence[str], num_threads: int, allowed_special, disallowed_special, output: int):
        """:meth:`_batch`, the kernel looking for the allowed special tokens too where it can;
        else, with allowed special tokens present, :meth:`encode_to_numpy` of each text on
        threads (raises as :meth:`encode` for the first text holding a disallowed one)."""
        texts = list(text)
        allowed, disallowed, specials, _ = self._kernel_strings(allowed_special, disallowed_special)
        if specials is not False and self._pattern is not None:
            return self._batch(texts, num_threads, output, frozenset(disallowed), frozenset(allowed))
        if not allowed or not any(_special_regex(frozenset(allowed)).search(item) for item in texts):
            return self._batch(texts, num_threads, output, frozenset(disallowed))
        _check_threads(num_threads)
        for item in texts:
            _check_text(item)
            _check_disallowed(item, disallowed)
        encode = partial(self.encode_to_numpy, allowed_special=allowed, disallowed_special=())
        return _batch_output(thread_map(encode, texts, num_threads=num_threads), output)

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
        followed by more. The rules are tiktoken's (:mod:`bpetrain.encoding.unstable`), which
        calls this API unstable itself.

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

        Notes
        -----
        Lone surrogates are replaced by U+FFFD first, as :meth:`encode` does (tiktoken
        raises ``UnicodeEncodeError`` here). The completions take one batch encoding of
        every token that may straddle the end; the most are for a text ending in one
        space (with o200k_base, 106,529 completions in 0.15 s, about twice tiktoken's time).
        """
        allowed = allowed_special_tokens(text, self.special_tokens, allowed_special, disallowed_special)
        tokens, n_last_piece = self._encode_with_last_piece(text, allowed)
        n_unstable = unstable_token_count(self, tokens, n_last_piece)
        if not n_unstable:
            return tokens, []
        stable, unstable = tokens[: len(tokens) - n_unstable], tokens[len(tokens) - n_unstable :]
        return stable, completions(self, self.decode_bytes(unstable))

    def _encode_bytes(self, data: bytes) -> list[int]:
        """Token ids of ``data``, which may be invalid UTF-8 (tiktoken's private method).

        Valid UTF-8 is encoded as text. Otherwise the valid head is encoded as text, and
        its unstable end (:meth:`encode_with_unstable`) joined with the rest of the bytes
        is encoded as one piece: for bytes cut inside a character, what a model is most
        likely to have seen (tiktoken's rule, ``_encode_bytes`` in its ``src/py.rs``).
        ``decode_bytes`` of the result is ``data``.

        Raises
        ------
        TypeError
            If ``data`` is not ``bytes``.
        """
        if not isinstance(data, bytes):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            valid = exc.start
        tokens, n_last_piece = self._encode_with_last_piece(data[:valid].decode("utf-8"), set())
        n_unstable = unstable_token_count(self, tokens, n_last_piece)
        stable, unstable = tokens[: len(tokens) - n_unstable], tokens[len(tokens) - n_unstable :]
        return stable + self._encode_single_piece(self.decode_bytes(unstable) + data[valid:])

    def _encode_with_last_piece(self, text: str, allowed: set[str]) -> tuple[list[int], int]:
        """:meth:`encode` of ``text`` (``allowed``: the special tokens encoded as such), and
        how many of the tokens encode its last piece: 0 if the text after the last special
        token has no piece."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = replace_surrogates(text)
        tokens = (self._with_specials(text, allowed) if allowed else self._ordinary(text)).tolist()
        tail = (_special_regex(frozenset(allowed)).split(text)[-1] if allowed else text).encode("utf-8")
        pieces = [tail] if self._split is None else self._split.split(tail)
        return tokens, len(self._encode_single_piece(pieces[-1])) if pieces else 0

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
        data = _as_bytes(text_or_bytes, "text_or_bytes")
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

        Whenever ``block_chars`` characters are waiting, the text is encoded up to the
        last safe cut of the split pattern (no piece crosses it, and the pattern reads
        nothing beyond it: ``bpetrain.splitting._matcher.last_safe_cut``), or the end of a special
        token that would straddle it: the cuts of counting (:func:`bpetrain.counting.parallel.cut_blocks`).
        The rest waits for the next parts. A
        raw-mode encoding (no pattern) or a pattern split by the ``regex`` module has no
        safe cuts: its text is held whole, as :meth:`encode` would hold it.

        Parameters
        ----------
        chunks : iterable of str
            The text, in consecutive parts of any length (cut anywhere).
        allowed_special, disallowed_special
            As in :meth:`encode`.
        block_chars : int, optional
            Characters to gather before looking for a cut (default :data:`STREAM_BLOCK`,
            4 Mi; memory is a few times this).

        Yields
        ------
        numpy.ndarray of uint32
            Token ids; joined, they are ``encode_to_numpy("".join(chunks), ...)``.

        Raises
        ------
        ValueError
            As :meth:`encode`, for a disallowed special token (ids of the text before it
            may have been yielded already).
        """
        from bpetrain.counting.parallel import cut_blocks
        from bpetrain.counting.counts import PieceCounter

        block_chars = STREAM_BLOCK if block_chars is None else block_chars
        if block_chars < 1:
            raise ValueError(f"block_chars must be at least 1, got {block_chars}")
        if self._pattern is None:  # no safe cuts: the text whole
            yield self.encode_to_numpy("".join(chunks), allowed_special=allowed_special,
                                       disallowed_special=disallowed_special)
            return
        allowed, disallowed = _special_sets(self.special_tokens, allowed_special, disallowed_special)
        # Cut as counting does (PieceCounter.cut): at the pattern's last safe cut, moved to the
        # end of an allowed or disallowed special token that would straddle it.
        cutter = PieceCounter(self._pat_str, allowed | disallowed)
        blocks = map(_utf8, _gathered(chunks, block_chars))
        context = ""  # the character before a block that does not start a string (for ^ and \A)
        for data, stop, _, continued in cut_blocks(blocks, cutter):
            text = bytes(data[:stop]).decode("utf-8")
            _check_disallowed(text, disallowed)
            yield self._encode_after(context if continued else "", text, allowed)
            context = text[-1:] if text else context

    def _encode_after(self, context: str, text: str, allowed: Collection[str]) -> np.ndarray:
        """Ids of ``text`` where it follows ``context`` (one character, or "" at the start):
        the first stretch before a special token is encoded in place after ``context``.
        Both come from valid UTF-8 (no lone surrogates)."""
        if not context:
            return self._with_specials(text, allowed) if allowed else self._ordinary(text)
        parts = _special_regex(frozenset(allowed)).split(text, maxsplit=1) if allowed else [text]
        data = (context + parts[0]).encode("utf-8")
        start = len(context.encode("utf-8"))
        first = self._encode_range(data, start, False)
        if len(parts) == 1:
            return first
        return np.concatenate([first, [self.special_tokens[parts[1]]], self._encode_after("", parts[2], allowed)])

    def _ordinary(self, text: str, as_list: bool = False, checked: bool = False) -> np.ndarray | list[int]:
        """Token ids of ``text`` without special tokens: a uint32 array, or a list. With
        ``checked``, first raise as :meth:`encode` does if ``text`` holds a special token."""
        if type(text) is str and self._pattern is not None and len(text) < LONG_TEXT // 4:
            # Most calls go straight to the kernel (a text under LONG_TEXT bytes is one
            # kernel call anyway), which also looks for the special tokens without a regex.
            needles = self._all_needles if checked else None
            if not checked or needles is not None or not self.special_tokens:
                try:
                    return self._bpe.encode_str(text, self._pattern, as_list, needles)
                except DisallowedText:
                    _check_disallowed(text, self.special_tokens)
                    raise RuntimeError("bpetrain bug: the kernel found a special token that the regex does not")
                except BacktrackLimitExceeded:  # after the kernel looked for the special tokens
                    return self._encode_split_by_regex(text, as_list)  # as _encode_text copes
                except UnicodeEncodeError:
                    pass  # lone surrogates: replaced below
        _check_text(text)
        if checked:
            _check_disallowed(text, self.special_tokens)
        try:
            return self._encode_text(text, as_list)
        except UnicodeEncodeError:
            return self._encode_text(replace_surrogates(text), as_list)

    def _encode_text(self, text: str, as_list: bool) -> np.ndarray | list[int]:
        if self._pattern is not None:
            data = text.encode("utf-8")
            try:
                return self._encode_range(data, 0, as_list)
            except BacktrackLimitExceeded:
                pass  # a catastrophically backtracking pattern: the regex module's guards may cope
        return self._encode_split_by_regex(text, as_list)

    def _encode_range(self, data: bytes, start: int, as_list: bool) -> np.ndarray | list[int]:
        """Ids of the pieces of ``data[start:]`` (``start`` 0 or a safe cut), split by the
        compiled pattern: a text of ``LONG_TEXT`` bytes or more on one thread per core, cut
        at safe cuts near equal shares (no piece crosses one, so the ids joined are the ids
        of the whole text)."""
        n_blocks = min(usable_cores(), (len(data) - start) // (LONG_TEXT // 2))
        if len(data) - start < LONG_TEXT or n_blocks < 2:
            return self._bpe.encode_text(data, self._pattern, as_list, start, len(data))
        cuts = [start]
        for k in range(1, n_blocks):
            target = start + (len(data) - start) * k // n_blocks
            cut = self._pattern.safe_cut(data, max(cuts[-1], target - LONG_TEXT // 4), target)
            if cut > cuts[-1]:
                cuts.append(cut)
        cuts.append(len(data))
        parts = thread_map(lambda a, b: self._bpe.encode_text(data, self._pattern, False, a, b), cuts, cuts[1:],
                           num_threads=len(cuts) - 1)
        return self._bpe.join_as_list(parts) if as_list else np.concatenate(parts)

    def _encode_split_by_regex(self, text: str, as_list: bool) -> np.ndarray | list[int]:
        """Token ids of ``text`` split by the ``regex`` module (raw mode: one piece)."""
        if self._split is None:
            return self._bpe.encode_bytes(text.encode("utf-8"), as_list)
        return self._bpe.encode_pieces(self._split.pieces(text), as_list)

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """Token ids of ``text_or_bytes`` (a ``str`` as UTF-8) as one piece: no split,
        no special tokens (tiktoken's private method of that name).

        The whole piece is looked up in the ranks first, as tiktoken does.

        Raises
        ------
        TypeError
            If ``text_or_bytes`` is neither ``str`` nor ``bytes``.
        UnicodeEncodeError
            If a ``str`` holds a lone surrogate (as in tiktoken).
        """
        return self._bpe.encode_bytes(_as_bytes(text_or_bytes, "text_or_bytes"), True)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """:meth:`encode_ordinary` with the pieces found by the ``regex`` module instead of
        the compiled splitter (tiktoken's private method of that name, a cross-check).

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        _check_text(text)
        return self._encode_split_by_regex(text, True)

    # ------------------------------------------------------------------ decoding

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
        try:
            return b"".join(map(self._decoder.__getitem__, as_token_ids(tokens)))
        except KeyError as exc:
            raise self._unknown_token(exc.args[0]) from None

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
        byte) starts at that character's index, as in tiktoken.

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
        token_bytes = self.decode_tokens_bytes(tokens)
        data = b"".join(token_bytes)
        text = data.decode("utf-8")
        # The character a byte belongs to is the number of character starts (bytes that
        # are not 10xxxxxx) up to and including it, minus one.
        starts = np.cumsum((np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80)
        firsts = np.cumsum([0, *map(len, token_bytes[:-1])]) if token_bytes else np.zeros(0, dtype=np.int64)
        return text, (starts[firsts] - 1).tolist()

    def decode_batch(
        self, batch: Iterable[Sequence[int]], *, errors: str = "replace", num_threads: int = DEFAULT_THREADS
    ) -> list[str]:
        """:meth:`decode` of every token list.

        ``num_threads`` is checked as in :meth:`encode_ordinary_batch`, but decoding runs
        on the calling thread: it is dictionary lookups under the GIL, which threads
        would only slow down.

        Raises
        ------
        ValueError
            If ``num_threads`` < 1.
        KeyError, OverflowError, TypeError
            As :meth:`decode_bytes`.
        """
        _check_threads(num_threads)
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
        _check_threads(num_threads)
        return [self.decode_bytes(tokens) for tokens in batch]

    def _unknown_token(self, token) -> Exception:
        """The error for a token id the decoder does not hold, of tiktoken's type."""
        if not isinstance(token, (int, np.integer)):
            return TypeError(f"token ids are integers, got {token!r} ({type(token).__name__})")
        if not 0 <= token < 2**32:
            return OverflowError(f"token id {token} is out of range: ids are 32-bit unsigned integers")
        return KeyError(
            f"token id {token} is not in the vocabulary of encoding {self.name!r} "
            f"(the largest id is {self.max_token_value}; not every id below it need be a token)"
        )

    # ------------------------------------------------------- counting, chunking

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (special token strings count as ordinary text).

        No ids are kept: with a compiled split pattern the kernel only counts.
        """
        _check_text(text)
        if self._pattern is None:
            return len(self._ordinary(text))
        try:
            return self._count_till_limit(text, 2**63 - 1)
        except UnicodeEncodeError:
            return self._count_till_limit(replace_surrogates(text), 2**63 - 1)

    def count_till_limit(self, text: str, limit: int) -> int | None:
        """The number of tokens of ``text`` if it is at most ``limit``, else ``None``.

        Counting stops at the first piece that passes the limit (with the ``regex``
        module, at the first batch of ``COUNT_BATCH`` pieces), so a long text over the
        limit costs about as much as its first ``limit`` tokens (seed 002, the rust-gems
        ``bpe`` crate's ``count_till_limit``). Without a split pattern the text is one
        piece and is counted whole. Special token strings count as ordinary text.

        Raises
        ------
        ValueError
            If ``limit`` is negative.
        """
        _check_text(text)
        limit = _check_count("limit", limit, 0)
        if self._split is None:
            count = self.count(text)
            return count if count <= limit else None
        try:
            return self._count_till_limit(text, limit)
        except UnicodeEncodeError:
            return self._count_till_limit(replace_surrogates(text), limit)

    def _count_till_limit(self, text: str, limit: int) -> int | None:
        if self._pattern is not None:
            try:
                count, _ = self._bpe.count_str(text, self._pattern, limit)
                return None if count < 0 else count
            except BacktrackLimitExceeded:
                pass  # as in _encode_text
        matches = self._split.finditer(text)
        count = 0
        while True:
            pieces = [match.group() for match in islice(matches, COUNT_BATCH)]
            if not pieces:
                return count
            found = self._bpe.count_pieces(pieces, limit - count)
            if found < 0:
                return None
            count += found

    def appendable(self) -> AppendableEncoder:
        """An encoder that counts tokens exactly while text is appended (seed 002).

        Returns
        -------
        bpetrain.AppendableEncoder
            ``push(text)`` appends; ``count`` is then ``self.count(everything pushed)``.
            Without a split pattern each appended byte costs a few table lookups (the
            rust-gems ``bpe`` crate's ``AppendableEncoder``); with a compiled split
            pattern only the pieces after the last safe cut are recounted; with a pattern
            the compiled matcher does not take, the whole text is recounted.
        """
        automaton = self._automaton() if self._split is None else None
        return AppendableEncoder(self._bpe, self._pattern, automaton, self.count)

    def interval_counter(self, text: str) -> IntervalCounter:
        """Counts the tokens of any slice of ``text`` after one pass over it (seed 002).

        Returns
        -------
        bpetrain.IntervalCounter
            ``count(start, end)`` equals ``self.count(text[start:end])``; indices are
            characters, read as a Python slice reads them. After the first pass (about
            the cost of encoding ``text``) a call takes about constant time, whatever
            the slice's length.

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        _check_text(text)
        automaton = self._automaton() if self._split is None or self._pattern is not None else None
        return IntervalCounter(self._bpe, text, self._pattern, automaton, self.count)

    def _automaton(self) -> TokenAutomaton | None:
        """The token automaton (built on first use), or None if the vocabulary does not merge in rank order."""
        if self._token_automaton is None and self._bpe.linear:
            self._token_automaton = TokenAutomaton(self._bpe)
        return self._token_automaton

    def split_at_token_limit(self, text: str, limit: int) -> tuple[str, str]:
        """Cut ``text`` in two: a head of at most ``limit`` tokens, and the rest.

        The cut is at the end of a token of the whole text's encoding that is also a
        UTF-8 character boundary (seed 002: never inside a character), the last such end
        within the first ``limit`` tokens whose head, encoded alone, has at most ``limit``
        tokens. Special token strings count as ordinary text; lone surrogates become
        U+FFFD (as in :meth:`encode`).

        Returns
        -------
        (str, str)
            ``head + rest`` is the text; ``count(head) <= limit``.

        Raises
        ------
        ValueError
            If ``limit`` < 1, or the first character of ``text`` alone needs more than
            ``limit`` tokens (no head of at most ``limit`` tokens exists).
        """
        text, chunks = self._chunks(text, limit, first_only=True)
        head = chunks[0] if chunks else ""
        return head, text[len(head) :]

    def split_into_chunks(self, text: str, max_tokens: int) -> list[str]:
        """Cut ``text`` into consecutive chunks of at most ``max_tokens`` tokens each.

        Each cut is chosen as in :meth:`split_at_token_limit`, and every chunk's count is
        exact: ``count(chunk) <= max_tokens`` for each chunk encoded alone (checked as the
        chunks are made). The whole text is encoded once, each chunk once more.

        Returns
        -------
        list of str
            Non-empty chunks whose concatenation is ``text`` (empty for an empty text).

        Raises
        ------
        ValueError
            If ``max_tokens`` < 1, or a character alone needs more than ``max_tokens``
            tokens.
        """
        return self._chunks(text, max_tokens, first_only=False)[1]

    def _chunks(self, text: str, max_tokens: int, first_only: bool) -> tuple[str, list[str]]:
        """The text (lone surrogates replaced) and its chunks (only the first if ``first_only``)."""
        _check_text(text)
        max_tokens = _check_count("max_tokens", max_tokens, 1)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            text = replace_surrogates(text)
            data = text.encode("utf-8")
        ends = self._token_ends(text, data)
        # A token end is a cut candidate when it falls on a character boundary.
        padded = np.frombuffer(data + b"\0", dtype=np.uint8)
        on_char = (padded[ends] & 0xC0) != 0x80
        chunks: list[str] = []
        start, first = 0, 0  # byte offset of the chunk, index of its first token
        while start < len(data):
            last = min(first + max_tokens, len(ends))
            for k in first + np.flatnonzero(on_char[first:last])[::-1]:
                chunk = data[start : ends[k]].decode("utf-8")
                if self.count_till_limit(chunk, max_tokens) is not None:
                    break
            else:
                raise ValueError(
                    f"the character at byte {start} of the text needs more than {max_tokens} "
                    "tokens on its own, so no chunk of at most that many tokens can hold it; raise the limit"
                )
            chunks.append(chunk)
            if first_only:
                break
            start, first = int(ends[k]), int(k) + 1
        return text, chunks

    def _token_ends(self, text: str, data: bytes) -> np.ndarray:
        """Byte offset in ``data`` (``text`` as UTF-8) of the end of each token of ``text``."""
        lengths = self._bpe.token_lengths
        if self._split is None:
            return np.cumsum(lengths[self._bpe.encode_bytes(data)])
        if self._pattern is not None:
            ends = np.cumsum(lengths[self._encode_text(text, False)])
            if (ends[-1] if len(ends) else 0) == len(data):  # the pieces tile the text
                return ends
        else:
            pieces = self._split.pieces(text)
            if sum(map(len, pieces)) == len(text):  # the pieces tile the text
                return np.cumsum(lengths[self._bpe.encode_pieces(pieces)])
        ends, char_at, byte_at = [], 0, 0  # the pattern skips some text: follow each match
        for match in self._split.finditer(text):
            byte_at += len(text[char_at : match.start()].encode("utf-8"))
            ends.append(byte_at + np.cumsum(lengths[self._bpe.encode_pieces([match.group()])]))
            byte_at += len(match.group().encode("utf-8"))
            char_at = match.end()
        return np.concatenate([*ends, np.array([len(data)])])


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
    _check_text(text)
    allowed, disallowed = _special_sets(special_tokens, allowed_special, disallowed_special)
    _check_disallowed(text, disallowed)
    return allowed


def _by_default(allowed_special, disallowed_special) -> bool:
    """Whether these are :meth:`Encoding.encode`'s defaults in effect: no special token
    allowed, every one disallowed."""
    return (isinstance(disallowed_special, str) and disallowed_special == "all"
            and isinstance(allowed_special, (frozenset, set, tuple, list)) and not allowed_special)


def _special_sets(
    special_tokens: Collection[str],
    allowed_special: Literal["all"] | Collection[str],
    disallowed_special: Literal["all"] | Collection[str],
) -> tuple[set[str], set[str]]:
    """The special tokens to encode as such, and the strings no text may hold (tiktoken's rules)."""
    allowed = set(special_tokens) if allowed_special == "all" else set(special_tokens).intersection(allowed_special)
    disallowed = set(special_tokens) - allowed if disallowed_special == "all" else set(disallowed_special)
    return allowed, disallowed


def _check_disallowed(text: str, disallowed: Collection[str]) -> None:
    """Raise tiktoken's error if ``text`` holds a string of ``disallowed``."""
    if not disallowed:
        return
    found = _special_regex(frozenset(disallowed)).search(text)
    if found:
        raise DisallowedSpecialTokenError(found.group())


@lru_cache(maxsize=64)
def _needles(strings: frozenset[str], ids: tuple[int, ...] | None = None) -> Needles | None:
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


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates replaced by U+FFFD first (as :meth:`Encoding.encode` does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return replace_surrogates(text).encode("utf-8")


def _gathered(chunks: Iterable[str], size: int) -> Iterator[str]:
    """``chunks`` joined into parts of at least ``size`` characters (the last may be shorter)."""
    waiting: list[str] = []
    n = 0
    for chunk in chunks:
        waiting.append(chunk)
        n += len(chunk)
        if n >= size:
            yield "".join(waiting)
            waiting, n = [], 0
    if waiting:
        yield "".join(waiting)


@lru_cache(maxsize=64)
def _special_regex(tokens: frozenset[str]) -> regex.Pattern:
    """A regex that finds any of ``tokens`` (longest first) and, in ``split``, keeps it."""
    return regex.compile("(" + "|".join(regex.escape(t) for t in sorted(tokens, key=len, reverse=True)) + ")")


def _batch_chunks(texts: list[str], lengths: np.ndarray, num_threads: int) -> list[list[str]]:
    """``texts`` (of ``lengths`` characters) cut into consecutive chunks of about as many
    characters each: at most about ``BATCH_CHUNK``, and at least four per thread where that
    leaves chunks of ``SMALLEST_CHUNK`` characters or more (one chunk more or less on a
    thread then costs little), or one chunk on one thread."""
    if num_threads == 1 or len(texts) < 2:
        return [texts]
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    n_chunks = max(-(-total // BATCH_CHUNK), min(4 * num_threads, -(-total // SMALLEST_CHUNK)))
    n_chunks = min(len(texts), n_chunks)
    cuts = np.searchsorted(ends, [total * k // n_chunks for k in range(1, n_chunks)], side="right")
    bounds = [0, *sorted({int(c) for c in cuts} - {0, len(texts)}), len(texts)]
    return [texts[a:b] for a, b in zip(bounds, bounds[1:])]


def _batch_output(arrays: list[np.ndarray], output: int):
    """Per-text id arrays in the batch kernel's ``output`` form."""
    if output == BATCH_LISTS:
        return [ids.tolist() for ids in arrays]
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    if output == BATCH_COUNTS:
        return lengths
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
    return ids.astype(np.uint32, copy=False), offsets


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
    if isinstance(tokens, np.ndarray):
        if tokens.dtype.kind not in "iu":
            raise TypeError(f"token ids must be integers, got an array of {tokens.dtype}")
        return tokens.tolist()
    try:
        return array.array("q", tokens)
    except TypeError as exc:
        raise TypeError(f"token ids must be integers ({exc})") from None


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


def _as_bytes(text_or_bytes, name: str) -> bytes:
    """``text_or_bytes`` as bytes (a ``str`` as strict UTF-8, as tiktoken encodes it)."""
    if isinstance(text_or_bytes, str):
        return text_or_bytes.encode("utf-8")
    if not isinstance(text_or_bytes, bytes):
        raise TypeError(f"{name} must be str or bytes, got {type(text_or_bytes).__name__}")
    return text_or_bytes


def _check_special(token, token_id) -> str:
    """``token`` after checking it is a non-empty string with an id tiktoken accepts."""
    if not isinstance(token, str):
        raise TypeError(f"special tokens are strings, got {token!r} ({type(token).__name__})")
    if not token:
        raise ValueError("a special token is the empty string; special tokens must be non-empty")
    if not isinstance(token_id, (int, np.integer)) or isinstance(token_id, bool):
        raise TypeError(f"special token {token!r} has id {token_id!r}; ids are integers")
    if not 0 <= token_id < 2**32:
        raise OverflowError(f"special token {token!r} has id {token_id}; ids are in [0, 2**32)")
    return token


def _check_threads(num_threads) -> None:
    if not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be an int >= 1, got {num_threads!r}")


def _check_count(name: str, value: int, minimum: int) -> int:
    """``value`` as an int64 (a token count beyond 2**63 - 1 means no limit: it is clamped)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return min(int(value), 2**63 - 1)
