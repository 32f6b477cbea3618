# cython: language_level=3
"""The rank tables of a vocabulary and their builders (the struct and its lookups:
``_tables.pxd``).

A piece is first looked up whole in a hash table of the token bytes (most pieces of
real text are one token; tiktoken does the same). A slot of 16 bytes holds a token's
first 12 bytes, so a piece of up to 12 bytes (99% of the one-token pieces of mix-10M
with cl100k) is matched from one cache line, with no second read of the token's bytes.

The rank of two adjacent tokens comes from a table keyed by the pair of token ids
(built once, from every split of every token into two tokens; each slot packs the two
ids and the rank, 21 bits each, into 64 bits), so no byte string is hashed in the
inner loops; the first pairs of a piece (two bytes) come from a direct 256 x 256 table;
a bit filter in front of it (10 bits a pair: 128 KB with cl100k_base, 256 KB with
o200k_base, :func:`fill_filter`) answers most pairs that join into nothing without
leaving a core's L2 cache.
Once the linear encoder's tables are built, a table of each token's own split only
replaces it (:func:`build_split_pairs`): merging joins no other pair.

The token trie (the linear encoder's longest-prefix search) and each token's split
into the two tokens BPE joins into it (``split_left``, ``split_right``; the rust-gems
``bpe`` crate builds the same tables) are built here too, by a builder of their own
(:func:`build_linear_tables`): only the linear encoder and the token automaton read
them, so a first short encode does without.
"""
from cpython.array cimport array, clone
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject
from libc.stdint cimport INT64_MAX, INT64_MIN, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memset

from bpetrain._types cimport token_t
from bpetrain.encoding import _table_cache

# The tables live in ``array.array``s (made by :func:`new_array`), not numpy arrays: making
# an encoder, and encoding, do not import numpy. Their types by typecode: int32 "i",
# int64 "q", uint8 "B", uint64 "Q".
cdef array _INT32 = array("i"), _INT64 = array("q"), _UINT8 = array("B"), _UINT64 = array("Q")


cdef array new_array(array like, Py_ssize_t n, int fill):
    """A new array of ``n`` items of the type of ``like``, every byte ``fill`` (0, or 0xFF
    for -1 and ``EMPTY``), or left as it comes (``fill`` -1)."""
    cdef array out = clone(like, n, False)
    if fill >= 0:
        memset(out.data.as_voidptr, fill, n * like.ob_descr.itemsize)
    return out


cdef int table_shift(int64_t n_items, uint64_t* mask) noexcept:
    """Shift for Fibonacci hashing into a power-of-two table at most 4/5 full (linear
    probing stays short; smaller tables miss the cache less)."""
    cdef int bits = 4
    while 4 * (<int64_t>1 << bits) < 5 * n_items:
        bits += 1
    mask[0] = (<uint64_t>1 << bits) - 1
    return 64 - bits


