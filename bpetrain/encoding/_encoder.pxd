# cython: language_level=3
"""What other kernels use of the encoder: :class:`BytePairEncoder` holds a vocabulary's
rank tables (``bpetrain.encoding._incremental`` reads them)."""
cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport int64_t

from bpetrain.encoding._piece cimport PieceCaches
from bpetrain.encoding._tables cimport RankTables


@cython.final
cdef class BytePairEncoder:
    cdef RankTables tables   # the vocabulary's tables (read only once built: threads share them)
    cdef object _arrays      # the array.array objects that own them (the first: each rank's token length)
    cdef PyObject** ints     # (n_ranks,): the kept int object of each rank (kept_int), NULL until first output
    cdef PieceCaches caches  # the piece caches, one taken by each running call
    cdef object _linear_lock  # held while the trie and splits are built (build_linear)
    cdef bint _linear_built  # the trie and splits are built and tables.linear is decided
    cdef int64_t _n_seen     # bytes (about) encoded so far, until warm has built and seeded
    cdef bint _warmed        # warm has built the linear tables and seeded the piece tables
    cdef int warm(self, Py_ssize_t n_bytes) except -1
    cdef object linear_key(self)
