# cython: language_level=3
"""The merge kernel's max-heap of pairs by count: the pair merged next is on top."""
from libc.stdint cimport int64_t

from bpetrain._types cimport count_t, token_t

# One entry: a pair and the count it had when it was pushed.
cdef struct HeapItem:
    count_t count
    token_t left
    token_t right

# A binary max-heap of ``size`` entries in a malloc'ed array of ``cap``.
cdef struct MaxHeap:
    HeapItem* items
    int64_t size
    int64_t cap

# Allocate an empty heap with room for ``capacity`` (>= 1) entries; free it (NULL-safe);
# add an entry (growing as needed); remove and return the top one (size >= 1).
cdef int heap_alloc(MaxHeap* heap, int64_t capacity) except -1 nogil
cdef void heap_free(MaxHeap* heap) noexcept nogil
cdef int heap_push(MaxHeap* heap, count_t count, token_t left, token_t right) except -1 nogil
cdef HeapItem heap_pop(MaxHeap* heap) noexcept nogil
