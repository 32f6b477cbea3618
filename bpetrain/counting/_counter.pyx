"""Compiled piece counting: a hash table keyed by the pieces' bytes, counts in int64.

Text is split with the compiled splitter (:mod:`bpetrain.splitting._matcher`) and every piece is
looked up in an open-addressing table (linear probing, load <= 1/2). A slot holds the
whole entry in 32 bytes: the piece itself when it has at most 8 bytes (most pieces), or
its 64-bit hash and its place in a byte arena when longer, its length, its count and
the order it was first seen in. So
a lookup of a short piece touches one cache line; the splitter cuts a batch of pieces at
a time, and each piece's slot is prefetched a few pieces before it is added. No Python object is made
per piece.
"""
from libc.stdint cimport INT64_MAX, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy

import numpy as np

from bpetrain.splitting._matcher cimport (DFA_SPAN, PieceReader, Program, RevMarks, Stack, Tables,
                                          dfa_pieces_interleaved, dfa_splits, free_stack, new_stack, rev_free,
                                          split_pieces, start_reading)

cdef extern from *:
    """
    #include "_portable.h"
    #define BPT_PREFETCH(p) BPETRAIN_PREFETCH(p, 1, 1)
    """
    void BPT_PREFETCH(const void* p) noexcept nogil

cdef struct Slot:
    uint64_t key     # the piece's bytes (zero-padded) if length <= 8, else its hash
    int64_t count
    int64_t offset   # into the arena (pieces longer than 8 bytes)
    uint32_t length  # bytes; 0: the slot is empty
    uint32_t order   # how many pieces were in the table before this one

cdef int64_t MAX_PIECES = 0xFFFFFFFF  # unique pieces in a table, and bytes in a piece
cdef enum:
    MIN_SLOTS = 1024
    INLINE = 8        # pieces of at most this many bytes are kept in their slot
    BATCH = 64        # pieces cut and hashed at a time
    AHEAD = 8         # the slot of the piece this many ahead is prefetched


