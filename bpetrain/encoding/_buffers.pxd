# cython: language_level=3
"""The encoders' working memory: the output ids and the scratch arrays of one call."""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

from bpetrain._types cimport token_t

# A growable array of output token ids (malloc'ed).
cdef struct IdBuffer:
    uint32_t* ids
    int64_t size
    int64_t cap

# One entry of a piece table (32 bytes; bpetrain.encoding._piece). A piece of 9..16 bytes
# and its one to five token ids: ``meta`` is (id 4 << 37) | (id 3 << 16) | (number of
# ids << 8) | length. A piece of 17..255 bytes: ``meta`` is (offset << 16) | (number of
# ids << 8) | length, where the table's ``arena`` holds, from ``offset``, the piece's
# bytes and then its ids (uint32). meta 0: an empty entry.
cdef struct CacheEntry:
    uint64_t meta
    uint64_t key0      # the piece's bytes 0..7 (``load_head``)
    uint64_t key1      # its bytes 8..15 (``load_head``), 0 if none; a longer piece: its ``hash_bytes``
    uint64_t ids       # ids 0 to 2, 21 bits each, the first in the low bits (unused for a longer piece)

# One entry of a piece table's short part (16 bytes; bpetrain.encoding._piece): a piece of
# 1..8 bytes and its one to three token ids: ``val`` is (id 2 << 44) | (id 1 << 25) |
# (id 0 << 6) | (number of ids << 4) | length (19 bits an id); val 0: an empty entry.
cdef struct ShortEntry:
    uint64_t val       # first, as ``meta`` in CacheEntry (``_piece.grow`` reads either)
    uint64_t key       # the piece's bytes (``load_head``)

# A piece table (bpetrain.encoding._piece.PieceCache owns one), of two parts (pieces of
# 1..8 bytes in ShortEntry, longer ones in CacheEntry): open addressing, linear probing,
# each part at most half full; each grows by doubling up to ``limit`` entries, and the
# arena up to ``16 * limit`` bytes; a part is emptied when full (the long one with its arena).
cdef struct PieceTable:
    CacheEntry* entries  # 2**(64 - shift) entries (bpetrain_table_calloc, _portable.h; meta 0: empty)
    uint64_t mask        # entries - 1
    int shift
    int64_t used         # entries in use
    int64_t limit        # most entries it grows to (a power of two, at least 2)
    uint8_t* arena       # the bytes and ids of the pieces of 17..255 bytes (malloc'ed, or NULL)
    int64_t arena_used   # bytes of it in use
    int64_t arena_cap    # bytes allocated
    const CacheEntry* seed  # NULL, or the entries it holds when empty (as many as it has: the
                            # vocabulary's tokens of 9..16 bytes, _piece.PieceSeed); then it
                            # never grows
    int64_t seed_used       # entries of seed in use
    ShortEntry* shorts      # its part for the pieces of 1..8 bytes (as entries: short_mask
    uint64_t short_mask     # + 1 of them, short_shift, short_used; its seed, NULL or the
    int short_shift         # vocabulary's tokens of 3..8 bytes, short_seed_used of them)
    int64_t short_used
    const ShortEntry* short_seed
    int64_t short_seed_used

# Working memory of one kernel call, reused from piece to piece (malloc'ed, grown on
# demand), and the piece table it reads and fills (this call's alone; NULL: none).
cdef struct Scratch:
    token_t* tok       # the token id at each token's first byte
    uint64_t* bits     # bit i set: byte i starts a token
    uint64_t* heap     # min-heap of (rank << 32) | start
    int64_t cap        # bytes the arrays can hold
    PieceTable* cache  # the piece table (owned by a PieceCache), or NULL

# Grow (doubling) or free the buffers (NULL-safe; free_scratch leaves ``s`` empty, its cache kept).
cdef int grow_ids(IdBuffer* out, int64_t need) except -1 nogil
cdef int grow_scratch(Scratch* s, int64_t n) except -1 nogil
cdef void free_scratch(Scratch* s) noexcept nogil
cdef void free_buffers(IdBuffer* out, Scratch* s) noexcept nogil
