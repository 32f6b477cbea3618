# cython: language_level=3
"""The encoding kernel's contract: its tables, its buffers and the per-piece kernel."""
cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uint8_t

from bpetrain._types cimport token_t
from bpetrain.splitting._matcher cimport Program, Stack, Tables

# A slot of the whole-token table (16 bytes): the token's first 8 bytes (``load_head``),
# its bytes 8..11 (``load_head`` of up to 4, 0 if none) and ``meta``, its rank in the low
# ID_BITS bits and its length above them (saturated at SLOT_LENGTH; all ones: an empty
# slot). A token of up to 12 bytes is matched without other reads.
cdef struct TokenSlot:
    uint64_t head
    uint32_t tail
    uint32_t meta

# A growable array of output token ids (malloc'ed).
cdef struct IdBuffer:
    uint32_t* ids
    int64_t size
    int64_t cap

# One entry of a piece cache (32 bytes): a piece of 3..16 bytes and its one to three
# token ids. ``meta`` is (number of ids << 8) | length (0: empty).
cdef struct CacheEntry:
    uint64_t meta
    uint64_t key0      # the piece's bytes 0..7 (``load_head``)
    uint64_t key1      # its bytes 8..15 (``load_head``), 0 if none
    uint64_t ids       # the ids, 21 bits each, the first in the low bits

# Working memory of one kernel call, reused from piece to piece (malloc'ed, grown on
# demand), and the piece cache it reads (this call's alone; NULL: none).
cdef struct Scratch:
    token_t* tok       # the token id at each token's first byte
    uint64_t* bits     # bit i set: byte i starts a token
    uint64_t* heap     # min-heap of (rank << 32) | start
    int64_t cap        # bytes the arrays can hold
    CacheEntry* cache  # the piece cache: 2**(64 - cache_shift) entries
    int cache_shift

# What lets the linear encoder stop early when it counts a slice ``text[start:target]``
# of a text whose prefixes are all encoded (bpetrain.encoding._incremental.RawIntervals): for
# each end position p of a prefix, its last token and its token count, and the prefix
# tree (parent of p: p minus the length of that token) as preorder numbers and sizes.
cdef struct Sync:
    const token_t* last
    const int64_t* counts
    const int64_t* order
    const int64_t* size
    int64_t start
    int64_t target


# Strings for the kernel to look for without the GIL (special tokens; see _encoder.pyx).
@cython.final
cdef class Needles:
    cdef bytes _data
    cdef const uint8_t* data       # the strings' UTF-8, concatenated
    cdef object _ends              # int64 array, shape (n + 1,): string k is data[ends[k]:ends[k + 1]]
    cdef const int64_t* ends
    cdef int64_t n
    cdef uint8_t first[256]        # nonzero for a byte some string starts with
    cdef int lead                  # that byte, if only one; else -1
    cdef object _ids               # uint32 array, shape (n,), or None
    cdef const uint32_t* ids       # the token id of each string, or NULL
    cdef inline int64_t find(self, const uint8_t* text, int64_t n, int64_t* which) noexcept nogil
    cdef inline bint found_in(self, const uint8_t* text, int64_t n) noexcept nogil
    cdef int require_ids(self) except -1