cdef inline uint64_t _key(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """The slot key of ``p[0:n]``: the bytes themselves up to 8, else a 64-bit hash."""
    cdef uint64_t h, w = 0
    if n <= INLINE:
        memcpy(&w, p, n)
        return w
    h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    while n >= 8:
        memcpy(&w, p, 8)
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL
        h ^= h >> 29
        p += 8
        n -= 8
    if n:
        w = 0
        memcpy(&w, p, n)
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL
    h ^= h >> 32
    h *= 0x94D049BB133111EBULL
    h ^= h >> 29
    return h


cdef inline Py_ssize_t _home(uint64_t key, Py_ssize_t length, int shift) noexcept nogil:
    """The slot a key hashes to (Fibonacci hashing; ``shift`` = 64 - log2(n_slots))."""
    return <Py_ssize_t>(((key ^ <uint64_t>length) * 0x9E3779B97F4A7C15ULL) >> shift)


cdef class PieceCounts:
    """Unique pieces (bytes) and how often each occurred.

    Add text with :meth:`count`, single pieces with :meth:`add`, other tables with
    :meth:`update`; read the result with :meth:`arrays`. Not thread-safe: give each
    thread its own table and merge them.
    """
    cdef uint8_t* arena
    cdef int64_t arena_size, arena_cap
    cdef Slot* slots
    cdef Py_ssize_t n_slots, n_used
    cdef int shift

    def __cinit__(self):
        self.arena_cap = 1 << 16
        self.n_slots = MIN_SLOTS
        self.shift = 64 - 10
        self.arena = <uint8_t*>malloc(self.arena_cap)
        self.slots = <Slot*>calloc(self.n_slots, sizeof(Slot))
        if self.arena == NULL or self.slots == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.arena)
        free(self.slots)

    @property
    def n_pieces(self) -> int:
        """Number of unique pieces."""
        return self.n_used

    @property
    def nbytes(self) -> int:
        """Bytes of memory the table holds."""
        return self.arena_cap + self.n_slots * sizeof(Slot)

    cdef int _grow(self) except -1 nogil:
        return self._resize(self.n_slots * 2)

    cdef int _reserve(self, Py_ssize_t n_pieces) except -1 nogil:
        """Grow once so that ``n_pieces`` fit at load <= 1/2 (one rehash before a whole
        table is added, instead of one per doubling)."""
        cdef Py_ssize_t n = self.n_slots
        while 2 * n_pieces > n:
            n *= 2
        if n > self.n_slots:
            self._resize(n)
        return 0

    cdef int _resize(self, Py_ssize_t n) except -1 nogil:
        """Rehash into ``n`` slots (a power of two larger than now)."""
        cdef Py_ssize_t i, j
        cdef Slot* slots = <Slot*>calloc(n, sizeof(Slot))
        if slots == NULL:
            with gil:
                raise MemoryError()
        while (<Py_ssize_t>1 << (64 - self.shift)) < n:
            self.shift -= 1
        for i in range(self.n_slots):
            if self.slots[i].length:
                j = _home(self.slots[i].key, self.slots[i].length, self.shift)
                while slots[j].length:
                    j = (j + 1) & (n - 1)
                slots[j] = self.slots[i]
        free(self.slots)
        self.slots = slots
        self.n_slots = n
        return 0

    cdef int _store(self, const uint8_t* p, Py_ssize_t length) except -1 nogil:
        """Copy a long piece into the arena."""
        cdef int64_t cap
        cdef void* q
        if self.arena_size + length > self.arena_cap:
            cap = self.arena_cap * 2
            while cap < self.arena_size + length:
                cap *= 2
            q = realloc(self.arena, cap)
            if q == NULL:
                with gil:
                    raise MemoryError()
            self.arena = <uint8_t*>q
            self.arena_cap = cap
        memcpy(self.arena + self.arena_size, p, length)
        self.arena_size += length
        return 0

    cdef int _add(self, const uint8_t* p, Py_ssize_t length, uint64_t key, int64_t count) except -1 nogil:
        cdef Py_ssize_t j = _home(key, length, self.shift)
        cdef Slot* s
        if length >= MAX_PIECES:
            with gil:
                raise ValueError(
                    f"a piece of {length} bytes: pieces must be shorter than 4 GiB (in raw mode a document "
                    "is one piece; split such documents, e.g. --documents line)"
                )
        while True:
            s = &self.slots[j]
            if s.length == 0:
                break
            if s.key == key and s.length == length and (
                    length <= INLINE or memcmp(self.arena + s.offset, p, length) == 0):
                if s.count > INT64_MAX - count:
                    with gil:
                        raise ValueError("a piece's count exceeds 2**63 - 1")
                s.count += count
                return 0
            j = (j + 1) & (self.n_slots - 1)
        if 2 * (self.n_used + 1) > self.n_slots:
            if self.n_used >= MAX_PIECES:
                with gil:
                    raise ValueError(f"more than {MAX_PIECES} unique pieces: too many for one table")
            self._grow()
            j = _home(key, length, self.shift)
            while self.slots[j].length:
                j = (j + 1) & (self.n_slots - 1)
            s = &self.slots[j]
        if length > INLINE:
            s.offset = self.arena_size
            self._store(p, length)
        s.key = key
        s.length = <uint32_t>length
        s.order = <uint32_t>self.n_used
        s.count = count
        self.n_used += 1
        return 0

    cdef int _split(self, const Tables* t, Stack* stack, const uint8_t* text, Py_ssize_t start,
                    Py_ssize_t stop, Py_ssize_t end, Py_ssize_t bos) except -1 nogil:
        """Count the pieces that start in ``[start, stop)`` of the text ``text[0:end]``
        (``bos``: where the string starts, -1 if before ``text``), a batch at a time (the
        DFA's two interleaved readings give up to ``2 * DFA_SPAN`` pieces a call, hashed
        ``BATCH`` at a time)."""
        cdef Py_ssize_t bounds[6 * DFA_SPAN]
        cdef Py_ssize_t n, done
        cdef bint interleave = dfa_splits(t)
        cdef RevMarks* rev = NULL  # (this text's marks: freed before another is read)
        cdef PieceReader reader  # (this text's: a block's pieces carry over from batch to batch)
        start_reading(&reader, t, bos)
        try:
            while start < stop:
                if interleave:
                    n = dfa_pieces_interleaved(t, text, start, stop, end, bos, bounds, DFA_SPAN, &start, &rev)
                else:
                    n = split_pieces(t, &reader, stack, text, start, stop, end, bos, bounds, BATCH, &start)
                done = 0
                while done < n:
                    self._add_batch(text, bounds + 2 * done, min(BATCH, n - done))
                    done += BATCH
        finally:
            rev_free(&rev)
        return 0

    cdef int _add_batch(self, const uint8_t* text, const Py_ssize_t* bounds, Py_ssize_t n) except -1 nogil:
        """Count ``n <= BATCH`` pieces ``text[bounds[2 * i]:bounds[2 * i + 1]]``, hashed first,
        each slot fetched a few pieces ahead."""
        cdef uint64_t keys[BATCH]
        cdef Py_ssize_t i, a
        for i in range(n):
            a = bounds[2 * i]
            keys[i] = _key(text + a, bounds[2 * i + 1] - a)
        for i in range(n):
            if i + AHEAD < n:  # the slot of a piece a few ahead, while this one is added
                a = bounds[2 * (i + AHEAD)]
                BPT_PREFETCH(&self.slots[_home(keys[i + AHEAD], bounds[2 * (i + AHEAD) + 1] - a, self.shift)])
            a = bounds[2 * i]
            self._add(text + a, bounds[2 * i + 1] - a, keys[i], 1)
        return 0

    def add(self, piece, int64_t count=1):
        """Add ``count`` occurrences of one piece (bytes-like)."""
        cdef const uint8_t[::1] view = memoryview(piece).cast("B") if len(piece) else b"\0"
        if count < 0:
            raise ValueError(f"a count must be >= 0, got {count}")
        if len(piece) and count:
            self._add(&view[0], len(piece), _key(&view[0], len(piece)), count)

    def count(self, data, const int64_t[:, ::1] segments, Program program, bint line_documents=False,
              bint continued=False):
        """Count the pieces of ``data`` (UTF-8 bytes) segment by segment, without the GIL.

        Parameters
        ----------
        data : bytes-like
            The text.
        segments : numpy.ndarray of int64, shape (n_segments, 3)
            Rows ``(start, stop, end)``: count the pieces starting in ``data[start:stop]``
            of the text ``data[start:end]`` (``end > stop`` is context the splitter may
            look at, the rest of the text after a safe cut; ``end == stop`` ends the text).
            Each segment starts a string (for ``^``), except the first if ``continued``.
        program : bpetrain.splitting._matcher.Program or None
            The split pattern, or None for no pre-tokenization: each document is one piece.
        line_documents : bool
            ``documents="line"``: each line (up to and including ``\\n``) of a segment is a
            document of its own (the text after ``stop`` is then not looked at).
        continued : bool
            The first segment goes on a text that started before ``data``.
        """
        cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
        cdef const uint8_t* text = &view[0]
        cdef Py_ssize_t n = len(data), k, a, b, e, stop, bos
        cdef const void* nl
        cdef const Tables* t = NULL if program is None else &program.tables
        cdef Stack stack = new_stack()
        for k in range(segments.shape[0]):
            if not 0 <= segments[k, 0] <= segments[k, 1] <= segments[k, 2] <= n:
                raise ValueError(f"segment {k} {tuple(segments[k])} is not inside the data (0..{n})")
        try:
            with nogil:
                for k in range(segments.shape[0]):
                    a = segments[k, 0]
                    stop = segments[k, 1]
                    e = segments[k, 2]
                    bos = -1 if continued and k == 0 else a
                    while a < stop:
                        if line_documents:
                            nl = memchr(text + a, 10, stop - a)
                            b = stop if nl == NULL else (<const uint8_t*>nl - text) + 1
                            e = b
                            bos = a
                        else:
                            b = stop
                        if t == NULL:
                            if b > a:
                                self._add(text + a, b - a, _key(text + a, b - a), 1)
                        else:
                            self._split(t, &stack, text, a, b, e, bos)
                        a = b
        finally:
            free_stack(&stack)

    def update(self, PieceCounts other):
        """Add every piece of ``other`` with its count, in the order ``other`` first saw them.

        (Not in ``other``'s slot order: that is hash order, and hash-ordered keys piled
        into a table with fewer slots make long probe runs.)"""
        cdef Py_ssize_t i
        cdef Slot* s
        cdef const uint8_t* p
        cdef int64_t[::1] w = other._order()
        with nogil:
            self._reserve(self.n_used + other.n_used)
            for i in range(other.n_used):
                s = &other.slots[w[i]]
                p = <const uint8_t*>&s.key if s.length <= INLINE else other.arena + s.offset
                self._add(p, s.length, s.key, s.count)

    cdef _order(self):
        """The slot of the piece added i-th, for each i: int64 array, shape (n_used,)."""
        cdef Py_ssize_t i
        where = np.empty(self.n_used, dtype=np.int64)
        cdef int64_t[::1] w = where
        for i in range(self.n_slots):
            if self.slots[i].length:
                w[self.slots[i].order] = i
        return where

    def update_arrays(self, const uint8_t[::1] data, const int64_t[::1] offsets, const int64_t[::1] counts):
        """Add pieces given as :class:`~bpetrain.counting.counts.PieceTable` arrays."""
        cdef Py_ssize_t i, n = counts.shape[0], length
        cdef const uint8_t* p
        if offsets.shape[0] != n + 1 or (n and (offsets[0] != 0 or offsets[n] != data.shape[0])):
            raise ValueError("offsets must have one entry more than counts and run from 0 to len(data)")
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                raise ValueError(f"offsets must not decrease (at {i})")
            if counts[i] < 0:
                raise ValueError(f"counts must be >= 0 (piece {i} has {counts[i]})")
        with nogil:
            self._reserve(self.n_used + n)
            for i in range(n):
                length = offsets[i + 1] - offsets[i]
                if length and counts[i]:
                    p = &data[0] + offsets[i]
                    self._add(p, length, _key(p, length), counts[i])

    def arrays(self):
        """The pieces as ``(data, offsets, counts)``: uint8, int64 (n + 1,), int64 (n,).

        The pieces come in the order they were first added (the compiled trainer runs a
        little faster on text order than on hash order; the merges do not depend on it).
        """
        cdef Py_ssize_t i, n = self.n_used
        cdef int64_t size = 0
        cdef Slot* s
        cdef int64_t[::1] w = self._order()
        for i in range(n):
            size += self.slots[w[i]].length
        data = np.empty(size, dtype=np.uint8)
        offsets = np.empty(n + 1, dtype=np.int64)
        counts = np.empty(n, dtype=np.int64)
        cdef uint8_t[::1] d = data
        cdef int64_t[::1] o = offsets
        cdef int64_t[::1] c = counts
        size = 0
        with nogil:
            for i in range(n):
                s = &self.slots[w[i]]
                memcpy(&d[0] + size, <const uint8_t*>&s.key if s.length <= INLINE else self.arena + s.offset, s.length)
                o[i] = size
                c[i] = s.count
                size += s.length
        o[n] = size
        return data, offsets, counts
