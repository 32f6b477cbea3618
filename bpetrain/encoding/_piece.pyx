# cython: language_level=3
"""One piece to its token ids, by tiktoken's rule; four paths give that result:

1. The whole piece is looked up first: in the call's piece table (pieces of 1 to
   ``CACHE_PIECE`` bytes seen before, one token or several: :func:`encode_piece`,
   inlined into each text loop, and :class:`PieceCaches`), else in the whole-token table
   (``_tables.token_rank``): most pieces of real text are one token.
2. Pieces of at least ``LINEAR_PIECE`` bytes go to the linear encoder
   (``bpetrain.encoding._linear``), where the vocabulary merges in rank order
   (``RankTables.linear``); without it paths 3 and 4 take every piece.
3. Shorter pieces (up to ``SMALL_PIECE`` bytes) run tiktoken's own loop
   (``bpetrain.encoding._heap.encode_small``).
4. Longer pieces, where the linear encoder does not apply, use the heap + bitfield
   encoder (``bpetrain.encoding._heap.encode_heap``).

A piece that is not one token and has a character of three or four bytes (Han, kana,
Hangul, ...) in its first eight bytes is first cut where no token spans a boundary of such
characters (:func:`encode_cut`: no merge crosses it); its parts take paths 1 to 4 each,
so that the characters and words it is made of, seen in other pieces, are found in the
piece table. Encoding Chinese text so (fortunes.txt's first 3 MB, one call per ~1 KB
document, text not seen before) takes 0.79-0.83x the time of merging its pieces whole, with
cl100k_base and o200k_base, lists and arrays.

Pieces of ``LINEAR_PIECE`` to ``OTHER_HEAP`` bytes with a byte above 0x7F in their
first eight (text of other scripts: a run of Han characters is one piece) take path 4
instead of path 2: there the trie walk of the linear encoder costs a table probe per
byte. Such pieces of up to ``SMALL_PIECE`` bytes take path 3, as all others do: on the
new pieces of 17 to 32 bytes with such a byte, tiktoken's loop took 0.55-0.71x the heap
encoder's time on Russian text (two parts of fortunes.txt), 0.83-0.95x on Chinese text
(fortunes.txt) and on mix-10M, with cl100k_base and o200k_base (process time, the merging
alone).

The piece table has two parts: pieces of 1 to ``SHORT_PIECE`` bytes (most pieces of real
text) in entries of 16 bytes (``ShortEntry``: the bytes, and the length and up to
``SHORT_IDS`` ids in one word), longer ones in entries of 32 bytes (``CacheEntry``), so
that the entries in use take fewer cache lines. A piece of 1 to ``CACHE_PIECE`` bytes not
in the piece table is found by paths 1 to 4 (one of 1 or 2 bytes in the direct tables)
and stored there (:func:`encode_new_short`, :func:`encode_new`) if its entry holds its
ids. Pieces of 1 and 2 bytes go through the table though the direct tables answer with
one load: one lookup for every piece of up to ``SHORT_PIECE`` bytes spares the branches
on the length that a choice by length mispredicts (:func:`encode_keyed`).

Once an encoder has read enough text (``BytePairEncoder.warm``), its piece tables are
seeded (:class:`PieceSeed`): they start with every token of 3 to ``CACHE_PIECE`` bytes,
as gigatoken's piece cache does (``src/bpe/pretoken_cache.rs``, ``seeded_pretoken_cache``
in ``src/bpe/tiktoken.rs``), so that a piece of text not seen before costs one probe if
it is one token, and a piece not found is merged without a probe of the whole-token
table. The seed holds no tokens of 1 or 2 bytes: such a piece, the first time a table
sees it, is looked up in the direct tables, one load.
"""
cimport cython
from libc.stdint cimport UINT32_MAX, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, memset

from bpetrain.encoding._buffers cimport free_buffers, free_scratch, grow_scratch
from bpetrain.encoding._heap cimport SMALL_PIECE, encode_heap, encode_small
from bpetrain.encoding._linear cimport LINEAR_PIECE, encode_linear
from bpetrain.encoding._tables cimport clz64, hash_bytes, load_head, spanned

cdef extern from "_portable.h":
    void* table_calloc "bpetrain_table_calloc"(size_t n) noexcept nogil
    void table_free "bpetrain_table_free"(void* p, size_t n) noexcept nogil

cdef enum:
    OTHER_HEAP = 48  # longest piece of another script the heap encoder takes (module docstring)
    CUT_PIECE = 6    # shortest piece of another script encode_cut looks at (two characters)

