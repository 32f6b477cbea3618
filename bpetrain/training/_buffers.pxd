# cython: language_level=3
"""Growing the merge kernel's malloc'ed arrays (inline: no compiled module of its own)."""
from libc.stdint cimport int64_t
from libc.stdlib cimport realloc


cdef inline int resize_buffer(void** buffer, int64_t n_items, size_t item_size) except -1 nogil:
    """Make a malloc'ed array (or NULL) hold ``n_items`` items (realloc). Raises
    MemoryError (the array unchanged)."""
    cdef void* grown = realloc(buffer[0], n_items * item_size)
    if grown == NULL:
        with gil:
            raise MemoryError()
    buffer[0] = grown
    return 0


cdef inline int double_buffer(void** buffer, int64_t* capacity, size_t item_size) except -1 nogil:
    """Double a malloc'ed array of ``capacity`` items in place (realloc). Raises
    MemoryError (the array unchanged)."""
    resize_buffer(buffer, 2 * capacity[0], item_size)
    capacity[0] *= 2
    return 0
