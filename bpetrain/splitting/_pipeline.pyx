# cython: language_level=3
"""The compiled pre-tokenization pipeline: splits applied one after another, on UTF-8 bytes.

Hugging Face's ``Sequence`` of pre-tokenizers (``tokenizers/src/pre_tokenizers/sequence.rs``)
applies each step to every piece the previous step made; a ``Split`` runs its regex over a
piece as a whole string of its own (``^`` at its start, ``$`` and lookaheads stop at its
end) and keeps the text the regex does not match as pieces too (``Pattern::find_matches``
in ``tokenizer/pattern.rs``), then groups matches and gaps by its behavior
(``NormalizedString::split`` in ``tokenizer/normalizer.rs``). This kernel does the same
without the GIL: each step reads the pieces of the previous one (bytes and offsets) and
writes its own, with the compiled matcher (:mod:`bpetrain.splitting._matcher`) finding the
matches. :mod:`bpetrain.splitting.pipeline` builds the steps and holds the ``regex``-module
version of the same rules (the reference, and the splitter for steps the matcher cannot run).
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

import numpy as np

from bpetrain.splitting._matcher cimport (Program, PieceReader, Stack, Tables, char_length, free_stack,
                                          next_piece_end, start_reading)

cpdef enum:  # the steps
    STEP_SPLIT = 0   # split each piece by a program, group matches and gaps by a behavior
    STEP_PREFIX = 1  # a space before each piece that does not start with one (ByteLevel's add_prefix_space)

cpdef enum:  # a split's behaviors, as Hugging Face's SplitDelimiterBehavior
    ISOLATED = 0
    REMOVED = 1
    MERGED_WITH_PREVIOUS = 2
    MERGED_WITH_NEXT = 3
    CONTIGUOUS = 4

cdef struct Pieces:
    uint8_t* data       # the pieces' bytes, one after another
    int64_t* offsets    # piece i is data[offsets[i]:offsets[i + 1]]; offsets[0] == 0
    Py_ssize_t n_bytes
    Py_ssize_t n_pieces
    Py_ssize_t cap_bytes
    Py_ssize_t cap_pieces


cdef struct Entries:  # the matches and gaps of one piece: start, end, is_match (after invert)
    int64_t* items      # 3 per entry
    Py_ssize_t n
    Py_ssize_t cap


cdef int _reserve(Pieces* p, Py_ssize_t n_bytes, Py_ssize_t n_pieces) except -1 nogil:
    """Room for ``n_bytes`` more bytes and ``n_pieces`` more pieces in ``p``."""
    cdef Py_ssize_t cap
    cdef void* grown
    if p.n_bytes + n_bytes > p.cap_bytes:
        cap = max(2 * p.cap_bytes, p.n_bytes + n_bytes, 256)
        grown = realloc(p.data, cap)
        if grown == NULL:
            with gil:
                raise MemoryError()
        p.data = <uint8_t*>grown
        p.cap_bytes = cap
    if p.n_pieces + n_pieces + 1 > p.cap_pieces:
        cap = max(2 * p.cap_pieces, p.n_pieces + n_pieces + 1, 64)
        grown = realloc(p.offsets, cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        p.offsets = <int64_t*>grown
        p.cap_pieces = cap
    return 0


cdef inline int _append(Pieces* p, const uint8_t* src, Py_ssize_t length, bint space) except -1 nogil:
    """Add a piece: a space if ``space``, then ``src[:length]``."""
    _reserve(p, length + 1, 1)
    if space:
        p.data[p.n_bytes] = 32
        p.n_bytes += 1
    memcpy(p.data + p.n_bytes, src, length)
    p.n_bytes += length
    p.n_pieces += 1
    p.offsets[p.n_pieces] = p.n_bytes
    return 0


cdef inline int _entry(Entries* e, int64_t start, int64_t end, int64_t is_match) except -1 nogil:
    cdef Py_ssize_t cap
    cdef void* grown
    if e.n == e.cap:
        cap = max(2 * e.cap, 64)
        grown = realloc(e.items, 3 * cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        e.items = <int64_t*>grown
        e.cap = cap
    e.items[3 * e.n] = start
    e.items[3 * e.n + 1] = end
    e.items[3 * e.n + 2] = is_match
    e.n += 1
    return 0


cdef int _find(const Tables* t, Stack* stack, const uint8_t* text, Py_ssize_t a, Py_ssize_t b, bint invert,
               Entries* e) except -1 nogil:
    """The matches of the program in the string ``text[a:b]`` and the gaps between them, in
    order, covering it (``find_matches``); with ``invert`` matches are gaps and gaps matches."""
    cdef PieceReader reader
    cdef Py_ssize_t pos = a, gap = a, end
    e.n = 0
    start_reading(&reader, t, a)
    while pos < b:
        end = next_piece_end(&reader, t, stack, text, pos, b, a)
        if end < 0:
            pos += char_length(text, pos, b)
            continue
        if pos > gap:
            _entry(e, gap, pos, invert)
        _entry(e, pos, end, not invert)
        pos = gap = end
    if gap < b:
        _entry(e, gap, b, invert)
    return 0


cdef int _group(const uint8_t* text, Entries* e, int behavior, Pieces* out) except -1 nogil:
    """Add the pieces that ``behavior`` makes of the entries ``e`` of ``text`` to ``out``
    (``NormalizedString::split``): Isolated keeps each entry; Removed drops the matches;
    Contiguous joins entries next to one of the same kind; MergedWithPrevious joins a
    match to the entry before it unless that is a match; MergedWithNext joins a match to
    the entry after it unless that is a match."""
    cdef Py_ssize_t i, k = 0
    cdef int64_t* x = e.items
    cdef int64_t start, end
    while k < e.n:
        start = x[3 * k]
        end = x[3 * k + 1]
        i = k + 1
        if behavior == REMOVED and x[3 * k + 2]:
            k = i
            continue
        if behavior == CONTIGUOUS:
            while i < e.n and x[3 * i + 2] == x[3 * k + 2]:
                end = x[3 * i + 1]
                i += 1
        elif behavior == MERGED_WITH_PREVIOUS:
            if i < e.n and x[3 * i + 2] and not x[3 * k + 2]:
                end = x[3 * i + 1]
                i += 1
        elif behavior == MERGED_WITH_NEXT:
            if x[3 * k + 2] and i < e.n and not x[3 * i + 2]:
                end = x[3 * i + 1]
                i += 1
        _append(out, text + start, end - start, False)
        k = i
    return 0


cdef class Pipeline:
    """The steps of a pre-tokenization pipeline, compiled.

    Parameters
    ----------
    steps : list of tuple
        ``(STEP_SPLIT, program, behavior, invert)`` with a
        :class:`~bpetrain.splitting._matcher.Program`, or ``(STEP_PREFIX, None, 0, False)``.
    """
    cdef list _programs
    cdef const Tables* tables[64]
    cdef int kinds[64]
    cdef int behaviors[64]
    cdef bint inverts[64]
    cdef int n_steps

    def __cinit__(self, list steps not None):
        cdef Program program
        if len(steps) > 64:
            raise ValueError(f"a pipeline has at most 64 steps, got {len(steps)}")
        self._programs = []
        self.n_steps = len(steps)
        for k, (kind, program_object, behavior, invert) in enumerate(steps):
            if kind not in (STEP_SPLIT, STEP_PREFIX) or not ISOLATED <= behavior <= CONTIGUOUS:
                raise ValueError(f"step {k}: unknown kind {kind} or behavior {behavior}")
            self.kinds[k] = kind
            self.behaviors[k] = behavior
            self.inverts[k] = bool(invert)
            self.tables[k] = NULL
            if kind == STEP_SPLIT:
                program = program_object  # a TypeError unless a Program
                self._programs.append(program)
                self.tables[k] = &program.tables

    cdef int run(self, const uint8_t* text, Py_ssize_t n, Pieces* out, Pieces* spare, Entries* e,
                 Stack* stack) except -1 nogil:
        """The pieces of ``text[:n]`` into ``out`` (``spare``: scratch of the same kind)."""
        cdef Pieces* src = out
        cdef Pieces* dst = spare
        cdef Pieces* swap
        cdef Pieces held
        cdef Py_ssize_t i, a, b
        cdef int k
        src.n_bytes = src.n_pieces = 0
        _reserve(src, n, 1)
        src.offsets[0] = 0
        if n:
            _append(src, text, n, False)
        for k in range(self.n_steps):
            dst.n_bytes = dst.n_pieces = 0
            _reserve(dst, src.n_bytes, src.n_pieces)
            dst.offsets[0] = 0
            for i in range(src.n_pieces):
                a = src.offsets[i]
                b = src.offsets[i + 1]
                if self.kinds[k] == STEP_PREFIX:
                    _append(dst, src.data + a, b - a, src.data[a] != 32)
                else:
                    _find(self.tables[k], stack, src.data, a, b, self.inverts[k], e)
                    _group(src.data, e, self.behaviors[k], dst)
            swap = src
            src = dst
            dst = swap
        if src != out:  # the result is in ``spare``: swap the two
            held = out[0]
            out[0] = spare[0]
            spare[0] = held
        return 0

    def table(self, data):
        """The pieces of UTF-8 ``data`` (bytes-like) as one buffer and offsets.

        Returns
        -------
        pieces : bytes
            The pieces, one after another.
        offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
            Piece ``i`` is ``pieces[offsets[i]:offsets[i + 1]]``.

        Raises
        ------
        BacktrackLimitExceeded
            If a step's program backtracks catastrophically.
        """
        cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
        cdef Py_ssize_t n = len(data)
        cdef Pieces out = Pieces(NULL, NULL, 0, 0, 0, 0)
        cdef Pieces spare = Pieces(NULL, NULL, 0, 0, 0, 0)
        cdef Entries e = Entries(NULL, 0, 0)
        cdef Stack stack = Stack(NULL, 0, 0)
        try:
            with nogil:
                self.run(&view[0], n, &out, &spare, &e, &stack)
            offsets = np.empty(out.n_pieces + 1, dtype=np.int64)
            memcpy(<void*><Py_ssize_t>offsets.ctypes.data, out.offsets, (out.n_pieces + 1) * sizeof(int64_t))
            return (<uint8_t*>out.data)[:out.n_bytes] if out.n_bytes else b"", offsets
        finally:
            free(out.data)
            free(out.offsets)
            free(spare.data)
            free(spare.offsets)
            free(e.items)
            free_stack(&stack)

    def split(self, data):
        """The pieces of UTF-8 ``data`` (bytes-like) as a list of ``bytes``."""
        pieces, offsets = self.table(data)
        bounds = offsets.tolist()
        return [pieces[a:b] for a, b in zip(bounds, bounds[1:])]