#: Entries a new piece table starts with (32 bytes each: 32 KiB), or its limit if smaller.
FIRST_ENTRIES = 1 << 10
#: Ranks ahead whose entry make_seed asks the processor to fetch while it writes one.
cdef int64_t SEED_AHEAD = 16
cdef int64_t kept_ids = 1 << 16, kept_scratch = 1 << 12
#: Most output ids (4 bytes each), and most bytes of piece for the merge buffers (21 bytes
#: each), that a spare piece table keeps room for between calls (:meth:`PieceCaches.take_buffers`).
KEPT_IDS, KEPT_SCRATCH = kept_ids, kept_scratch


cdef inline int whole_or_merged(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                                Scratch* scratch, bint look) except -1 nogil:
    """The ids of a piece of 3 or more bytes that the piece table does not hold: its rank
    if it is one token (looked up in the whole-token table only if ``look``: a seeded
    table holds every token of the piece's length, so a piece it lacks is none), else
    merged (:func:`encode_merged`); ``out`` has room for ``n`` more ids. A piece
    :func:`encode_cut` cuts is no token (no token spans the boundary), so it is tried
    before the lookup."""
    cdef token_t rank
    if not look:
        return encode_merged(t, piece, n, out, scratch)
    if cuttable(t, piece, n) and encode_cut(t, piece, n, out, scratch):
        return 0
    rank = token_rank(t, piece, n)
    if rank == NO_RANK:
        return merge_whole(t, piece, n, out, scratch)
    out.ids[out.size] = rank
    out.size += 1
    return 0


cdef int encode_new(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out, Scratch* scratch,
                    uint64_t key0, uint64_t key1, uint64_t h) except -1 nogil:
    """The ids of a piece of 3 to ``CACHE_PIECE`` bytes that the piece table
    ``scratch.cache`` does not hold (``key0``, ``key1``: its bytes 0..7 and 8..15,
    ``load_head``; ``h``: ``piece_hash``); ``out`` has room for ``n`` more ids. The piece
    is looked up in the whole-token table (unless the piece table is seeded: it holds
    every token of these lengths, so the piece is none), else merged
    (:func:`encode_merged`), and, if it has at most ``CACHE_IDS`` ids, stored
    (:func:`store`)."""
    cdef int64_t before = out.size
    whole_or_merged(t, piece, n, out, scratch, scratch.cache.seed == NULL)
    if out.size - before <= CACHE_IDS:
        store(scratch.cache, key0, key1, n, out.ids + before, out.size - before, h)
    return 0


cdef int encode_new_short(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out, Scratch* scratch,
                          uint64_t key0, uint64_t h) except -1 nogil:
    """The ids of a piece of 1 to ``SHORT_PIECE`` bytes that the short part of the piece
    table ``scratch.cache`` does not hold (``key0``: its bytes, ``load_head``; ``h``:
    ``piece_hash(key0, 0, n)``); ``out`` has room for ``n`` more ids. As
    :func:`encode_new`, but a piece of 1 or 2 bytes is looked up in the direct tables
    (the seed holds no tokens that short); the piece is stored (:func:`put_short`) if it
    has at most ``SHORT_IDS`` ids, each below ``2**SHORT_BITS``."""
    cdef PieceTable* table = scratch.cache
    cdef int64_t before = out.size, count, k
    cdef uint64_t val
    cdef token_t rank
    if n > 2:
        whole_or_merged(t, piece, n, out, scratch, table.short_seed == NULL)
    else:
        rank = direct_rank(t, piece, n)
        if rank == NO_RANK:
            encode_merged(t, piece, n, out, scratch)
        else:
            out.ids[out.size] = rank
            out.size += 1
    count = out.size - before
    if count > SHORT_IDS:
        return 0
    val = (<uint64_t>count << 4) | <uint64_t>n
    for k in range(count):
        if out.ids[before + k] > SHORT_MASK:
            return 0
        val |= <uint64_t>out.ids[before + k] << (6 + SHORT_BITS * k)
    make_room(table, True)
    put_short(table, h, key0, val)
    return 0


cdef void put_short(PieceTable* table, uint64_t h, uint64_t key, uint64_t val) noexcept nogil:
    """Write a short entry in the first free slot of the short part from ``h``'s (it has one free)."""
    cdef uint64_t i = h >> table.short_shift
    while table.shorts[i].val != 0:
        i = (i + 1) & table.short_mask
    table.shorts[i].key = key
    table.shorts[i].val = val
    table.short_used += 1


