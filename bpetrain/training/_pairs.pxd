# cython: language_level=3
"""The merge kernel's pair table: every tracked pair of adjacent tokens, with its weighted
count and its occurrence list, in an open-addressing hash table (Fibonacci hashing, linear
probing, deletion by backward shift: no tombstones). The lookups the merge loop makes for
every occurrence are ``cdef inline`` here, so they compile into the module that cimports
them; growing and deleting are in ``_pairs.pyx``."""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
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
    INLINE_OCC = 2  # list entries kept in the slot's pointer field (no malloc)

# One pair of the table: the pair packed as (left << 32) | right (``pack``), its weighted
# count, and its occurrence list (positions in slot order, some stale): with cap_occ == 0
# up to INLINE_OCC entries are stored in the bytes of ``occ`` itself.
cdef struct PairSlot:
    uint64_t key
    count_t count
    pos_t* occ
    int32_t n_occ
    int32_t cap_occ

# The table: 2**(64 - shift) slots (a power of two), at most 70% of them used.
cdef struct PairTable:
    PairSlot* slots  # NULL until allocated
    uint64_t mask    # number of slots - 1
    int shift
    int64_t used     # slots holding a pair

# Allocate an empty table of ``capacity`` slots (a power of two); add a slot for a key
# not present (growing past 70% load); delete one and free its list; free the table and
# every list (NULL-safe). Grow a full occurrence list; shrink an owned one to its entries.
cdef int table_alloc(PairTable* table, uint64_t capacity) except -1 nogil
cdef int64_t table_insert(PairTable* table, uint64_t key) except -1 nogil
cdef void table_delete(PairTable* table, int64_t index) noexcept nogil
cdef void table_free(PairTable* table) noexcept nogil
cdef int grow_list(PairSlot* slot) except -1 nogil
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


cdef inline int append(PairSlot* slot, pos_t p) except -1 nogil:
    """Add ``p`` at the end of the slot's occurrence list."""
    if slot.cap_occ == 0 and slot.n_occ < INLINE_OCC:  # short lists live in the slot itself
        (<pos_t*>&slot.occ)[slot.n_occ] = p
        slot.n_occ += 1
        return 0
    if slot.n_occ == slot.cap_occ or slot.cap_occ == 0:
        if grow_list(slot) < 0:
            return -1
    slot.occ[slot.n_occ] = p
    slot.n_occ += 1
    return 0


cdef inline pos_t* take_list(PairSlot* slot, pos_t* spare, int32_t* n_occ) noexcept nogil:
    """Detach the slot's occurrence list (its length goes to ``n_occ``) and return it: the
    list's own block, which the caller frees, or ``spare`` (room for INLINE_OCC entries)
    holding a list that lived in the slot."""
    cdef pos_t* occ = slot.occ
    n_occ[0] = slot.n_occ
    if slot.cap_occ == 0:
        memcpy(spare, &slot.occ, slot.n_occ * sizeof(pos_t))
        occ = spare
    slot.occ = NULL
    slot.n_occ = 0
    slot.cap_occ = 0
    return occ
