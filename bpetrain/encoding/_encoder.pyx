# cython: language_level=3
"""The encoder's text loop and its Python face: :class:`BytePairEncoder`.

A text is cut into pieces by the compiled split pattern (``bpetrain.splitting._matcher``)
and each piece becomes token ids by tiktoken's rule (``bpetrain.encoding._piece``: the
piece table and the whole-token lookup, inlined into the loop here, then the merging
encoders of ``_heap`` and ``_linear``), over a vocabulary's tables (``_tables``). This
module holds the loops over texts (one text, a batch, the text between special tokens,
counts with a limit), the special-token search (:class:`Needles`) and the output (lists
of kept ints, arrays). Everything after set-up runs without the GIL; the tables are read
only, so threads share one encoder.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.sequence cimport PySequence_Fast_ITEMS
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_AsUTF8String, PyUnicode_GET_LENGTH
from libc.stdint cimport INT64_MAX, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memchr, memcmp, memcpy, memset

import threading
from array import array

from bpetrain.encoding import _heap as _heap_module, _linear as _linear_module, _table_cache, _tables as _tables_module
from bpetrain.splitting._matcher import BacktrackLimitExceeded

from cpython.array cimport array as c_array, clone

# The three calls of NumPy's C API that make the arrays of encode_to_numpy, declared here
# rather than by ``cimport numpy``, whose array types Cython imports (so numpy with them)
# when this module is imported; the API is loaded on first use (load_numpy).
cdef extern from "numpy/arrayobject.h":
    ctypedef Py_ssize_t npy_intp
    ctypedef struct PyArrayObject
    enum:
        NPY_UINT32
    object PyArray_EMPTY(int nd, npy_intp* dims, int type_num, int fortran)
    void* PyArray_DATA(PyArrayObject* array)
    int _import_array() except -1


from bpetrain.encoding._buffers cimport IdBuffer, Scratch, free_buffers, grow_ids, grow_scratch
from bpetrain.encoding._heap cimport SMALL_PIECE, encode_heap, encode_small
from bpetrain.encoding._linear cimport encode_linear, merges_in_rank_order
from bpetrain.encoding._piece cimport PieceKey, encode_keyed, encode_piece, prefetch_piece
from bpetrain.encoding._tables cimport (ID_MASK, NO_RANK, build_linear_tables, build_split_pairs, build_tables,
                                       linear_tables_body, load_linear_tables, pair_rank)
from bpetrain.splitting._blocks cimport blocks_drain
from bpetrain.splitting._matcher cimport (Program, PieceReader, Stack, Tables, char_length, free_stack, next_piece_end,
                                          new_stack, start_reading)

cdef extern from *:
    bint PyUnicode_IS_ASCII(object s) noexcept
    int PyUnicode_KIND(object s) noexcept
    void* PyUnicode_DATA(object s) noexcept
    int PyUnicode_1BYTE_KIND
    void PyObject_GC_UnTrack(void* op) noexcept
    void PyObject_GC_Track(void* op) noexcept
    int PyObject_GC_IsTracked(object op) noexcept


cdef extern from *:
    """
    /* Makes `o` an object the process never frees, so that references to it can be
       handed out without raising its count (kept_int). Python 3.12 and later have
       immortal objects (PEP 683): a count at the header's immortal value is never raised,
       lowered or freed. Earlier 64-bit Pythons count in a full 64-bit word: 2**60 more
       references than anyone holds outlast any process (one handed out each nanosecond
       would take 36 years). Elsewhere (32-bit Pythons before 3.12, free-threaded builds)
       nothing is changed and BPETRAIN_INTS_KEPT is 0: each reference is counted. */
    #if defined(Py_GIL_DISABLED)
    #define BPETRAIN_INTS_KEPT 0
    #elif defined(_Py_IMMORTAL_INITIAL_REFCNT)
    #define BPETRAIN_INTS_KEPT 1
    #define BPETRAIN_KEEP(o) Py_SET_REFCNT(o, _Py_IMMORTAL_INITIAL_REFCNT)
    #elif defined(_Py_IMMORTAL_REFCNT)
    #define BPETRAIN_INTS_KEPT 1
    #define BPETRAIN_KEEP(o) Py_SET_REFCNT(o, _Py_IMMORTAL_REFCNT)
    #elif SIZEOF_VOID_P >= 8
    #define BPETRAIN_INTS_KEPT 1
    #define BPETRAIN_KEEP(o) Py_SET_REFCNT(o, Py_REFCNT(o) + ((Py_ssize_t)1 << 60))
    #else
    #define BPETRAIN_INTS_KEPT 0
    #endif
    static void bpetrain_keep_forever(PyObject* o) {
    #if BPETRAIN_INTS_KEPT
        BPETRAIN_KEEP(o);
    #endif
    }
    """
    bint ints_kept "BPETRAIN_INTS_KEPT"
    void keep_forever "bpetrain_keep_forever"(object o) noexcept

#: True where output lists take references to the kept ints without counting them
#: (:func:`kept_int`): every build but free-threaded ones and 32-bit Pythons before 3.12.
INTS_KEPT = bool(ints_kept)
_kept_ints = []  # kept_int: item k is the int object k the process never frees, or None if not made yet
_kept_lock = threading.RLock()  # held while kept_int makes an int and stores it (re-entered if a
# collection set off there runs code that encodes)


cdef PyObject* kept_int(PyObject** ints, uint32_t token) except NULL:
    """The process's kept int object for ``token`` (a borrowed reference), made now if
    no encoder has output it before, and stored in ``ints[token]`` (an encoder's table of
    them, :attr:`BytePairEncoder.ints`), under the GIL. The encoders fill their output
    lists with these ints without raising their reference counts, one load and one store
    per id, with or without the GIL (:func:`fill_items`).

    Each int is made the first time the process outputs its id, so the ints lie in the
    order the process first needed them (32 bytes apart, as Python's allocator hands
    out blocks of that size one after another): the ids common in the text encoded
    share cache lines, where ints made for every rank at once, in rank order, put
    nearly each id of a document on a line of its own (the 14,000 ids of 1 MB of
    kernel-docs.txt, cl100k_base, on 12,000 lines). Each collection of the garbage
    collector that finds an output list reads the type of every int in it, and freeing
    the list writes each int's count: with the ints in first-use order, one call per
    ~1 KB document returning lists took 2-10% less time than with ints in rank order
    (in one process, paired; kernel-docs.txt, fortunes.txt, python-docs.txt,
    mix-10M.txt; cl100k_base and o200k_base; 2-6% when 2 MB of other text was encoded
    first). The ints of ids never output are never made.

    The process's table (``_kept_ints``, shared by every encoder) and the ints are
    never freed, as CPython keeps its small ints: the table grows to the largest id
    output. It is not tracked by the garbage collector: it holds ints alone, so it is in
    no cycle, and each collection of the oldest generation would otherwise walk it.

    Each int is made one the process never frees (``bpetrain_keep_forever``: immortal,
    PEP 683, on Python 3.12 and later; 2**60 spare references before), so a list can take
    a reference to it from that reserve: its count need not rise, and when the list is
    freed it falls, but never to zero. Without a count raised per id, a batch call of
    lists (3 MB of 1 KB documents of mix-10M, cl100k_base) took 9% less time on one
    thread and 12% less on two, and one call per document 5% less.

    An entry of ``ints`` goes from NULL to its int once, under ``_kept_lock``, so
    threads reading the table without the GIL see either (NULL sends them here).
    """
    cdef object value
    with _kept_lock:
        if ints[token] == NULL:
            if len(_kept_ints) <= token:
                _kept_ints.extend([None] * (token + 1 - len(_kept_ints)))
                PyObject_GC_UnTrack(<PyObject*>_kept_ints)  # ints alone (a no-op once untracked)
            value = _kept_ints[token]
            if value is None:
                value = int(token)
                keep_forever(value)
                _kept_ints[token] = value
            ints[token] = <PyObject*>value  # the table's reference is the process's
        return ints[token]


cdef bint fill_items(PyObject** items, const uint32_t* ids, int64_t n, PyObject* const* ints,
                     uint32_t n_ints) noexcept nogil:
    """``items[i]``: the kept int of ``ids[i]`` (``ints``, an encoder's table,
    :func:`kept_int`), or NULL for an id of ``n_ints`` or more (a special token's) or one
    whose int is not in the table yet; True if any is NULL. Needs no GIL: no count is
    raised (:func:`finish_items` does what is left)."""
    cdef bint other = False
    cdef int64_t i
    cdef PyObject* value
    for i in range(n):
        value = ints[ids[i]] if ids[i] < n_ints else NULL
        items[i] = value
        if value == NULL:
            other = True
    return other


cdef int finish_items(PyObject** items, const uint32_t* ids, int64_t n, PyObject** ints,
                      uint32_t n_ints) except -1:
    """After :func:`fill_items`, under the GIL: for each NULL item, the kept int of its
    id (:func:`kept_int`), or a new int for an id of ``n_ints`` or more; and where ints
    are not kept (:data:`INTS_KEPT` false: free-threaded and old 32-bit builds) a counted
    reference for each kept one."""
    cdef int64_t i
    cdef object value
    for i in range(n):
        if items[i] == NULL:
            if ids[i] < n_ints:
                items[i] = kept_int(ints, ids[i])
            else:
                value = ids[i]
                Py_INCREF(value)  # the list's reference
                items[i] = <PyObject*>value
                continue
        if not ints_kept:
            Py_INCREF(<object>items[i])
    return 0


cdef Py_ssize_t doc_chars = 1 << 18
#: Characters of the longest text :meth:`BytePairEncoder.encode_doc` encodes in one call
#: (at most 4 bytes each: under 1 MiB of UTF-8; longer texts are split across threads).
DOC_CHARS = doc_chars


cdef inline bint one_call_text(text, Program pattern) noexcept:
    """Whether one kernel call (:func:`encode_whole`) encodes ``text`` by ``pattern``: an
    exact ``str`` of fewer than ``DOC_CHARS`` characters, and a compiled pattern."""
    return type(text) is str and pattern is not None and PyUnicode_GET_LENGTH(text) < doc_chars

#: Largest rank the pair table holds (three ranks fill 63 bits of a slot; all ones is EMPTY).
MAX_RANK = ID_MASK - 1
#: What :meth:`BytePairEncoder.encode_batch` returns: lists of ids, one array of ids and
#: offsets, or counts.
BATCH_LISTS, BATCH_ARRAYS, BATCH_COUNTS = 0, 1, 2
#: Bytes an encoder reads before it builds the linear encoder's tables
#: (:meth:`BytePairEncoder.build_linear`): a script that encodes a few strings never pays
#: for them, a longer run does once.
LINEAR_AFTER = 1 << 16
#: The compiled modules whose build makes the linear encoder's tables and decides whether
#: it applies (the key of those kept on disk starts with their build tag).
_LINEAR_BUILDERS = (_tables_module.__file__, _linear_module.__file__, _heap_module.__file__)

#: Most entries of a new encoder's piece tables (32 bytes each: each grows from 32 KiB to
#: 8 MiB, holding up to 131,072 pieces, with an arena of up to 4 MiB for the long ones).
DEFAULT_CACHE_SIZE = 1 << 18
cdef c_array _INT64 = array("q")  # the type of text_lengths' and encode_batch's offsets


def text_lengths(list texts not None):
    """The characters of each text, an int64 ``array.array`` of len(texts) items, in one
    pass at C speed (a batch of 3,000 documents took 0.25 ms in Python to check and
    measure, before its first kernel call).

    Raises
    ------
    TypeError
        If an item is not a ``str`` (subclasses are accepted).
    """
    cdef c_array lengths = clone(_INT64, len(texts), False)
    cdef int64_t* view = <int64_t*>lengths.data.as_voidptr
    cdef Py_ssize_t i
    cdef object item
    for i in range(len(texts)):
        item = texts[i]
        if not isinstance(item, str):
            raise TypeError(f"text must be a str, got {type(item).__name__}")
        view[i] = PyUnicode_GET_LENGTH(item)
    return lengths


def track_lists(list lists not None):
    """Give every list of ``lists`` that :meth:`BytePairEncoder.encode_batch` made back to
    the garbage collector (it makes them untracked: a collection set off while a batch
    is being built would otherwise walk every id of every list made so far, about half
    the time lists take; the lists hold only ints, so none can be in a cycle before the
    caller has them). Lists already tracked are left as they are."""
    cdef object item
    for item in lists:
        if type(item) is list and not PyObject_GC_IsTracked(item):
            PyObject_GC_Track(<PyObject*>item)


class NotOneCall(Exception):
    """Raised by :meth:`BytePairEncoder.encode_doc` for a text it does not encode in one
    call (not an exact ``str``, too long, or no compiled pattern)."""


class DisallowedText(Exception):
    """Raised by :meth:`BytePairEncoder.encode_batch` when ``texts[index]`` holds a
    disallowed string; the caller raises the error users see."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


cdef int64_t find_needle(const uint8_t* text, int64_t n, const uint8_t* needles, const int64_t* ends,
                         int64_t n_needles, const uint8_t* first, int lead, int64_t* which) noexcept nogil:
    """Where the first needle (``needles[ends[k]:ends[k + 1]]``, none empty) in ``text``
    starts, or -1; ``which`` gets the longest needle that starts there (as a regex of the
    needles, longest first, finds it). ``first[b]`` is nonzero when a needle starts with
    byte ``b``; ``lead`` is that byte when only one does (the text is then skipped
    through with memchr), else -1."""
    cdef int64_t p = 0, k, length, best
    cdef const uint8_t* hit
    while p < n:
        if lead >= 0:
            hit = <const uint8_t*>memchr(text + p, lead, n - p)
            if hit == NULL:
                return -1
            p = hit - text
        elif not first[text[p]]:
            p += 1
            continue
        best = -1
        for k in range(n_needles):
            length = ends[k + 1] - ends[k]
            if (needles[ends[k]] == text[p] and length <= n - p
                    and (best < 0 or length > ends[best + 1] - ends[best])
                    and memcmp(text + p, needles + ends[k], length) == 0):
                best = k
        if best >= 0:
            which[0] = best
            return p
        p += 1
    return -1


@cython.final
cdef class Needles:
    """Strings for the kernel to look for without the GIL (:func:`find_needle`): the
    disallowed special tokens, which no text may hold, or the allowed ones, which are
    encoded as their ids.

    Parameters
    ----------
    strings : iterable of bytes
        Their UTF-8, none empty.
    ids : iterable of int, optional
        The token id of each string (allowed special tokens), each below 2**32.

    Raises
    ------
    ValueError
        If there are no strings, one is empty, or ``ids`` does not give one id in
        [0, 2**32) to each.
    """
    cdef bytes _data
    cdef const uint8_t* data       # the strings' UTF-8, concatenated
    cdef object _ends              # int64 array.array, (n + 1,): string k is data[ends[k]:ends[k + 1]]
    cdef const int64_t* ends
    cdef int64_t n
    cdef uint8_t first[256]        # nonzero for a byte some string starts with
    cdef int lead                  # that byte, if only one; else -1
    cdef object _ids               # uint32 array.array, (n,), or None
    cdef const uint32_t* ids       # the token id of each string, or NULL

    def __cinit__(self, strings, ids=None):
        cdef list encoded = [bytes(item) for item in strings]
        cdef int b
        if not encoded or not all(encoded):
            raise ValueError("needles must be one or more non-empty byte strings")
        self._ids = None
        self.ids = NULL
        if ids is not None:
            values = [int(item) for item in ids]
            if len(values) != len(encoded) or not all(0 <= item < 2**32 for item in values):
                raise ValueError(f"ids must give each of the {len(encoded)} strings one id in [0, 2**32), got {values}")
            self._ids = array("I", values)
            self.ids = <const uint32_t*><Py_ssize_t>self._ids.buffer_info()[0]
        self._data = b"".join(encoded)
        self.data = <const uint8_t*>PyBytes_AS_STRING(self._data)
        cdef int64_t total = 0
        self._ends = array("q", [0])
        for item in encoded:
            total += len(item)
            self._ends.append(total)
        self.ends = <const int64_t*><Py_ssize_t>self._ends.buffer_info()[0]
        self.n = len(encoded)
        memset(self.first, 0, 256)
        for item in encoded:
            self.first[item[0]] = 1
        leads = [b for b in range(256) if self.first[b]]
        self.lead = leads[0] if len(leads) == 1 else -1

    cdef inline int64_t find(self, const uint8_t* text, int64_t n, int64_t* which) noexcept nogil:
        """Where the first string in ``text[:n]`` starts (``which``: the longest there), or -1."""
        return find_needle(text, n, self.data, self.ends, self.n, self.first, self.lead, which)

    cdef inline bint found_in(self, const uint8_t* text, int64_t n) noexcept nogil:
        cdef int64_t which
        return self.find(text, n, &which) >= 0

    cdef int require_ids(self) except -1:
        """Raise ValueError unless these strings have ids (allowed special tokens)."""
        if self.ids == NULL:
            raise ValueError("specials must be Needles made with the special tokens' ids")
        return 0


cdef extern from *:
    """
    #include "_portable.h"
    /* The index (0 to 7) of the first byte, in memory order, of eight read into a word
       whose high bits are `high` (not 0). */
    static inline int bpetrain_first_high_byte(uint64_t high) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        return bpetrain_clz64(high) >> 3;
    #else
        return bpetrain_ctz64(high) >> 3;
    #endif
    }
    """
    int first_high_byte "bpetrain_first_high_byte"(uint64_t high) noexcept nogil


cdef Py_ssize_t latin1_to_utf8(const uint8_t* text, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """Write the UTF-8 of ``n`` Latin-1 characters (code points below 256, one byte each)
    to ``out`` (room for ``2 * n`` bytes) and return its length: eight bytes at a time,
    copied as they are up to the first one past ASCII (found from the word's high bits),
    which becomes two bytes. CPython's encoder does the same through a growing bytes
    writer; this one writes into a buffer of the largest size at once (a text of
    Spanish, 3% of its bytes past ASCII, spent 7% of a per-document call there).
    Going to the next character past ASCII at once, rather than one byte at a time from
    the start of its word, took the conversion of a ~1 KB document of fortunes.txt from
    0.36 to 0.24 us."""
    cdef Py_ssize_t i = 0, k = 0, skip
    cdef uint64_t word, high
    cdef uint8_t c
    while i + 8 <= n:  # k + 8 <= 2 * i + 8 < 2 * n: the eight bytes stored fit
        memcpy(&word, text + i, 8)
        memcpy(out + k, &word, 8)
        high = word & 0x8080808080808080ULL
        if high == 0:
            i += 8
            k += 8
            continue
        skip = first_high_byte(high)
        c = text[i + skip]
        out[k + skip] = 0xC0 | (c >> 6)
        out[k + skip + 1] = 0x80 | (c & 0x3F)
        i += skip + 1
        k += skip + 2
    while i < n:
        c = text[i]
        if c < 0x80:
            out[k] = c
            k += 1
        else:
            out[k] = 0xC0 | (c >> 6)
            out[k + 1] = 0x80 | (c & 0x3F)
            k += 2
        i += 1
    return k


cdef object utf8_of(object text, const uint8_t** data, Py_ssize_t* n):
    """Point ``data`` and ``n`` at the UTF-8 of ``text`` (a ``str``) and return the object
    that holds it, to keep alive while ``data`` is read: an ASCII ``str`` is its own UTF-8
    (read in place, no copy); another is encoded into a bytes object of our own, since
    ``PyUnicode_AsUTF8AndSize`` would keep a copy inside the caller's ``str`` for as long
    as it lives (2.5x the memory of CJK text).

    Raises
    ------
    TypeError
        If ``text`` is not a ``str``.
    UnicodeEncodeError
        If it holds a lone surrogate.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if PyUnicode_IS_ASCII(text):
        data[0] = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, n)
        return text
    cdef Py_ssize_t length
    if PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND:  # Latin-1: encoded here, in one pass
        length = PyUnicode_GET_LENGTH(text)
        utf8 = PyBytes_FromStringAndSize(NULL, 2 * length)  # room for the worst case, 2 bytes a character
        n[0] = latin1_to_utf8(<const uint8_t*>PyUnicode_DATA(text), length, <uint8_t*>PyBytes_AS_STRING(utf8))
        data[0] = <const uint8_t*>PyBytes_AS_STRING(utf8)
        return utf8
    utf8 = PyUnicode_AsUTF8String(text)
    data[0] = <const uint8_t*>PyBytes_AS_STRING(utf8)
    n[0] = PyBytes_GET_SIZE(utf8)
    return utf8


def _py_utf8_of(text):
    """Test hook: the UTF-8 the kernel reads for ``text`` (:func:`utf8_of`), as bytes."""
    cdef const uint8_t* data
    cdef Py_ssize_t n
    keep = utf8_of(text, &data, &n)
    return (<const char*>data)[:n] if n else b""


cdef inline int64_t find_piece(PieceReader* reader, const Tables* pattern, Stack* stack, const uint8_t* text,
                               int64_t start, int64_t stop, int64_t n, const Scratch* scratch, PieceKey* key,
                               int64_t* end) except -2 nogil:
    """The start of the first piece at or after ``start`` and before ``stop`` (characters
    the pattern does not match are skipped), its end in ``end``, its key in ``key``, and
    its piece-table entry prefetched (``_piece.prefetch_piece``); ``stop`` or more if
    there is none."""
    while start < stop:
        end[0] = next_piece_end(reader, pattern, stack, text, start, n, 0)
        if end[0] >= 0:
            prefetch_piece(text + start, end[0] - start, scratch, key)
            return start
        start += char_length(text, start, n)
    return start


cdef enum:
    BATCH = 64  # pieces split before any of them is encoded: their piece-table entries are fetched meanwhile


cdef int64_t split_and_encode(const RankTables* t, const uint8_t* text, int64_t start, int64_t stop, int64_t n,
                              const Tables* pattern, Stack* stack, IdBuffer* out, Scratch* scratch, int64_t limit,
                              bint keep, int64_t* n_read) except -2 nogil:
    """Cut ``text[start:stop]`` of a text of ``n`` bytes into pieces with the compiled
    splitter (``next_piece_end``: ASCII text 64 bytes at a time for a pattern with block
    rules, ``Tables.blocks``) and encode each one (text the pattern does not match is dropped, as by tiktoken).
    ``start`` and ``stop`` are 0 and ``n`` or safe cuts (``Program.safe_cut``): no piece
    crosses them, and ``$`` and lookaheads still see the text after ``stop``.

    With ``keep`` the ids are appended to ``out``; without, only counted. Stops as
    soon as the count exceeds ``limit``. Returns the count, or -1 past the limit;
    ``n_read`` gets the bytes split and encoded.
    """
    # The pieces are split BATCH at a time, then encoded: each piece found has its
    # piece-table entry prefetched (find_piece), and the cache misses of the batch's
    # entries, which a lookup mostly waits for, then run while the rest of it is split and
    # the first pieces encoded. Two short loops, rather than one that finds a piece and
    # encodes one in turn, keep more of each loop's values in registers. A call per 1 KB
    # document of unseen text against 8 pieces found ahead in one loop, by the CPU clock on
    # a Zen 3: 1.04-1.07x (cold and warm piece tables, arrays and lists; 32: 1.01-1.05x,
    # 128: as 64).
    # A 64-byte block's pieces are taken in one loop where the blocks read the text
    # (blocks_drain, as split_pieces does), then their entries prefetched.
    cdef int64_t count = 0, before
    cdef Py_ssize_t pos = start, bounds[2 * BATCH]  # where the next piece starts; each piece's start and end
    cdef PieceKey keys[BATCH]  # a key is read only for a piece of 1 to 16 bytes, which prefetch_piece sets
    cdef int m, i, k
    cdef int64_t end
    cdef bint more = True
    cdef PieceReader reader
    start_reading(&reader, pattern, 0)
    while more:
        m = 0
        while m < BATCH:
            if reader.blocks:
                k = <int>blocks_drain(&reader.scan, text, n, &pos, stop, bounds + 2 * m, BATCH - m)
                for i in range(m, m + k):
                    prefetch_piece(text + bounds[2 * i], bounds[2 * i + 1] - bounds[2 * i], scratch, &keys[i])
                m += k
                if pos >= stop:
                    more = False
                    break
                if m == BATCH:
                    break
            bounds[2 * m] = find_piece(&reader, pattern, stack, text, pos, stop, n, scratch, &keys[m], &end)
            if bounds[2 * m] >= stop:
                more = False
                break
            bounds[2 * m + 1] = pos = end
            m += 1
        for i in range(m):
            before = out.size
            encode_keyed(t, text + bounds[2 * i], bounds[2 * i + 1] - bounds[2 * i], out, scratch, &keys[i])
            count += out.size - before
            if not keep:
                out.size = 0
            if count > limit:
                n_read[0] = bounds[2 * i + 1]
                return -1
    n_read[0] = stop
    return count


cdef int64_t encode_segments(const RankTables* t, const uint8_t* data, int64_t n, const Tables* pattern, Stack* stack,
                             IdBuffer* out, Scratch* scratch, Needles specials, bint keep) except -2 nogil:
    """Split and encode ``data[:n]`` where each of ``specials`` found (the first from the
    left, the longest there) is its id, and the text between them is a text of its own,
    as tiktoken does. With ``keep`` the ids are appended to ``out``; without, only
    counted. Returns the count."""
    cdef int64_t n_read, pos = 0, hit, which = 0, count = 0, length
    while True:
        hit = specials.find(data + pos, n - pos, &which)
        length = n - pos if hit < 0 else hit
        if length > 0:  # the text before the special token (or the rest), as a text of its own
            count += split_and_encode(t, data + pos, 0, length, length, pattern, stack, out, scratch,
                                      INT64_MAX, keep, &n_read)
        if hit < 0:
            return count
        count += 1
        if keep:
            if out.size + 1 > out.cap:
                grow_ids(out, out.size + 1)
            out.ids[out.size] = specials.ids[which]
            out.size += 1
        pos += hit + specials.ends[which + 1] - specials.ends[which]


cdef object encode_utf8(BytePairEncoder bpe, const uint8_t* data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t end,
                        Program pattern, bint as_list, Needles specials=None):
    """The ids of the pieces of ``data[start:end]`` (``data`` of ``n`` bytes). With
    ``specials`` (``start`` 0 and ``end`` ``n``), each of them found is its id
    (:func:`encode_segments`)."""
    cdef IdBuffer own_out = IdBuffer(NULL, 0, 0)
    cdef Scratch own_scratch = Scratch(NULL, NULL, NULL, 0, NULL)
    cdef IdBuffer* out = &own_out
    cdef Scratch* scratch = &own_scratch
    cdef Stack stack = new_stack()
    cdef int64_t n_read, need = (end - start) // 3 + 64  # about the ids of real text: one growth at most
    bpe.warm(end - start)
    cache = bpe.caches.take_buffers(&out, &scratch)  # this call's alone (and the buffers it keeps) until given back
    try:
        with nogil:
            if out.cap < need:
                grow_ids(out, need)
            if specials is not None:
                encode_segments(&bpe.tables, data, n, &pattern.tables, &stack, out, scratch, specials, True)
            else:
                split_and_encode(&bpe.tables, data, start, end, n, &pattern.tables, &stack, out, scratch,
                                 INT64_MAX, True, &n_read)
        return ids_of(bpe, out, as_list)
    finally:
        bpe.caches.give_back(cache)
        free_buffers(&own_out, &own_scratch)
        free_stack(&stack)


cdef object encode_whole(BytePairEncoder bpe, str text, Program pattern, bint as_list, Needles needles,
                         Needles specials):
    """The ids of ``text`` (its UTF-8, :func:`utf8_of`), split by ``pattern``, after looking for
    ``needles`` (:class:`DisallowedText` if one is there), with ``specials`` encoded as
    their ids (:func:`encode_utf8`): :meth:`BytePairEncoder.encode_doc`'s kernel call."""
    cdef Py_ssize_t n
    cdef const uint8_t* data
    utf8 = utf8_of(text, &data, &n)  # alive until the kernel returns
    if needles is not None and needles.found_in(data, n):
        raise DisallowedText(0)
    if specials is not None:
        specials.require_ids()
    return encode_utf8(bpe, data, n, 0, n, pattern, as_list, specials)


cdef object ids_of(BytePairEncoder bpe, IdBuffer* out, bint as_list):
    """The ids of ``out`` as a list (:func:`to_list`) or a new array (:func:`to_array`)."""
    return to_list(bpe, out.ids, out.size) if as_list else to_array(out)


cdef list to_list(BytePairEncoder bpe, const uint32_t* ids, int64_t n):
    """The ids as a list of the kept int objects (:func:`kept_int`; a special token's
    id, past the ranks, gets a new one)."""
    cdef list result = PyList_New(n)
    fill_ints(bpe, PySequence_Fast_ITEMS(result), ids, n)
    return result


cdef int fill_ints(BytePairEncoder bpe, PyObject** items, const uint32_t* ids, int64_t n) except -1:
    """``items[i]`` (of a list just made): the int of ``ids[i]``, under the GIL."""
    if fill_items(items, ids, n, bpe.ints, bpe.tables.n_ranks) or not ints_kept:
        finish_items(items, ids, n, bpe.ints, bpe.tables.n_ranks)
    return 0


cdef list to_lists(BytePairEncoder bpe, const uint32_t* ids, const int64_t* ends, Py_ssize_t n_texts):
    """The ids of each text (``ids[ends[i]:ends[i + 1]]``, ``ends[0]`` = 0) as a list of
    the kept ints, made under the GIL and filled without it: a second thread needs
    the GIL only while the lists are made, not while they are filled.

    The lists are not tracked by the garbage collector until :func:`track_lists`:
    collections set off by our own allocations then skip them (they took half the
    time lists took), and nothing else sees them before. The list of them is untracked
    while their items are written, so no other thread can reach an unfilled one
    (``gc.get_objects``).
    """
    cdef PyObject*** rows = <PyObject***>malloc((n_texts + 1) * sizeof(PyObject**))
    cdef PyObject* const* ints = bpe.ints
    cdef uint32_t n_ints = bpe.tables.n_ranks
    cdef list result = PyList_New(n_texts)
    cdef PyObject** made = PySequence_Fast_ITEMS(result)
    cdef list row
    cdef Py_ssize_t i
    cdef bint other = False
    PyObject_GC_UnTrack(<PyObject*>result)
    try:
        if rows == NULL:
            raise MemoryError()
        for i in range(n_texts):
            row = PyList_New(ends[i + 1] - ends[i])  # its items NULL until filled
            PyObject_GC_UnTrack(<PyObject*>row)
            Py_INCREF(row)  # result's reference
            made[i] = <PyObject*>row
            rows[i] = PySequence_Fast_ITEMS(row)
        with nogil:
            for i in range(n_texts):
                if fill_items(rows[i], ids + ends[i], ends[i + 1] - ends[i], ints, n_ints):
                    other = True
        if other or not ints_kept:
            for i in range(n_texts):
                finish_items(rows[i], ids + ends[i], ends[i + 1] - ends[i], bpe.ints, n_ints)
        return result
    finally:
        PyObject_GC_Track(<PyObject*>result)
        free(rows)


@cython.final
cdef class BytePairEncoder:
    """Compiled tables of a vocabulary and the encoder loops over them.

    Parameters
    ----------
    mergeable_ranks : dict of bytes to int
        Token bytes -> rank (= token id), as in tiktoken. Every one of the 256 single
        bytes must have a rank; ranks are distinct, in ``[0, 2**31 - 1)``.

    Raises
    ------
    ValueError
        If a token is empty, a rank is out of range or repeated, or a byte has no rank.
    """

    def __cinit__(self, dict mergeable_ranks not None, cache_size=DEFAULT_CACHE_SIZE):
        self.caches = PieceCaches(cache_size)
        self._arrays = build_tables(&self.tables, mergeable_ranks)
        self._linear_lock = threading.Lock()
        self.ints = <PyObject**>calloc(max(self.tables.n_ranks, 1), sizeof(PyObject*))
        if self.ints == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.ints)  # the ints are the process's (kept_int)

    def build_linear(self):
        """Build the token trie and splits and decide :attr:`linear` (once; later calls
        return at once).

        A new encoder has only the tables the merging encoders read, which give the same
        ids: a short first encode does without the rest. It is built when first needed:
        by :attr:`linear`, :attr:`n_nodes`, a token automaton, or once the encoder has
        read ``LINEAR_AFTER`` bytes. Threads may encode meanwhile: the tables they read
        are not written, and ``tables.linear`` is set last.

        A large vocabulary's tables, and whether the linear encoder applies, are read from
        the on-disk cache when a process has kept them there, else built and kept
        (:mod:`bpetrain.encoding._table_cache`): 16 ms of CPU instead of 90 with
        ``cl100k_base``, 25 instead of 260 with ``o200k_base``.
        """
        cdef bint own_splits = False, linear = False
        if self._linear_built:
            return
        with self._linear_lock:
            if not self._linear_built:
                key = self.linear_key()
                # at most 64 bytes per token byte and rank and 4 MiB (the filters, node2 and
                # the dense table): load_linear_tables checks the exact layout
                kept = None if key is None else _table_cache.read_tables(
                    "linear", key, 64 * (self.tables.token_start[self.tables.n_ranks] + self.tables.n_ranks) + (1 << 22))
                arrays = None if kept is None else load_linear_tables(&self.tables, kept, &linear, &own_splits)
                if arrays is None:
                    arrays = build_linear_tables(&self.tables)
                    linear = merges_in_rank_order(&self.tables, &own_splits)
                    if linear and own_splits:
                        arrays += build_split_pairs(&self.tables)
                    if key is not None:
                        _table_cache.store_tables("linear", key, linear_tables_body(&self.tables, linear, own_splits))
                self._arrays.extend(arrays)
                self.tables.linear = linear
                if linear and own_splits:
                    self.tables.pairs = &self.tables.split_pairs
                self._linear_built = True

    cdef object linear_key(self):
        """The key of this vocabulary's linear tables in the on-disk cache, or None if it
        has fewer than ``_table_cache.MIN_SPLITS`` splits (kept nowhere: they build in
        well under a millisecond)."""
        cdef int64_t rank, n_splits = 0
        for rank in range(self.tables.n_ranks):
            n_splits += max(self.tables.token_len[rank] - 1, 0)
        if n_splits < _table_cache.MIN_SPLITS:
            return None
        return _table_cache.vocabulary_key(self._arrays[0], self._arrays[2], *_LINEAR_BUILDERS, kind="linear")

    @property
    def _py_linear_built(self):
        """Test hook: whether :meth:`build_linear` has run."""
        return bool(self._linear_built)

    cdef int warm(self, Py_ssize_t n_bytes) except -1:
        """Count ``n_bytes`` more read (racy between threads, which only moves the
        moment), and once ``LINEAR_AFTER`` are, build the linear encoder's tables and
        seed the piece tables of the next calls with the vocabulary's tokens
        (``_piece.PieceSeed``: a short first encode makes and copies no seed)."""
        if not self._warmed:
            self._n_seen += n_bytes
            if self._n_seen >= LINEAR_AFTER:
                self.build_linear()
                self.caches.seed_from(&self.tables)
                self._warmed = True
        return 0

    @property
    def n_ranks(self):
        """int: highest rank + 1."""
        return self.tables.n_ranks

    @property
    def max_token_len(self):
        """int: bytes of the longest token."""
        return self.tables.max_token_len

    @property
    def n_nodes(self):
        """int: nodes of the token trie (ids 0..n_nodes - 1, some ranks unused)."""
        self.build_linear()
        return self.tables.n_nodes

    @property
    def linear(self):
        """bool: whether the linear encoder gives the heap's ids (merges run in rank order;
        checked token by token when the trie is built, :meth:`build_linear`)."""
        self.build_linear()
        return bool(self.tables.linear)

    # ------------------------------------------------------------------ drivers

    def encode_pieces(self, list pieces not None, bint as_list=False):
        """Encode each piece (a ``str``, as UTF-8) on its own; the ids in one array.

        Parameters
        ----------
        pieces : list of str

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
            Or a list of int with ``as_list``.

        Raises
        ------
        UnicodeEncodeError
            If a piece holds a lone surrogate (not encodable as UTF-8).
        """
        cdef Py_ssize_t n_pieces = len(pieces), i
        cdef const char** data = <const char**>malloc((n_pieces + 1) * sizeof(char*))
        cdef Py_ssize_t* lengths = <Py_ssize_t*>malloc((n_pieces + 1) * sizeof(Py_ssize_t))
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        cache = self.caches.take(&scratch)  # this call's alone until given back
        try:
            if data == NULL or lengths == NULL:
                raise MemoryError()
            for i in range(n_pieces):
                data[i] = PyUnicode_AsUTF8AndSize(pieces[i], &lengths[i])
                self.warm(lengths[i])
            with nogil:
                for i in range(n_pieces):
                    encode_piece(&self.tables, <const uint8_t*>data[i], lengths[i], &out, &scratch)
            return ids_of(self, &out, as_list)
        finally:
            self.caches.give_back(cache)
            free(data)
            free(lengths)
            free_buffers(&out, &scratch)

    def encode_bytes(self, const uint8_t[::1] data not None, bint as_list=False):
        """Encode ``data`` as one piece (no pre-tokenization); returns as :meth:`encode_pieces`.
        ValueError if ``data`` is 2**32 bytes or longer (positions in the heap are 32-bit)."""
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        self.warm(data.shape[0])
        cache = self.caches.take(&scratch)  # this call's alone until given back
        try:
            with nogil:
                encode_piece(&self.tables, &data[0] if data.shape[0] else NULL, data.shape[0], &out, &scratch)
            return ids_of(self, &out, as_list)
        finally:
            self.caches.give_back(cache)
            free_buffers(&out, &scratch)

    def encode_table(self, const uint8_t[::1] data not None, const int64_t[::1] offsets not None,
                     bint cached=False, bint as_list=False):
        """Encode each piece of a piece table on its own (no split); the ids in one array.

        Parameters
        ----------
        data : numpy.ndarray of uint8, shape (n_bytes,)
            The pieces' bytes, concatenated (any bytes, not only UTF-8).
        offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
            Piece ``i`` is ``data[offsets[i]:offsets[i + 1]]``; nondecreasing, 0 to n_bytes.
        cached : bool, default False
            Use a piece cache (:attr:`cache_size`), for the pieces of a text, which repeat;
            without, for a table of unique pieces (a counts file's).
        as_list : bool, default False
            Return a list of int.

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
            The ids of piece 0, then of piece 1, ...; their token bytes, concatenated,
            are ``data``. A list with ``as_list``.

        Raises
        ------
        ValueError
            If ``offsets`` does not describe ``data``.
        """
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        cdef Py_ssize_t i, n_pieces = offsets.shape[0] - 1
        cdef const uint8_t* start = &data[0] if data.shape[0] else NULL
        if n_pieces < 0 or offsets[0] != 0 or offsets[n_pieces] != data.shape[0]:
            raise ValueError("offsets must start at 0 and end at len(data)")
        for i in range(n_pieces):
            if offsets[i + 1] < offsets[i]:
                raise ValueError(f"offsets must be nondecreasing (piece {i})")
        self.warm(data.shape[0])
        cache = self.caches.take(&scratch) if cached else None  # this call's alone until given back
        try:
            with nogil:
                for i in range(n_pieces):
                    encode_piece(&self.tables, start + offsets[i], offsets[i + 1] - offsets[i], &out, &scratch)
            return ids_of(self, &out, as_list)
        finally:
            if cached:
                self.caches.give_back(cache)
            free_buffers(&out, &scratch)

    def encode_text(self, const uint8_t[::1] data not None, Program pattern not None, bint as_list=False,
                    Py_ssize_t start=0, stop=None):
        """Split UTF-8 ``data`` with a compiled pattern and encode it.

        Parameters
        ----------
        data : bytes-like, uint8
        pattern : bpetrain.splitting._matcher.Program
            The split pattern (:attr:`bpetrain.splitting.pattern.SplitPattern.program`).
        start, stop : int, optional
            Encode only the pieces of ``data[start:stop]``, where both are 0, ``len(data)``
            or safe cuts (``pattern.safe_cut``): the ids of consecutive ranges joined are
            the ids of the whole.

        Raises
        ------
        ValueError
            If not ``0 <= start <= stop <= len(data)``.

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
            Or a list of int with ``as_list``.
        """
        cdef Py_ssize_t end = data.shape[0] if stop is None else stop
        if not 0 <= start <= end <= data.shape[0]:
            raise ValueError(f"need 0 <= start <= stop <= len(data), got {start}, {end}, {data.shape[0]}")
        return encode_utf8(self, &data[0] if data.shape[0] else NULL, data.shape[0], start, end, pattern, as_list)

    def encode_doc(self, text, Program pattern, bint as_list, Needles needles, Needles specials):
        """:meth:`encode_text` of ``text``'s UTF-8 in one kernel call, where ``text`` is an
        exact ``str`` of fewer than ``DOC_CHARS`` characters and ``pattern`` a compiled one:
        the whole text, for a call per document (an ASCII ``str`` is read in place; another
        is encoded into a bytes object of our own, so nothing is kept in ``text``). The
        call with ``encode``'s default arguments does not come here: :class:`DocumentCalls`
        goes to the same kernel call without this method's frame.

        With ``specials`` (allowed special tokens, with their ids), each occurrence of one
        is its id, and the text between them is encoded piece by piece as a text of its
        own, as tiktoken does: the first occurrence from the left, the longest there.

        Raises
        ------
        NotOneCall
            If the text is not such a ``str`` or ``pattern`` is None (the caller's other
            paths encode it).
        DisallowedText
            If ``text`` holds one of ``needles`` (index 0).
        UnicodeEncodeError
            If ``text`` holds a lone surrogate (not encodable as UTF-8).
        ValueError
            If ``specials`` has no ids.
        """
        if not one_call_text(text, pattern):
            raise NotOneCall()
        return encode_whole(self, text, pattern, as_list, needles, specials)

    def encode_batch(self, list texts not None, Program pattern not None, int output, Needles needles=None,
                     Needles specials=None):
        """Split and encode each of ``texts`` (``str``, read as UTF-8) as :meth:`encode_text`
        does, all in one call without the GIL.

        Parameters
        ----------
        texts : list of str
        pattern : bpetrain.splitting._matcher.Program
        output : int
            ``BATCH_LISTS``: a list of lists of int, not yet tracked by the garbage
            collector (pass them to :func:`track_lists`). ``BATCH_ARRAYS``: ``(ids, offsets)``,
            the ids of every text in one uint32 array, shape (n_tokens,), and int64
            offsets, shape (len(texts) + 1,): text ``i`` has ``ids[offsets[i]:offsets[i + 1]]``.
            ``BATCH_COUNTS``: the token count of each text, int64 array, shape (len(texts),),
            no ids kept.
        needles : Needles, optional
            Strings no text may hold (disallowed special tokens), looked for without the
            GIL before each text is encoded.
        specials : Needles, optional
            Allowed special tokens, with their ids: each found is its id, and the text
            between them a text of its own (:meth:`encode_doc`).

        Raises
        ------
        DisallowedText
            With the index of the first text that holds one of ``needles``.
        TypeError
            If an item is not a ``str``.
        UnicodeEncodeError
            If a text holds a lone surrogate (the caller replaces them and calls again).
        """
        cdef Py_ssize_t n_texts = len(texts), i
        cdef const char** data = <const char**>malloc((n_texts + 1) * sizeof(char*))
        cdef Py_ssize_t* lengths = <Py_ssize_t*>malloc((n_texts + 1) * sizeof(Py_ssize_t))
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        cdef Stack stack = new_stack()
        cdef int64_t n_read, count, total = 0, bad = -1
        cdef bint keep = output != BATCH_COUNTS
        if output not in (BATCH_LISTS, BATCH_ARRAYS, BATCH_COUNTS):
            raise ValueError(f"output must be BATCH_LISTS, BATCH_ARRAYS or BATCH_COUNTS, got {output}")
        if specials is not None:
            specials.require_ids()
        cdef c_array offsets = clone(_INT64, n_texts + 1, False)  # numpy's only for arrays out
        cdef int64_t* ends = <int64_t*>offsets.data.as_voidptr
        encoded = []  # the UTF-8 of the texts that are not ASCII, alive until the kernel returns
        cache = self.caches.take(&scratch)  # this call's alone until given back
        try:
            if data == NULL or lengths == NULL:
                raise MemoryError()
            for i in range(n_texts):
                item = texts[i]
                utf8 = utf8_of(item, <const uint8_t**>&data[i], &lengths[i])
                if utf8 is not item:
                    encoded.append(utf8)
                total += lengths[i]
            self.warm(total)
            ends[0] = 0
            with nogil:
                if keep:
                    grow_ids(&out, total // 3 + 64)  # about the ids of real text: one growth at most
                for i in range(n_texts):
                    if needles is not None and needles.found_in(<const uint8_t*>data[i], lengths[i]):
                        bad = i
                        break
                    if specials is not None:
                        count = encode_segments(&self.tables, <const uint8_t*>data[i], lengths[i], &pattern.tables,
                                                &stack, &out, &scratch, specials, keep)
                    else:
                        count = split_and_encode(&self.tables, <const uint8_t*>data[i], 0, lengths[i], lengths[i],
                                                 &pattern.tables, &stack, &out, &scratch, INT64_MAX, keep, &n_read)
                    ends[i + 1] = out.size if keep else ends[i] + count
            if bad >= 0:
                raise DisallowedText(bad)
            if output == BATCH_LISTS:
                return to_lists(self, out.ids, ends, n_texts)
            import numpy as np

            if output == BATCH_ARRAYS:
                return to_array(&out), np.frombuffer(offsets, dtype=np.int64)
            return np.diff(np.frombuffer(offsets, dtype=np.int64))
        finally:
            self.caches.give_back(cache)
            free(data)
            free(lengths)
            free_buffers(&out, &scratch)
            free_stack(&stack)

    def count_str(self, str text not None, Program pattern not None, int64_t limit):
        """Count the tokens of ``text`` (its UTF-8, read as :meth:`encode_doc` reads it) as
        :meth:`encode_text` would make them, stopping as soon as the count exceeds ``limit``.

        Returns
        -------
        (int, int)
            The count, or -1 if it exceeds ``limit``; and the bytes of UTF-8 read to decide.

        Raises
        ------
        UnicodeEncodeError
            If ``text`` holds a lone surrogate (not encodable as UTF-8).
        """
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        cdef int64_t count, n_read
        cdef Py_ssize_t n
        cdef const uint8_t* data
        cdef Stack stack = new_stack()
        utf8 = utf8_of(text, &data, &n)  # alive until the kernel returns
        self.warm(n)
        cache = self.caches.take(&scratch)  # this call's alone until given back
        try:
            with nogil:
                count = split_and_encode(&self.tables, data, 0, n, n, &pattern.tables, &stack, &out, &scratch,
                                         limit, False, &n_read)
            return count, n_read
        finally:
            self.caches.give_back(cache)
            free_buffers(&out, &scratch)
            free_stack(&stack)

    def count_pieces(self, list pieces not None, int64_t limit):
        """Count the tokens of the pieces, stopping once the count exceeds ``limit``.

        Returns
        -------
        int
            The count, or -1 if it exceeds ``limit``.
        """
        cdef Py_ssize_t n_pieces = len(pieces), i, length
        cdef const char* data
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        cdef int64_t count = 0
        cache = self.caches.take(&scratch)  # this call's alone until given back
        try:
            for i in range(n_pieces):
                data = PyUnicode_AsUTF8AndSize(pieces[i], &length)
                self.warm(length)
                out.size = 0
                encode_piece(&self.tables, <const uint8_t*>data, length, &out, &scratch)
                count += out.size
                if count > limit:
                    return -1
            return count
        finally:
            self.caches.give_back(cache)
            free_buffers(&out, &scratch)

    def _py_encode_bytes(self, const uint8_t[::1] data not None, str path):
        """Test hook: encode ``data`` as one piece on one path ("small", "heap" or "linear"),
        without the whole-token lookup; a list of int."""
        cdef IdBuffer out = IdBuffer(NULL, 0, 0)
        cdef Scratch scratch = Scratch(NULL, NULL, NULL, 0, NULL)
        cdef int64_t n = data.shape[0]
        if path not in ("small", "heap", "linear"):
            raise ValueError(f"path must be 'small', 'heap' or 'linear', got {path!r}")
        if path == "small" and n > SMALL_PIECE:
            raise ValueError(f"the small path takes at most {SMALL_PIECE} bytes, got {n}")
        if path == "linear":
            self.build_linear()
        if path == "linear" and not self.tables.linear:
            raise ValueError("the linear encoder does not apply to this vocabulary")
        try:
            grow_ids(&out, n + 1)
            grow_scratch(&scratch, n + 1)
            if n:
                if path == "small":
                    encode_small(&self.tables, &data[0], n, &out, NULL)
                elif path == "heap":
                    encode_heap(&self.tables, &data[0], n, &out, &scratch, NULL)
                else:
                    encode_linear(&self.tables, &data[0], n, &out, &scratch, NULL)
            return to_list(self, out.ids, out.size)
        finally:
            free_buffers(&out, &scratch)

    def _py_pair_rank(self, int left, int right):
        """Test hook: ``pair_rank`` of two ranks (the dense table below ``2**DENSE_BITS``,
        else the pair table behind its filter): the rank of their bytes joined, or None;
        once :meth:`build_linear` has run, only if they are that token's own split."""
        if not (0 <= left < self.tables.n_ranks and 0 <= right < self.tables.n_ranks):
            raise ValueError(f"ranks must be in [0, {self.tables.n_ranks}), got {left} and {right}")
        rank = pair_rank(&self.tables, left, right)
        return None if rank == NO_RANK else rank

    def join_as_list(self, list arrays not None):
        """The ids of ``arrays`` (uint32 arrays, shape (n,) each), one after another, in
        one list of the kept ints: the parts of a text encoded on several threads
        become its list without a list per part (joining lists raised and lowered the
        count of every id of every part after the first).

        Raises
        ------
        TypeError, ValueError
            If an item is not a C-contiguous uint32 array.
        """
        cdef const uint32_t[::1] part
        cdef Py_ssize_t total = 0, at = 0
        cdef list result
        cdef PyObject** items
        for part in arrays:
            total += part.shape[0]
        result = PyList_New(total)
        items = PySequence_Fast_ITEMS(result)
        for part in arrays:
            if part.shape[0]:
                fill_ints(self, items + at, &part[0], part.shape[0])
            at += part.shape[0]
        return result

    @property
    def cache_size(self):
        """int: most entries of each part of a piece table (16 and 32 bytes each), 0 if
        there is none.

        A piece table maps every piece of 1 to 255 bytes the calls have seen to its ids,
        one token or several: a piece of 1 to 8 bytes and up to three ids in an entry of
        16 bytes of its short part; one of 9 to 16 bytes and up to five ids in an entry of
        32 bytes of its other part; a longer one there with its bytes and ids in an arena
        of up to 16 bytes per entry of this size; a piece with more ids is merged each
        time. A piece seen before is one probe of this table, with no whole-token lookup
        and no merge. Open addressing, each part at most half full: a part starts with
        1,024 entries (or this size if smaller), doubles when half full up to this size,
        and once full at this size (a part or the arena) that part is emptied and refilled
        from the pieces that come next, the other part keeping its own (so memory stays
        bounded and text of a new kind is not shut out by the pieces of the first). Each call that runs takes a table of its
        own (the last one given back, or a new, empty one) and gives it back when it
        returns, so threads never share a table while they encode (shared tables cost a
        second thread a sixth of its speed: every store wrote cache lines the other core
        was reading), and a thread's next call finds the pieces it has seen. There are
        as many tables as calls have run at once. Once the encoder has read
        ``LINEAR_AFTER`` bytes, new tables are seeded with every token of 3 to 16 bytes
        (``_piece.PieceSeed``: if this size is at least their number; each part of such
        a table has ``max(size // 2, 2 * tokens)`` entries from the start, for its
        tokens, and a part is emptied back to its tokens when three quarters full).
        Setting the size drops every table (setting the same size, as
        ``Encoding.clear_cache`` does, empties the seeded ones back to their tokens and
        keeps them)
        (rounded up to a power of two, at least 2; 0: no table); calls already running
        finish with theirs.

        Raises
        ------
        TypeError
            If the size is not an integer.
        ValueError
            If it is negative or above 2**32.
        """
        return self.caches.size

    @cache_size.setter
    def cache_size(self, size):
        self.caches.size = size
        if self._warmed:  # seeded again at once (the seed is kept if the size is the same)
            self.caches.seed_from(&self.tables)

    @property
    def spare_caches(self):
        """int: piece tables kept for the next calls (at most as many as calls ran at once)."""
        return self.caches.spare_count

    @property
    def _py_spare_buffers(self):
        """Test hook: (output ids, piece bytes) the working memory kept with each spare piece table has room for."""
        return self.caches.buffers_kept

    @property
    def _py_spare_tables(self):
        """Test hook: (entries, entries in use, arena bytes in use) of each spare piece table
        (of its part for pieces of more than 8 bytes; ``_py_spare_shorts``: the other)."""
        return self.caches.spares_in_use

    @property
    def _py_spare_shorts(self):
        """Test hook: (entries, entries in use) of the short part of each spare piece table."""
        return self.caches.short_spares_in_use

    @property
    def token_lengths(self):
        """numpy.ndarray of int32, shape (n_ranks,): bytes of each rank's token (0: none); a
        read-only view of the table."""
        import numpy as np

        view = np.frombuffer(self._arrays[0], dtype=np.int32)
        view.flags.writeable = False
        return view


#: What the kernel call raises when it does not encode a text alone (``Encoding._encode_other``,
#: the fallback ladder, takes over).
KERNEL_GAVE_UP = (NotOneCall, DisallowedText, BacktrackLimitExceeded, UnicodeEncodeError)
#: ``allowed_special``'s default (an empty set): with ``disallowed_special="all"``, the
#: special tokens of a call are ``SpecialTokens.default`` (:mod:`bpetrain.encoding.special`),
#: found without looking at the arguments further.
cdef object none_allowed = frozenset()
NONE_ALLOWED = none_allowed


cdef enum:  # the calls of DocumentCalls._one_call: how it treats special tokens
    ORDINARY = 0     # as ordinary text (encode_ordinary)
    DEFAULTS = 1     # encode's defaults: every special token disallowed
    ALL_ALLOWED = 2  # allowed_special="all": each is its id
    OTHER = 3        # other arguments: not one of these calls


@cython.auto_pickle(False)  # pickled by the subclass's __getstate__ and __setstate__
cdef class DocumentCalls:
    """The base of :class:`bpetrain.Encoding` that holds its calls per document
    (:meth:`encode_ordinary`, :meth:`encode`, :meth:`encode_to_numpy`): compiled, so that
    the common call (the default arguments, a ``str`` of fewer than ``DOC_CHARS``
    characters, a compiled pattern) goes from the method to the kernel
    (:func:`encode_whole`) without a Python frame in between. Any other call goes to the
    encoding's ``_encode`` (other arguments) or ``_encode_other`` (the fallback ladder).

    :meth:`encode_to_numpy` of an empty string took 0.48 us through a Python method
    calling :meth:`BytePairEncoder.encode_doc`, 0.30 us here (gigatoken's
    ``backend.encode`` 0.23 us), on a Zen 3, where a call per 1 KB document takes about
    8 us in all.

    ``allowed_special="all"`` (with ``disallowed_special="all"``: every special token is its
    id, as in a chat template's text) goes there too: a 1 KB document took 6.41 us through
    ``_encode``, 5.66 us here, 5.50 us with the defaults (English, cl100k, every piece seen
    before).

    Set by the subclass's ``__init__``: ``_bpe`` (the compiled encoder), ``_pattern``
    (the compiled split pattern, or None), ``_default_needles`` and ``_default_kernel``
    (the strings :meth:`encode` looks for with its defaults, and whether the kernel can
    look for them), ``_all_needles``, ``_all_specials`` and ``_all_kernel`` (the same with
    ``allowed_special="all"``, and the special tokens with their ids).
    """
    cdef public object _bpe  # a BytePairEncoder (checked where the kernel is called: tests put spies here)
    cdef public Program _pattern
    cdef public Needles _default_needles
    cdef public bint _default_kernel
    cdef public Needles _all_needles
    cdef public Needles _all_specials
    cdef public bint _all_kernel

    cdef object _one_call(self, text, bint as_list, int call):
        """The ids of ``text`` in one kernel call, treating special tokens as ``call``
        (``ORDINARY``, ``DEFAULTS``, ``ALL_ALLOWED``) says; the fallback ladder if the
        kernel does not encode it alone."""
        error = None  # (not a text for one call)
        if one_call_text(text, self._pattern):
            try:
                return encode_whole(<BytePairEncoder?>self._bpe, text, self._pattern, as_list,
                                    None if call == ORDINARY else self._default_needles if call == DEFAULTS
                                    else self._all_needles, self._all_specials if call == ALL_ALLOWED else None)
            except KERNEL_GAVE_UP as gave_up:
                error = gave_up
        strings = (self._specials.none if call == ORDINARY else self._specials.default if call == DEFAULTS
                   else self._specials.strings("all", "all"))
        return self._encode_other(text, as_list, strings, error)

    cdef inline int _call_of(self, allowed_special, disallowed_special):
        """The kernel call of :meth:`encode`'s arguments (``DEFAULTS``, ``ALL_ALLOWED``),
        or ``OTHER`` (``_encode`` takes them)."""
        if allowed_special is none_allowed:
            return DEFAULTS if self._default_kernel and disallowed_special == "all" else OTHER
        if type(allowed_special) is str and allowed_special == "all" and self._all_kernel and disallowed_special == "all":
            return ALL_ALLOWED
        return OTHER

    def encode_ordinary(self, text):
        """Encode ``text``, treating special token strings as ordinary text.

        Returns
        -------
        list of int
        """
        return self._one_call(text, True, ORDINARY)

    def encode(self, text, *, allowed_special=NONE_ALLOWED, disallowed_special="all"):
        """Encode ``text``, with tiktoken's rules for special tokens.

        Parameters
        ----------
        text : str
        allowed_special : "all" or collection of str
            Special tokens encoded as their id where they appear in ``text``. Strings
            that are not special tokens are ignored, as in tiktoken.
        disallowed_special : "all" or collection of str
            Strings whose appearance raises; "all": every special token not allowed.

        Returns
        -------
        list of int

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        ValueError
            If ``text`` holds a disallowed string (tiktoken's message, which says how to
            allow it).
        """
        cdef int call = self._call_of(allowed_special, disallowed_special)
        if call != OTHER:
            return self._one_call(text, True, call)
        return self._encode(text, True, self._specials.strings(allowed_special, disallowed_special))

    def encode_to_numpy(self, text, *, allowed_special=NONE_ALLOWED, disallowed_special="all"):
        """Encode ``text`` as :meth:`encode` does, into an array (no list in between).

        Returns
        -------
        numpy.ndarray of uint32, shape (n_tokens,)
        """
        cdef int call = self._call_of(allowed_special, disallowed_special)
        if call != OTHER:
            return self._one_call(text, False, call)
        return self._encode(text, False, self._specials.strings(allowed_special, disallowed_special))


cdef bint _numpy_loaded = False


cdef int load_numpy() except -1:
    """Load NumPy's C API (``import_array``) the first time an array is made, not when this
    module is imported: a process that only encodes to lists never imports numpy."""
    global _numpy_loaded
    _import_array()
    _numpy_loaded = True
    return 0


cdef object to_array(IdBuffer* out):
    """Copy the ids into a new uint32 array (NumPy's C API: a typed memoryview of the new
    array cost ~0.5 us, a tenth of a call on a 1 KB text)."""
    if not _numpy_loaded:
        load_numpy()
    cdef npy_intp size = out.size
    result = PyArray_EMPTY(1, &size, NPY_UINT32, 0)
    if out.size:
        memcpy(PyArray_DATA(<PyArrayObject*>result), out.ids, out.size * sizeof(uint32_t))
    return result