cdef int encode_long(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                     Scratch* scratch) except -1 nogil:
    """The ids of a piece of 17 to ``LONG_PIECE`` bytes, through the piece table
    ``scratch.cache``; ``out`` has room for ``n`` more ids. Its entry is found by the
    piece's first eight bytes, length and ``hash_bytes``, and its bytes are compared
    with those in the table's arena; a piece not found is looked up in the whole-token
    table, else merged (:func:`encode_merged`), and stored (:func:`store_long`). Long
    pieces repeat in real text: runs of spaces in code, words of other scripts (in
    UTF-8, 17 bytes are nine Cyrillic letters)."""
    cdef PieceTable* table = scratch.cache
    cdef uint64_t key0 = load_head(piece, n)
    cdef uint64_t h = hash_bytes(piece, n, key0)
    cdef uint64_t i = h >> table.shift, meta
    cdef const CacheEntry* entry
    cdef const uint8_t* kept
    cdef int64_t count, before = out.size
    while True:
        entry = &table.entries[i]
        meta = entry.meta
        if meta == 0:
            break
        if meta & 0xFF == <uint64_t>n and entry.key0 == key0 and entry.key1 == h:
            kept = table.arena + (meta >> 16)
            if memcmp(kept, piece, n) == 0:
                count = (meta >> 8) & 0xFF
                memcpy(out.ids + out.size, kept + n, count * sizeof(uint32_t))
                out.size += count
                return 0
        i = (i + 1) & table.mask
    whole_or_merged(t, piece, n, out, scratch, True)
    store_long(table, piece, n, out.ids + before, out.size - before, key0, h)
    return 0


cdef void store(PieceTable* table, uint64_t key0, uint64_t key1, int64_t n, const uint32_t* ids, int64_t count,
                uint64_t h) noexcept nogil:
    """Put a piece of 3 to ``CACHE_PIECE`` bytes that the table does not hold, with its
    ``count`` (1 to ``CACHE_IDS``) ids, in ``table`` (:func:`make_room` first)."""
    cdef uint64_t meta = (<uint64_t>count << 8) | <uint64_t>n, packed = 0
    cdef int64_t k
    make_room(table, False)
    for k in range(count):
        if k < 3:
            packed |= <uint64_t>ids[k] << (ID_BITS * k)
        else:
            meta |= <uint64_t>ids[k] << (16 + ID_BITS * (k - 3))
    put(table, h, meta, key0, key1, packed)


cdef void store_long(PieceTable* table, const uint8_t* piece, int64_t n, const uint32_t* ids, int64_t count,
                     uint64_t key0, uint64_t h) noexcept nogil:
    """Put a piece of 17 to ``LONG_PIECE`` bytes that the table does not hold, with its
    ``count`` ids, in ``table``: its bytes and ids at the end of the arena, which grows
    by doubling up to ``16 * limit`` bytes; when the arena is full, the part it belongs
    to is emptied first (:func:`empty`). A piece that would not fit in an empty arena, or finds no
    memory to grow it, is not stored."""
    cdef int64_t need = n + count * <int64_t>sizeof(uint32_t), cap
    cdef uint8_t* grown
    if need > 16 * table.limit:
        return  # would not fit in an empty arena
    make_room(table, False)
    if table.arena_used + need > 16 * table.limit:
        empty(table, False)
    if table.arena_used + need > table.arena_cap:
        cap = table.arena_cap if table.arena_cap else 4096
        while cap < table.arena_used + need:
            cap *= 2
        grown = <uint8_t*>realloc(table.arena, <size_t>cap)
        if grown == NULL:
            return
        table.arena = grown
        table.arena_cap = cap
    memcpy(table.arena + table.arena_used, piece, n)
    memcpy(table.arena + table.arena_used + n, ids, count * sizeof(uint32_t))
    put(table, h, (<uint64_t>table.arena_used << 16) | (<uint64_t>count << 8) | <uint64_t>n, key0, h, 0)
    table.arena_used += need


cdef void make_room(PieceTable* table, bint short) noexcept nogil:
    """Make one part of ``table`` (the short one if ``short``) take one more entry and
    stay at most half full: a part that is half full grows to twice its entries
    (:func:`grow`) or, at the table's limit (or with no memory to grow), that part is
    emptied (:func:`empty`). A seeded table, whose parts start at most half full with
    the vocabulary's tokens, empties a part once it is three quarters full. The other
    part keeps its pieces: text whose new pieces are short (words) or long (numbers,
    words of other scripts) fills one part long before the other."""
    cdef int64_t used = table.short_used if short else table.used
    cdef int64_t size = <int64_t>((table.short_mask if short else table.mask) + 1)
    if table.seed != NULL:
        if (used + 1) * 4 > size * 3:
            empty(table, short)
    elif (used + 1) * 2 > size:
        if size >= table.limit or not (
                grow(<void**>&table.shorts, &table.short_mask, &table.short_shift, sizeof(ShortEntry), short_hash)
                if short else grow(<void**>&table.entries, &table.mask, &table.shift, sizeof(CacheEntry), long_hash)):
            empty(table, short)


