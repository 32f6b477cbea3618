# cython: language_level=3
"""The encoders' working memory: the output ids and the scratch arrays of one call."""
from libc.stdint cimport int64_t, uint32_t, uint64_t

from bpetrain._types cimport token_t

# A growable array of output token ids (malloc'ed).
cdef struct IdBuffer:
    uint32_t* ids
    int64_t size
    int64_t cap

# One entry of a piece cache (32 bytes; bpetrain.encoding._piece): a piece of 3..16 bytes
# and its two to five token ids. ``meta`` is (id 4 << 37) | (id 3 << 16) | (number of ids
# << 8) | length (0: empty).
cdef struct CacheEntry:
    uint64_t meta
    uint64_t key0      # the piece's bytes 0..7 (``load_head``)
    uint64_t key1      # its bytes 8..15 (``load_head``), 0 if none
    uint64_t ids       # ids 0 to 2, 21 bits each, the first in the low bits

# Working memory of one kernel call, reused from piece to piece (malloc'ed, grown on
# demand), and the piece cache it reads (this call's alone; NULL: none).
cdef struct Scratch:
    token_t* tok       # the token id at each token's first byte
    uint64_t* bits     # bit i set: byte i starts a token
    uint64_t* heap     # min-heap of (rank << 32) | start
    int64_t cap        # bytes the arrays can hold
    CacheEntry* cache  # the piece cache: 2**(64 - cache_shift) entries
    int cache_shift

# Grow (doubling) or free the buffers; free_buffers is NULL-safe.
cdef int grow_ids(IdBuffer* out, int64_t need) except -1 nogil
cdef int grow_scratch(Scratch* s, int64_t n) except -1 nogil
cdef void free_buffers(IdBuffer* out, Scratch* s) noexcept nogil