cdef list build_tables(RankTables* t, dict mergeable_ranks):
    """Fill ``t`` with the tables the merging encoders read, of ``mergeable_ranks`` (token
    bytes -> rank = token id): the token bytes, the whole-token, byte and pair tables; the
    trie and the splits come later (:func:`build_linear_tables`) and ``t.linear`` stays 0.

    Returns
    -------
    list of array.array
        The arrays that own the tables' memory, to keep alive as long as ``t`` is read;
        the first is the int32 length of each rank's token, shape (n_ranks,) (0: none).

    An empty token (Whisper's ``multilingual.tiktoken`` gives ``b""`` a rank, and
    tiktoken accepts it) keeps its rank in ``n_ranks`` but enters no table: a piece is
    never empty and no pair of tokens joins into it, so encoding never gives it, as in
    tiktoken; its length, 0, is the length of a rank without a token.

    Raises
    ------
    ValueError
        If a rank is out of range or repeated, or a byte has no rank.
    """
    cdef Py_ssize_t n_tokens = len(mergeable_ranks)
    if n_tokens == 0:
        raise ValueError("mergeable_ranks is empty: it needs at least the 256 single bytes")
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef int64_t rank, n, low = INT64_MAX, high = INT64_MIN, n_bytes = 0, n_splits = 0, longest = 0
    while PyDict_Next(mergeable_ranks, &pos, &key, &value):  # the ranks' range, the bytes' total
        if not PyBytes_Check(<object>key):
            raise TypeError(f"mergeable_ranks maps token bytes to ranks; got the key {<object>key!r}, not bytes")
        rank = <object>value
        n = PyBytes_GET_SIZE(<object>key)
        low = min(low, rank)
        high = max(high, rank)
        n_bytes += n
        n_splits += max(n - 1, 0)
        longest = max(longest, n)
    if low < 0 or high > <int64_t>ID_MASK - 1:
        raise ValueError(f"ranks must be in [0, {ID_MASK - 1}] (the encoder packs three ranks in 64 bits), "
                         f"got {low}..{high}")
    t.n_ranks = high + 1
    cdef array token_len = new_array(_INT32, t.n_ranks, 0)
    cdef array token_start = new_array(_INT64, t.n_ranks + 1, 0)
    cdef array token_bytes = new_array(_UINT8, n_bytes, -1)
    cdef array given = new_array(_UINT8, t.n_ranks, 0)
    cdef int32_t* lengths = <int32_t*>token_len.data.as_voidptr
    cdef int64_t* starts = <int64_t*>token_start.data.as_voidptr
    cdef uint8_t* data = token_bytes.data.as_uchars
    cdef uint8_t* seen = given.data.as_uchars
    pos = 0
    while PyDict_Next(mergeable_ranks, &pos, &key, &value):  # each rank's length
        rank = <object>value
        if not 0 <= rank < t.n_ranks or seen[rank]:
            _raise_repeated(mergeable_ranks)
        seen[rank] = 1
        lengths[rank] = <int32_t>PyBytes_GET_SIZE(<object>key)
    for rank in range(t.n_ranks):
        starts[rank + 1] = starts[rank] + lengths[rank]
    if starts[t.n_ranks] != n_bytes:
        raise RuntimeError("mergeable_ranks changed while the encoder's tables were built from it")
    pos = 0
    while PyDict_Next(mergeable_ranks, &pos, &key, &value):  # the bytes, in rank order
        rank = <object>value
        if not 0 <= rank < t.n_ranks or PyBytes_GET_SIZE(<object>key) != lengths[rank]:
            raise RuntimeError("mergeable_ranks changed while the encoder's tables were built from it")
        memcpy(data + starts[rank], PyBytes_AS_STRING(<object>key), lengths[rank])
    t.max_token_len = longest
    t.token_len = lengths
    t.token_start = starts
    t.token_bytes = data
    cdef list arrays = [token_len, token_start, token_bytes]
    fill_whole(t, n_tokens, arrays)
    fill_bytes(t, arrays)
    fill_pairs(t, n_splits, arrays)
    return arrays


cdef int _raise_repeated(dict mergeable_ranks) except -1:
    """Raise the error of a rank given to more than one token (the smallest such rank)."""
    counts = {}
    for rank in mergeable_ranks.values():
        counts[rank] = counts.get(rank, 0) + 1
    repeated = [rank for rank, count in counts.items() if count > 1]
    if not repeated:
        raise RuntimeError("mergeable_ranks changed while the encoder's tables were built from it")
    raise ValueError(f"rank {min(repeated)} is given to more than one token")


cdef list build_linear_tables(RankTables* t):
    """Fill the tables of ``t`` that only the linear encoder and the token automaton read,
    the trie and the splits (``t`` built by :func:`build_tables`); ``t.linear`` is left
    to the caller.

    Returns
    -------
    list of array.array
        The arrays that own their memory, to keep alive as long as ``t`` is read.
    """
    cdef list arrays = []
    cdef int64_t rank, n_deep = 0
    for rank in range(t.n_ranks):
        if t.token_len[rank] > 2:
            n_deep += t.token_len[rank] - 2
    fill_trie(t, n_deep, arrays)
    fill_splits(t, arrays)
    fill_span_bits(t, arrays)
    return arrays


cdef inline int64_t log2_words(int64_t n_words) noexcept:
    """``log2(64 * n_words)`` for a power of two ``n_words``: the bits of a filter of that many words."""
    return 63 - clz64(<uint64_t>n_words << 6)