cdef void put(PieceTable* table, uint64_t h, uint64_t meta, uint64_t key0, uint64_t key1,
              uint64_t ids) noexcept nogil:
    """Write an entry in the first free slot from ``h``'s (the table has one free)."""
    cdef uint64_t i = h >> table.shift
    cdef CacheEntry* entry
    while table.entries[i].meta != 0:
        i = (i + 1) & table.mask
    entry = &table.entries[i]
    entry.meta = meta
    entry.key0 = key0
    entry.key1 = key1
    entry.ids = ids
    table.used += 1


cdef inline uint64_t entry_hash(const CacheEntry* entry) noexcept nogil:
    """The hash an entry was stored under: ``piece_hash`` of its key, or, for a piece of
    more than ``CACHE_PIECE`` bytes, the ``hash_bytes`` kept in ``key1``."""
    cdef int64_t n = <int64_t>(entry.meta & 0xFF)
    return entry.key1 if n > CACHE_PIECE else piece_hash(entry.key0, entry.key1, n)


cdef uint64_t long_hash(const void* entry) noexcept nogil:
    """:func:`entry_hash` of a ``CacheEntry``, for :func:`grow`."""
    return entry_hash(<const CacheEntry*>entry)


cdef uint64_t short_hash(const void* entry) noexcept nogil:
    """The hash a short entry was stored under (``piece_hash`` of its bytes and length)."""
    cdef const ShortEntry* short = <const ShortEntry*>entry
    return piece_hash(short.key, 0, <int64_t>(short.val & 0xF))


cdef bint grow(void** entries, uint64_t* mask, int* shift, size_t entry_size,
               uint64_t (*hash_of)(const void*) noexcept nogil) noexcept nogil:
    """Move the entries of one part of a table (``entries[0]``: ``mask[0] + 1`` entries of
    ``entry_size`` bytes, empty where their first word is 0, placed from ``hash_of`` and
    ``shift[0]``) into twice as many; False (and no change) if there is no memory for them."""
    cdef int64_t size = <int64_t>(mask[0] + 1), k
    cdef uint8_t* old = <uint8_t*>entries[0]
    cdef uint8_t* grown = <uint8_t*>table_calloc(<size_t>(2 * size) * entry_size)
    cdef uint64_t i, grown_mask = <uint64_t>(2 * size - 1)
    if grown == NULL:
        return False
    shift[0] -= 1
    for k in range(size):
        if (<const uint64_t*>(old + k * entry_size))[0] != 0:
            i = hash_of(old + k * entry_size) >> shift[0]
            while (<const uint64_t*>(grown + i * entry_size))[0] != 0:
                i = (i + 1) & grown_mask
            memcpy(grown + i * entry_size, old + k * entry_size, entry_size)
    table_free(old, <size_t>size * entry_size)
    entries[0] = grown
    mask[0] = grown_mask
    return True


cdef void empty(PieceTable* table, bint short) noexcept nogil:
    """Drop every entry of one part of ``table`` (the short one if ``short``, else the
    other and its arena, which only that part's entries point into), keeping its size; a
    seeded table's part gets back its seed's entries (the vocabulary's tokens)."""
    if short:
        table.short_used = reset(table.shorts, table.short_seed, (table.short_mask + 1) * sizeof(ShortEntry),
                                 table.short_seed_used)
    else:
        table.used = reset(table.entries, table.seed, (table.mask + 1) * sizeof(CacheEntry), table.seed_used)
        table.arena_used = 0


cdef inline int64_t reset(void* entries, const void* seed, size_t n_bytes, int64_t seed_used) noexcept nogil:
    """Make the ``n_bytes`` of one part's ``entries`` those of its ``seed`` (or zeros if NULL);
    returns the entries then in use."""
    if seed != NULL:
        memcpy(entries, seed, n_bytes)
        return seed_used
    memset(entries, 0, n_bytes)
    return 0


cdef int encode_merged(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                       Scratch* scratch) except -1 nogil:
    """The ids of a piece of ``n`` >= 2 bytes that is not one token: in parts, where it has
    boundaries no merge crosses (:func:`encode_cut`), else merged whole
    (:func:`merge_whole`); ``out`` has room for ``n`` more ids."""
    if n > UINT32_MAX:
        with gil:
            raise ValueError(f"a piece of {n} bytes is too long: at most 2**32 - 1 bytes (positions in "
                             "the heap are 32-bit); split the text first")
    if cuttable(t, piece, n) and encode_cut(t, piece, n, out, scratch):
        return 0
    return merge_whole(t, piece, n, out, scratch)


