# cython: language_level=3
"""The BPE training kernel: incremental pair counts, occurrence lists, lazy max-heap.

The corpus is a table of unique pieces (byte strings) with int64 counts. The kernel
copies them into one working array of token ids, pieces separated by a sentinel slot,
and keeps, for every tracked pair of adjacent tokens, its weighted count and a list of
the positions where it starts (its occurrence list, in slot order). A merge walks the
list of its pair, left to right, and touches only those positions and their two
neighbours, so the work of a whole training run is O(1) amortized per replaced
position plus O(log P) per heap operation; no piece is ever rescanned. (Re-Pair, N. J.
Larsson and A. Moffat, "Off-line dictionary-based compression", Proc. IEEE 88(11),
2000, threads such lists through the text as doubly linked lists: 8 bytes per slot,
and a walk that chases pointers. Arrays read in order.)

Occurrence lists are lazy: an occurrence that a merge destroys is only subtracted from
its pair's count and stays in the list, and the walk skips it. That is exact because a
destroyed occurrence never comes back: the pair at slot ``p`` is ``(a, b)`` iff ``p``
still starts a token (a bit in ``starts``, cleared when the token is absorbed), the
token there is ``a`` and the next one is ``b``; token ids only ever grow at a slot. A
pair gains occurrences only in the merge that creates its newer token, so every list
is built once, in slot order, and is freed when its pair is merged or dropped. A list
stores the distances between its positions as varints (``_pairs``): 1.4-1.7 bytes a
position on raw text instead of 4.

Memory is mostly the working array and the lists, which start at about 3.8 bytes per
byte of raw text (the pair table and the lists of new pairs come on top: a 1.2 GB
document of C peaks at 4.2 bytes per byte in all). A slot holds the low 16 bits of the
id of the token that starts there (2 bytes); a second array of 2 bytes a slot holds
the high 16 bits only when some id needs them (a vocabulary of more than 65535 ids,
the sentinel's 0xFFFF included); ``starts`` takes 1/8 byte a slot. Slots inside a
token are never read. Navigation needs no pointers: the token after the one of id
``t`` at slot ``s`` starts at ``s + len(t)``, and the one before starts at the highest
set bit of ``starts`` below ``s`` (a sentinel slot is a start, so the search ends
inside the piece or at its sentinel; a token of ``n`` bytes costs ``n / 64`` words).
The pieces are copied in at construction; pairs are counted and listed at the first
call that needs them (``_track``), so the caller can free the input in between.

A merge does not look up its neighbours' pairs in the table at each occurrence: it
adds up, in arrays indexed by the neighbour's id, the weight taken from each pair
``(x, a)`` and ``(b, y)`` and the count and list of each new pair ``(x, z)`` and
``(z, y)``, and enters them in the table once per neighbour when the walk is done.

Pairs whose count is below ``min_frequency`` are not tracked at all: a pair's count
never grows after the merge that creates its newer token, so such a pair can never
be merged. This keeps the pair table small on raw text, where most pairs occur once.

The pair table with its occurrence lists (``_pairs``) and the max-heap (``_maxheap``)
are modules of their own; this one holds the working array, the set-up and the merges.
"""
from libc.stdint cimport INT32_MAX, UINT32_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memset

import numpy as np

from bpetrain.training._superword cimport SuperwordRule  # superword training's rule for new merges
from bpetrain._types cimport count_t, pos_t, token_t
from bpetrain.training._buffers cimport resize_buffer
from bpetrain.training._maxheap cimport HeapItem, MaxHeap, heap_alloc, heap_free, heap_pop, heap_push
from bpetrain.training._pairs cimport (
    EMPTY, INLINE_BYTES, PairSlot, PairTable, append, fit_list, get_varint, key_left, key_right,
    list_bytes, pack, put_varint, table_alloc, table_delete, table_find, table_free, table_insert,
    take_list, varint_size)

cdef extern from *:
    """
    #include "_portable.h"
    #define BPETRAIN_PREFETCH_READ(addr) BPETRAIN_PREFETCH(addr, 0, 3)
    """
    void prefetch "BPETRAIN_PREFETCH_READ"(const void* addr) noexcept nogil
    int clz64 "bpetrain_clz64"(uint64_t x) noexcept nogil

cdef token_t NARROW_SEP = 0xFFFF  # the sentinel slot between pieces, 16-bit ids
cdef token_t WIDE_SEP = -1        # ... and with the high array (0xFFFF in both halves)
cdef int PREFETCH_AHEAD = 32      # occurrences between a prefetch and its use

cdef enum:
    WALK_BATCH = 256  # positions decoded from a list at a time (and prefetched)
    TOOK_LEFT = 1     # what a merge did around its occurrences, by neighbour (touched_how)
    TOOK_RIGHT = 2
    NEW_LEFT = 4
    NEW_RIGHT = 8



cdef object _int64_array(const count_t* values, int64_t n):
    """A numpy int64 copy of ``values[0:n]``."""
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] view = out
    cdef int64_t i
    for i in range(n):
        view[i] = values[i]
    return out


