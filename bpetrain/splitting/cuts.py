"""Cut points: where a long text may be cut into blocks that split as the whole text does.

Counting (:mod:`bpetrain.counting`) and encoding (:meth:`bpetrain.Encoding.encode_stream`)
read a long text in blocks and end each block at a cut, so that the blocks can be split
(and counted, or encoded) one by one and give the pieces of the whole text: the last
safe cut of the split pattern in the block (a point the pattern cuts at whatever
surrounds it: ``bpetrain.splitting._matcher.last_safe_cut``), or a line end when each line
is a document, moved to the end of a special token that would straddle it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import regex

from bpetrain.splitting.pattern import split_pattern

__all__ = ["DOCUMENTS", "Cuts", "check_documents"]

#: What a document is in a plain-text input (``documents=``, ``--documents``): the whole
#: file, or each line (up to and including ``\n``).
DOCUMENTS = ("file", "line")


def check_documents(documents) -> None:
    """Raise ``ValueError`` unless ``documents`` is one of :data:`DOCUMENTS`."""
    if documents not in DOCUMENTS:
        raise ValueError(f"documents must be {' or '.join(map(repr, DOCUMENTS))}, got {documents!r}")


class Cuts:
    """The cut points of a split pattern with special tokens.

    Parameters
    ----------
    pat_str : str or None
        The split pattern (a regex, not a name), or ``None`` for raw mode (no cut
        points, except line ends when each line is a document).
    special_tokens : iterable of str
        Strings that split the text; a cut never falls inside one.
    documents : {"file", "line"}, default "file"
        ``"line"``: every line (up to and including ``\\n``) is a document of its own, and
        the cut points are the line ends.
    unicode_version : default "regex"
        Whose character classes the pattern reads (:mod:`bpetrain.splitting.unicode`): an
        encoding's, so that no piece of its pattern crosses a cut.

    Attributes
    ----------
    special_tokens : list of str
        The special tokens that can occur, longest first (when each line is a document, a line holds
        no newline, so a token with one never occurs).
    special : regex.Pattern or None
        Finds them in UTF-8 bytes (the longest first); None if there are none.
    lookahead : int
        Bytes after a cut that :meth:`cut` needs to see: the longest special token's
        length - 1.
    """

    def __init__(self, pat_str: str | None, special_tokens: Iterable[str] = (), *, documents: str = "file",
                 unicode_version="regex"):
        check_documents(documents)
        self.documents = documents
        lines = documents == "line"
        self._program = None if pat_str is None else split_pattern(pat_str, unicode_version).program
        self.special_tokens = sorted((t for t in special_tokens if not (lines and "\n" in t)), key=len, reverse=True)
        self.special = None
        if self.special_tokens:
            self.special = regex.compile(b"|".join(regex.escape(t.encode("utf-8")) for t in self.special_tokens))
        self.lookahead = max((len(t.encode("utf-8")) - 1 for t in self.special_tokens), default=0)

    def cut(self, data: bytes, searched: int = 0) -> int:
        """Where to end a block of ``data`` (which starts where the text or the previous
        block starts) so that splitting the blocks one by one gives the pieces of the whole
        text: the last safe cut of the pattern (a line end when each line is a document; see
        ``bpetrain.splitting._matcher.last_safe_cut``), or the end of a special token that would
        straddle it; -1 if there is none (raw mode, or a pattern the regex module
        splits). ``searched``: ``data[:searched]`` is known to hold no cut."""
        # a special token that starts before the cut must end inside the data, or the
        # straddle check below cannot see it
        hi = len(data) - self.lookahead
        if hi <= searched:
            return -1
        if self.documents == "line":
            cut = data.rfind(b"\n", searched, hi) + 1
        elif self._program is not None:
            cut = self._program.safe_cut(data, searched, hi)
        else:
            return -1
        if cut > 0 and self.special is not None:
            for m in self.special.finditer(data):  # from the start: the matches of the whole text
                if m.start() >= cut:
                    break
                if m.end() > cut:
                    return m.end()
        return cut if cut > 0 else -1

    def starts_string(self, data: bytes, cut: int) -> bool:
        """Whether the text after ``cut`` (from :meth:`cut`) is a string of its own for the
        split pattern (``^`` matches at its start): a special token ends at the cut."""
        if self.special is None:
            return False
        for m in self.special.finditer(data, 0, cut):  # the matches of the whole text, in order
            if m.end() == cut:
                return True
        return False

    def cut_blocks(
        self, blocks: Iterable[bytes], *, continued: bool = False, tail: bytes = b""
    ) -> Iterator[tuple[bytearray, int, bool, bool]]:
        """Blocks of a text re-cut at the cut points: the arguments of
        :meth:`bpetrain.counting.counts.PieceCounter.count_text`.

        Parameters
        ----------
        blocks : iterable of bytes
            The text, in blocks of any size.
        continued : bool, default False
            The text started before the first block (it is not a string start for ``^``).
        tail : bytes, default b""
            What follows the text (empty: the text ends with the last block). The text
            must end at a cut point then; the splitter may look at ``tail``.

        Yields
        ------
        data : bytearray
            A block ending at a cut, then what follows it.
        stop : int
            The block is ``data[:stop]``.
        final : bool
            The text ends at ``stop``.
        continued : bool
            The block does not start a string (for ``^``).
        """
        carry = bytearray()
        for block in blocks:
            searched = max(0, len(carry) - 8 - self.lookahead)  # no cut before: searched already
            carry += block
            cut = self.cut(carry, searched)
            if cut > 0:
                data, carry = carry, carry[cut:]
                yield data, cut, False, continued
                continued = not self.starts_string(data, cut)
        yield carry + tail, len(carry), not tail, continued
