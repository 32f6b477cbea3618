# cython: language_level=3
"""Hand-written matchers for the named split patterns (used by bpetrain._splitter)."""
from libc.stdint cimport uint8_t

# Which hand-written matcher (0: none, the compiled program runs).
cdef enum:
    PATTERN_GPT2 = 1
    PATTERN_CL100K = 2
    PATTERN_O200K = 3

# End (exclusive) of the piece that ``pattern`` matches at ``start`` in the UTF-8 bytes
# ``text[0:end]``; ``end`` is the end of the text (for ``$`` and the lookaheads).
# Returns a position > start whenever start < end. Bytes that are not valid UTF-8 count
# as one character each, classed as the regex module classes the lone surrogate that
# ``errors="surrogateescape"`` decodes them to (not a letter, number or space).
cdef Py_ssize_t piece_end(int pattern, const uint8_t* text, Py_ssize_t start, Py_ssize_t end) noexcept nogil
