# cython: language_level=3
"""The rank tables of a vocabulary, the contract of the encoders: the struct, its
constants, and the lookups the per-piece kernels inline (a ``cdef inline`` function
defined here is compiled into each module that cimports it, so hot loops make no call
across modules). Built by :func:`build_tables` (``_tables.pyx``)."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

from bpetrain._types cimport token_t

cdef extern from *:
    """
    #include "_portable.h"
    #define BPETRAIN_NO_RANK INT32_MAX                 /* no token: larger than every rank */
    #define BPETRAIN_EMPTY UINT64_MAX                  /* a free slot of a table */
    #define BPETRAIN_FIB 0x9E3779B97F4A7C15ULL         /* 2**64 / golden ratio (Fibonacci hashing) */
    #define BPETRAIN_ID_MASK ((uint64_t)0x1FFFFF)      /* (1 << ID_BITS) - 1 */
    #define BPETRAIN_LOW32 ((uint64_t)UINT32_MAX)
    /* The first min(n, 8) bytes at p (n >= 1) as one word, zero-extended, without a branch
       on n: one 8-byte load, then a mask. The load may read past p[n - 1], but only while
       the 8 bytes stay in p's 4 KiB page (every page boundary is a 4 KiB boundary, and
       p[0] is readable, so its page is mapped); the bytes past n are masked off. Within 7
       bytes of a page's end the n bytes are copied alone. Little-endian: the first bytes
       are the low ones; big-endian: the high ones. */
    static inline uint64_t bpetrain_head(const uint8_t* p, int64_t n) {
        uint64_t word = 0;
        int64_t m = n < 8 ? n : 8;
        if (BPETRAIN_LIKELY(((uintptr_t)p & 4095) <= 4096 - 8)) {
            memcpy(&word, p, 8);
        } else {
            memcpy(&word, p, (size_t)m);
        }
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        return word & (~(uint64_t)0 << (64 - 8 * m));
    #else
        return word & (~(uint64_t)0 >> (64 - 8 * m));
    #endif
    }
    """
    int clz64 "bpetrain_clz64"(uint64_t x) noexcept nogil
    uint64_t bpetrain_head(const uint8_t* p, int64_t n) noexcept nogil
    const token_t NO_RANK "BPETRAIN_NO_RANK"
    const uint64_t EMPTY "BPETRAIN_EMPTY"
    const uint64_t FIB "BPETRAIN_FIB"
    const uint64_t ID_MASK "BPETRAIN_ID_MASK"
    const uint64_t LOW32 "BPETRAIN_LOW32"

cdef enum:
    ID_BITS = 21                        # bits of a rank in a pair-table slot (ID_MASK: all ones)
    FILTER_BITS_PER_PAIR = 10           # bits of a pair table's filter per pair (a power of two above)
    MAX_FILTER_BITS = 23                # at most 2**23 bits (1 MB)
    DENSE_BITS = 9                      # pairs of two ids below 2**9 are in the dense pair table (1 MB)
    SLOT_LENGTH = (1 << (32 - ID_BITS)) - 1  # token length a whole-token slot holds (saturated)
    SLOT_EMPTY = 0xFFFFFFFF             # meta of an empty whole-token slot
    LINEAR_HEADER = 8                   # int64 words before the arrays of kept linear tables

# A slot of the whole-token table (16 bytes): the token's first 8 bytes (``load_head``),
# its bytes 8..11 (``load_head`` of up to 4, 0 if none) and ``meta``, its rank in the low
# ID_BITS bits and its length above them (saturated at SLOT_LENGTH; all ones: an empty
# slot). A token of up to 12 bytes is matched without other reads.
cdef struct TokenSlot:
    uint64_t head
    uint32_t tail
    uint32_t meta

# A pair table: the rank of two adjacent tokens joined, keyed by their ids (open
# addressing, linear probing), with its filter and its dense part.
cdef struct PairTable:
    const uint64_t* slots  # (left << 42) | (right << 21) | rank, EMPTY = all ones
    uint64_t mask
    int shift
    const uint64_t* filter  # bit h set: some pair hashes to h (the top 64 - filter_shift bits of its hash)
    int filter_shift
    const token_t* dense    # (left << DENSE_BITS) | right -> rank, for left, right < 2**DENSE_BITS

# The tables of one vocabulary (array.array objects own the memory the pointers read; read only
# once built, so threads share them).
cdef struct RankTables:
    const uint8_t* token_bytes  # every token's bytes, by rank
    const int64_t* token_start  # rank -> offset in token_bytes (n_ranks + 1 entries)
    const int32_t* token_len    # rank -> length in bytes (0: no token has this rank)
    token_t byte_rank[256]      # byte value -> rank of the one-byte token
    const token_t* byte_pair    # (x << 8) | y -> rank of bytes([x, y]), NO_RANK if none
    const PairTable* pairs      # the pair table pair_rank reads: all_pairs, then split_pairs once
                                # built (one pointer, swapped whole: a thread sees either table)
    PairTable all_pairs         # every split of every token into two tokens
    PairTable split_pairs       # each token's own split only (build_split_pairs)
    const TokenSlot* whole      # the whole-token table
    uint64_t whole_mask
    int whole_shift
    int64_t n_ranks             # highest rank + 1
    int64_t max_token_len       # bytes of the longest token
    # The token trie: node ids are ranks for prefixes that are tokens, n_ranks.. for the
    # others; depth 1 is byte_rank, depth 2 node2, deeper the edge table.
    const int32_t* node2        # (x << 8) | y -> node of bytes([x, y]), -1 if none
    const uint64_t* edges       # (((node << 8) | byte) << 32) | child, EMPTY = all ones
    uint64_t edge_mask
    int edge_shift
    int64_t n_nodes             # trie nodes (ids 0..n_nodes - 1, some ranks unused)
    const token_t* next_prefix  # rank -> rank of its longest proper prefix token, -1 if none
    const token_t* split_left   # rank -> the two tokens BPE joins into it (a byte: itself);
    const token_t* split_right  #   -1: no merge order makes it (reachable only as a whole piece)
    bint linear                 # whether the linear encoder gives the heap's ids (set by the
                                # owner: bpetrain.encoding._linear.merges_in_rank_order)
    const uint64_t* span_bits   # the windows of bytes around each boundary inside a token
    int span_shift              #   (spanned; bit h set: some window hashes to h), built with
                                #   the trie (build_linear_tables)


cdef list build_tables(RankTables* t, dict mergeable_ranks)
cdef list build_linear_tables(RankTables* t)
cdef list build_split_pairs(RankTables* t)
cdef object linear_tables_body(const RankTables* t, bint linear, bint own_splits)
cdef list load_linear_tables(RankTables* t, object body, bint* linear, bint* own_splits)


cdef inline uint64_t load_head(const uint8_t* data, int64_t n) noexcept nogil:
    """The first ``min(n, 8)`` bytes of ``data`` as one word, zero-extended (so the word and
    ``n`` determine the bytes); 0 if ``n <= 0``. One load and a mask, no branch on the
    length (``bpetrain_head`` above: the lengths of pieces follow no pattern a branch
    predictor can learn)."""
    return bpetrain_head(data, n) if n > 0 else 0


cdef inline uint64_t hash_bytes(const uint8_t* data, int64_t n, uint64_t head) noexcept nogil:
    """A 64-bit hash of ``n`` bytes whose first eight are ``head``, eight at a time."""
    cdef uint64_t h = ((<uint64_t>n * FIB) ^ head) * FIB
    cdef uint64_t word
    cdef int64_t i = 8
    h ^= h >> 32
    while i < n:
        word = load_head(data + i, n - i)
        h = (h ^ word) * FIB
        h ^= h >> 32
        i += 8
    return h


cdef inline uint32_t slot_tail(const uint8_t* data, int64_t n) noexcept nogil:
    """Bytes 8..11 of ``data[:n]`` for its whole-token slot (``load_head`` of up to 4
    bytes; 0 if ``n <= 8``)."""
    return <uint32_t>load_head(data + 8, min(n - 8, 4)) if n > 8 else 0


cdef inline uint32_t slot_meta(int64_t rank, int64_t n) noexcept nogil:
    """The ``meta`` word of a whole-token slot: ``rank`` (< 2**ID_BITS - 1) and ``n``
    saturated at SLOT_LENGTH."""
    return <uint32_t>((min(n, SLOT_LENGTH) << ID_BITS) | rank)


cdef inline uint64_t pair_key(token_t left, token_t right) noexcept nogil:
    """The pair as one number: ``(left << ID_BITS) | right``."""
    return (<uint64_t>left << ID_BITS) | <uint64_t>right


cdef inline token_t pair_rank(const RankTables* t, token_t left, token_t right) noexcept nogil:
    """Rank of the token merging makes of ``left`` and ``right``, or NO_RANK: of their
    bytes joined (``t.all_pairs``), or, once ``t.split_pairs`` is built, only if they are
    that token's own split, the only pairs merging ever joins (``build_split_pairs``).

    Two ids below ``2**DENSE_BITS`` (the bytes and the first merges, where more than half
    the lookups of merging new words of English fall) are one load of the dense table;
    others go to the hashed table, after its filter."""
    cdef const PairTable* p = t.pairs
    cdef uint64_t key, h, i, slot
    if (<uint32_t>left | <uint32_t>right) >> DENSE_BITS == 0:
        return p.dense[(<uint32_t>left << DENSE_BITS) | <uint32_t>right]
    key = pair_key(left, right)
    h = key * FIB
    i = h >> p.filter_shift
    if not (p.filter[i >> 6] >> (i & 63)) & 1:
        return NO_RANK  # most pairs that join into no token end here, in L2
    i = h >> p.shift
    while True:
        slot = p.slots[i]
        if slot >> ID_BITS == key:
            return <token_t>(slot & ID_MASK)
        if slot == EMPTY:
            return NO_RANK
        i = (i + 1) & p.mask


cdef inline bint span_bit(const RankTables* t, uint64_t window) noexcept nogil:
    """Whether ``window`` (:func:`spanned`) may be one of a token's."""
    cdef uint64_t h = (window * FIB) >> t.span_shift
    return (t.span_bits[h >> 6] >> (h & 63)) & 1


