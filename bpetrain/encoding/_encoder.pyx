# cython: language_level=3
"""The encoding kernel: tiktoken's byte pair rule with a heap and a bitfield.

Inside one piece, the two adjacent tokens whose joined bytes have the lowest rank are
merged, the leftmost first on ties, until no joined pair is a token (tiktoken's
``byte_pair_merge`` in ``src/lib.rs``; ``_reference.encode_piece_ranks`` is the plain
version). Four paths give that result:

1. The whole piece is looked up first (a hash table of the token bytes): most pieces
   of real text are one token (tiktoken does the same). A slot of 16 bytes holds a
   token's first 12 bytes, so a piece of up to 12 bytes (99% of the one-token pieces
   of mix-10M with cl100k) is matched from one cache line, with no second read of the
   token's bytes.
2. Pieces of at least ``LINEAR_PIECE`` bytes go to the linear encoder (the
   rust-gems ``bpe`` crate's backtracking encoder, :meth:`BytePairEncoder._encode_linear`):
   the longest token from a trie, shorter prefix tokens when it is not valid after the
   previous token, and a bitfield of positions no encoding passes through. It needs
   merges in rank order; the constructor checks that, token by token, against the heap
   encoder (``linear``), and without it paths 3 and 4 take every piece.
3. Shorter pieces (up to ``SMALL_PIECE`` bytes) run tiktoken's own loop: find the lowest
   rank by a linear scan, merge, update the two neighbouring ranks. Quadratic, but in a
   bounded length, and the fastest for short pieces.
4. Longer pieces, where the linear encoder does not apply, use the heap encoder of the
   rust-gems ``bpe`` crate
   (``byte_pair_encoding.rs``, ``encode_via_bitfield``): a bitfield with one bit per
   byte marks the starts of tokens (all set at first), a 4-ary min-heap holds
   ``(rank << 32) | start`` of every adjacent pair that joins into a token, and each pop
   either merges or drops a stale entry. An entry is stale when its start no longer
   starts a token, or when the pair there now spans other bytes than the entry's
   rank: a token only grows to the right, so the span of the pair at a start only
   grows, and equal spans mean equal bytes and so the same rank. A merge clears one
   bit and pushes at most two pairs, so a piece of n bytes costs O(n log n).

The rank of two adjacent tokens comes from a table keyed by the pair of token ids
(built once, from every split of every token into two tokens; each slot packs the two
ids and the rank, 21 bits each, into 64 bits), so no byte string is hashed in the
inner loops; the first pairs of a piece (two bytes) come from a direct
256 x 256 table; a 1 MB bit filter in front of it answers most pairs that join into
nothing without leaving a core's L2 cache. Everything after set-up runs without the GIL; the tables are read
only, so threads share one encoder.
"""
cimport cython
from cpython.list cimport PyList_New
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.sequence cimport PySequence_Fast_ITEMS
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_AsUTF8String, PyUnicode_GET_LENGTH
from libc.stdint cimport INT32_MAX, INT64_MAX, UINT32_MAX, UINT64_MAX, uint16_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memset

import numpy as np
cimport numpy as cnp

cnp.import_array()

from bpetrain.splitting._matcher cimport (Program, PieceReader, Stack, Tables, char_length, free_stack, next_piece_end,
                                  start_reading)

cdef extern from *:
    """
    #define BPETRAIN_CLZ64(x) __builtin_clzll(x)
    /* The first min(n, 8) bytes at p (n >= 1) as one word, zero-extended, without a branch
       on n: one 8-byte load, then a mask. The load may read past p[n - 1], but only while
       the 8 bytes stay in p's 4 KiB page (every page boundary is a 4 KiB boundary, and
       p[0] is readable, so its page is mapped); the bytes past n are masked off. Within 7
       bytes of a page's end the n bytes are copied alone. Little-endian: the first bytes
       are the low ones; big-endian: the high ones. */
    static inline uint64_t bpetrain_head(const uint8_t* p, int64_t n) {
        uint64_t word = 0;
        int64_t m = n < 8 ? n : 8;
        if (__builtin_expect(((uintptr_t)p & 4095) <= 4096 - 8, 1)) {
            memcpy(&word, p, 8);
        } else {
            memcpy(&word, p, (size_t)m);
        }
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        return word & (~(uint64_t)0 << (64 - 8 * m));
    #else
        return word & (~(uint64_t)0 >> (64 - 8 * m));
    #endif
    }
    """
    int clz64 "BPETRAIN_CLZ64"(uint64_t x) noexcept nogil
    uint64_t bpetrain_head(const uint8_t* p, int64_t n) noexcept nogil
    bint PyUnicode_IS_ASCII(object s) noexcept
    void PyObject_GC_UnTrack(void* op) noexcept
    void PyObject_GC_Track(void* op) noexcept
    int PyObject_GC_IsTracked(object op) noexcept

cdef extern from *:
    """
    /* Makes `o` an object the process never frees, so that references to it can be
       handed out without raising its count (kept_ints). Python 3.12 and later have
       immortal objects (PEP 683): a count at the header's immortal value is never raised,
       lowered or freed. Earlier 64-bit Pythons count in a full 64-bit word: 2**60 more
       references than anyone holds outlast any process (one handed out each nanosecond
       would take 36 years). Elsewhere (32-bit Pythons before 3.12, free-threaded builds)
       nothing is changed and BPETRAIN_INTS_KEPT is 0: each reference is counted. */
    #if defined(Py_GIL_DISABLED)
    #define BPETRAIN_INTS_KEPT 0
    #elif defined(_Py_IMMORTAL_INITIAL_REFCNT)
    #define BPETRAIN_INTS_KEPT 1
    #define BPETRAIN_KEEP(o) Py_SET_REFCNT(o, _Py_IMMORTAL_INITIAL_REFCNT)
    #elif defined(_Py_IMMORTAL_REFCNT)
    #define BPETRAIN_INTS_KEPT 1
    #define BPETRAIN_KEEP(o) Py_SET_REFCNT(o, _Py_IMMORTAL_REFCNT)
    #elif SIZEOF_VOID_P >= 8
    #define BPETRAIN_INTS_KEPT 1
    #define BPETRAIN_KEEP(o) Py_SET_REFCNT(o, Py_REFCNT(o) + ((Py_ssize_t)1 << 60))
    #else
    #define BPETRAIN_INTS_KEPT 0
    #endif
    static void bpetrain_keep_forever(PyObject* o) {
    #if BPETRAIN_INTS_KEPT
        BPETRAIN_KEEP(o);
    #endif
    }
    """
    bint ints_kept "BPETRAIN_INTS_KEPT"
    void keep_forever "bpetrain_keep_forever"(object o) noexcept

#: True where output lists take references to the kept ints without counting them
#: (:func:`kept_ints`): every build but free-threaded ones and 32-bit Pythons before 3.12.
INTS_KEPT = bool(ints_kept)
_kept_ints = []  # kept_ints: int objects 0, 1, 2, ... the process never frees


cdef list kept_ints(Py_ssize_t n):
    """The int objects 0..n - 1 of this process's table of kept ints (a new list; the ints
    are shared by every encoder): the encoders fill their output lists with them without
    raising their reference counts, one load and one store per id, with or without the
    GIL.

    Each int is made one the process never frees (``bpetrain_keep_forever``: immortal,
    PEP 683, on Python 3.12 and later; 2**60 spare references before), so a list can take
    a reference to it from that reserve: its count need not rise, and when the list is
    freed it falls, but never to zero. Without a count raised per id, a batch call of
    lists (3 MB of 1 KB documents of mix-10M, cl100k_base) took 9% less time on one
    thread and 12% less on two, and one call per document 5% less. The table grows to
    the largest vocabulary the process uses (32 bytes an id: 6.4 MB for o200k_base) and
    is never freed, as CPython keeps its small ints.
    """
    cdef object value
    while len(_kept_ints) < n:
        value = int(len(_kept_ints))
        keep_forever(value)
        _kept_ints.append(value)
    return _kept_ints[:n]


cdef bint fill_items(PyObject** items, const uint32_t* ids, int64_t n, PyObject* const* ints,
                     uint32_t n_ints) noexcept nogil:
    """``items[i]``: the kept int of ``ids[i]`` (``ints``, :func:`kept_ints`), or NULL for an
    id of ``n_ints`` or more (a special token's); True if any is NULL. Needs no GIL: no
    count is raised (:func:`finish_items` does what is left)."""
    cdef bint other = False
    cdef int64_t i
    for i in range(n):
        if ids[i] < n_ints:
            items[i] = ints[ids[i]]
        else:
            items[i] = NULL
            other = True
    return other


cdef int finish_items(PyObject** items, const uint32_t* ids, int64_t n) except -1:
    """After :func:`fill_items`, under the GIL: a new int for each NULL item, and where
    ints are not kept (:data:`INTS_KEPT` false: free-threaded and old 32-bit builds) a counted
    reference for each other one."""
    cdef int64_t i
    cdef object value
    for i in range(n):
        if items[i] == NULL:
            value = ids[i]
            Py_INCREF(value)  # the list's reference
            items[i] = <PyObject*>value
        elif not ints_kept:
            Py_INCREF(<object>items[i])
    return 0


