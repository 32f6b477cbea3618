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
from cpython.pythread cimport (NOWAIT_LOCK, WAIT_LOCK, PyThread_acquire_lock, PyThread_allocate_lock,
                               PyThread_free_lock, PyThread_release_lock, PyThread_type_lock)
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND

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
        import numpy as np  # counting tables: not imported by a process that only encodes

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
    cdef int64_t i, end, start, cap = pre.cap if pre.cap > 0 else max(256, k + 1)
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
    docstring), typically a few tokens. Not for use by two threads at once (its owner,
    :class:`IntervalCounter`, holds a lock). Memory: 28 bytes per byte of ``data`` (the last
    token and count of every prefix, and the prefix tree's preorder numbers and subtree sizes).
    """
    cdef TokenAutomaton ac
    cdef bytes data
    cdef readonly int64_t n  # len(data)
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
        self.n = len(data)
        cdef int64_t n = len(data), p
        cdef const uint8_t* text = data
        with nogil:
            extend(ac, &self.pre, text, n)
        import numpy as np

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
        if s < 0 or e > self.n:
            with gil:
                raise IndexError(f"bpetrain bug: the byte range [{s}, {e}) is outside the text's {self.n} bytes")
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
    """``text`` as UTF-8 after tiktoken's fix-up (:func:`bpetrain.splitting.pattern.replace_surrogates`:
    a surrogate pair given as two code units is one character, a lone surrogate U+FFFD), as
    :class:`bpetrain.Encoding` encodes it."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return replace_surrogates(text).encode("utf-8")


cdef inline bint is_high(Py_UCS4 c) noexcept nogil:
    return 0xD800 <= c < 0xDC00


cdef inline bint is_low(Py_UCS4 c) noexcept nogil:
    return 0xDC00 <= c < 0xE000


cdef const uint8_t* REPLACEMENT = b"\xef\xbf\xbd"  # U+FFFD as UTF-8


cdef extern from "Python.h":
    Py_UCS4 read_unit "PyUnicode_READ"(int kind, const void* data, Py_ssize_t index) nogil


# A lock that costs one atomic operation when no other thread holds it: the GIL is let go
# only to wait, so a thread holding the lock outside the GIL can always finish.
cdef inline int take(PyThread_type_lock lock) except -1:
    if not PyThread_acquire_lock(lock, NOWAIT_LOCK):
        with nogil:
            PyThread_acquire_lock(lock, WAIT_LOCK)
    return 0


