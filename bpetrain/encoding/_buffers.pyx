# cython: language_level=3
"""The encoders' working memory (:c:type:`IdBuffer`, :c:type:`Scratch`): malloc'ed,
grown on demand, reused from piece to piece within one call."""
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc

from bpetrain._types cimport token_t


cdef int grow_ids(IdBuffer* out, int64_t need) except -1 nogil:
    """Make room for ``need`` ids in ``out`` (doubling)."""
    cdef int64_t cap = out.cap if out.cap > 0 else 64
    cdef uint32_t* grown
    while cap < need:
        cap *= 2
    grown = <uint32_t*>realloc(out.ids, cap * sizeof(uint32_t))
    if grown == NULL:
        with gil:
            raise MemoryError()
    out.ids = grown
    out.cap = cap
    return 0


cdef int grow_scratch(Scratch* s, int64_t n) except -1 nogil:
    """Make the heap and linear encoders' arrays hold a piece of ``n`` bytes."""
    cdef int64_t cap = s.cap if s.cap > 0 else 256
    cdef void* tok
    cdef void* bits
    cdef void* heap
    while cap < n:
        cap *= 2
    tok = realloc(s.tok, cap * sizeof(token_t))
    if tok != NULL:
        s.tok = <token_t*>tok
    bits = realloc(s.bits, (cap // 64 + 1) * sizeof(uint64_t))
    if bits != NULL:
        s.bits = <uint64_t*>bits
    heap = realloc(s.heap, 2 * cap * sizeof(uint64_t))
    if heap != NULL:
        s.heap = <uint64_t*>heap
    if tok == NULL or bits == NULL or heap == NULL:
        with gil:
            raise MemoryError()
    s.cap = cap
    return 0


cdef void free_scratch(Scratch* s) noexcept nogil:
    """Free the merge arrays of ``s`` (NULL-safe) and leave it empty (``cache`` kept)."""
    free(s.tok)
    free(s.bits)
    free(s.heap)
    s.tok = NULL
    s.bits = NULL
    s.heap = NULL
    s.cap = 0


cdef void free_buffers(IdBuffer* out, Scratch* s) noexcept nogil:
    free(out.ids)
    free_scratch(s)