cdef token_t NO_RANK = INT32_MAX        # no token: larger than every rank
cdef uint64_t EMPTY = UINT64_MAX        # free slot of the pair table
cdef uint64_t FIB = 0x9E3779B97F4A7C15ULL  # 2**64 / golden ratio (Fibonacci hashing)
cdef enum:
    SMALL_PIECE = 32                    # longest piece merged by linear scans
    FILTER_BITS = 23                    # 2**23 bits (1 MB): the pair filter stays in a core's L2
    LINEAR_PIECE = 20                   # shortest piece for the linear encoder, where it applies
                                        # (measured: faster than the small path from 16-24 bytes)
    ID_BITS = 21                        # bits of a rank in a pair-table slot
    CACHE_PIECE = 16                    # longest piece the piece cache holds (bytes)
    CACHE_IDS = 3                       # most ids of a cached piece (21 bits each in 64)
    SLOT_LENGTH = (1 << (32 - ID_BITS)) - 1  # token length a whole-token slot holds (saturated)
    SLOT_EMPTY = 0xFFFFFFFF             # meta of an empty whole-token slot
cdef uint64_t ID_MASK = (1 << ID_BITS) - 1
cdef uint64_t LOW32 = UINT32_MAX
#: Largest rank the pair table holds (three ranks fill 63 bits of a slot; all ones is EMPTY).
MAX_RANK = ID_MASK - 1
#: What :meth:`BytePairEncoder.encode_batch` returns: lists of ids, one array of ids and
#: offsets, or counts.
BATCH_LISTS, BATCH_ARRAYS, BATCH_COUNTS = 0, 1, 2
#: Entries of a new encoder's piece cache (32 bytes each: 512 KiB, within a core's L2).
DEFAULT_CACHE_SIZE = 1 << 14


cdef inline uint64_t load_head(const uint8_t* data, int64_t n) noexcept nogil:
    """The first ``min(n, 8)`` bytes of ``data`` as one word, zero-extended (so the word and
    ``n`` determine the bytes); 0 if ``n <= 0``. One load and a mask, no branch on the
    length (``bpetrain_head`` above: the lengths of pieces follow no pattern a branch
    predictor can learn)."""
    return bpetrain_head(data, n) if n > 0 else 0


cdef inline uint64_t hash_bytes(const uint8_t* data, int64_t n, uint64_t head) noexcept nogil:
    """A 64-bit hash of ``n`` bytes whose first eight are ``head``, eight at a time."""
    cdef uint64_t h = ((<uint64_t>n * FIB) ^ head) * FIB
    cdef uint64_t word
    cdef int64_t i = 8
    h ^= h >> 32
    while i < n:
        word = load_head(data + i, n - i)
        h = (h ^ word) * FIB
        h ^= h >> 32
        i += 8
    return h


cdef inline uint32_t slot_tail(const uint8_t* data, int64_t n) noexcept nogil:
    """Bytes 8..11 of ``data[:n]`` for its whole-token slot (``load_head`` of up to 4
    bytes; 0 if ``n <= 8``)."""
    return <uint32_t>load_head(data + 8, min(n - 8, 4)) if n > 8 else 0


cdef inline uint32_t slot_meta(int64_t rank, int64_t n) noexcept nogil:
    """The ``meta`` word of a whole-token slot: ``rank`` (< 2**ID_BITS - 1) and ``n``
    saturated at SLOT_LENGTH."""
    return <uint32_t>((min(n, SLOT_LENGTH) << ID_BITS) | rank)


cdef inline uint64_t pair_key(token_t left, token_t right) noexcept nogil:
    """The pair as one number: ``(left << ID_BITS) | right``."""
    return (<uint64_t>left << ID_BITS) | <uint64_t>right


cdef int table_shift(int64_t n_items, uint64_t* mask) noexcept:
    """Shift for Fibonacci hashing into a power-of-two table at most 4/5 full (linear
    probing stays short; smaller tables miss the cache less)."""
    cdef int bits = 4
    while 4 * (<int64_t>1 << bits) < 5 * n_items:
        bits += 1
    mask[0] = (<uint64_t>1 << bits) - 1
    return 64 - bits


cdef int grow_ids(IdBuffer* out, int64_t need) except -1 nogil:
    """Make room for ``need`` ids in ``out`` (doubling)."""
    cdef int64_t cap = out.cap if out.cap > 0 else 64
    cdef uint32_t* grown
    while cap < need:
        cap *= 2
    grown = <uint32_t*>realloc(out.ids, cap * sizeof(uint32_t))
    if grown == NULL:
        with gil:
            raise MemoryError()
    out.ids = grown
    out.cap = cap
    return 0


