# cython: language_level=3
"""Counting tokens while text is appended, and counting any slice of a text after one pass.

The rust-gems ``bpe`` crate (``appendable_encoder.rs``, ``interval_encoding.rs``)
encodes every prefix of a text at once. The encoding of ``text[:p]`` is fixed by its
last token (corollary IIa): the rest is the encoding of the shorter prefix before it. The
last token is the one token ending at ``p`` that is valid after the last token of the
prefix before it (corollary IIIa; ``bpetrain.encoding._tables.valid_pair``), and an
Aho-Corasick automaton over the token trie lists the tokens ending at ``p``, longest
first. So each byte appended costs a few lookups (:class:`TokenAutomaton`,
:func:`extend`), and the count of every prefix is kept.

A slice ``text[s:e]`` is then counted by the linear encoder from ``s`` until its last
token is also a token of the encoding of ``text[:e]`` at the same place: from there the
two encodings agree (corollary III and uniqueness), and the rest of the count is the
difference of two prefix counts. Whether position ``b`` lies on the encoding of
``text[:e]`` is an ancestor test in the tree of prefixes (the parent of ``p`` is ``p``
minus its last token's length), answered from preorder numbers in constant time
(:class:`RawIntervals`).

With a split pattern, only the pieces the new text can change are recounted: the pieces
before the last safe cut (``bpetrain.splitting._matcher.last_safe_cut``) are final. A slice is
split on its own near its edges and takes the whole text's piece counts in between.

All three follow tiktoken's rule exactly, whole-piece lookup included (a piece that is
exactly a token is that token, even one no merge makes). They need merges in rank order
(``BytePairEncoder.linear``); :class:`bpetrain.Encoding` recounts where that fails.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np

from bpetrain._types cimport token_t
from bpetrain.encoding._buffers cimport IdBuffer, Scratch, free_buffers, grow_ids, grow_scratch
from bpetrain.encoding._encoder cimport BytePairEncoder
from bpetrain.encoding._linear cimport Sync, encode_linear
from bpetrain.encoding._piece cimport encode_piece
from bpetrain.encoding._tables cimport NO_RANK, RankTables, child, token_rank, valid_pair
from bpetrain.splitting._matcher cimport Program, Stack, char_length, free_stack, last_safe_cut, piece_end

from bpetrain.splitting._matcher import BacktrackLimitExceeded
from bpetrain.splitting.pattern import replace_surrogates

#: Pieces of at least this many bytes get their own prefix tables in an IntervalCounter.
LONG_PIECE = 256


cdef inline int32_t child_at(const RankTables* t, int32_t node, int32_t depth, uint8_t byte,
                             int32_t root) noexcept nogil:
    """The trie node one ``byte`` below ``node`` (at ``depth``), or -1."""
    if node == root:
        return t.byte_rank[byte]
    if depth == 1:  # node is the rank of a one-byte token
        return t.node2[(<int>t.token_bytes[t.token_start[node]] << 8) | byte]
    return child(t, node, byte)


# One trie node of a TokenAutomaton, in one 16-byte record: a step and the candidates
# for the last token touch one cache line per node.
cdef struct Node:
    int32_t fail   # node of the longest proper suffix in the trie (the root for one byte)
    int32_t last   # the longest suffix, this node included, that is a token BPE makes
    int32_t out    # the longest proper suffix that is a token BPE makes (-1: none)
    int32_t depth  # (bytes from the root << 8) | the last byte


@cython.final
cdef class TokenAutomaton:
    """Aho-Corasick links over the token trie of a :class:`~bpetrain.encoding._encoder.BytePairEncoder`.

    For each trie node: ``fail``, the node of its longest proper suffix in the trie, and
    ``out``, its longest proper suffix that is a token BPE can make by merging (one with
    a split; -1: none). Built by one pass over the nodes in order of depth (Aho and
    Corasick, 1975).

    Raises
    ------
    ValueError
        If the encoder's vocabulary does not merge in rank order (``bpe.linear`` is false).
    """
    cdef readonly BytePairEncoder bpe
    cdef object _arrays
    cdef const Node* nodes
    cdef int32_t root

    def __cinit__(self, BytePairEncoder bpe not None):
        if not bpe.linear:
            raise ValueError("the vocabulary does not merge in rank order, so prefixes cannot be encoded "
                             "incrementally; count whole texts instead")
        self.bpe = bpe
        cdef const RankTables* t = &bpe.tables
        cdef int64_t n = t.n_nodes + 1, rank, length, k, i
        cdef int32_t root = <int32_t>t.n_nodes
        self.root = root
        parent = np.full(n, -1, dtype=np.int32)
        by_depth = np.empty(n, dtype=np.int32)
        starts = np.zeros(t.max_token_len + 2, dtype=np.int64)
        table = np.zeros((n, 4), dtype=np.int32)  # one Node per row
        self._arrays = [table]
        cdef Node* nd = <Node*><Py_ssize_t>table.ctypes.data
        cdef int32_t[::1] par = parent, order = by_depth
        cdef int64_t[::1] first = starts
        cdef int32_t node, nxt, f
        cdef const uint8_t* data
        with nogil:
            for i in range(n):
                nd[i].fail = root
                nd[i].out = -1
            for rank in range(t.n_ranks):  # every node once, with its parent and byte
                length = t.token_len[rank]
                if length == 0:
                    continue
                data = t.token_bytes + t.token_start[rank]
                node = t.byte_rank[data[0]]
                if nd[node].depth == 0:
                    nd[node].depth = (1 << 8) | data[0]
                    par[node] = root
                for k in range(2, length + 1):
                    nxt = child_at(t, node, <int32_t>(k - 1), data[k - 1], root)
                    if nd[nxt].depth == 0:
                        nd[nxt].depth = <int32_t>((k << 8) | data[k - 1])
                        par[nxt] = node
                    node = nxt
            for i in range(n - 1):  # counting sort by depth (ranks without bytes have none: no node)
                if nd[i].depth > 0:
                    first[(nd[i].depth >> 8) + 1] += 1
            for k in range(1, t.max_token_len + 2):
                first[k] += first[k - 1]
            for i in range(n - 1):
                if nd[i].depth > 0:
                    k = nd[i].depth >> 8
                    order[first[k]] = <int32_t>i
                    first[k] += 1
            for i in range(first[0], first[t.max_token_len]):  # parents before children
                node = order[i]
                if nd[node].depth >> 8 > 1:  # depth 1 keeps fail = root and out = -1
                    f = nd[par[node]].fail
                    while True:
                        nxt = child_at(t, f, nd[f].depth >> 8 if f != root else 0, nd[node].depth & 0xFF, root)
                        if nxt >= 0:
                            break
                        f = nd[f].fail
                    nd[node].fail = nxt
                    nd[node].out = nxt if self.made(nxt) else nd[nxt].out
                nd[node].last = node if self.made(node) else nd[node].out
        self.nodes = nd

    cdef inline bint made(self, int32_t node) noexcept nogil:
        """Whether ``node`` is a token that merging can make (a byte, or one with a split)."""
        return node < self.bpe.tables.n_ranks and self.bpe.tables.split_left[node] >= 0

    cdef inline int32_t depth(self, int32_t node) noexcept nogil:
        """Bytes from the root to ``node`` (for a token: its length)."""
        return self.nodes[node].depth >> 8

    cdef inline int32_t step(self, int32_t state, uint8_t byte) noexcept nogil:
        """The automaton's state after ``byte``: the longest suffix of the text in the trie."""
        cdef int32_t nxt, depth
        while True:
            if state == self.root:
                return self.bpe.tables.byte_rank[byte]
            depth = self.nodes[state].depth
            if depth >> 8 == 1:
                nxt = self.bpe.tables.node2[((depth & 0xFF) << 8) | byte]
            else:
                nxt = child(&self.bpe.tables, state, byte)
            if nxt >= 0:
                return nxt
            state = self.nodes[state].fail


# The encodings of every prefix of a text: last[p] is the last token of the encoding of
# text[:p] and counts[p] its length (merges only: no whole-piece lookup), for p <= n.
cdef struct Prefixes:
    token_t* last
    int64_t* counts
    int64_t n
    int64_t cap
    int32_t state
    uint64_t* memo  # MEMO_SIZE recent valid_pair answers: (left << 32) | (right << 1) | valid


cdef enum:
    MEMO_BITS = 14
    MEMO_SIZE = 1 << MEMO_BITS


cdef void free_prefixes(Prefixes* pre) noexcept nogil:
    free(pre.last)
    free(pre.counts)
    free(pre.memo)


cdef inline bint memo_valid_pair(const RankTables* t, uint64_t* memo, token_t left, token_t right) noexcept nogil:
    """``valid_pair(t, left, right, NO_RANK)``, remembered: real text checks the same pairs often."""
    cdef uint64_t key = (<uint64_t><uint32_t>left << 32) | (<uint64_t><uint32_t>right << 1)
    cdef uint64_t i = (key * 0x9E3779B97F4A7C15ULL) >> (64 - MEMO_BITS)
    cdef bint valid
    if memo[i] | 1 == key | 1:
        return memo[i] & 1
    valid = valid_pair(t, left, right, NO_RANK)
    memo[i] = key | valid
    return valid


