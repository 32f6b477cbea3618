# cython: language_level=3
"""The linear encoder of one piece: the rust-gems ``bpe`` crate's backtracking encoder
(``backtrack_encoder.rs``).

Tokens are appended left to right, each the longest token the text at that point starts
with (from the token trie) that is valid after the previous token
(:func:`bpetrain.encoding._tables.valid_pair`), else a shorter prefix token, and a
bitfield marks the positions no encoding passes through. It gives BPE's ids only when
merges run in rank order; :func:`merges_in_rank_order` checks that, token by token,
against the merging encoders (``bpetrain.encoding._heap``).
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from bpetrain._types cimport token_t
from bpetrain.encoding._buffers cimport free_buffers, grow_ids, grow_scratch
from bpetrain.encoding._heap cimport SMALL_PIECE, encode_heap, encode_small
from bpetrain.encoding._tables cimport NO_RANK, child, valid_pair


cdef inline token_t longest_prefix(const RankTables* t, const uint8_t* data, int64_t n) noexcept nogil:
    """The rank of the longest token that ``data[:n]`` starts with (n >= 1)."""
    cdef token_t best = t.byte_rank[data[0]]
    cdef int32_t node
    cdef int64_t i = 2
    if n == 1:
        return best
    node = t.node2[(<int>data[0] << 8) | data[1]]
    if n > t.max_token_len:
        n = t.max_token_len
    while node >= 0:
        if node < t.n_ranks:
            best = node
        if i >= n:
            break
        node = child(t, node, data[i])
        i += 1
    return best


cdef int64_t encode_linear(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                           Scratch* scratch, const Sync* sync) noexcept nogil:
    """The backtracking encoder of the rust-gems ``bpe`` crate (``backtrack_encoder.rs``).

    Tokens are appended left to right, each the longest token the text at that point
    starts with that is valid after the previous token (``valid_pair``), else its
    longest prefix token, and so on; if none is, the previous token is taken back and
    its position marked in a bitfield as one no encoding passes through. A valid
    token after a valid encoding makes a valid encoding (the ``bpe`` README, corollary IIIa),
    and the valid encoding of a text is unique, so the first one to reach the end is
    BPE's. Each position is given up at most once: linear in ``n`` for a given
    vocabulary. ``scratch`` holds ``n`` bytes; ``out`` has room for ``n`` ids.

    With ``sync`` (``piece`` is ``text[sync.start:sync.target]``), it stops as soon as
    its last token is also the token ending there in the encoding of
    ``text[:sync.target]``: from there on the two encodings agree (the ``bpe`` README,
    corollary III, and uniqueness), so the count is known. Returns that count, or
    -1 when it ran to the end (the ids are then all in ``out``).
    """
    cdef uint64_t* bits = scratch.bits  # bit p: an encoding may still pass through byte p
    cdef int64_t base = out.size, pos = 0, end, at
    cdef token_t token, last
    memset(bits, 0xFF, ((n >> 6) + 1) * sizeof(uint64_t))
    token = longest_prefix(t, piece, n)
    while pos < n:
        end = pos + t.token_len[token]
        if ((bits[end >> 6] >> (end & 63)) & 1 and t.split_left[token] >= 0
                and (out.size == base or valid_pair(t, <token_t>out.ids[out.size - 1], token, NO_RANK))):
            out.ids[out.size] = <uint32_t>token
            out.size += 1
            pos = end
            if sync != NULL:
                at = sync.start + end
                if (sync.last[at] == token and sync.order[at] <= sync.order[sync.target]
                        and sync.order[sync.target] < sync.order[at] + sync.size[at]):
                    return out.size - base + sync.counts[sync.target] - sync.counts[at]
            if pos < n:
                token = longest_prefix(t, piece + pos, n - pos)
        elif t.next_prefix[token] >= 0:
            token = t.next_prefix[token]
        else:  # nothing valid starts at pos: take the previous token back
            bits[pos >> 6] &= ~(<uint64_t>1 << (pos & 63))
            out.size -= 1
            last = <token_t>out.ids[out.size]
            pos -= t.token_len[last]
            token = last
    return -1


cdef int merges_in_rank_order(const RankTables* t, bint* own_splits) except -1:
    """1 if the linear encoder gives BPE's ids for this vocabulary, else 0.

    Merges in rank order are what the backtracking encoder assumes. They hold when, for
    every token, whether it has a split (``t.split_left``) agrees with whether the
    merging encoders, without the whole-token shortcut, turn the token's bytes into that
    token; and the trie's node ids must fit the 24 bits of an edge key. ``own_splits``
    is set to whether, besides, each token with a split is made by joining it last
    (what ``_tables.build_split_pairs`` needs).
    """
    cdef IdBuffer out = IdBuffer(NULL, 0, 0)
    cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
    cdef int64_t length, rank
    cdef const uint8_t* data
    cdef bint agree = t.n_nodes < (1 << 24) - 1
    cdef token_t last[2]
    own_splits[0] = True
    try:
        with nogil:
            grow_ids(&out, t.max_token_len)
            grow_scratch(&scratch, t.max_token_len)
            for rank in range(t.n_ranks):
                length = t.token_len[rank]
                if length < 2:
                    continue
                data = t.token_bytes + t.token_start[rank]
                out.size = 0
                if length <= SMALL_PIECE:
                    encode_small(t, data, length, &out, last)
                else:
                    encode_heap(t, data, length, &out, &scratch, last)
                if (out.size == 1 and out.ids[0] == <uint32_t>rank) != (t.split_left[rank] >= 0):
                    agree = False
                elif t.split_left[rank] >= 0 and (last[0] != t.split_left[rank] or last[1] != t.split_right[rank]):
                    own_splits[0] = False
    finally:
        free_buffers(&out, &scratch)
    return agree
