# cython: language_level=3
"""The merge kernel's pair table: every tracked pair of adjacent tokens, with its weighted
count and its occurrence list, in an open-addressing hash table (Fibonacci hashing, linear
probing, deletion by backward shift: no tombstones). The lookups the merge loop makes for
every occurrence are ``cdef inline`` here, so they compile into the module that cimports
them; growing and deleting are in ``_pairs.pyx``."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from bpetrain._types cimport count_t, pos_t, token_t

cdef extern from *:
    """
    #define BPETRAIN_PAIR_EMPTY UINT64_MAX           /* the key of a free slot */
    #define BPETRAIN_PAIR_FIB 0x9E3779B97F4A7C15ULL  /* 2**64 / golden ratio (Fibonacci hashing) */
    """
    const uint64_t EMPTY "BPETRAIN_PAIR_EMPTY"
    const uint64_t FIB "BPETRAIN_PAIR_FIB"

cdef enum:
    INLINE_BYTES = 8  # list bytes kept in the slot's pointer field (no malloc)
    MAX_VARINT = 5    # bytes of the longest varint (a delta below 2**35)

# One pair of the table: the pair packed as (left << 32) | right (``pack``), its weighted
# count, and its occurrence list: positions in slot order (some stale), each stored as its
# distance from the one before (from 0 for the first) in LEB128 varints, 7 bits a byte
# low group first, the high bit set on every byte but a number's last. Raw text lists
# take 1.4-1.7 bytes a position instead of 4. With cap == 0 the list's up to INLINE_BYTES
# bytes are stored in the bytes of ``occ`` itself.
cdef struct PairSlot:
    uint64_t key
    count_t count
    uint8_t* occ
    int32_t n_occ      # entries
    pos_t last         # the last entry's position (0 while the list is empty)
    uint32_t n_bytes   # bytes of varints (< 2**32: at most a position's 2**31 + 2**31 / 127)
    uint32_t cap       # bytes of the own block (0: inline)

# The table: 2**(64 - shift) slots (a power of two), at most 70% of them used.
cdef struct PairTable:
    PairSlot* slots  # NULL until allocated
    uint64_t mask    # number of slots - 1
    int shift
    int64_t used     # slots holding a pair

# Allocate an empty table of ``capacity`` slots (a power of two); add a slot for a key
# not present (growing past 70% load); delete one and free its list; free the table and
# every list (NULL-safe). Grow a list's block to hold ``extra`` more bytes; shrink an
# owned one to its bytes.
cdef int table_alloc(PairTable* table, uint64_t capacity) except -1 nogil
cdef int64_t table_insert(PairTable* table, uint64_t key) except -1 nogil
cdef void table_delete(PairTable* table, int64_t index) noexcept nogil
cdef void table_free(PairTable* table) noexcept nogil
cdef int grow_list(PairSlot* slot, uint32_t extra) except -1 nogil
cdef void fit_list(PairSlot* slot) noexcept nogil


cdef inline uint64_t pack(token_t left, token_t right) noexcept nogil:
    """The pair as a table key: ``(left << 32) | right``."""
    return (<uint64_t>left << 32) | <uint64_t><uint32_t>right


cdef inline token_t key_left(uint64_t key) noexcept nogil:
    return <token_t>(key >> 32)


cdef inline token_t key_right(uint64_t key) noexcept nogil:
    return <token_t><uint32_t>key


cdef inline uint64_t home(const PairTable* table, uint64_t key) noexcept nogil:
    """The slot where the probe for ``key`` starts."""
    return (key * FIB) >> table.shift


cdef inline int64_t table_find(const PairTable* table, uint64_t key) noexcept nogil:
    """Index of ``key``'s slot, or -1."""
    cdef uint64_t i = home(table, key)
    while True:
        if table.slots[i].key == key:
            return <int64_t>i
        if table.slots[i].key == EMPTY:
            return -1
        i = (i + 1) & table.mask


cdef inline int varint_size(uint32_t delta) noexcept nogil:
    """Bytes of ``delta`` as a varint (1 to 5)."""
    return 1 + (delta >= 1u << 7) + (delta >= 1u << 14) + (delta >= 1u << 21) + (delta >= 1u << 28)


cdef inline uint8_t* put_varint(uint8_t* out, uint32_t delta) noexcept nogil:
    """Write ``delta`` at ``out``; return the byte after it."""
    while delta >= 128:
        out[0] = <uint8_t>(delta | 128)
        delta >>= 7
        out += 1
    out[0] = <uint8_t>delta
    return out + 1


cdef inline const uint8_t* get_varint(const uint8_t* at, uint32_t* delta) noexcept nogil:
    """Read the varint at ``at`` into ``delta``; return the byte after it."""
    cdef uint32_t value = at[0] & 127
    cdef int shift = 7
    while at[0] & 128:
        at += 1
        value |= <uint32_t>(at[0] & 127) << shift
        shift += 7
    delta[0] = value
    return at + 1


cdef inline uint8_t* list_bytes(PairSlot* slot) noexcept nogil:
    """Where the slot's varints are (its own block, or inline in ``occ``)."""
    return <uint8_t*>&slot.occ if slot.cap == 0 else slot.occ


cdef inline int append(PairSlot* slot, pos_t p) except -1 nogil:
    """Add ``p`` (>= the last entry) at the end of the slot's occurrence list."""
    cdef uint32_t delta = <uint32_t>(p - slot.last)
    cdef uint32_t size = <uint32_t>varint_size(delta)
    if slot.n_bytes + size > (INLINE_BYTES if slot.cap == 0 else slot.cap):
        if grow_list(slot, size) < 0:
            return -1
    put_varint(list_bytes(slot) + slot.n_bytes, delta)
    slot.n_bytes += size
    slot.n_occ += 1
    slot.last = p
    return 0


cdef inline uint8_t* take_list(PairSlot* slot, uint8_t* spare, uint32_t* n_bytes) noexcept nogil:
    """Detach the slot's occurrence list (its size in bytes goes to ``n_bytes``) and return
    its varints: the list's own block, which the caller frees, or ``spare`` (room for
    INLINE_BYTES bytes) holding a list that lived in the slot."""
    cdef uint8_t* occ = slot.occ
    n_bytes[0] = slot.n_bytes
    if slot.cap == 0:
        memcpy(spare, &slot.occ, slot.n_bytes)
        occ = spare
    slot.occ = NULL
    slot.n_occ = 0
    slot.n_bytes = 0
    slot.cap = 0
    slot.last = 0
    return occ