@cython.final
cdef class BytePairEncoder:
    cdef object _arrays            # the numpy arrays that own the tables below
    cdef list _ints                # the kept int objects 0..n_ranks - 1 (kept_ints), for every output list
    cdef const uint8_t* token_bytes  # every token's bytes, by rank
    cdef const int64_t* token_start  # rank -> offset in token_bytes (n_ranks + 1 entries)
    cdef const int32_t* token_len    # rank -> length in bytes (0: no token has this rank)
    cdef token_t byte_rank[256]      # byte value -> rank of the one-byte token
    cdef const token_t* byte_pair    # (x << 8) | y -> rank of bytes([x, y]), NO_RANK if none
    cdef const uint64_t* pairs       # pair table: (left << 42) | (right << 21) | rank, EMPTY = all ones
    cdef uint64_t pair_mask
    cdef int pair_shift
    cdef const uint64_t* pair_filter  # bit h set: some pair hashes to h (FILTER_BITS bits of its hash)
    cdef const TokenSlot* whole
    cdef uint64_t whole_mask
    cdef int whole_shift
    cdef readonly int64_t n_ranks        # highest rank + 1
    cdef readonly int64_t max_token_len  # bytes of the longest token
    # The token trie of the linear encoder: node ids are ranks for prefixes that are tokens,
    # n_ranks.. for the others; depth 1 is byte_rank, depth 2 node2, deeper the edge table.
    cdef const int32_t* node2            # (x << 8) | y -> node of bytes([x, y]), -1 if none
    cdef const uint64_t* edges           # (((node << 8) | byte) << 32) | child, EMPTY = all ones
    cdef uint64_t edge_mask
    cdef int edge_shift
    cdef readonly int64_t n_nodes        # trie nodes (ids 0..n_nodes - 1, some ranks unused)
    cdef const token_t* next_prefix      # rank -> rank of its longest proper prefix token, -1 if none
    cdef const token_t* split_left       # rank -> the two tokens BPE joins into it (a byte: itself);
    cdef const token_t* split_right      #   -1: no merge order makes it (reachable only as a whole piece)
    cdef readonly bint linear            # whether the linear encoder gives the heap's ids (checked)
    cdef list _caches                    # spare piece caches (PieceCache), one taken by each running call
    cdef int64_t _cache_entries          # entries of each (a power of two; 0: no cache)
    cdef int64_t _cache_epoch            # bumped when the caches are dropped

    cdef inline token_t pair_rank(self, token_t left, token_t right) noexcept nogil
    cdef inline token_t token_rank(self, const uint8_t* data, int64_t n) noexcept nogil
    cdef bint _same_tail(self, const uint8_t* data, int64_t n, token_t rank) noexcept nogil
    cdef inline int encode_piece(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                                 Scratch* scratch) except -1 nogil
    cdef int _encode_missed(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                            Scratch* scratch) except -1 nogil
    cdef int _encode_merged(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                            Scratch* scratch) except -1 nogil
    cdef object _take_cache(self, Scratch* scratch)
    cdef void _give_back(self, object cache)
    cdef int64_t _split_and_encode(self, const uint8_t* text, int64_t start, int64_t stop, int64_t n,
                                   const Tables* pattern, Stack* stack,
                                   IdBuffer* out, Scratch* scratch, int64_t limit, bint keep,
                                   int64_t* n_read) except -2 nogil
    cdef object _result(self, IdBuffer* out, bint as_list)
    cdef object _encode_utf8(self, const uint8_t* data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end,
                             Program pattern, bint as_list, Needles specials=*)
    cdef int64_t _encode_segments(self, const uint8_t* data, int64_t n, const Tables* pattern, Stack* stack,
                                  IdBuffer* out, Scratch* scratch, Needles specials, bint keep) except -2 nogil
    cdef list _as_list(self, const uint32_t* ids, int64_t n)
    cdef int _fill(self, PyObject** items, const uint32_t* ids, int64_t n) except -1
    cdef list _lists(self, const uint32_t* ids, const int64_t* ends, Py_ssize_t n_texts)
    cdef void _fill_whole(self) noexcept
    cdef int _fill_bytes(self) except -1
    cdef int _fill_pairs(self, int64_t n_splits) except -1
    cdef int _fill_trie(self) except -1
    cdef int _fill_splits(self) except -1
    cdef inline int32_t child(self, int32_t node, uint8_t byte) noexcept nogil
    cdef inline token_t longest_prefix(self, const uint8_t* data, int64_t n) noexcept nogil
    cdef inline bint valid_pair(self, token_t left, token_t right, token_t cap) noexcept nogil
    cdef int64_t _encode_linear(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                                Scratch* scratch, const Sync* sync) noexcept nogil
    cdef void _encode_small(self, const uint8_t* piece, int64_t n, IdBuffer* out) noexcept nogil
    cdef void _encode_heap(self, const uint8_t* piece, int64_t n, IdBuffer* out,
                           Scratch* scratch) noexcept nogil


# Buffers of the kernels (malloc'ed, grown on demand; free_buffers is NULL-safe).
cdef int grow_ids(IdBuffer* out, int64_t need) except -1 nogil
cdef int grow_scratch(Scratch* s, int64_t n) except -1 nogil
cdef void free_buffers(IdBuffer* out, Scratch* s) noexcept nogil