cdef inline bint cuttable(const RankTables* t, const uint8_t* piece, int64_t n) noexcept nogil:
    """Whether :func:`encode_cut` looks at ``piece[:n]``: at least ``CUT_PIECE`` bytes, a
    byte of 0xE0 or above in the first eight (the start of a character of three or four
    bytes: Han, kana, Hangul, ...; :func:`encode_cut` says why only those), and
    ``t.linear`` set."""
    cdef uint64_t head
    if n < CUT_PIECE or not t.linear:
        return False
    head = load_head(piece, n)
    return (head & (head << 1) & (head << 2) & 0x8080808080808080ULL) != 0


cdef int encode_cut(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                    Scratch* scratch) except -1 nogil:
    """Encode a piece of ``n`` bytes in parts, cut at each boundary before a UTF-8
    character of three or four bytes, or after one of three, that no token spans
    (``_tables.spanned``); 1 if it cut, else 0 with nothing written. ``t.linear`` must be
    set (``t.span_bits`` and ``t.split_left`` built).

    No merge crosses such a boundary: a merge makes a token of the bytes of the two it
    joins, which would span it. So merging the piece merges each part as if alone (the
    lowest rank, leftmost, of the piece is that of a part, and a merge in one part leaves
    the pairs of the others as they were), and its ids are those of the parts in turn.
    A part is encoded as a piece (:func:`encode_chunk`), so a character or word of other
    scripts seen in other pieces is found in the piece table: a run of Han characters
    is one piece, rarely seen twice, but made of characters seen often. Boundaries of
    characters of two bytes (Cyrillic, Greek, Arabic, ...) are not looked at: in words
    of those scripts the boundaries no token spans are few and their parts mostly new
    (Russian text of fortunes.txt: looking there took 1-5% more time per document
    with cl100k_base and o200k_base, and gained nothing).
    """
    cdef int64_t start = 0, i
    for i in range(1, n):
        # before a character of three or four bytes, or after one of three
        if (piece[i] & 0xC0) != 0x80 and (piece[i] >= 0xE0 or (i >= 3 and piece[i - 3] >= 0xE0)) and not spanned(
                t, piece, n, i):
            encode_chunk(t, piece + start, i - start, out, scratch)
            start = i
    if start == 0:
        return 0
    encode_chunk(t, piece + start, n - start, out, scratch)
    return 1


cdef int encode_chunk(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                      Scratch* scratch) except -1 nogil:
    """The ids merging gives a part of a piece (:func:`encode_cut`): those of the part as
    a piece, save when the part is one token that merging never makes (``t.split_left``
    -1; the piece table and tiktoken give such a token to a piece that is exactly its
    bytes, merging inside a longer piece does not): then merged (:func:`merge_whole`).

    A part of up to ``SHORT_PIECE`` bytes (a character or two) is looked up in the piece
    table and stored there (:func:`encode_piece`); a longer one is looked up in the
    whole-token table (unless the piece table is seeded) and merged
    (:func:`whole_or_merged`), not stored: the piece itself is, and its parts too would
    fill the table's part for longer pieces sooner (on fortunes.txt's first 3 MB, the
    seeded o200k_base table's reached the mark where it is emptied, and the second
    reading of the text took 1.5-1.6x the time).
    """
    cdef int64_t before = out.size
    if n > SHORT_PIECE:
        whole_or_merged(t, piece, n, out, scratch, scratch.cache == NULL or scratch.cache.seed == NULL)
    else:
        encode_piece(t, piece, n, out, scratch)
    if out.size == before + 1 and t.split_left[out.ids[before]] < 0:
        out.size = before
        merge_whole(t, piece, n, out, scratch)
    return 0


cdef inline int merge_whole(const RankTables* t, const uint8_t* piece, int64_t n, IdBuffer* out,
                            Scratch* scratch) except -1 nogil:
    """The ids merging gives ``piece[:n]`` (n >= 1), by paths 2 to 4 by length, and pieces
    of other scripts of ``LINEAR_PIECE`` to ``OTHER_HEAP`` bytes by path 4; ``out`` has
    room for ``n`` more ids."""
    if n <= SMALL_PIECE:
        encode_small(t, piece, n, out, NULL)
    # a byte above 0x7F in the first eight: another script (module docstring)
    elif t.linear and n >= LINEAR_PIECE and not (
            n <= OTHER_HEAP and (load_head(piece, n) & 0x8080808080808080ULL) != 0):
        if n > scratch.cap:
            grow_scratch(scratch, n)
        encode_linear(t, piece, n, out, scratch, NULL)
    else:
        if n > scratch.cap:
            grow_scratch(scratch, n)
        encode_heap(t, piece, n, out, scratch, NULL)
    return 0