cdef inline bint spanned(const RankTables* t, const uint8_t* piece, int64_t n, int64_t i) noexcept nogil:
    """False only if no token is a run of bytes of ``piece[:n]`` that holds bytes on
    both sides of the boundary before byte ``i`` (0 < i < n; ``t.span_bits`` built).

    Such a token ``piece[a:b]`` (a < i < b) holds its ``k1 = min(2, i - a)`` bytes before
    the boundary and ``k2 = min(2, b - i)`` after, the window ``_tables.span_window``
    gives of the token at that boundary of its own; so each of the (up to four) windows
    of ``piece`` around ``i`` is looked up in ``t.span_bits``, which holds those of every
    boundary inside every token (the bytes at bits 8, 16, 24 and 32 of a word, tagged
    ``k1 << 2 | k2``). A hash filter: True may be wrong (the boundary is then only not
    cut), False never is."""
    cdef uint64_t b1 = <uint64_t>piece[i - 1] << 16 | <uint64_t>piece[i] << 24
    cdef uint64_t b0 = <uint64_t>piece[i - 2] << 8 if i >= 2 else 0
    cdef uint64_t b3 = <uint64_t>piece[i + 1] << 32 if i + 1 < n else 0
    # the likeliest window of a token across two characters first: k1 = 2 and k2 = 2,
    # then 2 and 1, 1 and 2, 1 and 1 (tags k1 << 2 | k2)
    if i >= 2 and i + 1 < n and span_bit(t, b0 | b1 | b3 | 0b1010):
        return True
    if i >= 2 and span_bit(t, b0 | b1 | 0b1001):
        return True
    if i + 1 < n and span_bit(t, b1 | b3 | 0b0110):
        return True
    return span_bit(t, b1 | 0b0101)


