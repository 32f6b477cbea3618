# cython: language_level=3
"""tiktoken's byte pair rule by merging, for one piece.

Inside one piece, the two adjacent tokens whose joined bytes have the lowest rank are
merged, the leftmost first on ties, until no joined pair is a token (tiktoken's
``byte_pair_merge`` in ``src/lib.rs``; ``_reference.encode_piece_ranks`` is the plain
version). Two loops do it:

- :func:`encode_small`, for pieces of up to ``SMALL_PIECE`` bytes, is tiktoken's own:
  find the lowest rank by a linear scan, merge, update the two neighbouring ranks.
  Quadratic, but in a bounded length, and the fastest for short pieces.
- :func:`encode_heap`, for longer pieces, is the heap encoder of the rust-gems ``bpe``
  crate (``byte_pair_encoding.rs``, ``encode_via_bitfield``): a bitfield with one bit per
  byte marks the starts of tokens (all set at first), a 4-ary min-heap holds
  ``(rank << 32) | start`` of every adjacent pair that joins into a token, and each pop
  either merges or drops a stale entry. An entry is stale when its start no longer
  starts a token, or when the pair there now spans other bytes than the entry's rank: a
  token only grows to the right, so the span of the pair at a start only grows, and
  equal spans mean equal bytes and so the same rank. A merge clears one bit and pushes at
  most two pairs, so a piece of n bytes costs O(n log n).
"""
from libc.stdint cimport UINT64_MAX, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from bpetrain._types cimport token_t
from bpetrain.encoding._tables cimport EMPTY, NO_RANK, clz64, pair_rank

cdef enum:
    CHUNK = 8  # ids moved per copy when encode_small closes the gap of a merge


cdef inline void sift_down(uint64_t* heap, int64_t size, int64_t i) noexcept nogil:
    """Move ``heap[i]`` down to its place in the 4-ary min-heap ``heap[:size]``."""
    cdef uint64_t item = heap[i]
    cdef int64_t first, child, k, last
    while True:
        first = 4 * i + 1
        if first >= size:
            break
        child = first
        last = first + 4 if first + 4 < size else size
        for k in range(first + 1, last):
            if heap[k] < heap[child]:
                child = k
        if heap[child] >= item:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = item


cdef inline void push(uint64_t* heap, int64_t* size, uint64_t item) noexcept nogil:
    """Add ``item`` to the 4-ary min-heap ``heap[:size]``."""
    cdef int64_t i = size[0]
    cdef int64_t parent
    size[0] += 1
    while i > 0:
        parent = (i - 1) >> 2
        if heap[parent] <= item:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


cdef inline void pop(uint64_t* heap, int64_t* size) noexcept nogil:
    """Remove the smallest item of the 4-ary min-heap ``heap[:size]``."""
    size[0] -= 1
    heap[0] = heap[size[0]]
    sift_down(heap, size[0], 0)


cdef inline int64_t prev_start(const uint64_t* bits, int64_t p) noexcept nogil:
    """The last token start at or before byte ``p`` (bit 0 is always set)."""
    cdef int64_t w = p >> 6
    cdef uint64_t word = bits[w] & ((<uint64_t>2 << (p & 63)) - 1)
    while word == 0:
        w -= 1
        word = bits[w]
    return (w << 6) + 63 - clz64(word)