cdef object linear_tables_body(const RankTables* t, bint linear, bint own_splits):
    """The linear tables of ``t`` (:func:`build_linear_tables`), with ``t.split_pairs`` if
    ``linear and own_splits`` (:func:`build_split_pairs`, built) and the two answers of
    ``_linear.merges_in_rank_order``, as one buffer (a bytearray) for the on-disk cache
    (``_table_cache.store_tables``); :func:`load_linear_tables` reads it back.

    The layout (native byte order): ``LINEAR_HEADER`` int64 (the ranks, the trie's nodes,
    ``linear``, ``own_splits``, the edge table's slots, the span filter's words, the split
    pair table's slots and its filter's words, both 0 without it), then the uint64 arrays
    (the edges, the span filter, the split pair table's slots and filter), then the int32
    ones (``node2``, the split pair table's dense part, ``next_prefix``, ``split_left``,
    ``split_right``): each array starts at a multiple of its item size."""
    cdef bint split = linear and own_splits
    cdef int64_t header[LINEAR_HEADER]
    header[0] = t.n_ranks
    header[1] = t.n_nodes
    header[2] = linear
    header[3] = own_splits
    header[4] = <int64_t>t.edge_mask + 1
    header[5] = ((<int64_t>1) << (64 - t.span_shift)) >> 6
    header[6] = <int64_t>t.split_pairs.mask + 1 if split else 0
    header[7] = ((<int64_t>1) << (64 - t.split_pairs.filter_shift)) >> 6 if split else 0
    cdef const void* parts[9]
    cdef int64_t sizes[9]
    parts[0], sizes[0] = t.edges, 8 * header[4]
    parts[1], sizes[1] = t.span_bits, 8 * header[5]
    parts[2], sizes[2] = t.split_pairs.slots, 8 * header[6]
    parts[3], sizes[3] = t.split_pairs.filter, 8 * header[7]
    parts[4], sizes[4] = t.node2, 4 * 65536
    parts[5], sizes[5] = t.split_pairs.dense, (4 << (2 * DENSE_BITS)) if split else 0
    parts[6], sizes[6] = t.next_prefix, 4 * t.n_ranks
    parts[7], sizes[7] = t.split_left, 4 * t.n_ranks
    parts[8], sizes[8] = t.split_right, 4 * t.n_ranks
    cdef int64_t k, offset = sizeof(header)
    for k in range(9):
        offset += sizes[k]
    body = bytearray(offset)
    cdef uint8_t[::1] view = body
    cdef uint8_t* out = &view[0]
    memcpy(out, header, sizeof(header))
    offset = sizeof(header)
    for k in range(9):
        if sizes[k]:
            memcpy(out + offset, parts[k], sizes[k])
        offset += sizes[k]
    return body


