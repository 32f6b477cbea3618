# cython: language_level=3
"""The merging encoders for pieces the linear encoder does not take: tiktoken's loop for
short pieces, the heap + bitfield encoder for long ones."""
from libc.stdint cimport int64_t, uint8_t

from bpetrain._types cimport token_t
from bpetrain.encoding._buffers cimport IdBuffer, Scratch
from bpetrain.encoding._tables cimport RankTables

cdef enum:
    SMALL_PIECE = 32  # longest piece merged by linear scans (encode_small; at most 64: it packs positions in 6 bits)

# Append the ids of ``piece[:n]`` (n >= 1) to ``out``, which has room for n more;
# encode_small takes n <= SMALL_PIECE, encode_heap needs ``scratch`` to hold n bytes. With
# ``last`` (else NULL), the two tokens of the last merge go to last[0] and last[1].
cdef void encode_small(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       token_t* last) noexcept nogil
cdef void encode_heap(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                      Scratch* scratch, token_t* last) noexcept nogil
