# cython: language_level=3
"""The encoding kernel's contract: its tables, its buffers and the per-piece kernel."""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uint8_t

from bpetrain._core cimport token_t

# A slot of the pair table: (left id << 32) | right id -> rank of the two tokens' bytes joined.
cdef struct PairSlot:
    uint64_t key
    token_t rank

# A slot of the whole-token table: a hash tag and the rank (-1: empty); bytes compared on a tag match.
cdef struct TokenSlot:
    uint32_t tag
    token_t rank

# A growable array of output token ids (malloc'ed).
cdef struct IdBuffer:
    uint32_t* ids
    int64_t size
    int64_t cap

# Working memory of the heap encoder, reused from piece to piece (malloc'ed, grown on demand).
cdef struct Scratch:
    token_t* tok       # the token id at each token's first byte
    uint64_t* bits     # bit i set: byte i starts a token
    uint64_t* heap     # min-heap of (rank << 32) | start
    int64_t cap        # bytes the arrays can hold


cdef class BytePairEncoder:
    cdef object _arrays            # the numpy arrays that own the tables below
    cdef const uint8_t* token_bytes  # every token's bytes, by rank
    cdef const int64_t* token_start  # rank -> offset in token_bytes (n_ranks + 1 entries)
    cdef const int32_t* token_len    # rank -> length in bytes (0: no token has this rank)
    cdef token_t byte_rank[256]      # byte value -> rank of the one-byte token
    cdef const token_t* byte_pair    # (x << 8) | y -> rank of bytes([x, y]), NO_RANK if none
    cdef const PairSlot* pairs
    cdef uint64_t pair_mask
    cdef int pair_shift
    cdef const TokenSlot* whole
    cdef uint64_t whole_mask
    cdef int whole_shift
    cdef readonly int64_t n_ranks        # highest rank + 1
    cdef readonly int64_t max_token_len  # bytes of the longest token

    cdef token_t pair_rank(self, token_t left, token_t right) noexcept nogil
    cdef token_t token_rank(self, const uint8_t* data, int64_t n) noexcept nogil
    cdef int encode_piece(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                          Scratch* scratch) except -1 nogil
    cdef void _fill_whole(self) noexcept
    cdef int _fill_bytes(self) except -1
    cdef int _fill_pairs(self, int64_t n_splits) except -1
    cdef void _encode_small(self, const uint8_t* piece, int64_t n, IdBuffer* out) noexcept nogil
    cdef void _encode_heap(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                           Scratch* scratch) noexcept nogil
