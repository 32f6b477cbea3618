# cython: language_level=3
"""A binary max-heap of pairs ordered as the merges are: higher count first, then the
smaller ``(left, right)`` (ties go to the smallest pair).

The merge kernel uses it lazily: a pair's count changes without its entry moving, and
an entry popped with a count that is no longer the pair's is pushed back with the new
one (``PairMerger._merge_some``)."""
from libc.stdlib cimport malloc, free

from bpetrain.training._buffers cimport double_buffer


cdef inline bint above(const HeapItem* x, const HeapItem* y) noexcept nogil:
    """True when ``x`` is merged before ``y``: higher count, then smaller (left, right)."""
    if x.count != y.count:
        return x.count > y.count
    if x.left != y.left:
        return x.left < y.left
    return x.right < y.right


cdef int heap_alloc(MaxHeap* heap, int64_t capacity) except -1 nogil:
    """Make ``heap`` empty, with room for ``capacity`` entries. Raises MemoryError."""
    heap.items = <HeapItem*>malloc(capacity * sizeof(HeapItem))
    if heap.items == NULL:
        with gil:
            raise MemoryError()
    heap.size = 0
    heap.cap = capacity
    return 0


cdef void heap_free(MaxHeap* heap) noexcept nogil:
    free(heap.items)
    heap.items = NULL
    heap.size = 0
    heap.cap = 0


cdef int heap_push(MaxHeap* heap, count_t count, token_t left, token_t right) except -1 nogil:
    """Add the pair with ``count``; doubles the array when full. Raises MemoryError."""
    cdef HeapItem item
    cdef int64_t i, parent
    if heap.size == heap.cap:
        double_buffer(<void**>&heap.items, &heap.cap, sizeof(HeapItem))
    item.count = count
    item.left = left
    item.right = right
    i = heap.size
    heap.size += 1
    while i > 0:
        parent = (i - 1) >> 1
        if not above(&item, &heap.items[parent]):
            break
        heap.items[i] = heap.items[parent]
        i = parent
    heap.items[i] = item
    return 0


cdef HeapItem heap_pop(MaxHeap* heap) noexcept nogil:
    """Remove and return the top entry (the heap must not be empty)."""
    cdef HeapItem* items = heap.items
    cdef HeapItem top = items[0]
    cdef HeapItem last
    cdef int64_t i = 0, child
    heap.size -= 1
    last = items[heap.size]
    while True:
        child = 2 * i + 1
        if child >= heap.size:
            break
        if child + 1 < heap.size and above(&items[child + 1], &items[child]):
            child += 1
        if not above(&items[child], &last):
            break
        items[i] = items[child]
        i = child
    if heap.size > 0:
        items[i] = last
    return top
