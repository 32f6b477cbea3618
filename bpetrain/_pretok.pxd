# cython: language_level=3
"""The compiled pre-tokenizer's contract: named split patterns matched on UTF-8 bytes."""
from libc.stdint cimport uint8_t

# Which split pattern a kernel applies (0: a custom pattern, matched by the regex module).
cdef enum:
    PATTERN_CUSTOM = 0
    PATTERN_GPT2 = 1
    PATTERN_CL100K = 2
    PATTERN_O200K = 3

# End (exclusive) of the piece that ``pattern`` matches at ``start`` in the UTF-8 bytes
# ``text[0:end]``; ``end`` is the end of the text (for ``$`` and the lookaheads).
# Returns a position > start whenever start < end. Bytes that are not valid UTF-8 count
# as one character each, classed as the regex module classes the lone surrogate that
# ``errors="surrogateescape"`` decodes them to (not a letter, number or space).
cdef Py_ssize_t piece_end(int pattern, const uint8_t* text, Py_ssize_t start, Py_ssize_t end) noexcept nogil

# The last position p in (lo, hi) where text is cut into pieces the same way whatever
# comes before p and after the character at p, or -1: a newline followed by a letter, or
# a letter followed by a character that is not a letter, mark or ' (see _pretok.pyx for
# why these are safe). The pieces left of p must be split with the character at p in
# view (end > p).
cdef Py_ssize_t last_safe_cut(const uint8_t* text, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil
