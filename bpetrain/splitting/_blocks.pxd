# cython: language_level=3
"""Hand-written matchers for the named split patterns (used by bpetrain.splitting._matcher)."""
from libc.stdint cimport uint8_t

# Which hand-written matcher (0: none, the compiled program runs).
cdef enum:
    PATTERN_GPT2 = 1
    PATTERN_CL100K = 2
    PATTERN_O200K = 3

# End (exclusive) of the piece that ``pattern`` matches at ``start`` in the UTF-8 bytes
# ``text[0:end]``, with the character classes of the table slot ``u`` (``ensure_tables``);
# ``end`` is the end of the text (for ``$`` and the lookaheads).
# Returns a position > start whenever start < end. Bytes that are not valid UTF-8 count
# as one character each, classed as the regex module classes the lone surrogate that
# ``errors="surrogateescape"`` decodes them to (not a letter, number or space).
cdef Py_ssize_t piece_end(int pattern, int u, const uint8_t* text, Py_ssize_t start, Py_ssize_t end) noexcept nogil

# Pieces in ASCII text 64 bytes at a time (_ascii_blocks.h), by the rules BLOCKS_*: where
# ``blocks_next`` gives -1 the pattern's matcher finds that piece (the one above, or the
# compiled program for the rules of a pattern without one: cl100k's, either kind, or
# o200k's, with the variants BLOCKS_DIGITS (a field), BLOCKS_BARE_O,
# BLOCKS_NO_CONTRACTIONS, BLOCKS_LOWER_CONTRACTIONS, BLOCKS_SPACE_PREFIX and (o200k's)
# BLOCKS_WHOLE_RUNS and BLOCKS_NO_SLASH ORed in, or gpt2's with BLOCKS_LONE_SPACE_GAPS, whose pieces
# ``blocks_gap`` tells from gaps), then
# ``blocks_reset`` (``blocks_init`` with the pattern's BLOCKS_* before the first piece);
# ``blocks_drain``: the rest of the block's pieces at once;
# ``blocks_gave``: whether the last piece was a block's (for the tests).
cdef extern from "_ascii_blocks.h":
    ctypedef struct block_scan "bpetrain_block_scan":
        pass
    enum:
        BLOCKS_CL100K "BPETRAIN_BLOCKS_CL100K"
        BLOCKS_O200K "BPETRAIN_BLOCKS_O200K"
        BLOCKS_GPT2 "BPETRAIN_BLOCKS_GPT2"
        BLOCKS_CL100K_OPEN "BPETRAIN_BLOCKS_CL100K_OPEN"
        BLOCKS_DIGITS_SHIFT "BPETRAIN_BLOCKS_DIGITS_SHIFT"
        BLOCKS_DIGITS_ANY "BPETRAIN_BLOCKS_DIGITS_ANY"
        BLOCKS_BARE_O "BPETRAIN_BLOCKS_BARE_O"
        BLOCKS_NO_CONTRACTIONS "BPETRAIN_BLOCKS_NO_CONTRACTIONS"
        BLOCKS_LOWER_CONTRACTIONS "BPETRAIN_BLOCKS_LOWER_CONTRACTIONS"
        BLOCKS_SPACE_PREFIX "BPETRAIN_BLOCKS_SPACE_PREFIX"
        BLOCKS_WHOLE_RUNS "BPETRAIN_BLOCKS_WHOLE_RUNS"
        BLOCKS_MARKS "BPETRAIN_BLOCKS_MARKS"
        BLOCKS_MARKS_IN_RUNS "BPETRAIN_BLOCKS_MARKS_IN_RUNS"
        BLOCKS_LONE_SPACE_GAPS "BPETRAIN_BLOCKS_LONE_SPACE_GAPS"
        BLOCKS_NO_SLASH "BPETRAIN_BLOCKS_NO_SLASH"
        BLOCKS_OWN_CODES "BPETRAIN_BLOCKS_OWN_CODES"
        BLOCKS_PIECE "BPETRAIN_BLOCKS_PIECE"
        BLOCKS_GAP "BPETRAIN_BLOCKS_GAP"
    void blocks_init "bpetrain_blocks_init"(block_scan* it, int pattern, const uint8_t* two_byte) noexcept nogil
    void blocks_reset "bpetrain_blocks_reset"(block_scan* it) noexcept nogil
    Py_ssize_t blocks_next "bpetrain_blocks_next"(block_scan* it, const uint8_t* text, Py_ssize_t first,
                                                  Py_ssize_t cur, Py_ssize_t end) noexcept nogil
    Py_ssize_t blocks_drain "bpetrain_blocks_drain"(block_scan* it, const uint8_t* text, Py_ssize_t end,
                                                    Py_ssize_t* cur, Py_ssize_t stop, Py_ssize_t* bounds,
                                                    Py_ssize_t room) noexcept nogil
    bint blocks_gave "bpetrain_blocks_gave"(const block_scan* it) noexcept nogil
    int blocks_gap "bpetrain_blocks_gap"(const uint8_t* text, Py_ssize_t cur, Py_ssize_t end, Py_ssize_t n) noexcept nogil

# The block reader's name (BLOCKS_*) of a hand-written matcher's pattern (PATTERN_*).
cdef inline int blocks_of(int pattern) noexcept nogil:
    return BLOCKS_CL100K if pattern == PATTERN_CL100K else BLOCKS_O200K if pattern == PATTERN_O200K else BLOCKS_GPT2

# The classes of U+0080..U+FFFF for the blocks (_ascii_blocks.h: BPETRAIN_TWO_*, then
# BPETRAIN_CODES_GROUPS and BPETRAIN_CODES_LEADS; 0x10480 bytes) under the table slot ``u`` (``ensure_tables``), given
# to ``blocks_init``: blocks of ASCII and characters of two (and with AVX-512 VBMI three)
# bytes are read too: those of the ``rules`` (a Program's ``blocks``), where a combining mark's
# code is a letter's (BLOCKS_MARKS) or 0 (BLOCKS_MARKS_IN_RUNS: left to the matcher).
cdef const uint8_t* char_codes(int u, int rules) noexcept nogil

# Whether the regex module's ASCII letters, digits and whitespace are the ones
# _ascii_blocks.h assumes (A-Z a-z, 0-9, \t \n \v \f \r and space); False before the
# tables are built.
cdef bint ascii_classes_standard() noexcept nogil
