# cython: language_level=3
"""The linear (backtracking) encoder of one piece, and the check that it applies."""
from libc.stdint cimport int64_t, uint8_t

from bpetrain._types cimport token_t
from bpetrain.encoding._buffers cimport IdBuffer, Scratch
from bpetrain.encoding._tables cimport RankTables

cdef enum:
    LINEAR_PIECE = 33  # shortest piece for the linear encoder, where it applies; shorter ones
                       # take tiktoken's loop (SMALL_PIECE), which, per new piece of 20-31
                       # bytes, takes 0.7-0.93x its time with o200k on Russian and mixed text
                       # (0.95-1.5x on English and with cl100k, where such pieces are rarer)

# What lets the linear encoder stop early when it counts a slice ``text[start:target]``
# of a text whose prefixes are all encoded (bpetrain.encoding._incremental.RawIntervals): for
# each end position p of a prefix, its last token and its token count, and the prefix
# tree (parent of p: p minus the length of that token) as preorder numbers and sizes.
cdef struct Sync:
    const token_t* last
    const int64_t* counts
    const int64_t* order
    const int64_t* size
    int64_t start
    int64_t target

cdef int64_t encode_linear(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                           Scratch* scratch, const Sync* sync) noexcept nogil
cdef int merges_in_rank_order(const RankTables* t, bint* own_splits) except -1