cdef class PairMerger:
    """Incremental BPE trainer over a piece table (the kernel behind ``BpeTrainer``).

    Parameters
    ----------
    data : numpy.ndarray of uint8, shape (n_bytes,)
        The bytes of all pieces, concatenated. Copied: the kernel keeps no reference.
    offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
        Piece ``i`` is ``data[offsets[i]:offsets[i + 1]]``; nondecreasing, from 0 to n_bytes.
    counts : numpy.ndarray of int64, shape (n_pieces,)
        How often each piece occurs; every count >= 0 (pieces of count 0 are ignored).
    max_merges : int
        How many merges ``merge`` may make in all (merge ``i`` gets id ``256 + i``).
    min_frequency : int
        Pairs whose weighted count is below this are never merged (>= 1).
    max_token_length : int, default 2**31 - 1
        Pairs whose joined token would be longer than this many bytes are never tracked:
        they never enter the pair table or the heap, so they cost nothing (>= 1).
    token_lengths : numpy.ndarray of int32, shape (n_base,), optional
        Extend a vocabulary of ``n_base`` tokens: the byte length of each of its ids
        (ids 0..255 need not be the bytes). Merge ``i`` then gets id ``n_base + i``.
    initial : numpy.ndarray of int32, shape (n_bytes,), optional
        With ``token_lengths``: how the pieces start out, ``initial[j]`` being the id of
        the token that starts at byte ``j`` of ``data`` and -1 inside a token. Without,
        every byte is its own token, of id its value.
    rule : bpetrain.training._superword.SuperwordRule, optional
        Constraints on the tokens of new merges (superword training): a popped pair the
        rule refuses is dropped and never merged. Its ids must cover every new id.

    Raises
    ------
    ValueError
        If the arrays disagree in shape, ``initial`` does not cut each piece into tokens
        of ``token_lengths``, or the pieces of two or more bytes need more than
        2**31 - 2 slots (positions are int32).
    MemoryError
        If an allocation fails.

    Notes
    -----
    From the bytes (no ``initial``), the pairs are counted at the first call of
    :meth:`merge`, :attr:`finished` or :attr:`n_tracked_pairs`, so that the caller can
    drop ``data`` first; a method added here that reads the pair table calls
    ``self._track()`` first too.
    """

    cdef public object tok_array, high_array, starts_array, piece_array, weight_array
    cdef uint16_t* tok         # low 16 bits of the token id at a token's first slot
    cdef uint16_t* high        # its high 16 bits; NULL while every id and the sentinel fit in 16
    cdef token_t sep           # the id a sentinel slot reads as
    cdef uint64_t* starts      # bit p: slot p starts a token
    cdef const int32_t* piece_of  # slot -> piece, for the slots below heavy_end
    cdef pos_t heavy_end       # pieces of count > 1 come first; every later slot weighs 1
    cdef const count_t* weight    # kept piece -> count
    cdef int32_t* tok_len      # token id -> length in bytes
    cdef bint tracked          # pairs counted and listed (``_track``)
    cdef PairTable table       # the tracked pairs (bpetrain.training._pairs)
    cdef MaxHeap heap          # the tracked pairs by count, lazily (bpetrain.training._maxheap)
    # What the current merge does to the pairs around its occurrences, by the neighbour's
    # id: weight taken from (x, a) and from (b, y), and the new pairs (x, z) and (z, y)
    # with their counts and lists; entered in the table (one lookup per neighbour) when
    # the walk is done.
    cdef count_t* removed_left
    cdef count_t* removed_right
    cdef PairSlot* new_left
    cdef PairSlot* new_right
    cdef uint8_t* touched_how  # id -> which of the four the current merge touched (bits)
    cdef token_t* touched      # those ids, in the order first touched
    cdef int64_t n_touched
    cdef int64_t id_room       # ids the six arrays have room for
    cdef int32_t* merge_left
    cdef int32_t* merge_right
    cdef count_t* merge_count
    cdef count_t* merge_removed  # tokens merge i removed (<= merge_count[i]: overlaps such as "aaa")
    cdef readonly int64_t n_merges
    cdef readonly int64_t max_merges
    cdef readonly token_t first_id   # the id of the first merge (256, or the base's size)
    cdef readonly count_t min_frequency
    cdef readonly int32_t max_token_length
    cdef readonly SuperwordRule rule      # constraints on new merges, or None
    cdef bint has_rule
    cdef readonly count_t n_tokens_removed
    cdef readonly int64_t n_compactions  # occurrence lists compacted (for tests)
    cdef readonly int bytes_per_slot     # 2 (16-bit ids) or 4 (with the high array)

    def __cinit__(self, const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                  const int64_t[::1] counts not None, int64_t max_merges, count_t min_frequency,
                  int32_t max_token_length=INT32_MAX, const int32_t[::1] token_lengths=None,
                  const int32_t[::1] initial=None, SuperwordRule rule=None):
        cdef Py_ssize_t i, n_heavy
        cdef int64_t n_slots, heavy_slots
        n_slots, heavy_slots, n_heavy = _slots_of(data, offsets, counts)
        self.first_id = 256 if token_lengths is None else token_lengths.shape[0]
        if (token_lengths is None) != (initial is None):
            raise ValueError("token_lengths and initial go together (extending a vocabulary)")
        if initial is not None:
            _check_initial(data, offsets, token_lengths, initial)
        if max_merges < 0 or max_merges > INT32_MAX - self.first_id:
            raise ValueError(f"max_merges must be in [0, {INT32_MAX - self.first_id}], got {max_merges}")
        if min_frequency < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        if max_token_length < 1:
            raise ValueError(f"max_token_length must be >= 1, got {max_token_length}")
        self.max_merges = min(max_merges, n_slots)  # each merge removes a token: no more fit
        if rule is not None and rule.n_ids < self.first_id + self.max_merges:
            raise ValueError(f"the rule has room for {rule.n_ids} ids, the merges need {self.first_id + self.max_merges}")
        self.rule = rule
        self.has_rule = rule is not None
        self.min_frequency = min_frequency
        self.max_token_length = max_token_length
        self.tok_array = np.empty(n_slots, dtype=np.uint16)
        self.tok = <uint16_t*><Py_ssize_t>self.tok_array.ctypes.data
        self.sep = NARROW_SEP
        self.bytes_per_slot = 2
        if self.first_id + self.max_merges > NARROW_SEP:  # an id would be the sentinel's or above
            self.high_array = np.empty(n_slots, dtype=np.uint16)
            self.high = <uint16_t*><Py_ssize_t>self.high_array.ctypes.data
            self.sep = WIDE_SEP
            self.bytes_per_slot = 4
        self.starts_array = np.full((n_slots + 63) // 64, 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
        self.starts = <uint64_t*><Py_ssize_t>self.starts_array.ctypes.data
        self.tok_len = <int32_t*>malloc((self.first_id + self.max_merges) * sizeof(int32_t))
        self.merge_left = <int32_t*>malloc((self.max_merges + 1) * sizeof(int32_t))
        self.merge_right = <int32_t*>malloc((self.max_merges + 1) * sizeof(int32_t))
        self.merge_count = <count_t*>malloc((self.max_merges + 1) * sizeof(count_t))
        self.merge_removed = <count_t*>malloc((self.max_merges + 1) * sizeof(count_t))
        if (self.tok_len == NULL or self.merge_left == NULL or self.merge_right == NULL
                or self.merge_count == NULL or self.merge_removed == NULL):
            raise MemoryError()
        heap_alloc(&self.heap, 1024)
        for i in range(self.first_id):
            self.tok_len[i] = 1 if token_lengths is None else token_lengths[i]
        self.heavy_end = <pos_t>heavy_slots
        self.piece_array = np.empty(heavy_slots, dtype=np.int32)
        self.weight_array = np.empty(max(n_heavy, 1), dtype=np.int64)
        self.piece_of = <const int32_t*><Py_ssize_t>self.piece_array.ctypes.data
        self.weight = <const count_t*><Py_ssize_t>self.weight_array.ctypes.data
        _fill(self, data, offsets, counts, &initial[0] if initial is not None and initial.shape[0] else NULL)
        self.tracked = initial is not None  # from bytes: counted at the first call that needs the pairs
        if self.tracked:
            self._track_pairs()

    def __dealloc__(self):
        table_free(&self.table)
        heap_free(&self.heap)
        free(self.tok_len)
        free(self.merge_left)
        free(self.merge_right)
        free(self.merge_count)
        free(self.merge_removed)
        cdef int64_t i
        for i in range(self.id_room):  # lists left by a merge that raised
            if self.new_left[i].cap > 0:
                free(self.new_left[i].occ)
            if self.new_right[i].cap > 0:
                free(self.new_right[i].occ)
        free(self.removed_left)
        free(self.removed_right)
        free(self.new_left)
        free(self.new_right)
        free(self.touched_how)
        free(self.touched)

    # ------------------------------------------------------------------ slots

    cdef inline token_t _tok(self, pos_t p) noexcept nogil:
        """The id of the token that starts at slot ``p`` (``sep`` at a sentinel)."""
        if self.high == NULL:
            return self.tok[p]
        return <token_t>((<uint32_t>self.high[p] << 16) | self.tok[p])

    cdef inline void _set(self, pos_t p, token_t t) noexcept nogil:
        """Make slot ``p`` hold id ``t``."""
        self.tok[p] = <uint16_t>t
        if self.high != NULL:
            self.high[p] = <uint16_t>(<uint32_t>t >> 16)

    cdef inline pos_t _prev_start(self, pos_t p) noexcept nogil:
        """The first slot of the token that ends at slot ``p - 1`` (``p >= 1``): the highest
        set bit of ``starts`` below ``p``. Slot 0 is a sentinel, so there is one."""
        cdef int64_t i = p - 1
        cdef int64_t word = i >> 6
        cdef uint64_t bits = self.starts[word] & ((<uint64_t>2 << (i & 63)) - 1)
        while bits == 0:
            word -= 1
            bits = self.starts[word]
        return <pos_t>(word * 64 + 63 - clz64(bits))

    # ------------------------------------------------------------------ set-up

    cdef int _track(self) except -1:
        """Count and list the pairs, once (the pieces start as their bytes)."""
        if not self.tracked:
            _track_byte_pairs(self)
            self.tracked = True
        return 0

    cdef int _track_pairs(self) except -1:
        """Count the pairs of adjacent tokens (any ids) and list the positions of every
        pair that can be merged: the general form of ``_track_byte_pairs``, in three
        steps (count every pair; keep those that reach ``min_frequency``; list where the
        kept ones occur), so that no list is built for a pair that is then dropped."""
        cdef int64_t p, n_slots = self.tok_array.shape[0], index
        cdef uint64_t j, n_kept = 0, capacity = 1024
        cdef PairTable old
        cdef token_t a, b
        while 10 * <uint64_t>(n_slots // 16) > 7 * capacity:  # a guess at the distinct pairs,
            capacity *= 2                                      # to spare most regrowing
        table_alloc(&self.table, capacity)
        capacity = 1024
        with nogil:
            # 1. the weighted count of every pair short enough to be merged
            for p in range(1, n_slots - 1):
                if self._pair_at(<pos_t>p, &a, &b):
                    index = table_find(&self.table, pack(a, b))
                    if index < 0:
                        index = table_insert(&self.table, pack(a, b))
                    self.table.slots[index].count += self._weight(<pos_t>p)
            # 2. a table of the pairs that reach min_frequency, each pushed on the heap
            old = self.table
            for j in range(old.mask + 1):
                n_kept += old.slots[j].key != EMPTY and old.slots[j].count >= self.min_frequency
            while 10 * n_kept > 7 * capacity:
                capacity *= 2
            table_alloc(&self.table, capacity)  # no lists yet: the old slots own nothing
            try:
                for j in range(old.mask + 1):
                    if old.slots[j].key != EMPTY and old.slots[j].count >= self.min_frequency:
                        self.table.slots[table_insert(&self.table, old.slots[j].key)].count = old.slots[j].count
                        heap_push(&self.heap, old.slots[j].count, key_left(old.slots[j].key),
                                  key_right(old.slots[j].key))
            finally:
                free(old.slots)
            # 3. their occurrence lists, in slot order
            for p in range(1, n_slots - 1):
                if self._pair_at(<pos_t>p, &a, &b):
                    index = table_find(&self.table, pack(a, b))
                    if index >= 0:
                        append(&self.table.slots[index], <pos_t>p)
        return 0

    cdef inline bint _pair_at(self, pos_t p, token_t* a, token_t* b) noexcept nogil:
        """True if a token starts at slot ``p`` and is followed by one in its piece, and
        their pair is short enough to be merged; sets ``a`` and ``b`` to the two."""
        if not (self.starts[p >> 6] >> (p & 63)) & 1:
            return False
        a[0] = self._tok(p)
        if a[0] == self.sep:
            return False
        b[0] = self._tok(p + self.tok_len[a[0]])
        return b[0] != self.sep and self.tok_len[a[0]] + self.tok_len[b[0]] <= self.max_token_length

    cdef inline count_t _weight(self, pos_t p) noexcept nogil:
        if p >= self.heavy_end:
            return 1
        return self.weight[self.piece_of[p]]

    # ------------------------------------------------------------ merge steps

    cdef void _subtract(self, token_t left, token_t right, count_t w) noexcept nogil:
        """Occurrences of (left, right) of total weight ``w`` are gone (their list entries
        stay)."""
        cdef int64_t index
        cdef PairSlot* slot
        if w == 0:
            return
        index = table_find(&self.table, pack(left, right))
        if index < 0:
            return  # an untracked pair: it can never be merged
        slot = &self.table.slots[index]
        slot.count -= w
        if slot.count == 0:
            table_delete(&self.table, index)
        elif 4 * slot.count < slot.n_occ and slot.n_occ >= 1024:
            self._compact(slot, left, right)

    cdef void _compact(self, PairSlot* slot, token_t left, token_t right) noexcept nogil:
        """Drop the destroyed entries of a long list that is more than 3/4 stale.

        Each weight is >= 1, so ``count`` bounds the live entries: a compaction removes
        at least 3/4 of the list, which keeps it O(1) amortized per destroyed occurrence.
        Without it, lists of raw text hold about 4 stale entries per live one. The kept
        entries are rewritten in place: the varint of a sum of distances is never longer
        than theirs, so writing never overtakes reading.
        """
        cdef const uint8_t* at = slot.occ
        cdef const uint8_t* end = slot.occ + slot.n_bytes
        cdef uint8_t* out = slot.occ
        cdef pos_t batch[WALK_BATCH]
        cdef int n_batch, k
        cdef pos_t decoded = 0, kept_last = 0
        cdef int32_t kept = 0
        self.n_compactions += 1
        while at < end:
            at = self._decode(at, end, batch, &n_batch, &decoded)
            for k in range(n_batch):
                if k + PREFETCH_AHEAD < n_batch:
                    self._prefetch(batch[k + PREFETCH_AHEAD])
                if self._occurs(batch[k], left, right):
                    out = put_varint(out, <uint32_t>(batch[k] - kept_last))
                    kept_last = batch[k]
                    kept += 1
        slot.n_occ = kept
        slot.last = kept_last
        slot.n_bytes = <uint32_t>(out - slot.occ)
        fit_list(slot)

    cdef inline void _touch(self, token_t t, uint8_t how) noexcept nogil:
        if self.touched_how[t] == 0:
            self.touched[self.n_touched] = t
            self.n_touched += 1
        self.touched_how[t] |= how

    cdef inline int _gain(self, PairSlot* slot, token_t t, uint8_t how, int64_t length, count_t w,
                          pos_t p) except -1 nogil:
        """A new occurrence at ``p`` of the new pair of neighbour ``t`` (``slot``), whose
        token would be ``length`` bytes long; calls come in slot order."""
        if length > self.max_token_length:
            return 0  # its token would be too long: never tracked, never merged
        self._touch(t, how)
        slot.count += w
        return append(slot, p)

    cdef int _enter_new(self, PairSlot* slot, uint64_t key) except -1 nogil:
        """Enter a new pair in the table and on the heap if it can be merged (its list
        shrunk to fit), else free its list; ``slot`` is left empty."""
        cdef int64_t index
        if slot.count >= self.min_frequency:
            if slot.cap > slot.n_bytes + (slot.n_bytes >> 3) + 64:
                fit_list(slot)
            index = table_insert(&self.table, key)
            slot.key = key
            self.table.slots[index] = slot[0]
            heap_push(&self.heap, slot.count, key_left(key), key_right(key))
        elif slot.cap > 0:
            free(slot.occ)
        memset(slot, 0, sizeof(PairSlot))
        return 0

    cdef inline bint _occurs(self, pos_t p, token_t a, token_t b) noexcept nogil:
        """True while listed slot ``p`` still holds the pair (a, b): it starts a token, the
        token is ``a`` and the next one is ``b``. Once false it stays false (ids only grow)."""
        return ((self.starts[p >> 6] >> (p & 63)) & 1
                and self._tok(p) == a and self._tok(p + self.tok_len[a]) == b)

    cdef inline void _prefetch(self, pos_t p) noexcept nogil:
        """Ask for the slots the merge of an occurrence at ``p`` reads."""
        prefetch(&self.tok[p - 1])
        prefetch(&self.starts[p >> 6])
        if self.high != NULL:
            prefetch(&self.high[p - 1])

    cdef inline const uint8_t* _decode(self, const uint8_t* at, const uint8_t* end, pos_t* batch,
                                       int* n_batch, pos_t* last) noexcept nogil:
        """Decode the next WALK_BATCH positions (fewer at the end) of a list whose varints
        run from ``at`` to ``end`` into ``batch``, ``last`` being the position before them
        (0 at the list's start) and then the last one decoded; prefetch the first ones.
        Returns where the varints go on."""
        cdef uint32_t delta
        cdef int n = 0
        cdef pos_t p = last[0]
        while at < end and n < WALK_BATCH:
            at = get_varint(at, &delta)
            p += <pos_t>delta
            batch[n] = p
            if n < PREFETCH_AHEAD:
                self._prefetch(p)
            n += 1
        last[0] = p
        n_batch[0] = n
        return at

    cdef int _merge_pair(self, token_t a, token_t b, count_t count) except -1 nogil:
        """Replace every occurrence of (a, b), left to right, by the next token id."""
        cdef token_t z = <token_t>(self.first_id + self.n_merges)
        cdef int32_t len_a = self.tok_len[a], len_b = self.tok_len[b]
        cdef int64_t len_z = <int64_t>len_a + len_b
        cdef int64_t index = table_find(&self.table, pack(a, b))
        cdef uint8_t inline_occ[INLINE_BYTES]
        cdef uint32_t n_bytes
        cdef uint8_t* occ = take_list(&self.table.slots[index], inline_occ, &n_bytes)  # ours to walk and free
        cdef const uint8_t* at = occ
        cdef const uint8_t* end = occ + n_bytes
        cdef pos_t batch[WALK_BATCH]
        cdef int n_batch, k
        cdef pos_t p, q, r, left, decoded = 0
        cdef token_t x, y, t
        cdef uint8_t how
        cdef count_t w, removed_before = self.n_tokens_removed
        cdef int64_t i
        self.tok_len[z] = len_a + len_b
        self.merge_left[self.n_merges] = a
        self.merge_right[self.n_merges] = b
        self.merge_count[self.n_merges] = count
        self.n_merges += 1
        _reserve_ids(self, <int64_t>z + 1)
        try:
            while at < end:
                at = self._decode(at, end, batch, &n_batch, &decoded)
                for k in range(n_batch):
                    if k + PREFETCH_AHEAD < n_batch:
                        self._prefetch(batch[k + PREFETCH_AHEAD])
                    p = batch[k]
                    q = p + len_a
                    if not self._occurs(p, a, b):
                        continue  # destroyed since it was listed
                    w = self._weight(p)
                    r = q + len_b
                    y = self._tok(r)
                    if y != self.sep:  # (b, y) is gone
                        self.removed_right[y] += w
                        self._touch(y, TOOK_RIGHT)
                    left = self._prev_start(p)
                    x = self._tok(left)
                    if x == z:  # (z, a), which this walk added at ``left``, is gone
                        if len_z + len_a <= self.max_token_length:
                            self.new_right[a].count -= w
                    elif x != self.sep:  # (x, a) is gone
                        self.removed_left[x] += w
                        self._touch(x, TOOK_LEFT)
                    self._set(p, z)
                    self.starts[q >> 6] &= ~(<uint64_t>1 << (q & 63))
                    if x != self.sep:
                        self._gain(&self.new_left[x], x, NEW_LEFT, self.tok_len[x] + len_z, w, left)
                    if y != self.sep:
                        self._gain(&self.new_right[y], y, NEW_RIGHT, len_z + self.tok_len[y], w, p)
                    self.n_tokens_removed += w
        finally:
            if occ != inline_occ:
                free(occ)
        self.merge_removed[self.n_merges - 1] = self.n_tokens_removed - removed_before
        index = table_find(&self.table, pack(a, b))
        if index >= 0:
            table_delete(&self.table, index)
        for i in range(self.n_touched):  # the counts of the neighbours' pairs, in the table
            t = self.touched[i]
            how = self.touched_how[t]
            self.touched_how[t] = 0
            if how & TOOK_LEFT:
                self._subtract(t, a, self.removed_left[t])
                self.removed_left[t] = 0
            if how & TOOK_RIGHT:
                self._subtract(b, t, self.removed_right[t])
                self.removed_right[t] = 0
            if how & NEW_LEFT:
                self._enter_new(&self.new_left[t], pack(t, z))
            if how & NEW_RIGHT:
                self._enter_new(&self.new_right[t], pack(z, t))
        self.n_touched = 0
        return 0

    cdef int _pop_current(self, HeapItem* top) except -1 nogil:
        """Pop the heap until an entry holds its pair's current count (1, the entry in
        ``top``) or the heap is empty (0). A stale entry goes back with its pair's current
        count, or is dropped with its pair when that is below ``min_frequency``; a current
        pair the superword rule refuses is dropped with its pair for good."""
        cdef int64_t index
        cdef count_t current
        while self.heap.size > 0:
            top[0] = heap_pop(&self.heap)
            index = table_find(&self.table, pack(top.left, top.right))
            if index < 0:
                continue
            current = self.table.slots[index].count
            if current != top.count:
                if current >= self.min_frequency:
                    heap_push(&self.heap, current, top.left, top.right)
                else:
                    table_delete(&self.table, index)
                continue
            if self.has_rule and not self._allowed(top.left, top.right):
                table_delete(&self.table, index)  # refused: dropped, never merged
                continue
            return 1
        return 0

    cdef int64_t _merge_some(self, int64_t n) except -1 nogil:
        cdef int64_t done = 0
        cdef HeapItem top
        while done < n and self.n_merges < self.max_merges and self._pop_current(&top):
            self._merge_pair(top.left, top.right, top.count)
            done += 1
        return done

    cdef inline bint _allowed(self, token_t a, token_t b) noexcept nogil:
        """Whether the rule lets (a, b) become the next id (which then records it)."""
        return self.rule.allows(a, b, <token_t>(self.first_id + self.n_merges))

    def merge(self, int64_t n):
        """Make up to ``n`` more merges; return how many were made.

        Fewer than ``n`` are made when ``max_merges`` is reached or no tracked pair
        is left (every remaining pair occurs fewer than ``min_frequency`` times).
        """
        cdef int64_t done
        self._track()
        with nogil:
            done = self._merge_some(n)
        return done

    @property
    def finished(self):
        """True when no further merge is possible."""
        self._track()
        return self.n_merges >= self.max_merges or self.heap.size == 0

    @property
    def merges(self):
        """numpy.ndarray of int32, shape (n_merges, 2): the merged pairs in rank order."""
        out = np.empty((self.n_merges, 2), dtype=np.int32)
        cdef int32_t[:, ::1] view = out
        cdef int64_t i
        for i in range(self.n_merges):
            view[i, 0] = self.merge_left[i]
            view[i, 1] = self.merge_right[i]
        return out

    @property
    def merge_counts(self):
        """numpy.ndarray of int64, shape (n_merges,): each merged pair's weighted count."""
        return _int64_array(self.merge_count, self.n_merges)

    @property
    def merge_tokens_removed(self):
        """numpy.ndarray of int64, shape (n_merges,): tokens each merge removed (pairs it joined).

        Below :attr:`merge_counts` where occurrences overlap: ``aaa`` counts the pair
        ``(a, a)`` twice, but merging joins it once. They sum to :attr:`n_tokens_removed`.
        """
        return _int64_array(self.merge_removed, self.n_merges)

    @property
    def n_tracked_pairs(self):
        """How many pairs the pair table holds now."""
        self._track()
        return self.table.used


    # ------------------------------------- driven pair by pair (parity-aware training)

    def best_pair(self):
        """The pair :meth:`merge` would make next, as ``(count, left, right)``, or None when
        no tracked pair is left; nothing is merged. Stale heap entries met on the way are
        settled as :meth:`merge` settles them, so the merges that follow are unchanged.
        """
        cdef HeapItem top
        self._track()
        if not self._pop_current(&top):
            return None
        heap_push(&self.heap, top.count, top.left, top.right)  # it stays next
        return top.count, top.left, top.right

    def merge_pair(self, token_t left, token_t right):
        """Merge ``(left, right)`` now as the next id, whatever its count here, and return
        how many tokens that removed (0 where the pair does not occur: its id is made all
        the same, so that mergers fed the same pairs number their tokens alike).

        Exact only when every pair that occurs is tracked: the merger must be built with
        ``min_frequency=1``, and the joined token must fit ``max_token_length``.

        Raises
        ------
        ValueError
            If an id is not a token yet, the joined token is longer than
            ``max_token_length``, or ``min_frequency`` is above 1.
        """
        return _merge_given(self, left, right)


cdef void _fill(PairMerger merger, const uint8_t[::1] data, const int64_t[::1] offsets,
                const int64_t[::1] counts, const int32_t* initial) noexcept:
    """Copy the pieces of two or more bytes into the working array, sentinel-separated:
    first those of count > 1 (each slot knows its piece), then those of count 1.
    With ``initial`` (checked), each piece is then cut into its initial tokens."""
    cdef int32_t* piece_of = <int32_t*>merger.piece_of
    cdef count_t* weight = <count_t*>merger.weight
    cdef Py_ssize_t i, n_pieces = counts.shape[0]
    cdef int64_t j, k, q, s = 1, first
    cdef int32_t heavy = 0, length
    cdef token_t t
    cdef int single
    merger._set(0, merger.sep)
    with nogil:
        for single in range(2):
            for i in range(n_pieces):
                if offsets[i + 1] - offsets[i] < 2 or counts[i] == 0 or (counts[i] == 1) != single:
                    continue
                if not single:
                    weight[heavy] = counts[i]
                    for j in range(offsets[i], offsets[i + 1] + 1):
                        piece_of[s + j - offsets[i]] = heavy
                    heavy += 1
                first = s
                for j in range(offsets[i], offsets[i + 1]):
                    merger.tok[s] = data[j]
                    s += 1
                if merger.high != NULL:
                    for j in range(first, s):
                        merger.high[j] = 0
                if initial != NULL:
                    for j in range(offsets[i], offsets[i + 1]):
                        t = initial[j]
                        if t < 0:
                            continue
                        k = first + j - offsets[i]
                        length = merger.tok_len[t]
                        merger._set(<pos_t>k, t)
                        for q in range(k + 1, k + length):
                            merger.starts[q >> 6] &= ~(<uint64_t>1 << (q & 63))
                merger._set(<pos_t>s, merger.sep)
                s += 1


def _slots_of(const uint8_t[::1] data, const int64_t[::1] offsets, const int64_t[::1] counts):
    """Check a piece table and return ``(n_slots, heavy_slots, n_heavy)``: the slots of
    the pieces that can be merged (two bytes or more, count above 0) with a sentinel
    before each and one at the end, those of the pieces of count above 1, and how many
    of those there are. Raises ValueError for a malformed table or one too large for
    int32 positions."""
    cdef Py_ssize_t n_pieces = counts.shape[0]
    cdef Py_ssize_t i, n_kept = 0, n_heavy = 0
    cdef int64_t n_slots = 1, heavy_slots = 1, start, stop
    if offsets.shape[0] != n_pieces + 1:
        raise ValueError(f"offsets must have n_pieces + 1 = {n_pieces + 1} entries, "
                         f"got {offsets.shape[0]}")
    if n_pieces and (offsets[0] != 0 or offsets[n_pieces] != data.shape[0]):
        raise ValueError("offsets must start at 0 and end at len(data)")
    for i in range(n_pieces):
        start = offsets[i]
        stop = offsets[i + 1]
        if stop < start:
            raise ValueError(f"offsets must be nondecreasing (piece {i})")
        if counts[i] < 0:
            raise ValueError(f"counts must be >= 0, piece {i} has {counts[i]}")
        if stop - start >= 2 and counts[i] > 0:
            n_kept += 1
            n_slots += stop - start + 1
            if counts[i] > 1:
                n_heavy += 1
                heavy_slots += stop - start + 1
    if n_slots > INT32_MAX - 1:
        raise ValueError(
            f"the pieces of two or more bytes hold {n_slots - 1 - n_kept} bytes, more than the "
            f"kernel's int32 positions can address ({INT32_MAX - 2 - n_kept} at most); "
            "split the corpus into documents (pat_str=None) or use a split pattern")
    return n_slots, heavy_slots, n_heavy


def _check_initial(const uint8_t[::1] data, const int64_t[::1] offsets,
                   const int32_t[::1] token_lengths, const int32_t[::1] initial):
    """Raise ValueError unless ``initial`` cuts every piece into tokens of ``token_lengths``."""
    cdef Py_ssize_t i, n_base = token_lengths.shape[0]
    cdef int64_t j
    cdef int32_t t
    if n_base < 256:
        raise ValueError(f"token_lengths must cover at least the 256 byte ids, got {n_base}")
    if initial.shape[0] != data.shape[0]:
        raise ValueError(f"initial must have one entry per byte ({data.shape[0]}), got {initial.shape[0]}")
    for i in range(offsets.shape[0] - 1):
        j = offsets[i]
        while j < offsets[i + 1]:
            t = initial[j]
            if t < 0 or t >= n_base or token_lengths[t] < 1 or j + token_lengths[t] > offsets[i + 1]:
                raise ValueError(f"initial does not cut piece {i} into tokens: id {t} at byte {j}")
            j += token_lengths[t]


cdef int _track_byte_pairs(PairMerger m) except -1:
    """Count the byte pairs and list the positions of every pair that can be merged,
    each list in one block of exactly its size (a first pass sizes them). A byte pair
    is its slot of a 65536-entry array: one cache line per position in each pass."""
    cdef PairSlot* pairs = <PairSlot*>calloc(65536, sizeof(PairSlot))  # key unused
    cdef int64_t p, n_slots = m.tok_array.shape[0]
    cdef int64_t n_pairs = 0
    cdef uint64_t capacity = 1024
    cdef int32_t k
    cdef bint failed = False
    cdef token_t a, b
    cdef PairSlot* pair
    cdef PairSlot* slot
    if pairs == NULL:
        raise MemoryError()
    try:
        with nogil:
            for p in range(1, n_slots - 1):  # 1. counts and list sizes
                a = m._tok(<pos_t>p)
                b = m._tok(<pos_t>p + 1)
                if a != m.sep and b != m.sep:
                    pair = &pairs[(a << 8) | b]
                    pair.count += m._weight(<pos_t>p)
                    pair.n_occ += 1
                    pair.n_bytes += varint_size(<uint32_t>(p - pair.last))
                    pair.last = <pos_t>p
            for k in range(65536):  # 2. a block for each list that will be kept
                pair = &pairs[k]
                if pair.count >= m.min_frequency and m.max_token_length >= 2:
                    n_pairs += 1
                    pair.cap = max(pair.n_bytes, 1)
                    pair.occ = <uint8_t*>malloc(pair.cap)
                    failed = failed or pair.occ == NULL
                pair.n_bytes = 0
                pair.last = 0
            if not failed:
                for p in range(1, n_slots - 1):  # 3. the lists
                    a = m._tok(<pos_t>p)
                    b = m._tok(<pos_t>p + 1)
                    if a == m.sep or b == m.sep:
                        continue
                    pair = &pairs[(a << 8) | b]
                    if pair.occ != NULL:
                        pair.n_bytes = <uint32_t>(put_varint(pair.occ + pair.n_bytes,
                                                             <uint32_t>(p - pair.last)) - pair.occ)
                        pair.last = <pos_t>p
        if failed:
            raise MemoryError()
        while 10 * <uint64_t>n_pairs > 7 * capacity:
            capacity *= 2
        table_alloc(&m.table, capacity)
        for k in range(65536):
            if pairs[k].occ != NULL:
                pairs[k].key = pack(k >> 8, k & 255)
                slot = &m.table.slots[table_insert(&m.table, pairs[k].key)]
                slot[0] = pairs[k]
                pairs[k].occ = NULL  # owned by the table now
                heap_push(&m.heap, slot.count, k >> 8, k & 255)
    finally:
        for k in range(65536):
            free(pairs[k].occ)
        free(pairs)
    return 0


cdef int _reserve_ids(PairMerger m, int64_t n_ids) except -1 nogil:
    """Give the merger's per-neighbour arrays room for ids below ``n_ids`` (zeroed)."""
    cdef int64_t room = max(2 * m.id_room, n_ids, 1024), i
    if n_ids <= m.id_room:
        return 0
    resize_buffer(<void**>&m.removed_left, room, sizeof(count_t))
    resize_buffer(<void**>&m.removed_right, room, sizeof(count_t))
    resize_buffer(<void**>&m.new_left, room, sizeof(PairSlot))
    resize_buffer(<void**>&m.new_right, room, sizeof(PairSlot))
    resize_buffer(<void**>&m.touched_how, room, sizeof(uint8_t))
    resize_buffer(<void**>&m.touched, room, sizeof(token_t))
    for i in range(m.id_room, room):
        m.removed_left[i] = 0
        m.removed_right[i] = 0
        memset(&m.new_left[i], 0, sizeof(PairSlot))
        memset(&m.new_right[i], 0, sizeof(PairSlot))
        m.touched_how[i] = 0
    m.id_room = room
    return 0


cdef count_t _merge_given(PairMerger m, token_t left, token_t right) except -1:
    """:meth:`PairMerger.merge_pair`: merge ``(left, right)`` as the next id, occurring or not."""
    cdef token_t z = <token_t>(m.first_id + m.n_merges)
    cdef int64_t index
    m._track()
    if not (0 <= left < z and 0 <= right < z):
        raise ValueError(f"merge_pair({left}, {right}): ids must be below {z}, the next id")
    if m.tok_len[left] + m.tok_len[right] > m.max_token_length:
        raise ValueError(f"merge_pair({left}, {right}) makes a token longer than max_token_length="
                         f"{m.max_token_length}")
    if m.min_frequency != 1:
        raise ValueError("merge_pair needs every pair tracked: build the merger with min_frequency=1")
    if m.n_merges == m.max_merges:
        _grow_merges(m)
    index = table_find(&m.table, pack(left, right))
    if index >= 0:
        with nogil:
            m._merge_pair(left, right, m.table.slots[index].count)
    else:  # the pair does not occur here
        m.tok_len[z] = m.tok_len[left] + m.tok_len[right]
        m.merge_left[m.n_merges] = left
        m.merge_right[m.n_merges] = right
        m.merge_count[m.n_merges] = 0
        m.merge_removed[m.n_merges] = 0
        m.n_merges += 1
    return m.merge_removed[m.n_merges - 1]


cdef int _grow_merges(PairMerger m) except -1:
    """Double the room for merges: ``max_merges`` was capped at the slots (each merge
    made by :meth:`PairMerger.merge` removes a token), but :meth:`PairMerger.merge_pair`
    may make ids that remove nothing. Ids that would reach the 16-bit sentinel widen the
    slots first."""
    cdef int64_t cap = min(2 * m.max_merges + 64, <int64_t>INT32_MAX - m.first_id)
    if cap <= m.max_merges:
        raise ValueError(f"no room for more than {m.max_merges} merges: token ids are int32")
    if m.has_rule:
        raise ValueError("a merger with a superword rule has room for max_merges merges only")
    if m.high == NULL and m.first_id + cap > NARROW_SEP:
        _widen(m)
    resize_buffer(<void**>&m.tok_len, m.first_id + cap, sizeof(int32_t))
    resize_buffer(<void**>&m.merge_left, cap + 1, sizeof(int32_t))
    resize_buffer(<void**>&m.merge_right, cap + 1, sizeof(int32_t))
    resize_buffer(<void**>&m.merge_count, cap + 1, sizeof(count_t))
    resize_buffer(<void**>&m.merge_removed, cap + 1, sizeof(count_t))
    m.max_merges = cap
    return 0


cdef int _widen(PairMerger m) except -1:
    """Give a merger of 16-bit slots the high array, so that ids may reach 0xFFFF and
    beyond: every slot's high half is 0, a sentinel's 0xFFFF (it reads as ``WIDE_SEP``)."""
    cdef int64_t p, n_slots = m.tok_array.shape[0]
    m.high_array = np.zeros(n_slots, dtype=np.uint16)
    m.high = <uint16_t*><Py_ssize_t>m.high_array.ctypes.data
    for p in range(n_slots):
        if m.tok[p] == NARROW_SEP:
            m.high[p] = 0xFFFF
    m.sep = WIDE_SEP
    m.bytes_per_slot = 4
    return 0