cdef void encode_small(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       token_t* last) noexcept nogil:
    """tiktoken's loop: merge at the lowest rank (leftmost), update both neighbours; with
    ``last``, the pair of each merge goes there (the last one stays)."""
    cdef token_t ids[SMALL_PIECE + CHUNK]    # padded for the chunked copies below
    cdef token_t ranks[SMALL_PIECE + CHUNK]  # ranks[i]: rank of ids[i] joined with ids[i + 1]
    cdef token_t chunk[CHUNK]
    cdef int64_t m = n, i, at
    cdef token_t best
    cdef uint64_t low, key
    for i in range(n):
        ids[i] = t.byte_rank[piece[i]]
    for i in range(n - 1):
        ranks[i] = t.byte_pair[(<int>piece[i] << 8) | piece[i + 1]]
    while m > 1:
        # The lowest rank, leftmost on a tie, as the minimum of (rank << 6) | position
        # (positions < SMALL_PIECE <= 64; ranks are not negative): one conditional move
        # per pair instead of a branch that mispredicts.
        low = UINT64_MAX
        for i in range(m - 1):
            key = (<uint64_t>ranks[i] << 6) | <uint64_t>i
            low = key if key < low else low
        best = <token_t>(low >> 6)
        at = <int64_t>(low & 63)
        if best == NO_RANK:
            break
        if last != NULL:
            last[0] = ids[at]
            last[1] = ids[at + 1]
        ids[at] = best
        # Close the gap: eight ids and ranks at a time, by fixed-size copies the compiler
        # inlines (copied element by element, the loops became two calls of memmove per
        # merge; past m - 1 they copy what is never read, into the arrays' padding).
        i = at + 1
        while i < m - 1:
            memcpy(chunk, &ids[i + 1], CHUNK * sizeof(token_t))
            memcpy(&ids[i], chunk, CHUNK * sizeof(token_t))
            memcpy(chunk, &ranks[i + 1], CHUNK * sizeof(token_t))
            memcpy(&ranks[i], chunk, CHUNK * sizeof(token_t))
            i += CHUNK
        m -= 1
        if at > 0:
            ranks[at - 1] = pair_rank(t, ids[at - 1], best)
        if at < m - 1:
            ranks[at] = pair_rank(t, best, ids[at + 1])
    for i in range(m):
        out.ids[out.size + i] = <uint32_t>ids[i]
    out.size += m


cdef void encode_heap(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                      Scratch* scratch, token_t* last) noexcept nogil:
    """The heap + bitfield encoder (module docstring); ``scratch`` holds n bytes; with
    ``last``, the pair of each merge goes there (the last one stays)."""
    cdef token_t* tok = scratch.tok
    cdef uint64_t* bits = scratch.bits
    cdef uint64_t* heap = scratch.heap
    cdef int64_t size = 0, i, start, mid, end, left
    cdef uint64_t top, on_left, on_right
    cdef token_t rank, a, b, joined
    for i in range(n):
        tok[i] = t.byte_rank[piece[i]]
    memset(bits, 0xFF, ((n >> 6) + 1) * sizeof(uint64_t))
    for i in range(n - 1):
        rank = t.byte_pair[(<int>piece[i] << 8) | piece[i + 1]]
        if rank != NO_RANK:
            heap[size] = (<uint64_t>rank << 32) | <uint64_t>i
            size += 1
    for i in range((size - 2) // 4, -1, -1):
        sift_down(heap, size, i)
    while size > 0:
        top = heap[0]
        rank = <token_t>(top >> 32)
        start = <int64_t><uint32_t>top
        if not (bits[start >> 6] >> (start & 63)) & 1:
            pop(heap, &size)  # start was absorbed by the token on its left
            continue
        a = tok[start]
        mid = start + t.token_len[a]
        b = tok[mid] if mid < n else 0
        if mid >= n or t.token_len[a] + t.token_len[b] != t.token_len[rank]:
            pop(heap, &size)  # the pair at start has grown since this entry was pushed
            continue
        if last != NULL:
            last[0] = a
            last[1] = b
        tok[start] = rank
        bits[mid >> 6] &= ~(<uint64_t>1 << (mid & 63))
        # The new pairs on either side replace the top (a pop and a push in one sift).
        on_left = on_right = EMPTY
        if start > 0:
            left = prev_start(bits, start - 1)
            joined = pair_rank(t, tok[left], rank)
            if joined != NO_RANK:
                on_left = (<uint64_t>joined << 32) | <uint64_t>left
        end = start + t.token_len[rank]
        if end < n:
            joined = pair_rank(t, rank, tok[end])
            if joined != NO_RANK:
                on_right = (<uint64_t>joined << 32) | <uint64_t>start
        if on_left == EMPTY:
            on_left, on_right = on_right, EMPTY
        if on_left == EMPTY:
            pop(heap, &size)
        else:
            heap[0] = on_left
            sift_down(heap, size, 0)
            if on_right != EMPTY:
                push(heap, &size, on_right)
    i = 0
    while i < n:
        out.ids[out.size] = <uint32_t>tok[i]
        out.size += 1
        i += t.token_len[tok[i]]
