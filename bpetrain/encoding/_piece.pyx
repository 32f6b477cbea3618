# cython: language_level=3
"""One piece to its token ids, by tiktoken's rule; four paths give that result:

1. The whole piece is looked up first (``_tables.token_rank``; :func:`encode_piece`,
   inlined into each text loop): most pieces of real text are one token.
2. Pieces of at least ``LINEAR_PIECE`` bytes go to the linear encoder
   (``bpetrain.encoding._linear``), where the vocabulary merges in rank order
   (``RankTables.linear``); without it paths 3 and 4 take every piece.
3. Shorter pieces (up to ``SMALL_PIECE`` bytes) run tiktoken's own loop
   (``bpetrain.encoding._heap.encode_small``).
4. Longer pieces, where the linear encoder does not apply, use the heap + bitfield
   encoder (``bpetrain.encoding._heap.encode_heap``).

In front of paths 2 to 4, a piece of 3 to ``CACHE_PIECE`` bytes is looked up in the
call's piece cache (:func:`encode_missed`, :class:`PieceCaches`).
"""
cimport cython
from libc.stdint cimport UINT32_MAX, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free

from bpetrain.encoding._buffers cimport CacheEntry, grow_scratch
from bpetrain.encoding._heap cimport SMALL_PIECE, encode_heap, encode_small
from bpetrain.encoding._linear cimport LINEAR_PIECE, encode_linear
from bpetrain.encoding._tables cimport FIB, ID_BITS, ID_MASK, clz64, load_head


cdef int encode_missed(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       Scratch* scratch) except -1 nogil:
    """The ids of a piece of ``n`` >= 2 bytes that is not one token; ``out`` has room
    for ``n`` more. One of 3 to ``CACHE_PIECE`` bytes is looked up in the piece cache,
    if ``scratch`` has one (this call's alone: :class:`PieceCaches`); a miss is merged
    and, if it makes at most ``CACHE_IDS`` ids, stored. The cache holds only pieces
    that need merging, so it stays small enough to be found in a core's cache.

    The entries are in pairs (two ways of one set, the 64 bytes of one cache line when
    the entries are aligned): a piece hashes to a pair and is looked for in both; a new
    piece goes first and the first moves second, so of two pieces of one hash the newer
    two stay. On 1 MB of Spanish and English fortunes (cl100k_base), counted with a model of
    the cache, one entry per hash and three ids merged 27,192 pieces, two ways and five ids
    23,967, of 21,390 distinct.
    An entry keeps ids 0 to 2 in ``ids`` and ids 3 and 4 above the length and count of
    ``meta`` (:c:type:`CacheEntry`).
    """
    cdef uint64_t key0 = 0, key1 = 0, ids, meta, h
    cdef CacheEntry* entry
    cdef int64_t before, i, count
    if scratch.cache == NULL or n < 3 or n > CACHE_PIECE:
        return encode_merged(t, piece, n, out, scratch)
    key0 = load_head(piece, n)
    if n > 8:
        key1 = load_head(piece + 8, n - 8)
    h = (((key0 ^ <uint64_t>n) * FIB) ^ key1) * FIB
    entry = &scratch.cache[(h >> scratch.cache_shift) & ~(<uint64_t>1)]  # the first of the pair
    for i in range(2):
        meta = entry[i].meta
        if meta & 0xFF == <uint64_t>n and entry[i].key0 == key0 and entry[i].key1 == key1:
            count = (meta >> 8) & 0xFF
            ids = entry[i].ids
            for i in range(count if count < 3 else 3):
                out.ids[out.size + i] = <uint32_t>((ids >> (ID_BITS * i)) & ID_MASK)
            if count > 3:
                out.ids[out.size + 3] = <uint32_t>((meta >> 16) & ID_MASK)
            if count > 4:
                out.ids[out.size + 4] = <uint32_t>((meta >> (16 + ID_BITS)) & ID_MASK)
            out.size += count
            return 0
    before = out.size
    encode_merged(t, piece, n, out, scratch)
    count = out.size - before
    if count <= CACHE_IDS:
        ids = 0
        meta = (<uint64_t>count << 8) | <uint64_t>n
        for i in range(count):
            if i < 3:
                ids |= <uint64_t>out.ids[before + i] << (ID_BITS * i)
            else:
                meta |= <uint64_t>out.ids[before + i] << (16 + ID_BITS * (i - 3))
        entry[1] = entry[0]
        entry[0].meta = meta
        entry[0].key0 = key0
        entry[0].key1 = key1
        entry[0].ids = ids
    return 0


cdef int encode_merged(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       Scratch* scratch) except -1 nogil:
    """The ids of a piece of ``n`` >= 2 bytes that is not one token (paths 2 to 4);
    ``out`` has room for ``n`` more ids."""
    if n > UINT32_MAX:
        with gil:
            raise ValueError(f"a piece of {n} bytes is too long: at most 2**32 - 1 bytes (positions in "
                             "the heap are 32-bit); split the text first")
    if t.linear and n >= LINEAR_PIECE:
        if n > scratch.cap:
            grow_scratch(scratch, n)
        encode_linear(t, piece, n, out, scratch, NULL)
    elif n <= SMALL_PIECE:
        encode_small(t, piece, n, out)
    else:
        if n > scratch.cap:
            grow_scratch(scratch, n)
        encode_heap(t, piece, n, out, scratch)
    return 0


@cython.final
cdef class PieceCache:
    """The entries of a piece cache: ``size`` (a power of two, at least 2, as
    :attr:`PieceCaches.size` rounds it) zeroed :c:type:`CacheEntry` records, freed with
    the object."""
    cdef CacheEntry* entries
    cdef int shift
    cdef readonly int64_t size
    cdef int64_t epoch  # the pool's epoch when it was made

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
cdef class PieceCaches:
    """The piece caches of one encoder (``BytePairEncoder.cache_size`` says what a piece
    cache is and why each call takes its own).

    Parameters
    ----------
    size : int
        Entries of each cache (:attr:`size`).
    """

    def __cinit__(self, size):
        self.spares = []
        self.size = size

    @property
    def size(self):
        """int: entries of each piece cache, 0 if there is none (``BytePairEncoder.cache_size``
        says what setting it does and what it raises)."""
        return self.entries

    @size.setter
    def size(self, size):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"cache_size must be an int (entries; 0 turns the cache off), got {type(size).__name__}")
        if not 0 <= size <= 1 << 32:
            raise ValueError(f"cache_size must be in [0, 2**32] entries of 32 bytes, got {size}")
        cdef int64_t entries = 2
        while entries < size:
            entries <<= 1
        self.entries = entries if size else 0
        self.spares = []  # caches taken now are not given back (their size is the old one)
        self.epoch += 1

    @property
    def n_spares(self):
        """int: caches kept for the next calls (at most as many as calls ran at once)."""
        return len(self.spares)

    cdef object take(self, Scratch* scratch):
        """Point ``scratch`` at a piece cache for this call alone: a spare one, or a new one.
        Returns it (or None: no cache), for :meth:`give_back` once the kernel has returned."""
        cdef PieceCache cache
        if self.entries == 0:
            return None
        cache = self.spares.pop() if self.spares else PieceCache(self.entries, self.epoch)
        scratch.cache = cache.entries
        scratch.cache_shift = cache.shift
        return cache

    cdef void give_back(self, object cache):
        """Keep ``cache`` for the next call, unless the caches were dropped since it was taken."""
        if cache is not None and (<PieceCache>cache).epoch == self.epoch:
            self.spares.append(cache)