cdef int grow_scratch(Scratch* s, int64_t n) except -1 nogil:
    """Make the heap encoder's arrays hold a piece of ``n`` bytes."""
    cdef int64_t cap = s.cap if s.cap > 0 else 256
    cdef void* tok
    cdef void* bits
    cdef void* heap
    while cap < n:
        cap *= 2
    tok = realloc(s.tok, cap * sizeof(token_t))
    if tok != NULL:
        s.tok = <token_t*>tok
    bits = realloc(s.bits, (cap // 64 + 1) * sizeof(uint64_t))
    if bits != NULL:
        s.bits = <uint64_t*>bits
    heap = realloc(s.heap, 2 * cap * sizeof(uint64_t))
    if heap != NULL:
        s.heap = <uint64_t*>heap
    if tok == NULL or bits == NULL or heap == NULL:
        with gil:
            raise MemoryError()
    s.cap = cap
    return 0


cdef void free_buffers(IdBuffer* out, Scratch* s) noexcept nogil:
    free(out.ids)
    free(s.tok)
    free(s.bits)
    free(s.heap)


cdef inline void sift_down(uint64_t* heap, int64_t size, int64_t i) noexcept nogil:
    """Move ``heap[i]`` down to its place in the 4-ary min-heap ``heap[:size]``."""
    cdef uint64_t item = heap[i]
    cdef int64_t first, child, k, last
    while True:
        first = 4 * i + 1
        if first >= size:
            break
        child = first
        last = first + 4 if first + 4 < size else size
        for k in range(first + 1, last):
            if heap[k] < heap[child]:
                child = k
        if heap[child] >= item:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = item


cdef inline void push(uint64_t* heap, int64_t* size, uint64_t item) noexcept nogil:
    """Add ``item`` to the 4-ary min-heap ``heap[:size]``."""
    cdef int64_t i = size[0]
    cdef int64_t parent
    size[0] += 1
    while i > 0:
        parent = (i - 1) >> 2
        if heap[parent] <= item:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


cdef inline void pop(uint64_t* heap, int64_t* size) noexcept nogil:
    """Remove the smallest item of the 4-ary min-heap ``heap[:size]``."""
    size[0] -= 1
    heap[0] = heap[size[0]]
    sift_down(heap, size[0], 0)


cdef inline int64_t prev_start(const uint64_t* bits, int64_t p) noexcept nogil:
    """The last token start at or before byte ``p`` (bit 0 is always set)."""
    cdef int64_t w = p >> 6
    cdef uint64_t word = bits[w] & ((<uint64_t>2 << (p & 63)) - 1)
    while word == 0:
        w -= 1
        word = bits[w]
    return (w << 6) + 63 - clz64(word)


def text_lengths(list texts not None):
    """The characters of each text, int64 array of shape (len(texts),), in one pass at C
    speed (a batch of 3,000 documents took 0.25 ms in Python to check and measure,
    before its first kernel call).

    Raises
    ------
    TypeError
        If an item is not a ``str`` (subclasses are accepted).
    """
    lengths = np.empty(len(texts), dtype=np.int64)
    cdef int64_t[::1] view = lengths
    cdef Py_ssize_t i
    cdef object item
    for i in range(len(texts)):
        item = texts[i]
        if not isinstance(item, str):
            raise TypeError(f"text must be a str, got {type(item).__name__}")
        view[i] = PyUnicode_GET_LENGTH(item)
    return lengths


def track_lists(list lists not None):
    """Give every list of ``lists`` that :meth:`BytePairEncoder.encode_batch` made back to
    the garbage collector (it makes them untracked: a collection set off while a batch
    is being built would otherwise walk every id of every list made so far, about half
    the time lists take; the lists hold only ints, so none can be in a cycle before the
    caller has them). Lists already tracked are left as they are."""
    cdef object item
    for item in lists:
        if type(item) is list and not PyObject_GC_IsTracked(item):
            PyObject_GC_Track(<PyObject*>item)


class DisallowedText(Exception):
    """Raised by :meth:`BytePairEncoder.encode_batch` when ``texts[index]`` holds a
    disallowed string; the caller raises the error users see."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


cdef int64_t find_needle(const uint8_t* text, int64_t n, const uint8_t* needles, const int64_t* ends,
                         int64_t n_needles, const uint8_t* first, int lead, int64_t* which) noexcept nogil:
    """Where the first needle (``needles[ends[k]:ends[k + 1]]``, none empty) in ``text``
    starts, or -1; ``which`` gets the longest needle that starts there (as a regex of the
    needles, longest first, finds it). ``first[b]`` is nonzero when a needle starts with
    byte ``b``; ``lead`` is that byte when only one does (the text is then skipped
    through with memchr), else -1."""
    cdef int64_t p = 0, k, length, best
    cdef const uint8_t* hit
    while p < n:
        if lead >= 0:
            hit = <const uint8_t*>memchr(text + p, lead, n - p)
            if hit == NULL:
                return -1
            p = hit - text
        elif not first[text[p]]:
            p += 1
            continue
        best = -1
        for k in range(n_needles):
            length = ends[k + 1] - ends[k]
            if (needles[ends[k]] == text[p] and length <= n - p
                    and (best < 0 or length > ends[best + 1] - ends[best])
                    and memcmp(text + p, needles + ends[k], length) == 0):
                best = k
        if best >= 0:
            which[0] = best
            return p
        p += 1
    return -1


@cython.final
cdef class Needles:
    """Strings for the kernel to look for without the GIL (:func:`find_needle`): the
    disallowed special tokens, which no text may hold, or the allowed ones, which are
    encoded as their ids.

    Parameters
    ----------
    strings : iterable of bytes
        Their UTF-8, none empty.
    ids : iterable of int, optional
        The token id of each string (allowed special tokens), each below 2**32.

    Raises
    ------
    ValueError
        If there are no strings, one is empty, or ``ids`` does not give one id in
        [0, 2**32) to each.
    """

    def __cinit__(self, strings, ids=None):
        cdef list encoded = [bytes(item) for item in strings]
        cdef int b
        if not encoded or not all(encoded):
            raise ValueError("needles must be one or more non-empty byte strings")
        self._ids = None
        self.ids = NULL
        if ids is not None:
            values = [int(item) for item in ids]
            if len(values) != len(encoded) or not all(0 <= item < 2**32 for item in values):
                raise ValueError(f"ids must give each of the {len(encoded)} strings one id in [0, 2**32), got {values}")
            self._ids = np.array(values, dtype=np.uint32)
            self.ids = <const uint32_t*><Py_ssize_t>self._ids.ctypes.data
        self._data = b"".join(encoded)
        self.data = <const uint8_t*>PyBytes_AS_STRING(self._data)
        self._ends = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(item) for item in encoded], out=self._ends[1:])
        self.ends = <const int64_t*><Py_ssize_t>self._ends.ctypes.data
        self.n = len(encoded)
        memset(self.first, 0, 256)
        for item in encoded:
            self.first[item[0]] = 1
        leads = [b for b in range(256) if self.first[b]]
        self.lead = leads[0] if len(leads) == 1 else -1

    cdef inline int64_t find(self, const uint8_t* text, int64_t n, int64_t* which) noexcept nogil:
        """Where the first string in ``text[:n]`` starts (``which``: the longest there), or -1."""
        return find_needle(text, n, self.data, self.ends, self.n, self.first, self.lead, which)

    cdef inline bint found_in(self, const uint8_t* text, int64_t n) noexcept nogil:
        cdef int64_t which
        return self.find(text, n, &which) >= 0

    cdef int require_ids(self) except -1:
        """Raise ValueError unless these strings have ids (allowed special tokens)."""
        if self.ids == NULL:
            raise ValueError("specials must be Needles made with the special tokens' ids")
        return 0


cdef object utf8_of(object text, const uint8_t** data, Py_ssize_t* n):
    """Point ``data`` and ``n`` at the UTF-8 of ``text`` (a ``str``) and return the object
    that holds it, to keep alive while ``data`` is read: an ASCII ``str`` is its own UTF-8
    (read in place, no copy); another is encoded into a bytes object of our own, since
    ``PyUnicode_AsUTF8AndSize`` would keep a copy inside the caller's ``str`` for as long
    as it lives (2.5x the memory of CJK text).

    Raises
    ------
    TypeError
        If ``text`` is not a ``str``.
    UnicodeEncodeError
        If it holds a lone surrogate.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if PyUnicode_IS_ASCII(text):
        data[0] = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, n)
        return text
    utf8 = PyUnicode_AsUTF8String(text)
    data[0] = <const uint8_t*>PyBytes_AS_STRING(utf8)
    n[0] = PyBytes_GET_SIZE(utf8)
    return utf8


@cython.final
cdef class PieceCache:
    """The entries of a piece cache: ``size`` (a power of two, at least 2, as
    :attr:`BytePairEncoder.cache_size` rounds it) zeroed :c:type:`CacheEntry` records,
    freed with the object."""
    cdef CacheEntry* entries
    cdef int shift
    cdef readonly int64_t size
    cdef int64_t epoch  # the encoder's cache epoch when it was made

    def __cinit__(self, int64_t size, int64_t epoch):
        if size < 2 or size & (size - 1):
            raise ValueError(f"a piece cache holds a power of two entries, at least 2; got {size}")
        self.entries = <CacheEntry*>calloc(<size_t>size, sizeof(CacheEntry))
        if self.entries == NULL:
            raise MemoryError(f"no memory for a piece cache of {size} entries")
        self.size = size
        self.shift = clz64(<uint64_t>size) + 1  # 64 - log2(size)
        self.epoch = epoch

    def __dealloc__(self):
        free(self.entries)


@cython.final
cdef class BytePairEncoder:
    """Compiled tables of a vocabulary and the encoder loops over them.

    Parameters
    ----------
    mergeable_ranks : dict of bytes to int
        Token bytes -> rank (= token id), as in tiktoken. Every one of the 256 single
        bytes must have a rank; ranks are distinct, in ``[0, 2**31 - 1)``.

    Raises
    ------
    ValueError
        If a token is empty, a rank is out of range or repeated, or a byte has no rank.
    """

    def __cinit__(self, dict mergeable_ranks not None, cache_size=DEFAULT_CACHE_SIZE):
        cdef Py_ssize_t n_tokens = len(mergeable_ranks)
        self.cache_size = cache_size
        if n_tokens == 0:
            raise ValueError("mergeable_ranks is empty: it needs at least the 256 single bytes")
        tokens = list(mergeable_ranks)
        ranks = np.fromiter(mergeable_ranks.values(), dtype=np.int64, count=n_tokens)
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n_tokens)
        if ranks.min() < 0 or ranks.max() > MAX_RANK:
            raise ValueError(f"ranks must be in [0, {MAX_RANK}] (the encoder packs three ranks in 64 bits), "
                             f"got {ranks.min()}..{ranks.max()}")
        if lengths.min() == 0:
            raise ValueError("mergeable_ranks holds the empty byte string; tokens must be non-empty")
        self.n_ranks = ranks.max() + 1
        token_len = np.zeros(self.n_ranks, dtype=np.int32)
        token_len[ranks] = lengths
        if np.count_nonzero(token_len) != n_tokens:
            values, counts = np.unique(ranks, return_counts=True)
            raise ValueError(f"rank {values[counts > 1][0]} is given to more than one token")
        token_start = np.zeros(self.n_ranks + 1, dtype=np.int64)
        np.cumsum(token_len, out=token_start[1:])
        order = np.argsort(ranks, kind="stable")
        token_bytes = np.frombuffer(b"".join([tokens[i] for i in order]), dtype=np.uint8)
        self.max_token_len = lengths.max()
        self.whole_shift = table_shift(n_tokens, &self.whole_mask)
        whole = np.empty((self.whole_mask + 1) * sizeof(TokenSlot), dtype=np.uint8)
        byte_pair = np.empty(65536, dtype=np.int32)
        self._arrays = [token_len, token_start, token_bytes, whole, byte_pair]
        self._ints = kept_ints(self.n_ranks)
        self.token_len = <const int32_t*><Py_ssize_t>token_len.ctypes.data
        self.token_start = <const int64_t*><Py_ssize_t>token_start.ctypes.data
        self.token_bytes = <const uint8_t*><Py_ssize_t>token_bytes.ctypes.data
        self.whole = <const TokenSlot*><Py_ssize_t>whole.ctypes.data
        self.byte_pair = <const token_t*><Py_ssize_t>byte_pair.ctypes.data
        self._fill_whole()
        self._fill_bytes()
        self._fill_pairs(int(np.sum(lengths - 1)))
        self._fill_trie()
        self._fill_splits()

    cdef void _fill_whole(self) noexcept:
        """Insert every token into the whole-token table (open addressing, linear probing)."""
        cdef TokenSlot* whole = <TokenSlot*>self.whole
        cdef int64_t rank, n
        cdef const uint8_t* data
        cdef uint64_t head, i
        with nogil:
            for i in range(self.whole_mask + 1):
                whole[i].meta = SLOT_EMPTY
            for rank in range(self.n_ranks):
                n = self.token_len[rank]
                if n == 0:
                    continue
                data = self.token_bytes + self.token_start[rank]
                head = load_head(data, n)
                i = (hash_bytes(data, n, head) * FIB) >> self.whole_shift
                while whole[i].meta != SLOT_EMPTY:
                    i = (i + 1) & self.whole_mask
                whole[i].head = head
                whole[i].tail = slot_tail(data, n)
                whole[i].meta = slot_meta(rank, n)

    cdef int _fill_bytes(self) except -1:
        """The one-byte and two-byte ranks; every byte must be a token (byte-level BPE)."""
        cdef token_t* byte_pair = <token_t*>self.byte_pair
        cdef uint8_t two[8]  # 8, not 2: load_head reads a word (the bytes past 2 masked off)
        cdef int x, y
        missing = []
        for x in range(256):
            two[0] = x
            self.byte_rank[x] = self.token_rank(two, 1)
            if self.byte_rank[x] == NO_RANK:
                missing.append(x)
        if missing:
            raise ValueError(
                f"{len(missing)} of the 256 single bytes have no rank (first: {bytes([missing[0]])!r}); "
                "byte-level BPE needs every byte as a token")
        for x in range(256):
            two[0] = x
            for y in range(256):
                two[1] = y
                byte_pair[(x << 8) | y] = self.token_rank(two, 2)
        return 0

    cdef int _fill_pairs(self, int64_t n_splits) except -1:
        """Build the pair table: every split of every token into two tokens."""
        cdef int64_t rank, k, n_pairs = 0
        cdef int32_t length
        cdef const uint8_t* data
        cdef token_t left, right
        cdef uint64_t key, i
        keys = np.empty(max(n_splits, 1), dtype=np.uint64)
        values = np.empty(max(n_splits, 1), dtype=np.int32)
        cdef uint64_t[::1] key_view = keys
        cdef int32_t[::1] value_view = values
        with nogil:
            for rank in range(self.n_ranks):
                length = self.token_len[rank]
                data = self.token_bytes + self.token_start[rank]
                for k in range(1, length):
                    left = self.token_rank(data, k)
                    if left == NO_RANK:
                        continue
                    right = self.token_rank(data + k, length - k)
                    if right == NO_RANK:
                        continue
                    key_view[n_pairs] = pair_key(left, right)
                    value_view[n_pairs] = <int32_t>rank
                    n_pairs += 1
        self.pair_shift = table_shift(n_pairs, &self.pair_mask)
        pairs = np.full(self.pair_mask + 1, EMPTY, dtype=np.uint64)
        self._arrays.append(pairs)
        cdef uint64_t* table = <uint64_t*><Py_ssize_t>pairs.ctypes.data
        self.pairs = table
        pair_filter = np.zeros((1 << FILTER_BITS) // 64, dtype=np.uint64)
        self._arrays.append(pair_filter)
        cdef uint64_t* bits = <uint64_t*><Py_ssize_t>pair_filter.ctypes.data
        self.pair_filter = bits
        with nogil:
            for k in range(n_pairs):
                key = key_view[k]
                i = (key * FIB) >> (64 - FILTER_BITS)
                bits[i >> 6] |= <uint64_t>1 << (i & 63)
                i = (key * FIB) >> self.pair_shift
                while table[i] != EMPTY:  # a pair's bytes are fixed: it is listed once
                    i = (i + 1) & self.pair_mask
                table[i] = (key << ID_BITS) | <uint64_t>value_view[k]
        return 0

    cdef int _fill_trie(self) except -1:
        """Build the token trie and each token's longest proper prefix token (``next_prefix``).

        Nodes at depth 3 and more are found through the edge table, first built with room
        for every token byte, then copied into a table sized for the edges made.
        """
        cdef int64_t rank, k, length, n_edges = 0
        cdef int32_t node, found
        cdef token_t best
        cdef int64_t next_id = self.n_ranks
        cdef const uint8_t* data
        cdef uint64_t key, i, slot, mask
        cdef int shift
        node2 = np.full(65536, -1, dtype=np.int32)
        next_prefix = np.full(self.n_ranks, -1, dtype=np.int32)
        self._arrays += [node2, next_prefix]
        cdef int32_t* n2 = <int32_t*><Py_ssize_t>node2.ctypes.data
        cdef token_t* prefix = <token_t*><Py_ssize_t>next_prefix.ctypes.data
        self.node2 = n2
        self.next_prefix = prefix
        lengths = np.asarray(self.token_lengths, dtype=np.int64)
        shift = table_shift(max(int(np.sum(np.maximum(lengths - 2, 0))), 1), &mask)
        draft = np.full(mask + 1, EMPTY, dtype=np.uint64)
        cdef uint64_t* table = <uint64_t*><Py_ssize_t>draft.ctypes.data
        with nogil:
            for rank in range(self.n_ranks):
                length = self.token_len[rank]
                data = self.token_bytes + self.token_start[rank]
                best = -1
                node = self.byte_rank[data[0]] if length > 0 else -1
                for k in range(2, length + 1):  # node: the prefix of k - 1 bytes
                    if node < self.n_ranks:
                        best = node
                    if k == 2:
                        key = (<uint64_t>data[0] << 8) | data[1]
                        if n2[key] < 0:
                            found = self.token_rank(data, 2)
                            if found == NO_RANK:
                                found = <int32_t>next_id
                                next_id += 1
                            n2[key] = found
                        node = n2[key]
                        continue
                    key = (<uint64_t>node << 8) | data[k - 1]
                    i = (key * FIB) >> shift
                    while table[i] != EMPTY and table[i] >> 32 != key:
                        i = (i + 1) & mask
                    if table[i] == EMPTY:
                        found = self.token_rank(data, k)
                        if found == NO_RANK:
                            found = <int32_t>next_id
                            next_id += 1
                        table[i] = (key << 32) | <uint32_t>found
                        n_edges += 1
                    node = <int32_t>(table[i] & LOW32)
                if length > 0:
                    prefix[rank] = best
                if next_id >= (1 << 24) - 1:
                    break  # node ids must fit 24 bits of an edge key: no linear encoder
        self.n_nodes = next_id
        self.edge_shift = table_shift(max(n_edges, 1), &self.edge_mask)
        edges = np.full(self.edge_mask + 1, EMPTY, dtype=np.uint64)
        self._arrays.append(edges)
        cdef uint64_t* final = <uint64_t*><Py_ssize_t>edges.ctypes.data
        self.edges = final
        with nogil:
            for k in range(mask + 1):
                slot = table[k]
                if slot != EMPTY:
                    i = ((slot >> 32) * FIB) >> self.edge_shift
                    while final[i] != EMPTY:
                        i = (i + 1) & self.edge_mask
                    final[i] = slot
        return 0

    cdef int _fill_splits(self) except -1:
        """Find the two tokens BPE joins into each token, and check the linear encoder applies.

        In rank order, a token's split is its longest prefix token ``left`` (then shorter
        ones) whose rest is a token ``right``, both made before it (lower ranks, or single
        bytes), that BPE keeps apart when given ranks below the token's
        (:meth:`valid_pair`); the rust-gems ``bpe`` crate builds its ``split_left`` and
        ``split_right`` the same way. A token without one is never made by merging
        (tiktoken still gives it to a piece that is exactly its bytes). The linear encoder
        is then enabled only if this agrees, for every token, with whether the heap
        encoder turns the token's bytes into that token: merges in rank order are what the
        backtracking encoder assumes.
        """
        cdef int64_t length, rank
        cdef token_t left, right, t
        cdef int x
        cdef bint agree = self.n_nodes < (1 << 24) - 1
        split_left = np.full(self.n_ranks, -1, dtype=np.int32)
        split_right = np.full(self.n_ranks, -1, dtype=np.int32)
        self._arrays += [split_left, split_right]
        cdef token_t* sl = <token_t*><Py_ssize_t>split_left.ctypes.data
        cdef token_t* sr = <token_t*><Py_ssize_t>split_right.ctypes.data
        self.split_left = sl
        self.split_right = sr
        for x in range(256):
            sl[self.byte_rank[x]] = sr[self.byte_rank[x]] = self.byte_rank[x]
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef const uint8_t* data
        try:
            with nogil:
                grow_ids(&out, self.max_token_len)
                grow_scratch(&scratch, self.max_token_len)
                for rank in range(self.n_ranks):
                    length = self.token_len[rank]
                    if length < 2:
                        continue
                    t = <token_t>rank
                    data = self.token_bytes + self.token_start[rank]
                    left = self.next_prefix[rank]
                    while left >= 0:
                        if sl[left] >= 0 and (left < t or self.token_len[left] == 1):
                            right = self.token_rank(data + self.token_len[left], length - self.token_len[left])
                            if (right != NO_RANK and sl[right] >= 0 and (right < t or self.token_len[right] == 1)
                                    and self.valid_pair(left, right, t)):
                                sl[rank] = left
                                sr[rank] = right
                                break
                        left = self.next_prefix[left]
                    out.size = 0  # does the heap, without the whole-token shortcut, make it?
                    if length <= SMALL_PIECE:
                        self._encode_small(data, length, &out)
                    else:
                        self._encode_heap(data, length, &out, &scratch)
                    if (out.size == 1 and out.ids[0] == <uint32_t>rank) != (sl[rank] >= 0):
                        agree = False
        finally:
            free_buffers(&out, &scratch)
        self.linear = agree
        return 0

    # ------------------------------------------------------------------ lookups

    cdef inline token_t pair_rank(self, token_t left, token_t right) noexcept nogil:
        """Rank of the bytes of ``left`` joined with those of ``right``, or NO_RANK."""
        cdef uint64_t key = pair_key(left, right)
        cdef uint64_t h = key * FIB
        cdef uint64_t i = h >> (64 - FILTER_BITS)
        cdef uint64_t slot
        if not (self.pair_filter[i >> 6] >> (i & 63)) & 1:
            return NO_RANK  # most pairs that join into no token end here, in L2
        i = h >> self.pair_shift
        while True:
            slot = self.pairs[i]
            if slot >> ID_BITS == key:
                return <token_t>(slot & ID_MASK)
            if slot == EMPTY:
                return NO_RANK
            i = (i + 1) & self.pair_mask

    cdef inline token_t token_rank(self, const uint8_t* data, int64_t n) noexcept nogil:
        """Rank of the token spelled by ``data[:n]``, or NO_RANK."""
        cdef uint64_t head, i
        cdef uint32_t tail, meta
        cdef const TokenSlot* slot
        if n < 1 or n > self.max_token_len:
            return NO_RANK
        head = load_head(data, n)
        tail = slot_tail(data, n)
        meta = slot_meta(0, n)  # the length part, to compare
        i = (hash_bytes(data, n, head) * FIB) >> self.whole_shift
        while True:
            slot = &self.whole[i]
            if slot.meta == SLOT_EMPTY:
                return NO_RANK
            if slot.head == head and slot.tail == tail and (slot.meta & ~ID_MASK) == meta and (
                    n <= 12 or self._same_tail(data, n, slot.meta & ID_MASK)):
                return slot.meta & ID_MASK
            i = (i + 1) & self.whole_mask

    cdef bint _same_tail(self, const uint8_t* data, int64_t n, token_t rank) noexcept nogil:
        """Whether token ``rank`` spells ``data[12:n]`` after the 12 bytes its slot matched
        (and has ``n`` bytes, where the slot's length saturated)."""
        return self.token_len[rank] == n and memcmp(
            self.token_bytes + self.token_start[rank] + 12, data + 12, n - 12) == 0

    cdef inline int32_t child(self, int32_t node, uint8_t byte) noexcept nogil:
        """The trie node one ``byte`` below ``node`` (depth 2 or more), or -1."""
        cdef uint64_t key = (<uint64_t>node << 8) | byte
        cdef uint64_t i = (key * FIB) >> self.edge_shift
        cdef uint64_t slot
        while True:
            slot = self.edges[i]
            if slot >> 32 == key:
                return <int32_t>(slot & LOW32)
            if slot == EMPTY:
                return -1
            i = (i + 1) & self.edge_mask

    cdef inline token_t longest_prefix(self, const uint8_t* data, int64_t n) noexcept nogil:
        """The rank of the longest token that ``data[:n]`` starts with (n >= 1)."""
        cdef token_t best = self.byte_rank[data[0]]
        cdef int32_t node
        cdef int64_t i = 2
        if n == 1:
            return best
        node = self.node2[(<int>data[0] << 8) | data[1]]
        if n > self.max_token_len:
            n = self.max_token_len
        while node >= 0:
            if node < self.n_ranks:
                best = node
            if i >= n:
                break
            node = self.child(node, data[i])
            i += 1
        return best

    cdef inline bint valid_pair(self, token_t left, token_t right, token_t cap) noexcept nogil:
        """Whether BPE, given the ranks below ``cap``, keeps the bytes of ``left`` followed by
        those of ``right`` as exactly these two tokens.

        The merges that made the two tokens are undone, the later one first; at each step
        the two tokens now at the boundary must not join into a token that BPE would merge
        before the merge that undid them (ties go to the leftmost pair). This is the
        rust-gems ``bpe`` crate's ``is_valid_token_pair``; both tokens must have a split.
        """
        cdef token_t limit = cap
        cdef token_t joined
        while True:
            joined = self.pair_rank(left, right)
            if joined < limit:
                return False
            if left > right:
                limit = left
                left = self.split_right[left]
                if left == limit:  # a byte: undo the right token instead
                    limit = right + 1
                    right = self.split_left[right]
                    if right + 1 == limit:
                        return True
            else:
                limit = right + 1
                right = self.split_left[right]
                if right + 1 == limit:
                    limit = left
                    left = self.split_right[left]
                    if left == limit:
                        return True

    # ------------------------------------------------------------------ kernels

    cdef inline int encode_piece(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                                 Scratch* scratch) except -1 nogil:
        """Append the token ids of one piece of ``n`` bytes to ``out``.

        A piece that is one token is found in the whole-token table (path 1), here, inline
        in the splitting loop (nine pieces in ten); any other goes to :meth:`_encode_missed`.
        """
        cdef token_t rank
        if n == 0:
            return 0
        if out.size + n > out.cap:
            grow_ids(out, out.size + n)  # a piece never has more tokens than bytes
        if n == 1:
            rank = self.byte_rank[piece[0]]
        elif n == 2:
            rank = self.byte_pair[(<int>piece[0] << 8) | piece[1]]
        else:
            rank = self.token_rank(piece, n)
        if rank == NO_RANK:
            return self._encode_missed(piece, n, out, scratch)
        out.ids[out.size] = rank
        out.size += 1
        return 0

    cdef int _encode_missed(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                            Scratch* scratch) except -1 nogil:
        """The ids of a piece of ``n`` >= 2 bytes that is not one token; ``out`` has room
        for ``n`` more. One of 3 to ``CACHE_PIECE`` bytes is looked up in the piece cache,
        if ``scratch`` has one (this call's alone: :attr:`cache_size`); a miss is merged
        and, if it makes at most ``CACHE_IDS`` ids, stored in the entry. The cache holds
        only pieces that need merging, so it stays small enough to be found in a core's
        cache.
        """
        cdef uint64_t key0 = 0, key1 = 0, ids, h
        cdef CacheEntry* entry
        cdef int64_t before, i, count
        if scratch.cache == NULL or n < 3 or n > CACHE_PIECE:
            return self._encode_merged(piece, n, out, scratch)
        key0 = load_head(piece, n)
        if n > 8:
            key1 = load_head(piece + 8, n - 8)
        h = (((key0 ^ <uint64_t>n) * FIB) ^ key1) * FIB
        entry = &scratch.cache[h >> scratch.cache_shift]
        if entry.meta & 0xFF == <uint64_t>n and entry.key0 == key0 and entry.key1 == key1:
            count = entry.meta >> 8
            ids = entry.ids
            for i in range(count):
                out.ids[out.size + i] = <uint32_t>((ids >> (ID_BITS * i)) & ID_MASK)
            out.size += count
            return 0
        before = out.size
        self._encode_merged(piece, n, out, scratch)
        count = out.size - before
        if count <= CACHE_IDS:
            ids = 0
            for i in range(count):
                ids |= <uint64_t>out.ids[before + i] << (ID_BITS * i)
            entry.meta = (<uint64_t>count << 8) | <uint64_t>n
            entry.key0 = key0
            entry.key1 = key1
            entry.ids = ids
        return 0

    cdef int _encode_merged(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                            Scratch* scratch) except -1 nogil:
        """The ids of a piece of ``n`` >= 2 bytes that is not one token (paths 2 to 4);
        ``out`` has room for ``n`` more ids."""
        if n > UINT32_MAX:
            with gil:
                raise ValueError(f"a piece of {n} bytes is too long: at most 2**32 - 1 bytes (positions in "
                                 "the heap are 32-bit); split the text first")
        if self.linear and n >= LINEAR_PIECE:
            if n > scratch.cap:
                grow_scratch(scratch, n)
            self._encode_linear(piece, n, out, scratch, NULL)
        elif n <= SMALL_PIECE:
            self._encode_small(piece, n, out)
        else:
            if n > scratch.cap:
                grow_scratch(scratch, n)
            self._encode_heap(piece, n, out, scratch)
        return 0

    cdef int64_t _encode_linear(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                                Scratch* scratch, const Sync* sync) noexcept nogil:
        """The backtracking encoder of the rust-gems ``bpe`` crate (``backtrack_encoder.rs``).

        Tokens are appended left to right, each the longest token the text at that point
        starts with that is valid after the previous token (:meth:`valid_pair`), else its
        longest prefix token, and so on; if none is, the previous token is taken back and
        its position marked in a bitfield as one no encoding passes through. A valid
        token after a valid encoding makes a valid encoding (the ``bpe`` README, corollary IIIa),
        and the valid encoding of a text is unique, so the first one to reach the end is
        BPE's. Each position is given up at most once: linear in ``n`` for a given
        vocabulary. ``scratch`` holds ``n`` bytes; ``out`` has room for ``n`` ids.

        With ``sync`` (``piece`` is ``text[sync.start:sync.target]``), it stops as soon as
        its last token is also the token ending there in the encoding of
        ``text[:sync.target]``: from there on the two encodings agree (the ``bpe`` README,
        corollary III, and uniqueness), so the count is known. Returns that count, or
        -1 when it ran to the end (the ids are then all in ``out``).
        """
        cdef uint64_t* bits = scratch.bits  # bit p: an encoding may still pass through byte p
        cdef int64_t base = out.size, pos = 0, end, at
        cdef token_t token, last
        memset(bits, 0xFF, ((n >> 6) + 1) * sizeof(uint64_t))
        token = self.longest_prefix(piece, n)
        while pos < n:
            end = pos + self.token_len[token]
            if ((bits[end >> 6] >> (end & 63)) & 1 and self.split_left[token] >= 0
                    and (out.size == base or self.valid_pair(<token_t>out.ids[out.size - 1], token, NO_RANK))):
                out.ids[out.size] = <uint32_t>token
                out.size += 1
                pos = end
                if sync != NULL:
                    at = sync.start + end
                    if (sync.last[at] == token and sync.order[at] <= sync.order[sync.target]
                            and sync.order[sync.target] < sync.order[at] + sync.size[at]):
                        return out.size - base + sync.counts[sync.target] - sync.counts[at]
                if pos < n:
                    token = self.longest_prefix(piece + pos, n - pos)
            elif self.next_prefix[token] >= 0:
                token = self.next_prefix[token]
            else:  # nothing valid starts at pos: take the previous token back
                bits[pos >> 6] &= ~(<uint64_t>1 << (pos & 63))
                out.size -= 1
                last = <token_t>out.ids[out.size]
                pos -= self.token_len[last]
                token = last
        return -1

    cdef void _encode_small(self, const uint8_t* piece, int64_t n, IdBuffer* out) noexcept nogil:
        """tiktoken's loop: merge at the lowest rank (leftmost), update both neighbours."""
        cdef token_t ids[SMALL_PIECE]
        cdef token_t ranks[SMALL_PIECE]  # ranks[i]: rank of ids[i] joined with ids[i + 1]
        cdef int64_t m = n, i, at
        cdef token_t best
        for i in range(n):
            ids[i] = self.byte_rank[piece[i]]
        for i in range(n - 1):
            ranks[i] = self.byte_pair[(<int>piece[i] << 8) | piece[i + 1]]
        while m > 1:
            best = NO_RANK
            at = 0
            for i in range(m - 1):
                if ranks[i] < best:
                    best = ranks[i]
                    at = i
            if best == NO_RANK:
                break
            ids[at] = best
            for i in range(at + 1, m - 1):
                ids[i] = ids[i + 1]
            for i in range(at + 1, m - 2):
                ranks[i] = ranks[i + 1]
            m -= 1
            if at > 0:
                ranks[at - 1] = self.pair_rank(ids[at - 1], best)
            if at < m - 1:
                ranks[at] = self.pair_rank(best, ids[at + 1])
        for i in range(m):
            out.ids[out.size + i] = <uint32_t>ids[i]
        out.size += m

    cdef void _encode_heap(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                           Scratch* scratch) noexcept nogil:
        """The heap + bitfield encoder (module docstring, path 3); ``scratch`` holds n bytes."""
        cdef token_t* tok = scratch.tok
        cdef uint64_t* bits = scratch.bits
        cdef uint64_t* heap = scratch.heap
        cdef int64_t size = 0, i, start, mid, end, left
        cdef uint64_t top, on_left, on_right
        cdef token_t rank, a, b, joined
        for i in range(n):
            tok[i] = self.byte_rank[piece[i]]
        memset(bits, 0xFF, ((n >> 6) + 1) * sizeof(uint64_t))
        for i in range(n - 1):
            rank = self.byte_pair[(<int>piece[i] << 8) | piece[i + 1]]
            if rank != NO_RANK:
                heap[size] = (<uint64_t>rank << 32) | <uint64_t>i
                size += 1
        for i in range((size - 2) // 4, -1, -1):
            sift_down(heap, size, i)
        while size > 0:
            top = heap[0]
            rank = <token_t>(top >> 32)
            start = <int64_t><uint32_t>top
            if not (bits[start >> 6] >> (start & 63)) & 1:
                pop(heap, &size)  # start was absorbed by the token on its left
                continue
            a = tok[start]
            mid = start + self.token_len[a]
            b = tok[mid] if mid < n else 0
            if mid >= n or self.token_len[a] + self.token_len[b] != self.token_len[rank]:
                pop(heap, &size)  # the pair at start has grown since this entry was pushed
                continue
            tok[start] = rank
            bits[mid >> 6] &= ~(<uint64_t>1 << (mid & 63))
            # The new pairs on either side replace the top (a pop and a push in one sift).
            on_left = on_right = EMPTY
            if start > 0:
                left = prev_start(bits, start - 1)
                joined = self.pair_rank(tok[left], rank)
                if joined != NO_RANK:
                    on_left = (<uint64_t>joined << 32) | <uint64_t>left
            end = start + self.token_len[rank]
            if end < n:
                joined = self.pair_rank(rank, tok[end])
                if joined != NO_RANK:
                    on_right = (<uint64_t>joined << 32) | <uint64_t>start
            if on_left == EMPTY:
                on_left, on_right = on_right, EMPTY
            if on_left == EMPTY:
                pop(heap, &size)
            else:
                heap[0] = on_left
                sift_down(heap, size, 0)
                if on_right != EMPTY:
                    push(heap, &size, on_right)
        i = 0
        while i < n:
            out.ids[out.size] = <uint32_t>tok[i]
            out.size += 1
            i += self.token_len[tok[i]]

    # ------------------------------------------------------------------ drivers

    def encode_pieces(self, list pieces not None, bint as_list=False):
        """Encode each piece (a ``str``, as UTF-8) on its own; the ids in one array.

        Parameters
        ----------
        pieces : list of str

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
            Or a list of int with ``as_list``.

        Raises
        ------
        UnicodeEncodeError
            If a piece holds a lone surrogate (not encodable as UTF-8).
        """
        cdef Py_ssize_t n_pieces = len(pieces), i
        cdef const char** data = <const char**>malloc((n_pieces + 1) * sizeof(char*))
        cdef Py_ssize_t* lengths = <Py_ssize_t*>malloc((n_pieces + 1) * sizeof(Py_ssize_t))
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cache = self._take_cache(&scratch)  # this call's alone until given back
        try:
            if data == NULL or lengths == NULL:
                raise MemoryError()
            for i in range(n_pieces):
                data[i] = PyUnicode_AsUTF8AndSize(pieces[i], &lengths[i])
            with nogil:
                for i in range(n_pieces):
                    self.encode_piece(<const uint8_t*>data[i], lengths[i], &out, &scratch)
            return self._result(&out, as_list)
        finally:
            self._give_back(cache)
            free(data)
            free(lengths)
            free_buffers(&out, &scratch)

    def encode_bytes(self, const uint8_t[::1] data not None, bint as_list=False):
        """Encode ``data`` as one piece (no pre-tokenization); returns as :meth:`encode_pieces`.
        ValueError if ``data`` is 2**32 bytes or longer (positions in the heap are 32-bit)."""
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cache = self._take_cache(&scratch)  # this call's alone until given back
        try:
            with nogil:
                self.encode_piece(&data[0] if data.shape[0] else NULL, data.shape[0], &out, &scratch)
            return self._result(&out, as_list)
        finally:
            self._give_back(cache)
            free_buffers(&out, &scratch)

    def encode_table(self, const uint8_t[::1] data not None, const int64_t[::1] offsets not None):
        """Encode each piece of a piece table on its own (no split); the ids in one array.

        Parameters
        ----------
        data : numpy.ndarray of uint8, shape (n_bytes,)
            The pieces' bytes, concatenated (any bytes, not only UTF-8).
        offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
            Piece ``i`` is ``data[offsets[i]:offsets[i + 1]]``; nondecreasing, 0 to n_bytes.

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
            The ids of piece 0, then of piece 1, ...; their token bytes, concatenated,
            are ``data``.

        Raises
        ------
        ValueError
            If ``offsets`` does not describe ``data``.
        """
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef Py_ssize_t i, n_pieces = offsets.shape[0] - 1
        cdef const uint8_t* start = &data[0] if data.shape[0] else NULL
        if n_pieces < 0 or offsets[0] != 0 or offsets[n_pieces] != data.shape[0]:
            raise ValueError("offsets must start at 0 and end at len(data)")
        for i in range(n_pieces):
            if offsets[i + 1] < offsets[i]:
                raise ValueError(f"offsets must be nondecreasing (piece {i})")
        try:  # no piece cache: every piece is unique
            with nogil:
                for i in range(n_pieces):
                    self.encode_piece(start + offsets[i], offsets[i + 1] - offsets[i], &out, &scratch)
            return self._result(&out, False)
        finally:
            free_buffers(&out, &scratch)

    cdef int64_t _split_and_encode(self, const uint8_t* text, int64_t start, int64_t stop, int64_t n,
                                   const Tables* pattern, Stack* stack,
                                   IdBuffer* out, Scratch* scratch, int64_t limit, bint keep,
                                   int64_t* n_read) except -2 nogil:
        """Cut ``text[start:stop]`` of a text of ``n`` bytes into pieces with the compiled
        splitter (``next_piece_end``: ASCII text 64 bytes at a time for a pattern with block
        rules, ``Tables.blocks``) and encode each one (text the pattern does not match is dropped, as by tiktoken).
        ``start`` and ``stop`` are 0 and ``n`` or safe cuts (``Program.safe_cut``): no piece
        crosses them, and ``$`` and lookaheads still see the text after ``stop``.

        With ``keep`` the ids are appended to ``out``; without, only counted. Stops as
        soon as the count exceeds ``limit``. Returns the count, or -1 past the limit;
        ``n_read`` gets the bytes split and encoded.
        """
        cdef int64_t end, count = 0, before
        cdef PieceReader reader
        start_reading(&reader, pattern, 0)
        while start < stop:
            end = next_piece_end(&reader, pattern, stack, text, start, n, 0)
            if end < 0:
                start += char_length(text, start, n)
                continue
            before = out.size
            self.encode_piece(text + start, end - start, out, scratch)
            count += out.size - before
            if not keep:
                out.size = 0
            start = end
            if count > limit:
                n_read[0] = start
                return -1
        n_read[0] = stop
        return count

    def encode_text(self, const uint8_t[::1] data not None, Program pattern not None, bint as_list=False,
                    Py_ssize_t start=0, stop=None):
        """Split UTF-8 ``data`` with a compiled pattern and encode it.

        Parameters
        ----------
        data : bytes-like, uint8
        pattern : bpetrain.splitting._matcher.Program
            The split pattern (:attr:`bpetrain.splitting.pattern.SplitPattern.program`).
        start, stop : int, optional
            Encode only the pieces of ``data[start:stop]``, where both are 0, ``len(data)``
            or safe cuts (``pattern.safe_cut``): the ids of consecutive ranges joined are
            the ids of the whole.

        Raises
        ------
        ValueError
            If not ``0 <= start <= stop <= len(data)``.

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
            Or a list of int with ``as_list``.
        """
        cdef Py_ssize_t end = data.shape[0] if stop is None else stop
        if not 0 <= start <= end <= data.shape[0]:
            raise ValueError(f"need 0 <= start <= stop <= len(data), got {start}, {end}, {data.shape[0]}")
        return self._encode_utf8(&data[0] if data.shape[0] else NULL, data.shape[0], start, end, pattern, as_list)

    def encode_str(self, str text not None, Program pattern not None, bint as_list=False, Needles needles=None,
                   Needles specials=None):
        """:meth:`encode_text` of ``text``'s UTF-8: the whole text, for a call per document
        (an ASCII ``str`` is read in place; another is encoded into a bytes object of our
        own, so nothing is kept in ``text``).

        With ``specials`` (allowed special tokens, with their ids), each occurrence of one
        is its id, and the text between them is encoded piece by piece as a text of its
        own, as tiktoken does: the first occurrence from the left, the longest there.

        Raises
        ------
        DisallowedText
            If ``text`` holds one of ``needles`` (index 0).
        UnicodeEncodeError
            If ``text`` holds a lone surrogate (not encodable as UTF-8).
        ValueError
            If ``specials`` has no ids.
        """
        cdef Py_ssize_t n
        cdef const uint8_t* data
        utf8 = utf8_of(text, &data, &n)  # alive until the kernel returns
        if needles is not None and needles.found_in(data, n):
            raise DisallowedText(0)
        if specials is not None:
            specials.require_ids()
        return self._encode_utf8(data, n, 0, n, pattern, as_list, specials)

    cdef int64_t _encode_segments(self, const uint8_t* data, int64_t n, const Tables* pattern, Stack* stack,
                                  IdBuffer* out, Scratch* scratch, Needles specials, bint keep) except -2 nogil:
        """Split and encode ``data[:n]`` where each of ``specials`` found (the first from the
        left, the longest there) is its id, and the text between them is a text of its own,
        as tiktoken does. With ``keep`` the ids are appended to ``out``; without, only
        counted. Returns the count."""
        cdef int64_t n_read, pos = 0, hit, which = 0, count = 0, length
        while True:
            hit = specials.find(data + pos, n - pos, &which)
            length = n - pos if hit < 0 else hit
            if length > 0:  # the text before the special token (or the rest), as a text of its own
                count += self._split_and_encode(data + pos, 0, length, length, pattern, stack, out, scratch,
                                                INT64_MAX, keep, &n_read)
            if hit < 0:
                return count
            count += 1
            if keep:
                if out.size + 1 > out.cap:
                    grow_ids(out, out.size + 1)
                out.ids[out.size] = specials.ids[which]
                out.size += 1
            pos += hit + specials.ends[which + 1] - specials.ends[which]

    cdef object _encode_utf8(self, const uint8_t* data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end,
                             Program pattern, bint as_list, Needles specials=None):
        """The ids of the pieces of ``data[start:end]`` (``data`` of ``n`` bytes). With
        ``specials`` (``start`` 0 and ``end`` ``n``), each of them found is its id
        (:meth:`_encode_segments`)."""
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef Stack stack = Stack(NULL, 0, 0)
        cdef int64_t n_read
        cache = self._take_cache(&scratch)  # this call's alone until given back
        try:
            with nogil:
                grow_ids(&out, (end - start) // 3 + 64)  # about the ids of real text: one growth at most
                if specials is not None:
                    self._encode_segments(data, n, &pattern.tables, &stack, &out, &scratch, specials, True)
                else:
                    self._split_and_encode(data, start, end, n, &pattern.tables, &stack, &out, &scratch,
                                           INT64_MAX, True, &n_read)
            return self._result(&out, as_list)
        finally:
            self._give_back(cache)
            free_buffers(&out, &scratch)
            free_stack(&stack)

    def encode_batch(self, list texts not None, Program pattern not None, int output, Needles needles=None,
                     Needles specials=None):
        """Split and encode each of ``texts`` (``str``, read as UTF-8) as :meth:`encode_text`
        does, all in one call without the GIL.

        Parameters
        ----------
        texts : list of str
        pattern : bpetrain.splitting._matcher.Program
        output : int
            ``BATCH_LISTS``: a list of lists of int, not yet tracked by the garbage
            collector (pass them to :func:`track_lists`). ``BATCH_ARRAYS``: ``(ids, offsets)``,
            the ids of every text in one uint32 array, shape (n_tokens,), and int64
            offsets, shape (len(texts) + 1,): text ``i`` has ``ids[offsets[i]:offsets[i + 1]]``.
            ``BATCH_COUNTS``: the token count of each text, int64 array, shape (len(texts),),
            no ids kept.
        needles : Needles, optional
            Strings no text may hold (disallowed special tokens), looked for without the
            GIL before each text is encoded.
        specials : Needles, optional
            Allowed special tokens, with their ids: each found is its id, and the text
            between them a text of its own (:meth:`encode_str`).

        Raises
        ------
        DisallowedText
            With the index of the first text that holds one of ``needles``.
        TypeError
            If an item is not a ``str``.
        UnicodeEncodeError
            If a text holds a lone surrogate (the caller replaces them and calls again).
        """
        cdef Py_ssize_t n_texts = len(texts), i
        cdef const char** data = <const char**>malloc((n_texts + 1) * sizeof(char*))
        cdef Py_ssize_t* lengths = <Py_ssize_t*>malloc((n_texts + 1) * sizeof(Py_ssize_t))
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef Stack stack = Stack(NULL, 0, 0)
        cdef int64_t n_read, count, total = 0, bad = -1
        cdef bint keep = output != BATCH_COUNTS
        if output not in (BATCH_LISTS, BATCH_ARRAYS, BATCH_COUNTS):
            raise ValueError(f"output must be BATCH_LISTS, BATCH_ARRAYS or BATCH_COUNTS, got {output}")
        if specials is not None:
            specials.require_ids()
        offsets = np.empty(n_texts + 1, dtype=np.int64)
        cdef int64_t[::1] ends = offsets
        encoded = []  # the UTF-8 of the texts that are not ASCII, alive until the kernel returns
        cache = self._take_cache(&scratch)  # this call's alone until given back
        try:
            if data == NULL or lengths == NULL:
                raise MemoryError()
            for i in range(n_texts):
                item = texts[i]
                utf8 = utf8_of(item, <const uint8_t**>&data[i], &lengths[i])
                if utf8 is not item:
                    encoded.append(utf8)
                total += lengths[i]
            ends[0] = 0
            with nogil:
                if keep:
                    grow_ids(&out, total // 3 + 64)  # about the ids of real text: one growth at most
                for i in range(n_texts):
                    if needles is not None and needles.found_in(<const uint8_t*>data[i], lengths[i]):
                        bad = i
                        break
                    if specials is not None:
                        count = self._encode_segments(<const uint8_t*>data[i], lengths[i], &pattern.tables, &stack,
                                                      &out, &scratch, specials, keep)
                    else:
                        count = self._split_and_encode(<const uint8_t*>data[i], 0, lengths[i], lengths[i],
                                                       &pattern.tables, &stack,
                                                       &out, &scratch, INT64_MAX, keep, &n_read)
                    ends[i + 1] = out.size if keep else ends[i] + count
            if bad >= 0:
                raise DisallowedText(bad)
            if output == BATCH_LISTS:
                return self._lists(out.ids, &ends[0], n_texts)
            if output == BATCH_ARRAYS:
                return _to_array(&out), offsets
            return np.diff(offsets)
        finally:
            self._give_back(cache)
            free(data)
            free(lengths)
            free_buffers(&out, &scratch)
            free_stack(&stack)

    def count_str(self, str text not None, Program pattern not None, int64_t limit):
        """Count the tokens of ``text`` (its UTF-8, read as :meth:`encode_str` reads it) as
        :meth:`encode_text` would make them, stopping as soon as the count exceeds ``limit``.

        Returns
        -------
        (int, int)
            The count, or -1 if it exceeds ``limit``; and the bytes of UTF-8 read to decide.

        Raises
        ------
        UnicodeEncodeError
            If ``text`` holds a lone surrogate (not encodable as UTF-8).
        """
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef int64_t count, n_read
        cdef Py_ssize_t n
        cdef const uint8_t* data
        cdef Stack stack = Stack(NULL, 0, 0)
        utf8 = utf8_of(text, &data, &n)  # alive until the kernel returns
        cache = self._take_cache(&scratch)  # this call's alone until given back
        try:
            with nogil:
                count = self._split_and_encode(data, 0, n, n, &pattern.tables, &stack, &out, &scratch,
                                               limit, False, &n_read)
            return count, n_read
        finally:
            self._give_back(cache)
            free_buffers(&out, &scratch)
            free_stack(&stack)

    def count_pieces(self, list pieces not None, int64_t limit):
        """Count the tokens of the pieces, stopping once the count exceeds ``limit``.

        Returns
        -------
        int
            The count, or -1 if it exceeds ``limit``.
        """
        cdef Py_ssize_t n_pieces = len(pieces), i, length
        cdef const char* data
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef int64_t count = 0
        cache = self._take_cache(&scratch)  # this call's alone until given back
        try:
            for i in range(n_pieces):
                data = PyUnicode_AsUTF8AndSize(pieces[i], &length)
                out.size = 0
                self.encode_piece(<const uint8_t*>data, length, &out, &scratch)
                count += out.size
                if count > limit:
                    return -1
            return count
        finally:
            self._give_back(cache)
            free_buffers(&out, &scratch)

    def _py_encode_bytes(self, const uint8_t[::1] data not None, str path):
        """Test hook: encode ``data`` as one piece on one path ("small", "heap" or "linear"),
        without the whole-token lookup; a list of int."""
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL, 0)
        cdef int64_t n = data.shape[0]
        if path not in ("small", "heap", "linear"):
            raise ValueError(f"path must be 'small', 'heap' or 'linear', got {path!r}")
        if path == "small" and n > SMALL_PIECE:
            raise ValueError(f"the small path takes at most {SMALL_PIECE} bytes, got {n}")
        if path == "linear" and not self.linear:
            raise ValueError("the linear encoder does not apply to this vocabulary")
        try:
            grow_ids(&out, n + 1)
            grow_scratch(&scratch, n + 1)
            if n:
                if path == "small":
                    self._encode_small(&data[0], n, &out)
                elif path == "heap":
                    self._encode_heap(&data[0], n, &out, &scratch)
                else:
                    self._encode_linear(&data[0], n, &out, &scratch, NULL)
            return self._as_list(out.ids, out.size)
        finally:
            free_buffers(&out, &scratch)

    cdef object _result(self, IdBuffer* out, bint as_list):
        return self._as_list(out.ids, out.size) if as_list else _to_array(out)

    cdef list _as_list(self, const uint32_t* ids, int64_t n):
        """The ids as a list of the kept int objects (:func:`kept_ints`; a special token's
        id, past the ranks, gets a new one)."""
        cdef list result = PyList_New(n)
        self._fill(PySequence_Fast_ITEMS(result), ids, n)
        return result

    cdef int _fill(self, PyObject** items, const uint32_t* ids, int64_t n) except -1:
        """``items[i]`` (of a list just made): the int of ``ids[i]``, under the GIL."""
        if fill_items(items, ids, n, PySequence_Fast_ITEMS(self._ints), self.n_ranks) or not ints_kept:
            finish_items(items, ids, n)
        return 0

    def join_as_list(self, list arrays not None):
        """The ids of ``arrays`` (uint32 arrays, shape (n,) each), one after another, in
        one list of the kept ints: the parts of a text encoded on several threads
        become its list without a list per part (joining lists raised and lowered the
        count of every id of every part after the first).

        Raises
        ------
        TypeError, ValueError
            If an item is not a C-contiguous uint32 array.
        """
        cdef const uint32_t[::1] part
        cdef Py_ssize_t total = 0, at = 0
        cdef list result
        cdef PyObject** items
        for part in arrays:
            total += part.shape[0]
        result = PyList_New(total)
        items = PySequence_Fast_ITEMS(result)
        for part in arrays:
            if part.shape[0]:
                self._fill(items + at, &part[0], part.shape[0])
            at += part.shape[0]
        return result

    cdef list _lists(self, const uint32_t* ids, const int64_t* ends, Py_ssize_t n_texts):
        """The ids of each text (``ids[ends[i]:ends[i + 1]]``, ``ends[0]`` = 0) as a list of
        the kept ints, made under the GIL and filled without it: a second thread needs
        the GIL only while the lists are made, not while they are filled.

        The lists are not tracked by the garbage collector until :func:`track_lists`:
        collections set off by our own allocations then skip them (they took half the
        time lists took), and nothing else sees them before. The list of them is untracked
        while their items are written, so no other thread can reach an unfilled one
        (``gc.get_objects``).
        """
        cdef PyObject*** rows = <PyObject***>malloc((n_texts + 1) * sizeof(PyObject**))
        cdef PyObject* const* ints = PySequence_Fast_ITEMS(self._ints)
        cdef uint32_t n_ints = self.n_ranks
        cdef list result = PyList_New(n_texts)
        cdef PyObject** made = PySequence_Fast_ITEMS(result)
        cdef list row
        cdef Py_ssize_t i
        cdef bint other = False
        PyObject_GC_UnTrack(<PyObject*>result)
        try:
            if rows == NULL:
                raise MemoryError()
            for i in range(n_texts):
                row = PyList_New(ends[i + 1] - ends[i])  # its items NULL until filled
                PyObject_GC_UnTrack(<PyObject*>row)
                Py_INCREF(row)  # result's reference
                made[i] = <PyObject*>row
                rows[i] = PySequence_Fast_ITEMS(row)
            with nogil:
                for i in range(n_texts):
                    if fill_items(rows[i], ids + ends[i], ends[i + 1] - ends[i], ints, n_ints):
                        other = True
            if other or not ints_kept:
                for i in range(n_texts):
                    finish_items(rows[i], ids + ends[i], ends[i + 1] - ends[i])
            return result
        finally:
            PyObject_GC_Track(<PyObject*>result)
            free(rows)

    @property
    def cache_size(self):
        """int: entries of each piece cache (32 bytes each), 0 if there is none.

        A piece cache maps pieces of 3 to 16 bytes that are not one token to their ids
        (up to three; a single token is found in the whole-token table first). Each call
        that runs takes a cache of its own (the last one given back, or a new, empty one)
        and gives it back when it returns, so threads never share a cache while they
        encode (shared caches cost a second thread a sixth of its speed: every miss wrote
        cache lines the other core was reading), and a thread's next call finds the
        pieces it has seen. There are as many caches as calls have run at once. Setting
        the size drops every cache (rounded up to a power of two, at least 2; 0: no
        cache); calls already running finish with theirs.

        Raises
        ------
        TypeError
            If the size is not an integer.
        ValueError
            If it is negative or above 2**32.
        """
        return self._cache_entries

    @cache_size.setter
    def cache_size(self, size):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"cache_size must be an int (entries; 0 turns the cache off), got {type(size).__name__}")
        if not 0 <= size <= 1 << 32:
            raise ValueError(f"cache_size must be in [0, 2**32] entries of 32 bytes, got {size}")
        cdef int64_t entries = 2
        while entries < size:
            entries <<= 1
        self._cache_entries = entries if size else 0
        self._caches = []  # caches taken now are not given back (their size is the old one)
        self._cache_epoch += 1

    @property
    def spare_caches(self):
        """int: piece caches kept for the next calls (at most as many as calls ran at once)."""
        return len(self._caches)

    cdef object _take_cache(self, Scratch* scratch):
        """Point ``scratch`` at a piece cache for this call alone: a spare one, or a new one.
        Returns it (or None: no cache), for :meth:`_give_back` once the kernel has returned."""
        cdef PieceCache cache
        if self._cache_entries == 0:
            return None
        cache = self._caches.pop() if self._caches else PieceCache(self._cache_entries, self._cache_epoch)
        scratch.cache = cache.entries
        scratch.cache_shift = cache.shift
        return cache

    cdef void _give_back(self, object cache):
        """Keep ``cache`` for the next call, unless the caches were dropped since it was taken."""
        if cache is not None and (<PieceCache>cache).epoch == self._cache_epoch:
            self._caches.append(cache)

    @property
    def token_lengths(self):
        """numpy.ndarray of int32, shape (n_ranks,): bytes of each rank's token (0: none)."""
        return self._arrays[0]


cdef object _to_array(IdBuffer* out):
    """Copy the ids into a new uint32 array (NumPy's C API: a typed memoryview of the new
    array cost ~0.5 us, a tenth of a call on a 1 KB text)."""
    cdef cnp.npy_intp size = out.size
    result = cnp.PyArray_EMPTY(1, &size, cnp.NPY_UINT32, 0)
    if out.size:
        memcpy(cnp.PyArray_DATA(result), out.ids, out.size * sizeof(uint32_t))
    return result
