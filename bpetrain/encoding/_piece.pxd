# cython: language_level=3
"""One piece to its token ids: the whole-token lookup, inlined into each text loop, and,
for the pieces that need merging, the piece cache and the encoder chosen by length."""
cimport cython
from libc.stdint cimport int64_t, uint8_t

from bpetrain._types cimport token_t
from bpetrain.encoding._buffers cimport IdBuffer, Scratch, grow_ids
from bpetrain.encoding._tables cimport NO_RANK, RankTables, token_rank

cdef enum:
    CACHE_PIECE = 16  # longest piece the piece cache holds (bytes)
    CACHE_IDS = 5     # most ids of a cached piece (21 bits each: three in ids, two in meta)

cdef int encode_missed(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       Scratch* scratch) except -1 nogil


cdef inline int encode_piece(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                             Scratch* scratch) except -1 nogil:
    """Append the token ids of one piece of ``n`` bytes to ``out``.

    A piece that is one token is found in the whole-token table, here, inline in the
    splitting loop (nine pieces in ten); any other goes to :func:`encode_missed`.
    """
    cdef token_t rank
    if n == 0:
        return 0
    if out.size + n > out.cap:
        grow_ids(out, out.size + n)  # a piece never has more tokens than bytes
    if n == 1:
        rank = t.byte_rank[piece[0]]
    elif n == 2:
        rank = t.byte_pair[(<int>piece[0] << 8) | piece[1]]
    else:
        rank = token_rank(t, piece, n)
    if rank == NO_RANK:
        return encode_missed(t, piece, n, out, scratch)
    out.ids[out.size] = rank
    out.size += 1
    return 0


# The piece caches of one encoder: each running call takes one of its own (take) and
# gives it back when it returns (give_back).
@cython.final
cdef class PieceCaches:
    cdef list spares      # caches given back, for the next calls
    cdef int64_t entries  # entries of each (a power of two; 0: no cache)
    cdef int64_t epoch    # bumped when the caches are dropped
    cdef object take(self, Scratch* scratch)
    cdef void give_back(self, object cache)
