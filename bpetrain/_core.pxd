# cython: language_level=3
"""Shared C-level types of the bpetrain kernels (the contract between modules)."""
from libc.stdint cimport int32_t, int64_t, uint64_t, uint8_t

# A token id, a position in the kernel's working array, a (weighted) count.
ctypedef int32_t token_t
ctypedef int32_t pos_t
ctypedef int64_t count_t

# One pair of the pair table: the pair packed as (left << 32) | right, its
# weighted count, and its occurrence list (positions in slot order, some stale):
# with cap_occ == 0 up to two entries are stored in the bytes of ``occ`` itself.
cdef struct PairSlot:
    uint64_t key
    count_t count
    pos_t* occ
    int32_t n_occ
    int32_t cap_occ

# One entry of the lazy max-heap: a count seen when the entry was pushed.
cdef struct HeapItem:
    count_t count
    token_t left
    token_t right