cdef inline bint same_tail(const RankTables* t, const uint8_t* data, int64_t n, token_t rank) noexcept nogil:
    """Whether token ``rank`` spells ``data[12:n]`` after the 12 bytes its slot matched
    (and has ``n`` bytes, where the slot's length saturated)."""
    return t.token_len[rank] == n and memcmp(t.token_bytes + t.token_start[rank] + 12, data + 12, n - 12) == 0


cdef inline token_t token_rank(const RankTables* t, const uint8_t* data, int64_t n) noexcept nogil:
    """Rank of the token spelled by ``data[:n]``, or NO_RANK."""
    cdef uint64_t head, i
    cdef uint32_t tail, meta
    cdef const TokenSlot* slot
    if n < 1 or n > t.max_token_len:
        return NO_RANK
    head = load_head(data, n)
    tail = slot_tail(data, n)
    meta = slot_meta(0, n)  # the length part, to compare
    i = (hash_bytes(data, n, head) * FIB) >> t.whole_shift
    while True:
        slot = &t.whole[i]
        if slot.meta == SLOT_EMPTY:
            return NO_RANK
        if slot.head == head and slot.tail == tail and (slot.meta & ~ID_MASK) == meta and (
                n <= 12 or same_tail(t, data, n, slot.meta & ID_MASK)):
            return slot.meta & ID_MASK
        i = (i + 1) & t.whole_mask


cdef inline int32_t child(const RankTables* t, int32_t node, uint8_t byte) noexcept nogil:
    """The trie node one ``byte`` below ``node`` (depth 2 or more), or -1."""
    cdef uint64_t key = (<uint64_t>node << 8) | byte
    cdef uint64_t i = (key * FIB) >> t.edge_shift
    cdef uint64_t slot
    while True:
        slot = t.edges[i]
        if slot >> 32 == key:
            return <int32_t>(slot & LOW32)
        if slot == EMPTY:
            return -1
        i = (i + 1) & t.edge_mask


cdef inline bint valid_pair(const RankTables* t, token_t left, token_t right, token_t cap) noexcept nogil:
    """Whether BPE, given the ranks below ``cap``, keeps the bytes of ``left`` followed by
    those of ``right`` as exactly these two tokens.

    The merges that made the two tokens are undone, the later one first; at each step
    the two tokens now at the boundary must not join into a token that BPE would merge
    before the merge that undid them (ties go to the leftmost pair). This is the
    rust-gems ``bpe`` crate's ``is_valid_token_pair``; both tokens must have a split.
    """
    cdef token_t limit = cap
    cdef token_t joined
    while True:
        joined = pair_rank(t, left, right)
        if joined < limit:
            return False
        if left > right:
            limit = left
            left = t.split_right[left]
            if left == limit:  # a byte: undo the right token instead
                limit = right + 1
                right = t.split_left[right]
                if right + 1 == limit:
                    return True
        else:
            limit = right + 1
            right = t.split_left[right]
            if right + 1 == limit:
                limit = left
                left = t.split_right[left]
                if left == limit:
                    return True
