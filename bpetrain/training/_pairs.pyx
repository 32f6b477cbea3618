# cython: language_level=3
"""The pair table's slow paths: allocating, growing and deleting slots, and growing and
shrinking occurrence lists (the lookups are ``cdef inline`` in ``_pairs.pxd``)."""
from libc.stdint cimport UINT32_MAX
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy


cdef int table_alloc(PairTable* table, uint64_t capacity) except -1 nogil:
    """Make ``table`` an empty table of ``capacity`` slots (a power of two); what it held
    before is not freed. Raises MemoryError (``table`` unchanged)."""
    cdef uint64_t i
    cdef int shift = 64
    cdef uint64_t c = capacity
    cdef PairSlot* slots = <PairSlot*>malloc(capacity * sizeof(PairSlot))
    if slots == NULL:
        with gil:
            raise MemoryError()
    for i in range(capacity):
        slots[i].key = EMPTY
    while c > 1:
        c >>= 1
        shift -= 1
    table.slots = slots
    table.mask = capacity - 1
    table.shift = shift
    table.used = 0
    return 0


cdef int64_t table_insert(PairTable* table, uint64_t key) except -1 nogil:
    """Index of a new slot for ``key`` (not present), of count 0 and an empty list; the
    table doubles first if the slot would take it past 70% load."""
    cdef uint64_t i, j, old_capacity
    cdef PairTable old
    if 10 * (table.used + 1) > 7 * <int64_t>(table.mask + 1):
        old = table[0]
        old_capacity = old.mask + 1
        table_alloc(table, 2 * old_capacity)
        for j in range(old_capacity):
            if old.slots[j].key != EMPTY:
                i = home(table, old.slots[j].key)
                while table.slots[i].key != EMPTY:
                    i = (i + 1) & table.mask
                table.slots[i] = old.slots[j]
                table.used += 1
        free(old.slots)
    i = home(table, key)
    while table.slots[i].key != EMPTY:
        i = (i + 1) & table.mask
    table.slots[i].key = key
    table.slots[i].count = 0
    table.slots[i].occ = NULL
    table.slots[i].n_occ = 0
    table.slots[i].last = 0
    table.slots[i].n_bytes = 0
    table.slots[i].cap = 0
    table.used += 1
    return <int64_t>i


cdef void table_delete(PairTable* table, int64_t index) noexcept nogil:
    """Remove slot ``index`` and free its occurrence list (backward shift: the slots after
    it move up unless they would leave their probe's range)."""
    cdef PairSlot* slots = table.slots
    cdef uint64_t hole = <uint64_t>index, j = <uint64_t>index, start
    if slots[index].cap > 0:
        free(slots[index].occ)
    while True:
        j = (j + 1) & table.mask
        if slots[j].key == EMPTY:
            break
        start = home(table, slots[j].key)
        # move j into the hole unless its home lies cyclically in (hole, j]
        if (j > hole and (start <= hole or start > j)) or (j < hole and start <= hole and start > j):
            slots[hole] = slots[j]
            hole = j
    slots[hole].key = EMPTY
    table.used -= 1


cdef void table_free(PairTable* table) noexcept nogil:
    """Free the slots and every occurrence list (a table never allocated is left alone)."""
    cdef uint64_t i
    if table.slots == NULL:
        return
    for i in range(table.mask + 1):
        if table.slots[i].key != EMPTY and table.slots[i].cap > 0:
            free(table.slots[i].occ)
    free(table.slots)
    table.slots = NULL


cdef int grow_list(PairSlot* slot, uint32_t extra) except -1 nogil:
    """Give an occurrence list (or one about to leave the slot) room for ``extra`` more
    bytes and about half as many again, in its own block. Raises MemoryError (the list
    unchanged)."""
    cdef uint64_t cap = 8 + <uint64_t>slot.n_bytes + (slot.n_bytes >> 1)
    cdef uint8_t* grown
    cap = min(max(cap, <uint64_t>slot.n_bytes + extra), UINT32_MAX)
    if slot.cap == 0:
        grown = <uint8_t*>malloc(cap)
        if grown != NULL:
            memcpy(grown, &slot.occ, slot.n_bytes)
    else:
        grown = <uint8_t*>realloc(slot.occ, cap)
    if grown == NULL:
        with gil:
            raise MemoryError()
    slot.occ = grown
    slot.cap = <uint32_t>cap
    return 0


cdef void fit_list(PairSlot* slot) noexcept nogil:
    """Shrink an occurrence list's own block to its bytes (at least one); if the
    allocator cannot, the larger block is kept."""
    cdef uint32_t cap = max(slot.n_bytes, 1)
    cdef uint8_t* shrunk = <uint8_t*>realloc(slot.occ, cap)
    if shrunk != NULL:
        slot.occ = shrunk
        slot.cap = cap


def _py_varints(positions):
    """Tests: encode increasing ``positions`` (ints in [0, 2**31)) as an occurrence list
    does; return its bytes and the positions decoded back."""
    cdef PairSlot slot
    cdef uint32_t delta
    cdef const uint8_t* at
    cdef const uint8_t* end
    cdef int64_t p = 0
    slot.n_occ = 0
    slot.last = 0
    slot.n_bytes = 0
    slot.cap = 0
    slot.occ = NULL
    try:
        for position in positions:
            append(&slot, position)
        encoded = bytes(list_bytes(&slot)[:slot.n_bytes])
        at = list_bytes(&slot)
        end = at + slot.n_bytes
        decoded = []
        while at < end:
            at = get_varint(at, &delta)
            p += delta
            decoded.append(p)
    finally:
        if slot.cap > 0:
            free(slot.occ)
    return encoded, decoded
