# cython: language_level=3
"""What other kernels use of the encoder: :class:`BytePairEncoder` holds a vocabulary's
rank tables (``bpetrain.encoding._incremental`` reads them)."""
cimport cython

from bpetrain.encoding._piece cimport PieceCaches
from bpetrain.encoding._tables cimport RankTables


@cython.final
cdef class BytePairEncoder:
    cdef RankTables tables   # the vocabulary's tables (read only once built: threads share them)
    cdef object _arrays      # the numpy arrays that own them (the first: each rank's token length)
    cdef list _ints          # the kept int objects 0..n_ranks - 1 (kept_ints), for every output list
    cdef PieceCaches caches  # the piece caches, one taken by each running call