cdef list load_linear_tables(RankTables* t, object body, bint* linear, bint* own_splits):
    """Point the tables of ``t`` that :func:`build_linear_tables` builds, and
    ``t.split_pairs`` if ``linear and own_splits``, into ``body`` (a buffer as
    :func:`linear_tables_body` wrote it, 8-byte aligned; read only from now on) and set
    ``linear`` and ``own_splits``; returns ``[body]``, to keep alive as long as ``t`` is
    read. None, with ``t`` unchanged, if ``body`` does not have that layout for this
    vocabulary (another number of ranks, sizes that are not powers of two or do not add up
    to its length, not aligned). ``t.linear`` and ``t.pairs`` are left to the caller."""
    cdef const uint8_t[::1] data = body
    cdef int64_t header[LINEAR_HEADER]
    cdef int64_t k, n_ranks = t.n_ranks, offset = sizeof(header)
    cdef bint split
    cdef const uint8_t* start
    if data.shape[0] < sizeof(header) or (<uintptr_t>&data[0]) & 7:
        return None
    start = &data[0]
    memcpy(header, start, sizeof(header))
    split = header[2] == 1 and header[3] == 1
    for k in (4, 5, 6, 7):
        if header[k] < 0 or header[k] & (header[k] - 1) or header[k] > (1 << 40):
            return None
    if (header[0] != n_ranks or not n_ranks <= header[1] < (1 << 24) - 1 or not 0 <= header[2] <= 1
            or not 0 <= header[3] <= 1 or header[4] < 16 or not 1 <= header[5] <= (1 << MAX_FILTER_BITS) >> 6
            or (header[6] >= 16 and 1 <= header[7] <= (1 << MAX_FILTER_BITS) >> 6) != split
            or (not split and header[6] + header[7] != 0)
            or data.shape[0] != sizeof(header) + 8 * (header[4] + header[5] + header[6] + header[7])
            + 4 * (65536 + 3 * n_ranks) + ((4 << (2 * DENSE_BITS)) if split else 0)):
        return None
    t.edges = <const uint64_t*>(start + offset)
    t.edge_mask = <uint64_t>header[4] - 1
    t.edge_shift = clz64(<uint64_t>header[4]) + 1  # 64 - log2(slots)
    offset += 8 * header[4]
    t.span_bits = <const uint64_t*>(start + offset)
    t.span_shift = 64 - log2_words(header[5])
    offset += 8 * header[5]
    if split:
        t.split_pairs.slots = <const uint64_t*>(start + offset)
        t.split_pairs.mask = <uint64_t>header[6] - 1
        t.split_pairs.shift = clz64(<uint64_t>header[6]) + 1
        offset += 8 * header[6]
        t.split_pairs.filter = <const uint64_t*>(start + offset)
        t.split_pairs.filter_shift = 64 - log2_words(header[7])
        offset += 8 * header[7]
    t.node2 = <const int32_t*>(start + offset)
    offset += 4 * 65536
    if split:
        t.split_pairs.dense = <const token_t*>(start + offset)
        offset += 4 << (2 * DENSE_BITS)
    t.next_prefix = <const token_t*>(start + offset)
    t.split_left = <const token_t*>(start + offset + 4 * n_ranks)
    t.split_right = <const token_t*>(start + offset + 8 * n_ranks)
    t.n_nodes = header[1]
    linear[0] = header[2]
    own_splits[0] = header[3]
    return [body]


cdef inline uint64_t span_window(const uint8_t* data, int64_t n, int64_t i) noexcept nogil:
    """The window of the token ``data[:n]`` at its boundary before byte ``i`` (0 < i < n):
    its ``k1 = min(2, i)`` bytes before and ``k2 = min(2, n - i)`` after, in one word placed
    and tagged as ``_tables.spanned`` reads the windows of a piece."""
    cdef uint64_t word = <uint64_t>data[i - 1] << 16 | <uint64_t>data[i] << 24
    cdef int64_t k1 = 2 if i >= 2 else 1, k2 = 2 if n - i >= 2 else 1
    if k1 == 2:
        word |= <uint64_t>data[i - 2] << 8
    if k2 == 2:
        word |= <uint64_t>data[i + 1] << 32
    return word | <uint64_t>(k1 << 2 | k2)


cdef int fill_span_bits(RankTables* t, list arrays) except -1:
    """The filter ``spanned`` reads: a bit for the window (:func:`span_window`) of each
    boundary inside each token, 16 bits per boundary, at most ``2**MAX_FILTER_BITS``
    bits (one hash; 1 MB with cl100k_base and o200k_base, where 1-2% of the windows of
    no token pass). A smaller filter passes more, and each window passed keeps a
    boundary uncut: at 256 KB, Chinese text per document took 1.1x the time."""
    cdef int64_t rank, n, i, n_windows = 0
    cdef int bits = 6
    cdef uint64_t h
    cdef const uint8_t* data
    for rank in range(t.n_ranks):
        n_windows += max(t.token_len[rank] - 1, 0)
    while bits < MAX_FILTER_BITS and (<int64_t>1 << bits) < 16 * n_windows:
        bits += 1
    cdef array table = new_array(_UINT64, (<int64_t>1 << bits) >> 6, 0)
    arrays.append(table)
    cdef uint64_t* span_bits = <uint64_t*>table.data.as_voidptr
    t.span_shift = 64 - bits
    with nogil:
        for rank in range(t.n_ranks):
            n = t.token_len[rank]
            data = t.token_bytes + t.token_start[rank]
            for i in range(1, n):
                h = (span_window(data, n, i) * FIB) >> t.span_shift
                span_bits[h >> 6] |= <uint64_t>1 << (h & 63)
    t.span_bits = span_bits
    return 0