@cython.final
cdef class PieceCache:
    """One piece table (:c:type:`PieceTable`): two parts (pieces of 1 to ``SHORT_PIECE``
    bytes in 16-byte entries, longer ones in 32-byte entries) of ``FIRST_ENTRIES`` zeroed
    entries each, or ``limit`` if fewer, each growing to ``limit`` (a power of two, at
    least 2, as :attr:`PieceCaches.size` rounds it); with a ``seed``, copies of its parts,
    which keep their sizes. Freed with the object.

    It also keeps the working memory of the call that holds it (``out``, ``scratch``,
    :meth:`PieceCaches.take_buffers`), so that a call per short document does not allocate
    and free its output and merge buffers each time (what they keep is bounded by
    ``KEPT_IDS`` and ``KEPT_SCRATCH``)."""
    cdef PieceTable table
    cdef int64_t epoch  # the pool's epoch when it was made
    cdef PieceSeed seed  # kept alive while table.seed points into it
    cdef IdBuffer out    # the output ids of the call that holds it
    cdef Scratch scratch  # its merge buffers; scratch.cache is &table

    def __cinit__(self, int64_t limit, int64_t epoch, PieceSeed seed=None):
        cdef int64_t size = min(FIRST_ENTRIES, limit), short_size = size
        if limit < 2 or limit & (limit - 1):
            raise ValueError(f"a piece table holds a power of two entries, at least 2; got {limit}")
        if seed is not None:
            size = seed.size
            short_size = seed.short_size
        self.table.entries = <CacheEntry*>table_calloc(<size_t>size * sizeof(CacheEntry))
        self.table.shorts = <ShortEntry*>table_calloc(<size_t>short_size * sizeof(ShortEntry))
        self.table.mask = <uint64_t>(size - 1)  # set first: __dealloc__ frees by it
        self.table.short_mask = <uint64_t>(short_size - 1)
        if self.table.entries == NULL or self.table.shorts == NULL:
            raise MemoryError(f"no memory for a piece table of {size} + {short_size} entries")
        self.seed = seed
        self.table.seed = NULL
        self.table.seed_used = 0
        self.table.short_seed = NULL
        self.table.short_seed_used = 0
        if seed is not None:
            self.table.seed = seed.entries
            self.table.seed_used = seed.used
            self.table.short_seed = seed.shorts
            self.table.short_seed_used = seed.short_used
            memcpy(self.table.entries, seed.entries, <size_t>size * sizeof(CacheEntry))
            memcpy(self.table.shorts, seed.shorts, <size_t>short_size * sizeof(ShortEntry))
        self.table.shift = clz64(<uint64_t>size) + 1  # 64 - log2(size)
        self.table.short_shift = clz64(<uint64_t>short_size) + 1
        self.table.used = self.table.seed_used
        self.table.short_used = self.table.short_seed_used
        self.table.limit = limit
        self.table.arena = NULL
        self.table.arena_used = 0
        self.table.arena_cap = 0
        self.epoch = epoch
        self.scratch.cache = &self.table

    def __dealloc__(self):
        table_free(self.table.entries, <size_t>(self.table.mask + 1) * sizeof(CacheEntry))
        table_free(self.table.shorts, <size_t>(self.table.short_mask + 1) * sizeof(ShortEntry))
        free(self.table.arena)
        free_buffers(&self.out, &self.scratch)

    @property
    def size(self):
        """int: entries of the part for pieces of more than ``SHORT_PIECE`` bytes now (it
        grows by doubling to its limit)."""
        return <int64_t>(self.table.mask + 1)

    @property
    def used(self):
        """int: entries of that part holding a piece (at most half of :attr:`size`)."""
        return self.table.used

    @property
    def short_size(self):
        """int: entries of the part for pieces of 1 to ``SHORT_PIECE`` bytes now."""
        return <int64_t>(self.table.short_mask + 1)

    @property
    def short_used(self):
        """int: entries of that part holding a piece."""
        return self.table.short_used

    @property
    def arena_used(self):
        """int: bytes of the arena in use (pieces of 17 to ``LONG_PIECE`` bytes and their ids)."""
        return self.table.arena_used


@cython.final
cdef class PieceSeed:
    """What a seeded piece table holds when empty: every token of 3 to ``CACHE_PIECE``
    bytes with its rank (:func:`make_seed`), in its two parts. In a seeded table one
    probe answers for a piece that is one token as for one seen before, and a piece of 3
    to ``CACHE_PIECE`` bytes not found is not a token, so it is merged at once. Read only
    once made: tables of calls running at once copy it."""
    cdef CacheEntry* entries  # the tokens of SHORT_PIECE + 1 to CACHE_PIECE bytes
    cdef int64_t size         # entries (a power of two)
    cdef int64_t used         # entries holding a token
    cdef ShortEntry* shorts   # the tokens of 3 to SHORT_PIECE bytes
    cdef int64_t short_size, short_used

    def __dealloc__(self):
        table_free(self.entries, <size_t>self.size * sizeof(CacheEntry))
        table_free(self.shorts, <size_t>self.short_size * sizeof(ShortEntry))


