# cython: language_level=3
"""The merge kernel's structures: the pair table's slots and the lazy max-heap's entries."""
from libc.stdint cimport int32_t, int64_t, uint64_t, uint8_t

from bpetrain._types cimport count_t, pos_t, token_t

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