cdef int fill_whole(RankTables* t, int64_t n_tokens, list arrays) except -1:
    """Insert every token into the whole-token table (open addressing, linear probing)."""
    cdef int64_t rank, n
    cdef const uint8_t* data
    cdef uint64_t head, i
    t.whole_shift = table_shift(n_tokens, &t.whole_mask)
    cdef array table = new_array(_UINT8, (t.whole_mask + 1) * sizeof(TokenSlot), -1)
    arrays.append(table)
    cdef TokenSlot* whole = <TokenSlot*>table.data.as_voidptr
    t.whole = whole
    with nogil:
        for i in range(t.whole_mask + 1):
            whole[i].meta = SLOT_EMPTY
        for rank in range(t.n_ranks):
            n = t.token_len[rank]
            if n == 0:
                continue
            data = t.token_bytes + t.token_start[rank]
            head = load_head(data, n)
            i = (hash_bytes(data, n, head) * FIB) >> t.whole_shift
            while whole[i].meta != SLOT_EMPTY:
                i = (i + 1) & t.whole_mask
            whole[i].head = head
            whole[i].tail = slot_tail(data, n)
            whole[i].meta = slot_meta(rank, n)
    return 0


cdef int fill_bytes(RankTables* t, list arrays) except -1:
    """The one-byte and two-byte ranks; every byte must be a token (byte-level BPE)."""
    cdef array byte_pair = new_array(_INT32, 65536, -1)
    arrays.append(byte_pair)
    cdef token_t* table = <token_t*>byte_pair.data.as_voidptr
    cdef uint8_t two[8]  # 8, not 2: load_head reads a word (the bytes past 2 masked off)
    cdef int x, y
    t.byte_pair = table
    missing = []
    for x in range(256):
        two[0] = x
        t.byte_rank[x] = token_rank(t, two, 1)
        if t.byte_rank[x] == NO_RANK:
            missing.append(x)
    if missing:
        raise ValueError(
            f"{len(missing)} of the 256 single bytes have no rank (first: {bytes([missing[0]])!r}); "
            "byte-level BPE needs every byte as a token")
    for x in range(256):
        two[0] = x
        for y in range(256):
            two[1] = y
            table[(x << 8) | y] = token_rank(t, two, 2)
    return 0