cdef object make_seed(const RankTables* t, int64_t limit):
    """The :class:`PieceSeed` of the vocabulary ``t`` for tables of at most ``limit``
    entries a part: each part has ``max(2 * tokens, limit // 2)`` entries (rounded up to a
    power of two, so its tokens fill at most half of it; no larger, as the smaller a
    part, the more of the entries in use stay in the processor's caches).
    None if ``limit`` is below the number of tokens of 3 to ``CACHE_PIECE`` bytes (a
    table that small would be emptied again and again), or if a token of 3 to
    ``SHORT_PIECE`` bytes has a rank of ``2**SHORT_BITS`` or more (a short entry cannot
    hold it)."""
    cdef PieceSeed seed
    cdef PieceTable table
    cdef int64_t rank, n, n_short = 0, n_long = 0, size, short_size
    cdef int64_t least = limit // 2
    cdef const uint8_t* data
    cdef uint64_t key0, key1
    for rank in range(t.n_ranks):
        n = t.token_len[rank]
        if 3 <= n <= SHORT_PIECE:
            n_short += 1
            if rank > SHORT_MASK:
                return None
        elif SHORT_PIECE < n <= CACHE_PIECE:
            n_long += 1
    if n_short + n_long == 0 or limit < n_short + n_long:
        return None
    size = short_size = 2
    while size < max(2 * n_long, least):
        size <<= 1
    while short_size < max(2 * n_short, least):
        short_size <<= 1
    seed = PieceSeed.__new__(PieceSeed)
    seed.entries = <CacheEntry*>table_calloc(<size_t>size * sizeof(CacheEntry))
    seed.size = size
    seed.shorts = <ShortEntry*>table_calloc(<size_t>short_size * sizeof(ShortEntry))
    seed.short_size = short_size
    if seed.entries == NULL or seed.shorts == NULL:
        raise MemoryError(f"no memory for a seeded piece table of {size} + {short_size} entries")
    table.entries = seed.entries
    table.mask = <uint64_t>(size - 1)
    table.shift = clz64(<uint64_t>size) + 1  # 64 - log2(size)
    table.used = 0
    table.shorts = seed.shorts
    table.short_mask = <uint64_t>(short_size - 1)
    table.short_shift = clz64(<uint64_t>short_size) + 1
    table.short_used = 0
    for rank in range(t.n_ranks):
        if rank + SEED_AHEAD < t.n_ranks:  # the entry of a token SEED_AHEAD ranks on, fetched meanwhile
            n = t.token_len[rank + SEED_AHEAD]
            if 3 <= n <= CACHE_PIECE:
                data = t.token_bytes + t.token_start[rank + SEED_AHEAD]
                key0 = load_head(data, n)
                if n <= SHORT_PIECE:
                    prefetch_entry(&table.shorts[piece_hash(key0, 0, n) >> table.short_shift])
                else:
                    prefetch_entry(&table.entries[piece_hash(key0, load_head(data + 8, n - 8), n) >> table.shift])
        n = t.token_len[rank]
        data = t.token_bytes + t.token_start[rank]
        key0 = load_head(data, n)
        if 3 <= n <= SHORT_PIECE:
            put_short(&table, piece_hash(key0, 0, n), key0, (<uint64_t>rank << 6) | (<uint64_t>1 << 4) | <uint64_t>n)
        elif SHORT_PIECE < n <= CACHE_PIECE:
            key1 = load_head(data + 8, n - 8)
            put(&table, piece_hash(key0, key1, n), (<uint64_t>1 << 8) | <uint64_t>n, key0, key1, <uint64_t>rank)
    seed.used = table.used
    seed.short_used = table.short_used
    return seed


