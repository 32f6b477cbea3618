# cython: language_level=3
"""One piece to its token ids: the piece table and the whole-token lookup, inlined into
each text loop, and, for the pieces that need merging, the encoder chosen by length."""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

from bpetrain._types cimport token_t
from bpetrain.encoding._buffers cimport CacheEntry, IdBuffer, PieceTable, Scratch, ShortEntry, grow_ids
from bpetrain.encoding._tables cimport (FIB, ID_BITS, ID_MASK, NO_RANK, RankTables, bpetrain_head, load_head,
                                       token_rank)

cdef extern from *:
    """
    #include "_portable.h"
    #define BPETRAIN_PREFETCH_ENTRY(addr) BPETRAIN_PREFETCH(addr, 0, 3)
    """
    void prefetch_entry "BPETRAIN_PREFETCH_ENTRY"(const void* addr) noexcept nogil

cdef enum:
    CACHE_PIECE = 16  # longest piece the piece table holds in an entry (bytes)
    CACHE_IDS = 5     # most ids of such a piece it holds (21 bits each: three in ids, two in meta)
    SHORT_PIECE = 8   # longest piece the short part of the piece table holds (16-byte entries)
    SHORT_IDS = 3     # most ids of such a piece it holds
    SHORT_BITS = 19   # bits of each of those ids (SHORT_MASK: all ones)
    SHORT_MASK = (1 << 19) - 1
    LONG_PIECE = 255  # longest piece it holds at all (17 bytes and more: in its arena; the
                      # entry keeps the length in 8 bits)

cdef int encode_merged(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       Scratch* scratch) except -1 nogil
cdef int encode_new_short(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out, Scratch* scratch,
                          uint64_t key0, uint64_t h) except -1 nogil
cdef int encode_long(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                     Scratch* scratch) except -1 nogil
cdef int encode_new(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out, Scratch* scratch,
                    uint64_t key0, uint64_t key1, uint64_t h) except -1 nogil


cdef inline uint64_t piece_hash(uint64_t key0, uint64_t key1, int64_t n) noexcept nogil:
    """The hash of a piece of ``n`` <= 16 bytes whose bytes 0..7 are ``key0`` and 8..15 ``key1``."""
    return (((key0 ^ <uint64_t>n) * FIB) ^ key1) * FIB


# A piece's key for its piece-table lookup (:func:`piece_key`): its bytes 0..7 and 8..15
# (``load_head``; key1 0 for a piece of up to SHORT_PIECE bytes) and ``piece_hash``.
cdef struct PieceKey:
    uint64_t key0
    uint64_t key1
    uint64_t h


cdef inline void piece_key(const uint8_t* piece, int64_t n, PieceKey* key) noexcept nogil:
    """Fill ``key`` for ``piece[:n]``, of 1 to ``CACHE_PIECE`` bytes."""
    key.key0 = bpetrain_head(piece, n)
    key.key1 = load_head(piece + 8, n - 8) if n > SHORT_PIECE else 0
    key.h = piece_hash(key.key0, key.key1, n)


cdef inline void prefetch_piece(const uint8_t* piece, int64_t n, const Scratch* scratch, PieceKey* key) noexcept nogil:
    """Fill ``key`` for ``piece[:n]`` (:func:`piece_key`) and ask the processor to fetch the
    piece-table entry where :func:`encode_keyed` will start looking for it (1 to
    ``CACHE_PIECE`` bytes and a table; nothing otherwise), so that a text loop that finds
    the next piece before it encodes this one (as ``_encoder.split_and_encode`` does) has
    that entry's cache miss, which the lookup of a piece mostly waits for, run meanwhile.
    A hint: the ids do not depend on it, and an entry the table has moved since (grown,
    emptied) is only a wasted fetch."""
    cdef const PieceTable* table = scratch.cache
    if table == NULL or <uint64_t>(n - 1) >= CACHE_PIECE:  # one test for n < 1 and n > CACHE_PIECE
        return
    piece_key(piece, n, key)
    if n <= SHORT_PIECE:
        prefetch_entry(&table.shorts[key.h >> table.short_shift])
    else:
        prefetch_entry(&table.entries[key.h >> table.shift])


cdef inline int encode_piece(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                             Scratch* scratch) except -1 nogil:
    """Append the token ids of one piece of ``n`` bytes to ``out`` (:func:`encode_keyed`)."""
    cdef PieceKey key
    if scratch.cache != NULL and 1 <= n <= CACHE_PIECE:
        piece_key(piece, n, &key)
    else:
        key.key0 = key.key1 = key.h = 0  # not read
    return encode_keyed(t, piece, n, out, scratch, &key)


cdef inline token_t direct_rank(const RankTables* t, const uint8_t* piece, int64_t n) noexcept nogil:
    """The rank of a piece of 1 or 2 bytes, from the direct tables (``NO_RANK`` if none)."""
    return t.byte_rank[piece[0]] if n == 1 else t.byte_pair[(<int>piece[0] << 8) | piece[1]]


