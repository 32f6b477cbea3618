"""Counting tokens, and cutting a text at a token limit: what :class:`bpetrain.Encoding`
adds to tiktoken's interface.

:class:`TokenCounting` counts without keeping ids (the kernel's ``count_str``, which can
stop at a limit), counts while text is appended or for any slice of a text (the
incremental encoders of :mod:`bpetrain.encoding._incremental`, after the rust-gems ``bpe``
crate), and cuts a text into chunks of at most so many tokens: each chunk is the longest
prefix of the rest that ends on a character boundary and has at most the limit's tokens
encoded alone (the crate's split at a token limit).
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING

from bpetrain.encoding._args import check_count, check_text
from bpetrain.encoding._incremental import AppendableEncoder, IntervalCounter, TokenAutomaton
from bpetrain.splitting._matcher import BacktrackLimitExceeded
from bpetrain.splitting.pattern import replace_surrogates

if TYPE_CHECKING:
    import numpy as np

__all__ = ["COUNT_BATCH", "TokenCounting"]

#: Pieces counted per kernel call by :meth:`TokenCounting.count_till_limit` between checks of the limit.
COUNT_BATCH = 4096


class TokenCounting:
    """Counting and token-limit chunking, for :class:`bpetrain.Encoding`.

    Reads the encoding's compiled encoder ``_bpe``, its split pattern (``_split``, and
    ``_pattern``: the compiled program or None), its :meth:`~bpetrain.Encoding._encode`
    and ``_specials``, and keeps the token automaton in ``_token_automaton``.
    """

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (special token strings count as ordinary text).

        No ids are kept: with a compiled split pattern the kernel only counts.
        """
        check_text(text)
        if self._pattern is None:
            return len(self._encode(text, False, self._specials.none))
        return self._count(text, 2**63 - 1)

    def count_till_limit(self, text: str, limit: int) -> int | None:
        """The number of tokens of ``text`` if it is at most ``limit``, else ``None``.

        Counting stops at the first piece that passes the limit (with the ``regex``
        module, at the first batch of ``COUNT_BATCH`` pieces), so a long text over the
        limit costs about as much as its first ``limit`` tokens (the rust-gems
        ``bpe`` crate's ``count_till_limit``). Without a split pattern the text is one
        piece and is counted whole. Special token strings count as ordinary text.

        Raises
        ------
        ValueError
            If ``limit`` is negative.
        """
        check_text(text)
        limit = check_count("limit", limit, 0)
        if self._split is None:
            count = self.count(text)
            return count if count <= limit else None
        return self._count(text, limit)

    def _count(self, text: str, limit: int) -> int | None:
        """The number of tokens of ``text`` if at most ``limit``, else None: one kernel call
        (``count_str``), and the fallback ladder: the ``regex`` module splits a pattern the
        compiled matcher gives up on (counting :data:`COUNT_BATCH` pieces a call); lone
        surrogates are replaced by U+FFFD."""
        try:
            if self._pattern is not None:
                try:
                    count, _ = self._bpe.count_str(text, self._pattern, limit)
                    return None if count < 0 else count
                except BacktrackLimitExceeded:
                    pass  # as in _encode
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
        except UnicodeEncodeError:
            return self._count(replace_surrogates(text), limit)

    def appendable(self) -> AppendableEncoder:
        """An encoder that counts tokens exactly while text is appended.

        Returns
        -------
        bpetrain.AppendableEncoder
            ``push(text)`` appends; ``count`` is then ``self.count(everything pushed)``.
            Without a split pattern each appended byte costs a few table lookups (the
            rust-gems ``bpe`` crate's ``AppendableEncoder``); with a compiled split
            pattern only the pieces after the last safe cut are recounted; with a pattern
            the compiled matcher does not take, the whole text is recounted. A surrogate
            pair whose halves are pushed apart is one character, as in the text joined.
        """
        automaton = self._automaton() if self._split is None else None
        return AppendableEncoder(self._bpe, self._pattern, automaton, self.count)

    def interval_counter(self, text: str) -> IntervalCounter:
        """Counts the tokens of any slice of ``text`` after one pass over it.

        Returns
        -------
        bpetrain.IntervalCounter
            ``count(start, end)`` equals ``self.count(text[start:end])``; indices are
            those of ``text`` (code units of the ``str``), read as a Python slice reads
            them. After the first pass (about the cost of encoding ``text``) a call takes
            about constant time, whatever the slice's length; a slice that cuts a
            surrogate pair given as two code units is counted from scratch. Memory, as
            the class says: with a split pattern about 6 bytes per character of prose
            (53 MiB for 10 MB, 9.2 M characters, of mixed English and other scripts),
            without one 29 bytes per byte.

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        check_text(text)
        automaton = self._automaton() if self._split is None or self._pattern is not None else None
        return IntervalCounter(self._bpe, text, self._pattern, automaton, self.count)

    def _automaton(self) -> TokenAutomaton | None:
        """The token automaton (built on first use), or None if the vocabulary does not merge in rank order."""
        if self._token_automaton is None and self._bpe.linear:
            self._token_automaton = TokenAutomaton(self._bpe)
        return self._token_automaton

    def split_at_token_limit(self, text: str, limit: int) -> tuple[str, str]:
        """Cut ``text`` in two: the longest head of at most ``limit`` tokens that ends on a
        character boundary, and the rest.

        The head is found as :meth:`split_into_chunks` finds its first chunk. Special token
        strings count as ordinary text; lone surrogates become U+FFFD (as in :meth:`encode`).

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

        Each chunk is the longest prefix of the rest of the text that ends on a character
        boundary and has at most ``max_tokens`` tokens encoded alone (the rust-gems ``bpe``
        crate's split at a token limit: the count of every prefix is known after one pass,
        :meth:`interval_counter`; the search and where it stops are described in
        ``IntervalCounter._head_end``). A cut may fall inside a token of the whole text's
        encoding: ``" 命"`` in ``cl100k_base`` is three tokens, ``b" \\xe5"``, ``b"\\x91"``,
        ``b"\\xbd"``, and with ``max_tokens=1`` its chunks are ``" "`` and ``"命"``. With a
        split pattern the compiled matcher does not take, or a vocabulary that does not merge
        in rank order, the prefixes tried are those that end within the first
        ``max_tokens + 1`` tokens of the rest's encoding, the longest first.

        Returns
        -------
        list of str
            Non-empty chunks whose concatenation is ``text`` (lone surrogates replaced by
            U+FFFD; empty for an empty text); ``count(chunk) <= max_tokens`` for each.

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        ValueError
            If ``max_tokens`` < 1, or a character alone needs more than ``max_tokens``
            tokens.
        """
        return self._chunks(text, max_tokens, first_only=False)[1]

    def _chunks(self, text: str, max_tokens: int, first_only: bool) -> tuple[str, list[str]]:
        """The text (lone surrogates replaced) and its chunks of at most ``max_tokens`` tokens
        (only the first chunk if ``first_only``), each the longest found (:meth:`split_into_chunks`).

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
        head_end = self._head_finder(text, data, max_tokens)
        found: list[str] = []
        start = 0  # byte offset of the chunk
        while start < len(data):
            end = head_end(start)
            if end <= start:
                raise ValueError(
                    f"the character at byte {start} of the text needs more than {max_tokens} "
                    "tokens on its own, so no chunk of at most that many tokens can hold it; raise the limit"
                )
            found.append(data[start:end].decode("utf-8"))
            if first_only:
                break
            start = end
        return text, found

    def _head_finder(self, text: str, data: bytes, max_tokens: int) -> Callable[[int], int]:
        """A function from a byte offset ``start`` of ``data`` (``text`` as UTF-8) on a
        character boundary to the end of the longest head from there (:meth:`split_into_chunks`),
        ``start`` if the character there alone has more than ``max_tokens`` tokens."""
        import numpy as np

        max_tokens = min(max_tokens, len(data) + 1)  # no text has more tokens than bytes
        counter = None
        if self._pattern is not None or (self._split is None and self._bpe.linear):  # it has prefix tables
            try:
                counter = self.interval_counter(text)
            except BacktrackLimitExceeded:
                pass  # the compiled matcher gave up on this text: try the heads as below
        ends = boundary = None

        def head_end(start: int) -> int:
            nonlocal ends, boundary
            if counter is not None:
                try:
                    return counter._head_end(start, max_tokens)
                except BacktrackLimitExceeded:
                    pass
            if ends is None:
                ends = self._token_ends(text, data)
                boundary = (np.frombuffer(data + b"\0", dtype=np.uint8) & 0xC0) != 0x80
            k = int(np.searchsorted(ends, start, side="right")) + max_tokens  # the (max_tokens + 1)-th token on
            stop = max(int(ends[min(k, len(ends) - 1)]), start + 1)
            for end in start + 1 + np.flatnonzero(boundary[start + 1 : stop + 1])[::-1]:
                if self.count_till_limit(data[start:end].decode("utf-8"), max_tokens) is not None:
                    return int(end)
            return start

        return head_end

    def _token_ends(self, text: str, data: bytes) -> np.ndarray:
        """Byte offset in ``data`` (``text`` as UTF-8) of the end of each token of ``text``."""
        import numpy as np

        lengths = self._bpe.token_lengths
        if self._split is None:
            return np.cumsum(lengths[self._bpe.encode_bytes(data)])
        if self._pattern is not None:
            ends = np.cumsum(lengths[self._encode(text, False, self._specials.none)])
            if (ends[-1] if len(ends) else 0) == len(data):  # the pieces tile the text
                return ends
        else:
            pieces = self._split.pieces(text)
            if "".join(pieces) == text:  # the pieces tile the text (a normalizer may change it at equal length)
                return np.cumsum(lengths[self._bpe.encode_pieces(pieces)])
        ends, char_at, byte_at = [], 0, 0  # the pattern skips some text: follow each match
        for match in self._split.finditer(text):
            byte_at += len(text[char_at : match.start()].encode("utf-8"))
            ends.append(byte_at + np.cumsum(lengths[self._bpe.encode_pieces([match.group()])]))
            byte_at += len(match.group().encode("utf-8"))
            char_at = match.end()
        return np.concatenate([*ends, np.array([len(data)])])
