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
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

import numpy as np

from bpetrain.splitting._matcher cimport (Program, PieceReader, Stack, Tables, char_length, free_stack,
                                          new_stack, next_piece_end, start_reading)

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
    const uint8_t* data  # the pieces' bytes, one after another: the text, or a buffer of Bytes
    int64_t* offsets     # piece i is data[offsets[i]:offsets[i + 1]]; offsets[0] == 0
    Py_ssize_t n_pieces
    Py_ssize_t cap       # entries of offsets


cdef struct Bytes:       # a buffer the pieces are copied into, when a step removes or adds text
    uint8_t* data
    Py_ssize_t size
    Py_ssize_t cap


cdef struct Grouping:    # one split step over one piece: where its parts go, and the part being grouped
    Pieces* out
    Bytes* buf           # Removed copies the parts it keeps here (out.data is then buf.data)
    const uint8_t* text
    int behavior
    int64_t end          # the end of the part being grouped (its start is where the last one ended)
    bint pending         # a part is being grouped ...
    bint is_match        # ... the last entry in it is a match
    bint joined          # ... MergedWithNext: it already holds the entry after its match


cdef int _push(Pieces* p, int64_t end) except -1 nogil:
    """End a piece at ``end`` (with ``n_pieces`` -1: set ``offsets[0]``)."""
    cdef Py_ssize_t cap
    cdef void* grown
    if p.n_pieces + 2 > p.cap:
        cap = max(2 * p.cap, 64)
        grown = realloc(p.offsets, cap * sizeof(int64_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        p.offsets = <int64_t*>grown
        p.cap = cap
    p.n_pieces += 1
    p.offsets[p.n_pieces] = end
    return 0


cdef int _copy(Pieces* p, Bytes* buf, const uint8_t* src, Py_ssize_t length, bint space) except -1 nogil:
    """Add a piece to ``p`` as a copy in ``buf``: a space if ``space``, then ``src[:length]``."""
    cdef Py_ssize_t cap
    cdef void* grown
    if buf.size + length + 1 > buf.cap:
        cap = max(2 * buf.cap, buf.size + length + 1, 256)
        grown = realloc(buf.data, cap)
        if grown == NULL:
            with gil:
                raise MemoryError()
        buf.data = <uint8_t*>grown
        buf.cap = cap
    if space:
        buf.data[buf.size] = 32
        buf.size += 1
    memcpy(buf.data + buf.size, src, length)
    buf.size += length
    return _push(p, buf.size)


cdef inline int _entry(Grouping* g, int64_t start, int64_t end, bint is_match) except -1 nogil:
    """Take the next match or gap ``text[start:end]`` of a piece, grouped as the behavior
    says (``NormalizedString::split``): Isolated keeps each entry; Removed drops the
    matches; Contiguous joins an entry to the one before if both are matches or both not;
    MergedWithPrevious joins a match to the entry before unless that is a match;
    MergedWithNext joins an entry that is not a match to a match right before it (once)."""
    cdef bint join = False
    if g.behavior == REMOVED:
        if not is_match:
            _copy(g.out, g.buf, g.text + start, end - start, False)
        return 0
    if g.pending:
        if g.behavior == CONTIGUOUS:
            join = is_match == g.is_match
        elif g.behavior == MERGED_WITH_PREVIOUS:
            join = is_match and not g.is_match
        elif g.behavior == MERGED_WITH_NEXT:
            join = not is_match and g.is_match and not g.joined
        if not join:
            _push(g.out, g.end)
    g.joined = join
    g.pending = True
    g.is_match = is_match
    g.end = end
    return 0


cdef int _split(const Tables* t, Stack* stack, Grouping* g, Py_ssize_t a, Py_ssize_t b, bint invert) except -1 nogil:
    """Split the string ``g.text[a:b]``: the matches of the program and the gaps between
    them, in order (``find_matches``; with ``invert`` matches are gaps and gaps matches),
    grouped into ``g.out``."""
    cdef PieceReader reader
    cdef Py_ssize_t pos = a, gap = a, end
    cdef const uint64_t* ascii_cand = t.ascii_cand
    g.pending = False
    start_reading(&reader, t, a)
    while pos < b:
        if g.text[pos] < 0x80 and ascii_cand[g.text[pos]] == 0:  # no alternative starts with it: a gap
            pos += 1
            continue
        end = next_piece_end(&reader, t, stack, g.text, pos, b, a)
        if end < 0:
            pos += char_length(g.text, pos, b)
            continue
        if pos > gap:
            _entry(g, gap, pos, invert)
        _entry(g, pos, end, not invert)
        pos = gap = end
    if gap < b:
        _entry(g, gap, b, invert)
    if g.pending:
        _push(g.out, g.end)
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

    cdef int run(self, const uint8_t* text, Py_ssize_t n, Pieces* out, Pieces* spare, Bytes* buffers,
                 Stack* stack) except -1 nogil:
        """The pieces of ``text[:n]`` into ``out`` (``spare``: offsets to swap with; the
        pieces' bytes are ``text`` until a step removes or adds some, then one of the two
        ``buffers``)."""
        cdef Pieces* src = out
        cdef Pieces* dst = spare
        cdef Pieces held
        cdef Bytes* buf
        cdef Grouping g
        cdef Py_ssize_t i
        cdef int k
        cdef bint copies
        src.data = text
        src.n_pieces = -1
        _push(src, 0)  # offsets[0]
        if n:
            _push(src, n)
        for k in range(self.n_steps):
            dst.n_pieces = -1
            _push(dst, 0)
            buf = &buffers[1] if src.data == buffers[0].data else &buffers[0]
            buf.size = 0
            copies = self.kinds[k] == STEP_PREFIX or self.behaviors[k] == REMOVED
            g.out = dst
            g.buf = buf
            g.text = src.data
            g.behavior = self.behaviors[k]
            g.pending = g.is_match = g.joined = False
            g.end = 0
            for i in range(src.n_pieces):
                if self.kinds[k] == STEP_PREFIX:
                    _copy(dst, buf, src.data + src.offsets[i], src.offsets[i + 1] - src.offsets[i],
                          src.data[src.offsets[i]] != 32)
                else:
                    _split(self.tables[k], stack, &g, src.offsets[i], src.offsets[i + 1], self.inverts[k])
            if copies:
                dst.data = buf.data
            else:
                dst.data = src.data
            held = src[0]
            src[0] = dst[0]
            dst[0] = held
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
        cdef Pieces out = Pieces(NULL, NULL, 0, 0)
        cdef Pieces spare = Pieces(NULL, NULL, 0, 0)
        cdef Bytes buffers[2]
        cdef Stack stack = new_stack()
        cdef int64_t[::1] ends
        buffers[0] = Bytes(NULL, 0, 0)
        buffers[1] = Bytes(NULL, 0, 0)
        try:
            with nogil:
                self.run(&view[0], n, &out, &spare, buffers, &stack)
            offsets = np.empty(out.n_pieces + 1, dtype=np.int64)
            ends = offsets
            memcpy(&ends[0], out.offsets, (out.n_pieces + 1) * sizeof(int64_t))
            if out.data == &view[0]:
                return data if type(data) is bytes else bytes(data), offsets
            return (<const char*>out.data)[:out.offsets[out.n_pieces]], offsets
        finally:
            free(out.offsets)
            free(spare.offsets)
            free(buffers[0].data)
            free(buffers[1].data)
            free_stack(&stack)