cdef int fill_pairs(RankTables* t, int64_t n_splits, list arrays) except -1:
    """Build the pair table and its filter: every split of every token into two tokens;
    a large vocabulary's table is read from the on-disk cache when it was kept there
    (:mod:`bpetrain.encoding._table_cache`), else built and kept."""
    cdef const uint8_t[::1] slots
    cdef array pairs
    key = None
    if n_splits >= _table_cache.MIN_SPLITS:
        key = _table_cache.vocabulary_key(arrays[0], arrays[2], __file__)
        kept = _table_cache.read_pairs(key, 3 * n_splits + 16)
        if kept is not None and len(kept) % 8 == 0 and (len(kept) // 8) & (len(kept) // 8 - 1) == 0:
            slots = kept
            if (<uintptr_t>&slots[0]) & 7 == 0:  # read where it lies (read_pairs aligns it)
                t.all_pairs.mask = len(kept) // 8 - 1
                t.all_pairs.shift = clz64(<uint64_t>(len(kept) // 8)) + 1  # 64 - log2(slots)
                fill_filter(&t.all_pairs, <const uint64_t*>&slots[0], kept, arrays)
                t.pairs = &t.all_pairs
                return 0
    pairs = build_pairs(t, n_splits)
    fill_filter(&t.all_pairs, <const uint64_t*>pairs.data.as_voidptr, pairs, arrays)
    t.pairs = &t.all_pairs
    if key is not None:
        _table_cache.store_pairs(key, pairs)
    return 0


cdef array build_pairs(RankTables* t, int64_t n_splits):
    """The pair table (uint64 array, a power of two slots): every split of every token into
    two tokens; sets ``t.all_pairs.shift`` and ``t.all_pairs.mask``."""
    cdef int64_t rank, k, n_pairs = 0
    cdef int32_t length
    cdef const uint8_t* data
    cdef token_t left, right
    cdef array keys = new_array(_UINT64, max(n_splits, 1), -1)
    cdef array values = new_array(_INT32, max(n_splits, 1), -1)
    cdef uint64_t* key_view = <uint64_t*>keys.data.as_voidptr
    cdef int32_t* value_view = <int32_t*>values.data.as_voidptr
    with nogil:
        for rank in range(t.n_ranks):
            length = t.token_len[rank]
            data = t.token_bytes + t.token_start[rank]
            for k in range(1, length):
                left = token_rank(t, data, k)
                if left == NO_RANK:
                    continue
                right = token_rank(t, data + k, length - k)
                if right == NO_RANK:
                    continue
                key_view[n_pairs] = pair_key(left, right)
                value_view[n_pairs] = <int32_t>rank
                n_pairs += 1
    return hashed_pairs(&t.all_pairs, key_view, value_view, n_pairs)


cdef array hashed_pairs(PairTable* p, const uint64_t* keys, const int32_t* ranks, int64_t n_pairs):
    """The slots of a pair table holding ``keys[k]`` (``pair_key``, each once) -> ``ranks[k]``
    for k < ``n_pairs``: a uint64 array, a power of two long, all EMPTY but for them; sets
    ``p.shift`` and ``p.mask``."""
    cdef int64_t k
    cdef uint64_t key, i
    p.shift = table_shift(n_pairs, &p.mask)
    cdef array pairs = new_array(_UINT64, p.mask + 1, 0xFF)  # all EMPTY
    cdef uint64_t* table = <uint64_t*>pairs.data.as_voidptr
    with nogil:
        for k in range(n_pairs):
            key = keys[k]
            i = (key * FIB) >> p.shift
            while table[i] != EMPTY:
                i = (i + 1) & p.mask
            table[i] = (key << ID_BITS) | <uint64_t>ranks[k]
    return pairs


cdef int fill_filter(PairTable* p, const uint64_t* table, object owner, list arrays) except -1:
    """Point ``p`` at the slots ``table`` (``p.shift`` and ``p.mask`` set), whose memory
    ``owner`` holds, and build its filter, a bit for the hash of each pair in it, and the
    dense table of the pairs of two ids below ``2**DENSE_BITS`` (``pair_rank`` reads it for
    them); ``owner``, the filter and the dense table are added to ``arrays``.

    The filter has ``FILTER_BITS_PER_PAIR`` bits per pair (rounded up to a power of two,
    at most ``2**MAX_FILTER_BITS``): one in ten or fewer of the pairs that join into no
    token pass it. A filter in a core's L2 cache is what makes it pay, and the pair
    table's slots, the piece table and the text compete for that cache: with the some
    100,000 pairs of cl100k_base's splits (``build_split_pairs``), a filter of 2**23 bits
    (1 MB) made a call per 1 KB document of new text 2-8% slower than one of 2**20 or
    2**21 bits, on English, Python's documentation, multilingual text and a mix of them;
    with o200k_base's some 200,000 pairs, 2**21 bits were 0-5% faster than 2**23. No
    filter at all was 2-9% slower than 2**23 bits."""
    cdef array dense_pairs = new_array(_INT32, 1 << (2 * DENSE_BITS), -1)
    cdef token_t* dense = <token_t*>dense_pairs.data.as_voidptr
    cdef uint64_t k, key, i, left, right, n_pairs = 0
    cdef int filter_bits = 6  # one word at least
    for k in range(p.mask + 1):
        n_pairs += table[k] != EMPTY
    while (<uint64_t>1 << filter_bits) < FILTER_BITS_PER_PAIR * n_pairs and filter_bits < MAX_FILTER_BITS:
        filter_bits += 1
    cdef array pair_filter = new_array(_UINT64, (<int64_t>1 << filter_bits) // 64, 0)
    arrays += [owner, pair_filter, dense_pairs]
    cdef uint64_t* bits = <uint64_t*>pair_filter.data.as_voidptr
    for k in range(<uint64_t>1 << (2 * DENSE_BITS)):
        dense[k] = NO_RANK
    p.slots = table
    p.filter = bits
    p.filter_shift = 64 - filter_bits
    p.dense = dense
    with nogil:
        for k in range(p.mask + 1):
            if table[k] != EMPTY:
                key = table[k] >> ID_BITS
                i = (key * FIB) >> p.filter_shift
                bits[i >> 6] |= <uint64_t>1 << (i & 63)
                left = key >> ID_BITS
                right = key & ID_MASK
                if (left | right) >> DENSE_BITS == 0:
                    dense[(left << DENSE_BITS) | right] = <token_t>(table[k] & ID_MASK)
    return 0


cdef int fill_trie(RankTables* t, int64_t n_deep, list arrays) except -1:
    """Build the token trie and each token's longest proper prefix token (``next_prefix``).

    Nodes at depth 3 and more are found through the edge table, first built with room
    for every token byte past the second (``n_deep``), then copied into a table sized for
    the edges made.
    """
    cdef int64_t rank, k, length, n_edges = 0
    cdef int32_t node, found
    cdef token_t best
    cdef int64_t next_id = t.n_ranks
    cdef const uint8_t* data
    cdef uint64_t key, i, slot, mask
    cdef int shift
    cdef array node2 = new_array(_INT32, 65536, 0xFF)  # all -1
    cdef array next_prefix = new_array(_INT32, t.n_ranks, 0xFF)
    arrays += [node2, next_prefix]
    cdef int32_t* n2 = <int32_t*>node2.data.as_voidptr
    cdef token_t* prefix = <token_t*>next_prefix.data.as_voidptr
    t.node2 = n2
    t.next_prefix = prefix
    shift = table_shift(max(n_deep, 1), &mask)
    cdef array draft = new_array(_UINT64, mask + 1, 0xFF)  # all EMPTY
    cdef uint64_t* table = <uint64_t*>draft.data.as_voidptr
    with nogil:
        for rank in range(t.n_ranks):
            length = t.token_len[rank]
            data = t.token_bytes + t.token_start[rank]
            best = -1
            node = t.byte_rank[data[0]] if length > 0 else -1
            for k in range(2, length + 1):  # node: the prefix of k - 1 bytes
                if node < t.n_ranks:
                    best = node
                if k == 2:
                    key = (<uint64_t>data[0] << 8) | data[1]
                    if n2[key] < 0:
                        found = token_rank(t, data, 2)
                        if found == NO_RANK:
                            found = <int32_t>next_id
                            next_id += 1
                        n2[key] = found
                    node = n2[key]
                    continue
                key = (<uint64_t>node << 8) | data[k - 1]
                i = (key * FIB) >> shift
                while table[i] != EMPTY and table[i] >> 32 != key:
                    i = (i + 1) & mask
                if table[i] == EMPTY:
                    found = token_rank(t, data, k)
                    if found == NO_RANK:
                        found = <int32_t>next_id
                        next_id += 1
                    table[i] = (key << 32) | <uint32_t>found
                    n_edges += 1
                node = <int32_t>(table[i] & LOW32)
            if length > 0:
                prefix[rank] = best
            if next_id >= (1 << 24) - 1:
                break  # node ids must fit 24 bits of an edge key: no linear encoder
    t.n_nodes = next_id
    t.edge_shift = table_shift(max(n_edges, 1), &t.edge_mask)
    cdef array edges = new_array(_UINT64, t.edge_mask + 1, 0xFF)  # all EMPTY
    arrays.append(edges)
    cdef uint64_t* final = <uint64_t*>edges.data.as_voidptr
    t.edges = final
    with nogil:
        for k in range(mask + 1):
            slot = table[k]
            if slot != EMPTY:
                i = ((slot >> 32) * FIB) >> t.edge_shift
                while final[i] != EMPTY:
                    i = (i + 1) & t.edge_mask
                final[i] = slot
    return 0


cdef int fill_splits(RankTables* t, list arrays) except -1:
    """Find the two tokens BPE joins into each token.

    In rank order, a token's split is its longest prefix token ``left`` (then shorter
    ones) whose rest is a token ``right``, both made before it (lower ranks, or single
    bytes), that BPE keeps apart when given ranks below the token's (:func:`valid_pair`);
    the rust-gems ``bpe`` crate builds its ``split_left`` and ``split_right`` the same
    way. A token without one is never made by merging (tiktoken still gives it to a piece
    that is exactly its bytes).
    """
    cdef int64_t length, rank
    cdef token_t left, right, r
    cdef int x
    cdef const uint8_t* data
    cdef array split_left = new_array(_INT32, t.n_ranks, 0xFF)  # all -1
    cdef array split_right = new_array(_INT32, t.n_ranks, 0xFF)
    arrays += [split_left, split_right]
    cdef token_t* sl = <token_t*>split_left.data.as_voidptr
    cdef token_t* sr = <token_t*>split_right.data.as_voidptr
    t.split_left = sl
    t.split_right = sr
    for x in range(256):
        sl[t.byte_rank[x]] = sr[t.byte_rank[x]] = t.byte_rank[x]
    with nogil:
        for rank in range(t.n_ranks):
            length = t.token_len[rank]
            if length < 2:
                continue
            r = <token_t>rank
            data = t.token_bytes + t.token_start[rank]
            left = t.next_prefix[rank]
            while left >= 0:
                if sl[left] >= 0 and (left < r or t.token_len[left] == 1):
                    right = token_rank(t, data + t.token_len[left], length - t.token_len[left])
                    if (right != NO_RANK and sl[right] >= 0 and (right < r or t.token_len[right] == 1)
                            and valid_pair(t, left, right, r)):
                        sl[rank] = left
                        sr[rank] = right
                        break
                left = t.next_prefix[left]
    return 0


cdef list build_split_pairs(RankTables* t):
    """Build a pair table of each token's own split only (``t.split_pairs``), for ``t`` to
    read once its owner points ``t.pairs`` at it; the arrays that own it. The caller has checked (``_linear.merges_in_rank_order``)
    that merging the bytes of each token with a split (``split_left``, ``split_right``)
    alone makes it, joining that split last, and that the tokens with a split are those
    merging makes.

    Merging gives the same ids with this table. A token that merging makes inside a
    piece spans bytes whose merges all happened inside that span, in the order they
    take in the token's bytes alone (no merge across its ends happened before it was
    made, and ties go leftmost in both), so the two tokens it was made from are those
    that merging its bytes alone joins last: its split. Two tokens that join into a
    token otherwise are never merged, so never the lowest rank: leaving them out changes
    no choice. The table holds one pair per token instead of every split of every token
    into two tokens (200,000 pairs instead of 446,000 with o200k_base: 2 MB of slots
    instead of 8), so its slots and its filter miss the caches less. The rust-gems ``bpe`` crate looks pairs up in the same
    table (its ``pair_lookup``, made from its ``split_table``).

    Threads encoding meanwhile read the old table until ``t.pairs`` points at the new
    one (set last by the owner, one pointer): both give the same ids.
    """
    cdef int64_t rank, n_pairs = 0
    cdef list arrays = []
    cdef array keys = new_array(_UINT64, max(t.n_ranks, 1), -1)
    cdef array values = new_array(_INT32, max(t.n_ranks, 1), -1)
    cdef uint64_t* key_view = <uint64_t*>keys.data.as_voidptr
    cdef int32_t* value_view = <int32_t*>values.data.as_voidptr
    for rank in range(t.n_ranks):
        if t.token_len[rank] >= 2 and t.split_left[rank] >= 0:
            key_view[n_pairs] = pair_key(t.split_left[rank], t.split_right[rank])
            value_view[n_pairs] = <int32_t>rank
            n_pairs += 1
    cdef array pairs = hashed_pairs(&t.split_pairs, key_view, value_view, n_pairs)
    fill_filter(&t.split_pairs, <const uint64_t*>pairs.data.as_voidptr, pairs, arrays)
    return arrays
