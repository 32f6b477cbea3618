# cython: language_level=3
"""The merge kernel's rule for superword tokens (see _superword.pyx)."""
from libc.stdint cimport int32_t, int64_t, uint8_t

from bpetrain._types cimport token_t


cdef class SuperwordRule:
    cdef readonly int32_t max_words        # most words a token may span (0: no limit)
    cdef readonly bint forbid_colon_space  # no token may hold the bytes b": "
    cdef readonly int64_t n_ids            # ids the arrays have room for
    cdef readonly int64_t n_refused        # pairs refused so far (for tests and stats)
    cdef readonly object words_array, ends_array  # the facts below, as numpy arrays
    cdef int32_t* n_words    # id -> words it spans
    cdef uint8_t* ends       # id -> bit 0: starts with a space, 1: ends with one, 2: ends with ':', 3: holds ": "

    # True if the pair (a, b) may be merged into the new id z; if so, z's facts are recorded.
    cdef bint allows(self, token_t a, token_t b, token_t z) noexcept nogil
