# cython: language_level=3
"""C-level types every bpetrain kernel shares (the contract between the compiled modules)."""
from libc.stdint cimport int32_t, int64_t

# A token id, a position in a kernel's working array, a (weighted) count.
ctypedef int32_t token_t
ctypedef int32_t pos_t
ctypedef int64_t count_t