cdef inline int encode_keyed(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                             Scratch* scratch, const PieceKey* key) except -1 nogil:
    """Append the token ids of one piece of ``n`` bytes to ``out``; ``key`` is its
    :func:`piece_key` if it has 1 to ``CACHE_PIECE`` bytes and there is a table (else
    not read).

    A piece of 1 to ``CACHE_PIECE`` bytes is looked up in the call's piece table
    (``scratch.cache``, if any), which holds every such piece seen with its ids, one token
    or several: most pieces of real text are found there with one probe. Pieces of 1 to
    ``SHORT_PIECE`` bytes, most of those of real text, have a part of the table of their
    own, of 16-byte entries (the piece's bytes, its length and up to ``SHORT_IDS`` ids),
    so that more of the pieces in use stay in the processor's caches; a piece not found
    goes to :func:`encode_new_short`, or, for 9 to ``CACHE_PIECE`` bytes,
    :func:`encode_new`. Pieces of one and two bytes are there too, though the direct
    tables would answer with one load: which of a few lookups a piece takes depends on its
    length, which follows no pattern a branch predictor learns, and one path for every
    piece of up to ``SHORT_PIECE`` bytes mispredicts fewer branches than the load saves.
    One of up to ``LONG_PIECE`` bytes goes to :func:`encode_long`, the same table's
    lookup for longer pieces. Without a table, or for a longer piece, the direct tables
    (1 or 2 bytes) or the whole-token table (``token_rank``), then :func:`encode_merged`.
    """
    cdef token_t rank
    cdef uint64_t key0, key1, h, meta, ids, i
    cdef const CacheEntry* entry
    cdef const ShortEntry* short
    cdef PieceTable* table = scratch.cache
    cdef int64_t count, k, need
    if n == 0:
        return 0
    # a piece never has more tokens than bytes; a short entry's SHORT_IDS ids are all written
    need = out.size + max(n, SHORT_IDS)
    if need > out.cap:
        grow_ids(out, need)
    if table != NULL and n <= SHORT_PIECE:
        key0 = key.key0
        h = key.h
        i = h >> table.short_shift
        while True:
            short = &table.shorts[i]
            meta = short.val
            if meta == 0:
                return encode_new_short(t, piece, n, out, scratch, key0, h)
            if short.key == key0 and meta & 0xF == <uint64_t>n:
                # out has room for SHORT_IDS ids: all three written, count kept
                out.ids[out.size] = <uint32_t>((meta >> 6) & SHORT_MASK)
                out.ids[out.size + 1] = <uint32_t>((meta >> (6 + SHORT_BITS)) & SHORT_MASK)
                out.ids[out.size + 2] = <uint32_t>(meta >> (6 + 2 * SHORT_BITS))
                out.size += <int64_t>((meta >> 4) & 3)
                return 0
            i = (i + 1) & table.short_mask
    elif n <= CACHE_PIECE and table != NULL:
        key0 = key.key0
        key1 = key.key1
        h = key.h
        i = h >> table.shift
        while True:
            entry = &table.entries[i]
            meta = entry.meta
            if meta == 0:
                return encode_new(t, piece, n, out, scratch, key0, key1, h)
            if meta & 0xFF == <uint64_t>n and entry.key0 == key0 and entry.key1 == key1:
                count = (meta >> 8) & 0xFF
                ids = entry.ids
                out.ids[out.size] = <uint32_t>(ids & ID_MASK)
                if count > 1:
                    for k in range(1, count if count < 3 else 3):
                        out.ids[out.size + k] = <uint32_t>((ids >> (ID_BITS * k)) & ID_MASK)
                    if count > 3:
                        out.ids[out.size + 3] = <uint32_t>((meta >> 16) & ID_MASK)
                    if count > 4:
                        out.ids[out.size + 4] = <uint32_t>((meta >> (16 + ID_BITS)) & ID_MASK)
                out.size += count
                return 0
            i = (i + 1) & table.mask
    elif n <= LONG_PIECE and table != NULL:
        return encode_long(t, piece, n, out, scratch)
    elif n <= 2:
        rank = direct_rank(t, piece, n)
    else:
        rank = token_rank(t, piece, n)
    if rank == NO_RANK:
        return encode_merged(t, piece, n, out, scratch)
    out.ids[out.size] = rank
    out.size += 1
    return 0


# The piece tables of one encoder: each running call takes one of its own (take) and
# gives it back when it returns (give_back).
@cython.final
cdef class PieceCaches:
    cdef object seed      # the PieceSeed new tables start from, or None
    cdef bint seed_tried  # seed_from has run for this size
    cdef list spares      # spares[:n_spares]: tables given back, for the next calls (None past them)
    cdef Py_ssize_t n_spares
    cdef int64_t entries  # most entries of each (a power of two; 0: no table)
    cdef int64_t epoch    # bumped when the tables are dropped
    cdef int seed_from(self, const RankTables* t) except -1
    cdef object take(self, Scratch* scratch)
    cdef object take_buffers(self, IdBuffer** out, Scratch** scratch)
    cdef void give_back(self, object cache)