cdef int extend(TokenAutomaton ac, Prefixes* pre, const uint8_t* data, int64_t k) except -1 nogil:
    """Append ``data[:k]`` to the text of ``pre``: one last token and count per byte."""
    cdef int64_t i, end, start, cap = pre.cap if pre.cap > 0 else 256
    cdef token_t m
    cdef void* grown
    if pre.n + k + 1 > pre.cap:
        while cap < pre.n + k + 1:
            cap *= 2
        grown = realloc(pre.last, cap * sizeof(token_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        pre.last = <token_t*>grown
        grown = realloc(pre.counts, cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        pre.counts = <int64_t*>grown
        if pre.cap == 0:
            pre.memo = <uint64_t*>malloc(MEMO_SIZE * sizeof(uint64_t))
            if pre.memo == NULL:
                with gil:
                    raise MemoryError()
            memset(pre.memo, 0xFF, MEMO_SIZE * sizeof(uint64_t))
            pre.counts[0] = 0
            pre.last[0] = -1
            pre.state = ac.root
        pre.cap = cap
    cdef const Node* nodes = ac.nodes
    cdef token_t* last = pre.last
    cdef int64_t* counts = pre.counts
    cdef int32_t state = pre.state
    end = pre.n
    for i in range(k):
        state = ac.step(state, data[i])
        end += 1
        m = nodes[state].last
        # The tokens ending here that BPE makes, longest first: exactly one is valid
        # (corollary IIIa), so the last one, a byte, needs no check (BytePairEncoder.linear
        # vouches for the vocabulary).
        while nodes[m].out >= 0:
            start = end - (nodes[m].depth >> 8)
            if start == 0 or memo_valid_pair(&ac.bpe.tables, pre.memo, last[start], m):
                break
            m = nodes[m].out
        last[end] = m
        counts[end] = counts[end - (nodes[m].depth >> 8)] + 1
    pre.n = end
    pre.state = state
    return 0


cdef inline int64_t prefix_count(TokenAutomaton ac, const Prefixes* pre) noexcept nogil:
    """Tokens of the whole text of ``pre`` by tiktoken's rule (a text that is one token is one)."""
    if pre.n == 0:
        return 0
    if pre.state < ac.bpe.tables.n_ranks and ac.depth(pre.state) == pre.n:
        return 1
    return pre.counts[pre.n]


@cython.final
cdef class RawIntervals:
    """The token count of any slice of one unsplit text (bytes), after one linear pass.

    ``count_range(s, e)`` equals the count of ``data[s:e]`` encoded as one piece; it runs the
    linear encoder from ``s`` only until it meets the encoding of ``data[:e]`` (module
    docstring), typically a few tokens. Not for use by two threads at once.
    """
    cdef TokenAutomaton ac
    cdef bytes data
    cdef const uint8_t* text  # data's bytes
    cdef object _arrays
    cdef Prefixes pre
    cdef Sync sync
    cdef IdBuffer out
    cdef Scratch scratch

    def __cinit__(self, TokenAutomaton ac not None, bytes data not None):
        self.ac = ac
        self.data = data
        self.text = data
        cdef int64_t n = len(data), p
        cdef const uint8_t* text = data
        with nogil:
            extend(ac, &self.pre, text, n)
        order = np.zeros(n + 1, dtype=np.int64)
        size = np.ones(n + 1, dtype=np.int64)
        self._arrays = [order, size]
        cdef int64_t[::1] pre_order = order, sub = size
        cdef int64_t* after
        cdef int64_t parent
        if n:
            after = <int64_t*>malloc((n + 1) * sizeof(int64_t))
            if after == NULL:
                raise MemoryError()
            with nogil:
                for p in range(n, 0, -1):  # subtree sizes: every parent is before its children
                    sub[p - ac.bpe.tables.token_len[self.pre.last[p]]] += sub[p]
                after[0] = 1
                for p in range(1, n + 1):  # preorder: each child takes the next free block
                    parent = p - ac.bpe.tables.token_len[self.pre.last[p]]
                    pre_order[p] = after[parent]
                    after[parent] += sub[p]
                    after[p] = pre_order[p] + 1
            free(after)
        self.sync.last = self.pre.last
        self.sync.counts = self.pre.counts
        self.sync.order = &pre_order[0]
        self.sync.size = &sub[0]

    def __dealloc__(self):
        free_prefixes(&self.pre)
        free_buffers(&self.out, &self.scratch)

    cdef int64_t count_range(self, int64_t s, int64_t e) except -2 nogil:
        """Tokens of ``data[s:e]`` as one piece (0 <= s <= e <= len(data))."""
        cdef const uint8_t* text = self.text
        cdef int64_t found
        if e <= s:
            return 0
        if e - s <= self.ac.bpe.tables.max_token_len and token_rank(&self.ac.bpe.tables, text + s, e - s) != NO_RANK:
            return 1
        if s == 0:
            return self.pre.counts[e]
        if e - s + 1 > self.scratch.cap:
            grow_scratch(&self.scratch, e - s + 1)
        if e - s + 1 > self.out.cap:
            grow_ids(&self.out, e - s + 1)
        self.out.size = 0
        self.sync.start = s
        self.sync.target = e
        found = encode_linear(&self.ac.bpe.tables, text + s, e - s, &self.out, &self.scratch, &self.sync)
        return found if found >= 0 else self.out.size


cdef bytes utf8(str text):
    """``text`` as UTF-8, lone surrogates replaced by U+FFFD (as :class:`bpetrain.Encoding` does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return replace_surrogates(text).encode("utf-8")


cdef int64_t count_pieces(BytePairEncoder bpe, Program program, Stack* stack, IdBuffer* out, Scratch* scratch,
                          const uint8_t* text, int64_t start, int64_t stop, int64_t end,
                          int64_t bos) except -2 nogil:
    """Tokens of the pieces of ``text[:end]`` (a string from ``bos``) that start in
    ``[start, stop)``, splitting from ``start``; text the pattern does not match is skipped."""
    cdef int64_t pos = start, piece, total = 0
    while pos < stop:
        piece = piece_end(&program.tables, stack, text, pos, end, bos)
        if piece < 0:
            pos += char_length(text, pos, end)
            continue
        out.size = 0
        encode_piece(&bpe.tables, text + pos, piece - pos, out, scratch)
        total += out.size
        pos = piece
    return total


@cython.final
cdef class AppendableEncoder:
    """Counts the tokens of a text exactly while it is appended to (rust-gems ``bpe``).

    Made by :meth:`bpetrain.Encoding.appendable`. After every :meth:`push`, :attr:`count`
    equals ``enc.count(everything pushed so far)``. BPE counts are not monotonic
    (appending can merge tokens), so adding the counts of the parts would be wrong.

    Without a split pattern each byte costs a few lookups (module docstring). With a
    compiled split pattern, the pieces before the last safe cut are counted once and
    kept; the pieces after it are recounted on every push (for real text a few bytes; a
    run with no safe cut, such as 10^5 letters pushed one at a time, is recounted whole
    each time). Otherwise (a pattern the compiled matcher does not take, or a vocabulary
    that does not merge in rank order) the whole text is recounted on every push.
    Lone surrogates become U+FFFD within each push.
    """
    cdef BytePairEncoder bpe
    cdef TokenAutomaton ac
    cdef Program program
    cdef object recount
    cdef list parts
    cdef Prefixes pre
    cdef uint8_t* buf
    cdef int64_t size, cap, cut, final_count, tail_count, recounted
    cdef Stack stack
    cdef IdBuffer out
    cdef Scratch scratch

    def __cinit__(self, BytePairEncoder bpe not None, Program program=None, TokenAutomaton automaton=None,
                  recount=None):
        self.bpe = bpe
        self.program = program
        self.ac = automaton
        self.recount = recount
        self.parts = []
        if recount is None or not callable(recount):
            raise TypeError("recount must be a function from str to its token count (Encoding.count)")

    def __dealloc__(self):
        free_prefixes(&self.pre)
        free(self.buf)
        free_stack(&self.stack)
        free_buffers(&self.out, &self.scratch)

    def push(self, str text not None):
        """Append ``text``; returns the new :attr:`count`.

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        cdef bytes data
        cdef const uint8_t* raw
        cdef int64_t n, p
        if self.program is None and self.ac is None:
            self.parts.append(text)
            self.recounted = self.recount("".join(self.parts))
            return self.recounted
        data = utf8(text)
        raw = data
        n = len(data)
        if self.program is None:
            with nogil:
                extend(self.ac, &self.pre, raw, n)
            return self.count
        if self.size + n > self.cap:
            self._grow(self.size + n)
        memcpy(self.buf + self.size, raw, n)
        self.size += n
        try:
            with nogil:
                p = last_safe_cut(&self.program.tables, self.buf, self.cut, self.size)
                if p > self.cut:
                    self.final_count += count_pieces(self.bpe, self.program, &self.stack, &self.out,
                                                     &self.scratch, self.buf, self.cut, p, self.size, 0)
                    self.cut = p
                self.tail_count = count_pieces(self.bpe, self.program, &self.stack, &self.out, &self.scratch,
                                               self.buf, self.cut, self.size, self.size, 0)
        except BacktrackLimitExceeded:  # the compiled matcher gave up: recount from here on
            self.program = None
            self.parts = [self.buf[:self.size].decode("utf-8")]
            self.recounted = self.recount(self.parts[0])
            return self.recounted
        return self.final_count + self.tail_count

    cdef int _grow(self, int64_t need) except -1:
        cdef int64_t cap = self.cap if self.cap > 0 else 4096
        cdef void* grown
        while cap < need:
            cap *= 2
        grown = realloc(self.buf, cap)
        if grown == NULL:
            raise MemoryError()
        self.buf = <uint8_t*>grown
        self.cap = cap
        return 0

    @property
    def count(self) -> int:
        """Tokens of everything pushed so far."""
        if self.program is not None:
            return self.final_count + self.tail_count
        if self.ac is not None:
            return prefix_count(self.ac, &self.pre)
        return self.recounted


@cython.final
cdef class IntervalCounter:
    """The token count of any slice of a text, in about constant time after one pass (rust-gems ``bpe``).

    Made by :meth:`bpetrain.Encoding.interval_counter`. ``count(start, end)`` equals
    ``enc.count(text[start:end])``; ``start`` and ``end`` are character indices read as
    a Python slice reads them (negative from the end, clamped to the text).

    Without a split pattern, the text's prefixes are encoded once (:class:`RawIntervals`).
    With a compiled split pattern, the whole text is split and its pieces counted once;
    a slice is split on its own from its start until it meets a piece start of the whole
    text, takes the whole text's counts up to the last safe cut before its end, and
    splits the rest on its own. Pieces of at least ``LONG_PIECE`` bytes keep their own
    prefix tables, so a slice edge inside a long piece costs no more. Otherwise
    (a pattern the compiled matcher does not take, or a vocabulary that does not merge
    in rank order) each call counts the slice.
    """
    cdef BytePairEncoder bpe
    cdef Program program
    cdef TokenAutomaton ac
    cdef object recount
    cdef str text
    cdef bytes data
    cdef int64_t n_chars
    cdef object _arrays
    cdef const int64_t* char_at
    cdef RawIntervals raw
    cdef int64_t n_pieces, n_safe
    cdef const int64_t* piece_start
    cdef const int64_t* piece_stop
    cdef const int64_t* before       # tokens of the pieces before piece k (n_pieces + 1)
    cdef const int64_t* safe         # safe cuts of the whole text, ascending
    cdef const int32_t* long_index   # piece -> index in longs, -1: short
    cdef list longs
    cdef Stack stack
    cdef IdBuffer out
    cdef Scratch scratch

    def __cinit__(self, BytePairEncoder bpe not None, str text not None, Program program=None,
                  TokenAutomaton automaton=None, recount=None):
        self.bpe = bpe
        self.program = program
        self.ac = automaton
        self.recount = recount
        self.text = text
        self.n_chars = len(text)
        if recount is None or not callable(recount):
            raise TypeError("recount must be a function from str to its token count (Encoding.count)")
        if program is None and automaton is None:
            return
        self.data = utf8(text)
        buffer = np.frombuffer(self.data, dtype=np.uint8)
        char_at = np.append(np.flatnonzero((buffer & 0xC0) != 0x80), len(self.data)).astype(np.int64)
        self._arrays = [char_at]
        self.char_at = <const int64_t*><Py_ssize_t>char_at.ctypes.data
        if program is None:
            self.raw = RawIntervals(automaton, self.data)
        else:
            self._split_whole()

    def __dealloc__(self):
        free_stack(&self.stack)
        free_buffers(&self.out, &self.scratch)

    cdef int _split_whole(self) except -1:
        """Split the whole text once: its pieces, their counts, its safe cuts, long pieces' tables."""
        cdef const uint8_t* text = self.data
        cdef int64_t n = len(self.data), pos = 0, piece, stop
        bounds = []
        while pos < n:
            with nogil:
                piece = piece_end(&self.program.tables, &self.stack, text, pos, n, 0)
                if piece < 0:
                    pos += char_length(text, pos, n)
                    continue
                self.out.size = 0
                encode_piece(&self.bpe.tables, text + pos, piece - pos, &self.out, &self.scratch)
            bounds.append((pos, piece, self.out.size))
            pos = piece
        table = np.array(bounds, dtype=np.int64).reshape(-1, 3)
        starts = np.ascontiguousarray(table[:, 0])
        stops = np.ascontiguousarray(table[:, 1])
        before = np.zeros(len(table) + 1, dtype=np.int64)
        np.cumsum(table[:, 2], out=before[1:])
        safe = []
        for stop in stops[: len(stops) - 1].tolist():
            if last_safe_cut(&self.program.tables, text, stop - 1, stop + char_length(text, stop, n)) == stop:
                safe.append(stop)
        safe = np.array(safe, dtype=np.int64)
        long_index = np.full(len(table), -1, dtype=np.int32)
        self.longs = []
        for k in (np.flatnonzero(stops - starts >= LONG_PIECE).tolist() if self.ac is not None else []):
            long_index[k] = len(self.longs)
            self.longs.append(RawIntervals(self.ac, self.data[starts[k] : stops[k]]))
        self._arrays += [starts, stops, before, safe, long_index]
        self.n_pieces = len(table)
        self.n_safe = len(safe)
        self.piece_start = <const int64_t*><Py_ssize_t>starts.ctypes.data
        self.piece_stop = <const int64_t*><Py_ssize_t>stops.ctypes.data
        self.before = <const int64_t*><Py_ssize_t>before.ctypes.data
        self.safe = <const int64_t*><Py_ssize_t>safe.ctypes.data
        self.long_index = <const int32_t*><Py_ssize_t>long_index.ctypes.data
        return 0

    def count(self, Py_ssize_t start, Py_ssize_t end):
        """Tokens of ``text[start:end]`` (character indices, as a Python slice)."""
        cdef Py_ssize_t n = self.n_chars
        if start < 0:
            start = start + n if start + n > 0 else 0
        if end < 0:
            end = end + n if end + n > 0 else 0
        if start > n:
            start = n
        if end > n:
            end = n
        if end <= start:
            return 0
        if self.program is not None:
            try:
                return self._count_split(self.char_at[start], self.char_at[end])
            except BacktrackLimitExceeded:
                pass  # as Encoding.count does, let the regex module try
        elif self.raw is not None:
            return self.raw.count_range(self.char_at[start], self.char_at[end])
        return self.recount(self.text[start:end])

    cdef inline int64_t _first_at_or_after(self, const int64_t* values, int64_t n, int64_t x) noexcept nogil:
        """The first index i with values[i] >= x (values ascending), n if none."""
        cdef int64_t lo = 0, hi = n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if values[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef int64_t _count_piece(self, int64_t a, int64_t b) except -2:
        """Tokens of the piece ``data[a:b]``; inside one long piece of the whole text, from its tables."""
        cdef int64_t k
        cdef RawIntervals raw
        if b - a >= LONG_PIECE:
            k = self._first_at_or_after(self.piece_start, self.n_pieces, a + 1) - 1
            if k >= 0 and self.long_index[k] >= 0 and b <= self.piece_stop[k]:
                raw = self.longs[self.long_index[k]]
                return raw.count_range(a - self.piece_start[k], b - self.piece_start[k])
        self.out.size = 0
        encode_piece(&self.bpe.tables, <const uint8_t*>self.data + a, b - a, &self.out, &self.scratch)
        return self.out.size

    cdef int64_t _count_split(self, int64_t s, int64_t e) except -2:
        """Tokens of the slice ``data[s:e]`` split as a string of its own."""
        cdef const uint8_t* text = self.data
        cdef int64_t pos = s, piece, total = 0, k, c, j
        while pos < e:
            if pos > s:
                k = self._first_at_or_after(self.piece_start, self.n_pieces, pos)
                if k < self.n_pieces and self.piece_start[k] == pos:
                    # The whole text's pieces from k on are the slice's up to its last safe cut.
                    j = self._first_at_or_after(self.safe, self.n_safe, e + 1) - 1
                    c = self.safe[j] if j >= 0 else -1
                    if c > pos:
                        total += self.before[self._first_at_or_after(self.piece_start, self.n_pieces, c)] - self.before[k]
                        pos = c
            if pos >= e:
                break
            with nogil:
                piece = piece_end(&self.program.tables, &self.stack, text, pos, e, s)
            if piece < 0:
                pos += char_length(text, pos, e)
                continue
            total += self._count_piece(pos, piece)
            pos = piece
        return total