cdef PyThread_type_lock new_lock() except NULL:
    cdef PyThread_type_lock lock = PyThread_allocate_lock()
    if lock == NULL:
        raise MemoryError()
    return lock


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

    Surrogates are read as in the text of all pushes joined: a push that ends with the
    high half of a surrogate pair is counted with that half as U+FFFD (a lone surrogate),
    and the half waits for the next push, which may complete the pair into one character.

    Thread safety: one encoder may be shared by threads; :meth:`push` and :attr:`count`
    hold a lock (the count then follows the pushes in the order the lock took them).
    """
    cdef BytePairEncoder bpe
    cdef TokenAutomaton ac
    cdef Program program
    cdef object recount
    cdef list parts
    cdef str pending  # a high surrogate that ended the pushed text ("" if none)
    cdef Prefixes pre
    cdef uint8_t* buf
    cdef int64_t size, cap, cut, final_count, tail_count, recounted, pending_count
    cdef Stack stack
    cdef IdBuffer out
    cdef Scratch scratch
    cdef PyThread_type_lock lock

    def __cinit__(self, BytePairEncoder bpe not None, Program program=None, TokenAutomaton automaton=None,
                  recount=None):
        self.bpe = bpe
        self.program = program
        self.ac = automaton
        self.recount = recount
        self.parts = []
        self.pending = ""
        if recount is None or not callable(recount):
            raise TypeError("recount must be a function from str to its token count (Encoding.count)")
        self.lock = new_lock()

    def __dealloc__(self):
        free_prefixes(&self.pre)
        free(self.buf)
        free_stack(&self.stack)
        free_buffers(&self.out, &self.scratch)
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    def push(self, str text not None):
        """Append ``text``; returns the new :attr:`count`.

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        take(self.lock)
        try:
            return self._push(text)
        finally:
            PyThread_release_lock(self.lock)

    cdef object _push(self, str text):
        cdef bytes data
        cdef const uint8_t* raw
        cdef int64_t n, p, n_before
        cdef int32_t state_before
        if self.program is None and self.ac is None:
            self.parts.append(text)  # the join reads surrogate pairs across pushes
            self.recounted = self.recount("".join(self.parts))
            return self.recounted
        text = self.pending + text
        n = len(text)
        self.pending = text[n - 1] if n and is_high(text[n - 1]) else ""
        data = utf8(text[: len(text) - len(self.pending)])
        raw = data
        n = len(data)
        if self.program is None:
            with nogil:
                extend(self.ac, &self.pre, raw, n)
                if self.pending:  # counted as U+FFFD, then taken back
                    n_before, state_before = self.pre.n, self.pre.state
                    extend(self.ac, &self.pre, REPLACEMENT, 3)
                    self.pending_count = prefix_count(self.ac, &self.pre)
                    self.pre.n, self.pre.state = n_before, state_before
            return self._count()
        if self.size + n + 3 > self.cap:
            self._grow(self.size + n + 3)
        memcpy(self.buf + self.size, raw, n)
        self.size += n
        try:
            with nogil:
                p = last_safe_cut(&self.program.tables, self.buf, self.cut, self.size)
                if p > self.cut:
                    self.final_count += count_pieces(self.bpe, self.program, &self.stack, &self.out,
                                                     &self.scratch, self.buf, self.cut, p, self.size, 0)
                    self.cut = p
                n = self.size
                if self.pending:  # counted as U+FFFD after the kept bytes, which it does not join
                    memcpy(self.buf + n, REPLACEMENT, 3)
                    n += 3
                self.tail_count = count_pieces(self.bpe, self.program, &self.stack, &self.out, &self.scratch,
                                               self.buf, self.cut, n, n, 0)
        except BacktrackLimitExceeded:  # the compiled matcher gave up: recount from here on
            self.program = None
            self.parts = [self.buf[:self.size].decode("utf-8") + self.pending]
            self.pending = ""
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

    cdef int64_t _count(self):
        if self.program is not None:
            return self.final_count + self.tail_count
        if self.ac is not None:
            return self.pending_count if self.pending else prefix_count(self.ac, &self.pre)
        return self.recounted

    @property
    def count(self) -> int:
        """Tokens of everything pushed so far."""
        take(self.lock)
        try:
            return self._count()
        finally:
            PyThread_release_lock(self.lock)


cdef enum:
    UNIT_STEP = 64  # code units of a text between two of an IntervalCounter's byte offsets


cdef inline int64_t unit_bytes(int kind, const void* units, Py_ssize_t n, Py_ssize_t j) noexcept nogil:
    """UTF-8 bytes of code unit ``j`` of a str of ``n`` units after tiktoken's fix-up: the high
    half of a surrogate pair carries the pair's 4 bytes and its low half none; a lone
    surrogate is U+FFFD (3 bytes)."""
    cdef Py_UCS4 c = read_unit(kind, units, j)
    if c < 0x80:
        return 1
    if c < 0x800:
        return 2
    if is_high(c):
        return 4 if j + 1 < n and is_low(read_unit(kind, units, j + 1)) else 3
    if is_low(c):
        return 0 if j > 0 and is_high(read_unit(kind, units, j - 1)) else 3
    return 3 if c < 0x10000 else 4