@cython.final
cdef class PieceCaches:
    """The piece tables of one encoder (``BytePairEncoder.cache_size`` says what a piece
    table is and why each call takes its own).

    Parameters
    ----------
    size : int
        Most entries of each table (:attr:`size`).
    """

    def __cinit__(self, size):
        self.spares = []
        self.n_spares = 0
        self.seed = None
        self.seed_tried = False
        self.size = size

    @property
    def size(self):
        """int: most entries of each piece table, 0 if there is none (``BytePairEncoder.cache_size``
        says what setting it does and what it raises)."""
        return self.entries

    @size.setter
    def size(self, size):
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"cache_size must be an int (entries; 0 turns the cache off), got {type(size).__name__}")
        if not 0 <= size <= 1 << 32:
            raise ValueError(f"cache_size must be in [0, 2**32] entries of 32 bytes, got {size}")
        cdef int64_t entries = 2
        while entries < size:
            entries <<= 1
        if not size:
            entries = 0
        cdef PieceCache cache
        cdef list kept = []
        if entries != self.entries:  # the seed was made for the old size
            self.seed = None
            self.seed_tried = False
        self.epoch += 1  # tables taken now are not given back (they hold pieces of before)
        if self.seed is not None:
            # The same size: a spare seeded table is emptied back to its seed in place (its
            # size never changes) and kept, so that the next call neither maps and zeroes
            # new memory nor copies the seed (0.8 ms with cl100k_base, 1.2 ms with
            # o200k_base); the other tables are dropped, to start small again.
            for spare in self.spares[:self.n_spares]:
                cache = <PieceCache>spare
                if cache.seed is self.seed:
                    empty(&cache.table, True)
                    empty(&cache.table, False)
                    cache.epoch = self.epoch
                    kept.append(cache)
        self.entries = entries
        self.spares = kept
        self.n_spares = len(kept)

    @property
    def spare_count(self):
        """int: tables kept for the next calls (at most as many as calls ran at once)."""
        return self.n_spares

    @property
    def spares_in_use(self):
        """list of (int, int, int): the entries, the entries in use (of the part for pieces
        of more than ``SHORT_PIECE`` bytes) and the arena bytes in use of each spare table
        (for tests)."""
        return [(cache.size, cache.used, cache.arena_used) for cache in self.spares[:self.n_spares]]

    @property
    def short_spares_in_use(self):
        """list of (int, int): the entries and the entries in use of the short part of each
        spare table (for tests)."""
        return [(cache.short_size, cache.short_used) for cache in self.spares[:self.n_spares]]

    @property
    def buffers_kept(self):
        """list of (int, int): the output ids and the piece bytes the working memory of
        each spare table has room for (for tests)."""
        return [((<PieceCache>cache).out.cap, (<PieceCache>cache).scratch.cap) for cache in self.spares[:self.n_spares]]

    cdef int seed_from(self, const RankTables* t) except -1:
        """Make the tables of the next calls seeded with the tokens of ``t``
        (:class:`PieceSeed`, if :func:`make_seed` gives one for this size; once per
        size). Tables made before are dropped when given back."""
        if self.entries and not self.seed_tried:
            self.seed = make_seed(t, self.entries)
            self.seed_tried = True
            self.spares = []
            self.n_spares = 0
            self.epoch += 1
        return 0

    cdef object take(self, Scratch* scratch):
        """Point ``scratch`` at a piece table for this call alone: a spare one, or a new one.
        Returns it (or None: no table), for :meth:`give_back` once the kernel has returned."""
        cdef PieceCache cache
        if self.entries == 0:
            return None
        if self.n_spares:
            # The list keeps its length (None past the spares): taking and giving back
            # one table, as every call does, then resizes nothing.
            self.n_spares -= 1
            cache = self.spares[self.n_spares]
            self.spares[self.n_spares] = None
        else:
            cache = PieceCache(self.entries, self.epoch, self.seed)
        scratch.cache = &cache.table
        return cache

    cdef object take_buffers(self, IdBuffer** out, Scratch** scratch):
        """:meth:`take`, and point ``out`` and ``scratch`` at the working memory the table
        keeps (``out`` emptied, ``scratch`` reading the table) rather than the caller's own,
        which they point at on entry and still do if there is no table (None returned).
        The call per document allocates nothing when the memory its last call kept is
        enough (gigatoken's per-call paths keep their scratch in the tokenizer likewise:
        ``merge_scratch`` in ``src/bpe/tiktoken.rs``)."""
        cache = self.take(scratch[0])
        if cache is not None:
            out[0] = &(<PieceCache>cache).out
            out[0].size = 0
            scratch[0] = &(<PieceCache>cache).scratch
        return cache

    cdef void give_back(self, object cache):
        """Keep ``cache`` for the next call, unless the tables were dropped since it was taken;
        the working memory it keeps is freed if larger than ``KEPT_IDS`` ids or ``KEPT_SCRATCH``
        bytes of piece."""
        cdef PieceCache kept
        if cache is not None:
            kept = <PieceCache>cache
            if kept.out.cap > kept_ids:
                free(kept.out.ids)
                kept.out.ids = NULL
                kept.out.cap = 0
            if kept.scratch.cap > kept_scratch:
                free_scratch(&kept.scratch)
        if cache is not None and (<PieceCache>cache).epoch == self.epoch:
            if self.n_spares < len(self.spares):
                self.spares[self.n_spares] = cache
            else:
                self.spares.append(cache)
            self.n_spares += 1