@cython.final
cdef class IntervalCounter:
    """The token count of any slice of a text, in about constant time after one pass (rust-gems ``bpe``).

    Made by :meth:`bpetrain.Encoding.interval_counter`. ``count(start, end)`` equals
    ``enc.count(text[start:end])`` for the ``str`` it was given: ``start`` and ``end`` are
    indices into that ``str`` (code units, as Python indexes it), read as a Python slice
    reads them (``None``, negative from the end, clamped to the text; not integers:
    ``TypeError``). A surrogate pair given as two code units is one character, as in
    :meth:`bpetrain.Encoding.encode`; a slice that cuts such a pair holds a lone half,
    which counts as U+FFFD (as ``enc.count`` of the slice does), and is counted from
    scratch (time linear in its length).

    Without a split pattern, the text's prefixes are encoded once (:class:`RawIntervals`).
    With a compiled split pattern, the whole text is split and its pieces counted once;
    a slice is split on its own from its start until it meets a piece start of the whole
    text, takes the whole text's counts up to the last safe cut before its end, and
    splits the rest on its own. Pieces of at least ``LONG_PIECE`` bytes keep their own
    prefix tables, so a slice edge inside a long piece costs no more. Otherwise
    (a pattern the compiled matcher does not take, or a vocabulary that does not merge
    in rank order) each call counts the slice.

    Memory, besides the text: with a split pattern, the text as UTF-8 (one byte per byte),
    24 bytes per piece at most (about 6 bytes per character of English prose; 2 per
    character of CJK text, whose pieces are long), 28 bytes per byte of pieces of at
    least ``LONG_PIECE`` bytes, and for text that is not ASCII 8 bytes per
    ``UNIT_STEP`` (64) code units; without a split pattern, 29 bytes per byte.

    Thread safety: one counter may be shared by threads; :meth:`count` holds a lock.
    """
    cdef BytePairEncoder bpe
    cdef Program program
    cdef TokenAutomaton ac
    cdef object recount
    cdef str text
    cdef bytes data
    cdef int64_t n_units, n_bytes
    cdef int kind
    cdef const void* units           # the code units of text
    cdef int64_t* unit_at            # byte offset of code unit k * UNIT_STEP; NULL: ASCII text
    cdef RawIntervals raw
    cdef int64_t n_pieces, n_safe
    cdef int64_t* piece_start
    cdef int64_t* before             # tokens of the pieces before piece k (n_pieces + 1)
    cdef int64_t* safe               # safe cuts of the whole text, ascending
    cdef dict longs                  # piece index -> RawIntervals of a long piece
    cdef Stack stack
    cdef IdBuffer out
    cdef Scratch scratch
    cdef PyThread_type_lock lock

    def __cinit__(self, BytePairEncoder bpe not None, str text not None, Program program=None,
                  TokenAutomaton automaton=None, recount=None):
        self.bpe = bpe
        self.program = program
        self.ac = automaton
        self.recount = recount
        self.text = text
        self.n_units = len(text)
        self.longs = {}
        if recount is None or not callable(recount):
            raise TypeError("recount must be a function from str to its token count (Encoding.count)")
        self.lock = new_lock()
        if program is None and automaton is None:
            return
        self.data = utf8(text)
        self.n_bytes = len(self.data)
        self._index_units()
        if program is None:
            self.raw = RawIntervals(automaton, self.data)
        else:
            self._split_whole()

    def __dealloc__(self):
        free_stack(&self.stack)
        free_buffers(&self.out, &self.scratch)
        free(self.unit_at)
        free(self.piece_start)
        free(self.before)
        free(self.safe)
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    cdef int _index_units(self) except -1:
        """The byte offset of every ``UNIT_STEP``-th code unit (none for ASCII text, where they are equal)."""
        cdef int64_t n = self.n_units, j, at = 0
        if self.n_bytes == n:  # every unit one byte: ASCII
            return 0
        self.kind = PyUnicode_KIND(self.text)
        self.units = PyUnicode_DATA(self.text)
        self.unit_at = <int64_t*>malloc((n // UNIT_STEP + 1) * sizeof(int64_t))
        if self.unit_at == NULL:
            raise MemoryError()
        with nogil:
            for j in range(n):
                if j % UNIT_STEP == 0:
                    self.unit_at[j // UNIT_STEP] = at
                at += unit_bytes(self.kind, self.units, n, j)
        if n % UNIT_STEP == 0:
            self.unit_at[n // UNIT_STEP] = at
        if at != self.n_bytes:
            raise RuntimeError(f"bpetrain bug: the code units of the text make {at} bytes of UTF-8, "
                               f"the text has {self.n_bytes}")
        return 0

    cdef int64_t _byte_at(self, int64_t i) noexcept:
        """The byte offset of code unit ``i`` (0 <= i <= n_units) in ``data``; -1 if ``i`` is
        the low half of a surrogate pair (a slice there cuts the pair)."""
        cdef int64_t j, at
        if self.unit_at == NULL:
            return i
        if 0 < i < self.n_units and is_low(read_unit(self.kind, self.units, i)) and is_high(
                read_unit(self.kind, self.units, i - 1)):
            return -1
        at = self.unit_at[i // UNIT_STEP]
        for j in range(i - i % UNIT_STEP, i):
            at += unit_bytes(self.kind, self.units, self.n_units, j)
        return at

    cdef int _split_whole(self) except -1:
        """Split the whole text once: its pieces' starts and counts, its safe cuts, long pieces' tables."""
        cdef const uint8_t* text = self.data
        cdef int64_t n = self.n_bytes, pos = 0, piece, stop = -1, k = 0, cap = n // 4 + 16, n_long = 0, cap_long = 0
        cdef int64_t* longs = NULL  # (piece index, start, stop) of each long piece
        cdef void* grown
        cdef bint failed = False
        cdef int64_t long_piece = LONG_PIECE if self.ac is not None else n + 1
        self.piece_start = <int64_t*>malloc(cap * sizeof(int64_t))
        self.before = <int64_t*>malloc((cap + 1) * sizeof(int64_t))
        self.safe = <int64_t*>malloc(cap * sizeof(int64_t))
        if self.piece_start == NULL or self.before == NULL or self.safe == NULL:
            raise MemoryError()
        self.before[0] = 0
        try:
            with nogil:
                while pos < n:
                    piece = piece_end(&self.program.tables, &self.stack, text, pos, n, 0)
                    if piece < 0:
                        pos += char_length(text, pos, n)
                        continue
                    if k == cap:
                        cap *= 2
                        grown = realloc(self.piece_start, cap * sizeof(int64_t))
                        if grown == NULL:
                            failed = True
                            break
                        self.piece_start = <int64_t*>grown
                        grown = realloc(self.before, (cap + 1) * sizeof(int64_t))
                        if grown == NULL:
                            failed = True
                            break
                        self.before = <int64_t*>grown
                        grown = realloc(self.safe, cap * sizeof(int64_t))
                        if grown == NULL:
                            failed = True
                            break
                        self.safe = <int64_t*>grown
                    if piece - pos >= long_piece:
                        if n_long == cap_long:
                            cap_long = 2 * cap_long + 16
                            grown = realloc(longs, 3 * cap_long * sizeof(int64_t))
                            if grown == NULL:
                                failed = True
                                break
                            longs = <int64_t*>grown
                        longs[3 * n_long], longs[3 * n_long + 1], longs[3 * n_long + 2] = k, pos, piece
                        n_long += 1
                    self.out.size = 0
                    encode_piece(&self.bpe.tables, text + pos, piece - pos, &self.out, &self.scratch)
                    if stop >= 0 and last_safe_cut(&self.program.tables, text, stop - 1,
                                                   stop + char_length(text, stop, n)) == stop:
                        self.safe[self.n_safe] = stop  # the previous piece's end
                        self.n_safe += 1
                    self.piece_start[k] = pos
                    self.before[k + 1] = self.before[k] + self.out.size
                    k += 1
                    stop = pos = piece
            if failed:
                raise MemoryError()
            self.n_pieces = k
            for k in range(n_long):
                self.longs[longs[3 * k]] = RawIntervals(self.ac, self.data[longs[3 * k + 1] : longs[3 * k + 2]])
        finally:
            free(longs)
        return 0

    def count(self, start, end):
        """Tokens of ``text[start:end]`` (indices into the ``str`` given, as a Python slice).

        Raises
        ------
        TypeError
            If an index is neither an integer nor ``None``.
        """
        start, end, _ = slice(start, end).indices(self.n_units)
        if end <= start:
            return 0
        take(self.lock)
        try:
            return self._count_units(start, end)
        finally:
            PyThread_release_lock(self.lock)

    cdef object _count_units(self, int64_t start, int64_t end):
        cdef int64_t s, e
        if self.program is not None or self.raw is not None:
            s, e = self._byte_at(start), self._byte_at(end)
            if s >= 0 and e >= 0:  # neither edge cuts a surrogate pair
                if not 0 <= s <= e <= self.n_bytes:
                    raise IndexError(f"bpetrain bug: code units [{start}, {end}) map to bytes [{s}, {e}), "
                                     f"outside the text's {self.n_bytes}")
                if self.raw is not None:
                    return self.raw.count_range(s, e)
                try:
                    return self._count_split(s, e, NULL)
                except BacktrackLimitExceeded:
                    pass  # as Encoding.count does, let the regex module try
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
            raw = self.longs.get(k) if k >= 0 else None
            if raw is not None and b <= self.piece_start[k] + raw.n:
                return raw.count_range(a - self.piece_start[k], b - self.piece_start[k])
        self.out.size = 0
        encode_piece(&self.bpe.tables, <const uint8_t*>self.data + a, b - a, &self.out, &self.scratch)
        return self.out.size

    cdef int64_t _count_split(self, int64_t s, int64_t e, int64_t* settled) except -2:
        """Tokens of the slice ``data[s:e]`` split as a string of its own (0 <= s <= e <= n_bytes).

        ``settled`` (if not NULL) receives the tokens of the slice's pieces before the last
        safe cut of the whole text it took the counts up to (0 if none): those pieces are the
        same in every longer slice from ``s``, so no longer slice has fewer tokens.
        """
        cdef const uint8_t* text = self.data
        cdef int64_t pos = s, piece, total = 0, k, c, j
        if s < 0 or e > self.n_bytes:
            raise IndexError(f"bpetrain bug: the byte range [{s}, {e}) is outside the text's {self.n_bytes} bytes")
        if settled != NULL:
            settled[0] = 0
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
                        if settled != NULL:
                            settled[0] = total
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

    def _head_end(self, int64_t start, int64_t limit) -> int:
        """The largest byte offset ``end`` > ``start`` of ``data`` on a character boundary
        with at most ``limit`` tokens in ``data[start:end]`` (split and encoded as a text of
        its own), or ``start`` if there is none (the character at ``start`` alone needs more).

        With a split pattern, the prefixes that end at safe cuts of the whole text have more
        tokens the longer they are, so the last of them with ``limit`` tokens or fewer is found
        by bisection first. From there, the prefixes are counted one character longer at a
        time (rust-gems ``bpe``: the count of every prefix is known after one pass) until no
        longer one can have ``limit`` tokens or fewer. Without a split pattern that is when ``max_token_len``
        consecutive byte offsets all have more (the last token of a prefix starts at one of
        them, after a prefix that has more: :mod:`bpetrain.encoding._incremental`'s
        corollary IIa). With one, when the pieces before a safe cut of the whole text already
        have more, or the prefix has more than ``limit * max_token_len`` bytes (then it has more
        tokens, if the pattern matches all of it, as every pattern bpetrain names does; a
        pattern that skips text may leave a longer prefix unfound).

        Raises
        ------
        ValueError
            If the counter has no tables (each count would be made from scratch), or
            ``start`` is not a character boundary of ``data``.
        """
        cdef const uint8_t* text = self.data
        cdef int64_t n = self.n_bytes, end = start, best = start, ok = start, settled = 0, count
        cdef int64_t max_len = self.bpe.tables.max_token_len
        if self.program is None and self.raw is None:
            raise ValueError("this counter counts each slice from scratch: no tables to search prefixes with")
        if not 0 <= start <= n or (start < n and text[start] & 0xC0 == 0x80):
            raise ValueError(f"byte {start} is not a character boundary of the text's {n} bytes")
        cdef int64_t lo, hi, mid
        if limit > n:
            limit = n + 1  # no text has more tokens than bytes
        take(self.lock)
        try:
            if self.raw is None:  # skip to the last safe cut before which the slice has at most limit tokens
                lo = self._first_at_or_after(self.safe, self.n_safe, start + 1)
                hi = self._first_at_or_after(self.safe, self.n_safe, start + limit * max_len + 1)
                while lo < hi:  # the tokens before safe cuts only grow
                    mid = (lo + hi) >> 1
                    if self._count_split(start, self.safe[mid], NULL) > limit:
                        hi = mid
                    else:
                        lo = mid + 1
                if lo > 0 and self.safe[lo - 1] > start:
                    end = best = self.safe[lo - 1]
            while end < n:
                if self.raw is not None:
                    end += 1
                    count = self.raw.count_range(start, end)
                    if count <= limit:
                        ok = end
                        if end == n or text[end] & 0xC0 != 0x80:
                            best = end
                    elif end - ok >= max_len:
                        break
                else:
                    end += char_length(text, end, n)
                    count = self._count_split(start, end, &settled)
                    if count <= limit:
                        best = end
                    elif settled > limit or end - start > limit * max_len:
                        break
            return best
        finally:
            PyThread_release_lock(self.lock)
