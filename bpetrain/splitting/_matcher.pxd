# cython: language_level=3
"""The compiled splitter's contract: a split pattern's program and the matcher that runs it.

A :class:`Program` is made by :func:`bpetrain.splitting._compiler.compile_program`; the
counting and encoding kernels call :c:func:`piece_end` on UTF-8 bytes without the GIL.
Bytes that are not valid UTF-8 are one character each, the lone surrogate
U+DC80..U+DCFF that ``errors="surrogateescape"`` decodes them to.
"""
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t, uint8_t

from bpetrain.splitting._blocks cimport (BLOCKS_GAP, BLOCKS_LONE_SPACE_GAPS, BLOCKS_OWN_CODES, BLOCKS_PIECE,
                                        ascii_classes_standard,
                                        block_scan, blocks_gap, blocks_init, blocks_next, blocks_of, blocks_reset,
                                        char_codes)
from bpetrain.splitting._blocks cimport piece_end as native_piece_end


cdef extern from "_dfa_probe.h":
    ctypedef struct probe_tables "bpetrain_probe":
        uint8_t start[128]
        uint8_t next[128][16]
        uint8_t depth[128][2]
        uint8_t sets[128][2][16]
        uint8_t vdist

cdef extern from "_dfa_shuffle.h":
    ctypedef struct shuffle_tables "bpetrain_shuffle":
        const uint8_t* rows
        const uint16_t* offsets
        const uint8_t* pairs
        const uint32_t* pair_offsets
        int restart
        int gap
        int failed_gap
        int back
        int back_failed
        int code
        int quarters
        int coded
        const uint64_t* cover


# The program's instruction set, declared here only: the compiler
# (bpetrain.splitting._compiler) emits these numbers and the matcher runs them. ``cpdef``
# makes them ints of the module bpetrain.splitting._matcher for the compiler to import;
# in the kernels they are C constants.
cpdef enum:
    OP_SET = 1         # one character of the sets in mask
    OP_RUN = 2         # a run of one set: a to b (-1: any number) characters, quantifier mode c
    OP_SPLIT = 3       # try pc + 1, then a
    OP_JMP = 4         # go to a
    OP_ATOMIC = 5      # an atomic group starts ...
    OP_ATOMIC_END = 6  # ... and ends: its backtracking points are dropped
    OP_LOOK = 7        # a lookahead (a = 1: negative) up to its OP_LOOK_END
    OP_LOOK_END = 8
    OP_BOS = 9         # the start of the string
    OP_EOS = 10        # the end of the string
    OP_EOL = 11        # the end, or a final newline
    OP_MATCH = 12      # the piece ends here
    OP_OPT = 13        # in linear steps only: a possessive run of 0 or 1 character
    OP_STAR = 14       # ... of any number
    OP_PLUS = 15       # ... of at least one
    OP_MARK = 16       # note the position in register a (an iteration of a loop starts)
    OP_CHECK = 17      # if the position is still register a's: leave the loop, to b

cpdef enum:  # quantifier modes of OP_RUN (its c)
    GREEDY = 0
    LAZY = 1
    POSSESSIVE = 2

cpdef enum:
    MAX_STEPS = 32  # steps of a linear alternative
    MAX_SLOTS = 16  # position registers (OP_MARK, OP_CHECK)


# One instruction: an opcode above and its operands.
cdef struct Instr:
    uint64_t mask    # the character set(s), one bit each
    int32_t op
    int32_t a
    int32_t b
    int32_t c


# A backtracking point: where to resume, and the state to resume with.
cdef struct Backtrack:
    Py_ssize_t pos
    Py_ssize_t pos2
    int32_t kind
    int32_t pc


# A top-level alternative: where its instructions start, and its steps and tail if it has
# that form (see _compiler._steps).
cdef struct Alternative:
    uint64_t tail_mask   # the sets that can consume the tail's first character
    uint64_t prefix      # if not 0: an optional first character of these sets ...
    uint64_t after       # ... then one of these sets must come (see _compiler._prefix_filter)
    int32_t start        # first instruction
    int32_t first_step
    int32_t n_steps      # -1: run by the general matcher from ``start``
    int32_t tail         # first instruction of the tail, -1: none
    int32_t guarded      # 1: a next character in none of tail_mask means the tail matches empty
    int32_t linear       # 1: steps without choices, then MATCH (at first_step .. first_step + n_steps)


# What the matcher learnt of the runs of the text it reads, from piece to piece (_matcher.pyx,
# _run_end, _give_back): facts of the text alone, kept and used only while a reading that
# goes through one text in order (``split_pieces``, ``next_piece_end``) has armed it for that
# text (``arm_memo``), and the piece starts go forward.
cdef struct RunMemo:
    const uint8_t* text  # the text it is armed for (NULL: none)
    Py_ssize_t end
    Py_ssize_t start     # the piece start at which it last learnt
    uint64_t run_mask    # 0: none; every character in [run_lo, run_hi) is in run_mask's sets,
    Py_ssize_t run_lo    # the one at run_hi is not (or run_hi is the end)
    Py_ssize_t run_hi
    uint64_t gap_mask    # 0: none; no character that starts in (gap_lo, gap_hi] is in gap_mask's sets
    Py_ssize_t gap_lo
    Py_ssize_t gap_hi


# The matcher's stack, reused from piece to piece (malloc'ed, grown on demand).
cdef struct Stack:
    Backtrack* items
    Py_ssize_t cap
    Py_ssize_t steps    # backtracking steps taken at the current piece start (see MAX_BACKTRACKS)
    Py_ssize_t start    # the current piece start (-1: none yet)
    RunMemo memo


# Arm the memo of ``stack`` for ``text[:end]`` read in order from ``start``: what it kept of
# this text from an attempt before ``start`` stays; anything else is forgotten.
cdef inline void arm_memo(Stack* stack, const uint8_t* text, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    if stack.memo.text != text or stack.memo.end != end or start <= stack.memo.start:
        stack.memo.text = text
        stack.memo.end = end
        stack.memo.start = start
        stack.memo.run_mask = stack.memo.gap_mask = 0


# An empty stack (free_stack frees what it grows to).
cdef inline Stack new_stack() noexcept nogil:
    cdef Stack stack
    stack.items = NULL
    stack.cap = 0
    stack.steps = 0
    stack.start = -1
    stack.memo.text = NULL
    stack.memo.end = stack.memo.start = -1
    stack.memo.run_mask = stack.memo.gap_mask = 0
    stack.memo.run_lo = stack.memo.run_hi = stack.memo.gap_lo = stack.memo.gap_hi = 0
    return stack


cdef enum:  # the marks of where a DFA's match can start (_matcher.pyx, _rev_fill)
    REV_WINDOW = 8192   # the bytes a window marks, from the first asked for (a reading's: to its stop)
    REV_BACK = 1024     # the bytes before it a text's window marks too (the other interleaved reading's)
    REV_LOOK = 64       # the bytes read beyond a window at first, so that its last marks are exact
    REV_LOOK_MAX = 2048  # at most, where a loose mark doubled it
    REV_ROOM = 11268    # REV_WINDOW + REV_BACK + REV_LOOK_MAX + 4 (a character that starts before)
    REV_WORDS = 177     # (REV_ROOM + 63) // 64


# Where a DFA's match may start in one text (a superset of where one does), by windows of it
# read backwards (_matcher.pyx, _rev_fill); what its failed attempts have cost. A loop over one
# text gives ``dfa_pieces`` the same one for every call (``whole``: its windows go past a call's
# stop); a new text needs a new one (rev_free).
cdef struct RevMarks:
    Py_ssize_t lo       # the marks are known for [lo, hi): bit i - lo of bits
    Py_ssize_t hi
    Py_ssize_t look     # the bytes a window reads beyond hi (doubled where a mark was loose)
    Py_ssize_t cost     # what the failed attempts since ``begin`` cost (Program(reverse=None), until
    Py_ssize_t begin    # the text's reading is timed)
    bint armed          # a failed attempt goes to the next mark
    bint whole
    # Program(reverse=None) over a whole text (_rev_steer): whether the marks are used is
    # chosen by the time each way took, stretch by stretch of the text. ``x0``, ``t0``:
    # where and when (bpetrain_clock_ns) the stretch being timed began (t0 < 0: the text is
    # not timed yet); ``rate``: nanoseconds per byte without the marks [0] and with them
    # [1] (0: not timed); ``trial``: the stretch tries the way not kept; ``hold``: the
    # stretches the way kept goes before the other is tried again, ``left`` of them left.
    # Interleaved readings reach a stop a little out of order: a stretch ends where the
    # first of them passes 8 KB beyond ``x0``; the one behind is not timed until it
    # passes the new ``x0``.
    Py_ssize_t x0
    Py_ssize_t xc       # where a trial's time is looked at next
    int64_t t0
    double rate[2]
    Py_ssize_t hold
    Py_ssize_t left
    bint trial
    uint64_t bits[REV_WORDS]
    uint16_t cls[REV_ROOM]  # the window's classes (0xFFFF inside a character)

# Free a text's marks (``home[0]``, NULL: none) and set it to NULL.
cdef void rev_free(RevMarks** home) noexcept nogil


# A program's tables, read only: threads share them.
cdef struct Tables:
    const Instr* code
    const Instr* steps
    const Alternative* alternatives
    const uint64_t* ascii_mask    # byte < 0x80 -> the sets it is in
    const uint64_t* ascii_cand    # byte < 0x80 -> the alternatives it can start
    const uint16_t* stage1        # code point >> 8 -> block
    const uint16_t* stage2        # block * 256 + (code point & 0xFF) -> signature
    const uint64_t* sig_mask      # signature -> the sets
    const uint64_t* sig_cand      # signature -> the alternatives it can start
    const uint64_t* follow        # set -> the sets one attempt can read right after it
    int native                    # a hand-written matcher of _blocks for this pattern (0: none)
    int unicode                   # the slot of _blocks' character tables it reads (ensure_tables)
    int blocks                    # the rules _ascii_blocks.h reads its ASCII text by (BLOCKS_*; 0: none)
    const uint8_t* codes          # the codes the blocks class other characters by (char_codes, or the
                                  # program's own, with BLOCKS_OWN_CODES in blocks)
    # The leftmost-first DFA (bpetrain.splitting._dfa), NULL: none (the program runs).
    const uint32_t* dfa_trans     # state's row offset + class -> the next state's row offset | flags
    const uint16_t* dfa_class     # byte < 0x80 -> class (other characters: their signature)
    const uint8_t* dfa_eot        # state -> at the end: 0 no match, 1 one ending there, 2 one ending a byte before,
                                  # 3 the held match (dfa_held)
    const uint8_t* dfa_held       # row offset + class -> DFA_KEEP | DFA_COMMIT (_dfa.build_dfa), NULL: no held matches
    uint32_t dfa_start[2]         # the start state's row offset away from / at the string's start
    int dfa_shift                 # row offset >> dfa_shift = state
    const uint32_t* dfa_pairs     # the same on two ASCII bytes at once (_dfa.pair_table), NULL: none
    const uint8_t* dfa_codes      # byte -> its class's index among the ASCII classes (one more: >= 0x80)
    int dfa_code_shift            # a pair's index: codes[a] << dfa_code_shift | codes[b]
    int dfa_pair_shift            # pair row offset >> dfa_pair_shift = state
    bint dfa_interleave           # read whole texts by two interleaved readings (dfa_pieces_interleaved)
    const uint8_t* dfa_cover      # row offset / 8 + class / 8 -> the bits (class % 8) where a failed attempt in
                                  # that state fails the attempt from that character too (_dfa._cover_table), NULL: none
    const uint8_t* dfa_dominate   # state * dfa_dominate_row + other state / 8 -> bit (other % 8): the first is
    Py_ssize_t dfa_dominate_row   # dominated by the other (_dfa._dominance_table), NULL: none
    # The DFA on ASCII bytes by vector shuffles (_dfa.shuffle_table, _dfa_shuffle.h); shuffle.rows
    # NULL: none.
    shuffle_tables shuffle
    const uint8_t* dfa_lane       # [where its piece started, state] -> its lane in the shuffle table (0: none)
    Py_ssize_t dfa_n_states
    const uint32_t* dfa_lane_state   # lane -> the state's row offset
    const probe_tables* dfa_probe  # the attempts a byte further on rules out (_dfa_probe.h), NULL: none
    # Where a match can start, read from the end of a window back (_dfa._reverse_table), NULL: none.
    const uint32_t* dfa_rev       # reverse row offset + class -> the next one | a match starts before the class
    uint32_t dfa_rev_start[2]     # the row offset of the reverse state at a window's end before / at the end of the text
    int dfa_rev_mode              # REV_AUTO or REV_ALWAYS (_matcher.pyx), 0 where dfa_rev is NULL
    const uint32_t* dfa_rev_pairs  # the same on two ASCII bytes at once (_dfa.reverse_pair_table), NULL: none:
    const uint8_t* dfa_rev_codes  # row offset (state << 2 * shift) + (code[a] << shift) + code[b] -> the next
    int dfa_rev_code_shift        # one | 2 where a match starts before a, | 1 before b (b the byte before a)


cdef class Program:
    cdef Tables tables
    cdef Instr* code              # the instructions, steps and alternatives (PyMem_Malloc'ed)
    cdef Instr* steps
    cdef Alternative* alternatives
    cdef void* shuffle_memory     # the shuffle table's rows and pairs, copied to 64-byte lines (PyMem_Malloc'ed)
    cdef probe_tables* probe_memory  # the DFA's probes (_read_probes; PyMem_Malloc'ed), NULL: none
    cdef object _arrays           # the buffers (numpy arrays or memoryviews) that own the other tables
    cdef readonly str pat_str
    cdef readonly str dfa_reason   # why the DFA does not split ("": it does)
    cdef readonly str shuffle_reason  # why the DFA does not read ASCII by vector shuffles ("": it does)
    cdef readonly str shuffle_variant  # the code that reads it so (SHUFFLE_VARIANTS; "": none)
    cdef readonly tuple blocks_without  # the code points the blocks leave to it, as (first, last) ranges
    cdef int _read_shuffle(self, arrays, Py_ssize_t n_states, Py_ssize_t width, dict owned, int code) except -1
    cdef int _read_probes(self, Py_ssize_t n_states, Py_ssize_t width) except -1


# End (exclusive) of the match of the program at ``start`` in the text ``text[0:end]``,
# or -1 if it does not match there. ``bos`` is where the string starts (for ``^`` and
# ``\A``; -1: before ``text``). Raises MemoryError (returns -2) if the stack cannot grow,
# and BacktrackLimitExceeded if matching at ``start`` backtracks more than MAX_BACKTRACKS
# times (a catastrophically backtracking pattern: the regex module's guards may do better).
cdef Py_ssize_t program_piece_end(const Tables* t, Stack* stack, const uint8_t* text, Py_ssize_t start,
                                  Py_ssize_t end, Py_ssize_t bos) except -2 nogil

# The pieces of ``text[start:end]`` that start before ``stop`` by the DFA (``t.dfa_trans``
# not NULL), as ``split_pieces`` gives them; ``next[0]`` may be past ``stop`` (no piece
# starts in between). ``home``: where a loop over this text keeps its marks (RevMarks; the
# first call that needs them makes them), NULL: each call makes its own.
cdef Py_ssize_t dfa_pieces(const Tables* t, const uint8_t* text, Py_ssize_t start, Py_ssize_t stop,
                           Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds, Py_ssize_t max_pieces,
                           Py_ssize_t* next, RevMarks** home) noexcept nogil

# ``dfa_pieces`` of text[start:end] in two interleaved readings that meet (see _matcher.pyx):
# at most 2 * span pieces, with room for 3 * span in ``bounds`` (6 * span entries).
cdef Py_ssize_t dfa_pieces_interleaved(const Tables* t, const uint8_t* text, Py_ssize_t start, Py_ssize_t stop,
                                       Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds, Py_ssize_t span,
                                       Py_ssize_t* next, RevMarks** home) noexcept nogil

cdef enum:
    DFA_SPAN = 512  # bytes a reading of dfa_pieces_interleaved covers

# Whether the DFA alone splits the text (no hand-written code): ``split_pieces`` is ``dfa_pieces``.
cdef inline bint dfa_splits(const Tables* t) noexcept nogil:
    return t.dfa_trans != NULL and not t.native and not t.blocks

# ``piece_end`` by the DFA.
cdef Py_ssize_t dfa_piece_end(const Tables* t, const uint8_t* text, Py_ssize_t start, Py_ssize_t end,
                              Py_ssize_t bos) noexcept nogil

cdef inline Py_ssize_t piece_end(const Tables* t, Stack* stack, const uint8_t* text, Py_ssize_t start,
                                 Py_ssize_t end, Py_ssize_t bos) except -2 nogil:
    # Inlined into every kernel that cimports it, so a named pattern's hand-written matcher
    # (_blocks) is one call a piece; ``program_piece_end`` runs the program of any other
    # (``t.native`` 0) and answers an empty range.
    if t.native and start < end:
        return native_piece_end(t.native, t.unicode, text, start, end)
    if t.dfa_trans != NULL and start < end:
        return dfa_piece_end(t, text, start, end, bos)
    return program_piece_end(t, stack, text, start, end, bos)

# Reads the pieces of one text in order (``next_piece_end``): ASCII text 64 bytes at a time
# by the rules ``t.blocks`` names (_ascii_blocks.h), the rest piece by piece with
# ``piece_end``; or, with a DFA and no hand-written code, READ_AHEAD pieces at a time by
# ``dfa_pieces``.
cdef enum:
    READ_AHEAD = 32  # pieces the DFA reads ahead

cdef struct PieceReader:
    block_scan scan
    bint fresh        # no piece read yet: the first arms the stack's memo (arm_memo)
    Py_ssize_t first  # no byte before it is read: where the string starts (bos), or text[0]
    bint blocks
    # The DFA's pieces read ahead: bounds[2 * i], bounds[2 * i + 1] for i in [i_next, n_read),
    # read in text[read_from:read_to] of the text that ends at read_end (read_to -1: none).
    Py_ssize_t bounds[2 * READ_AHEAD]
    Py_ssize_t n_read
    Py_ssize_t i_next
    Py_ssize_t read_from
    Py_ssize_t read_to
    Py_ssize_t read_end


# Read the pieces of a string that starts at ``bos`` (-1: before ``text``, whose reading
# then begins at a safe cut).
cdef inline void start_reading(PieceReader* reader, const Tables* t, Py_ssize_t bos) noexcept nogil:
    reader.blocks = t.blocks != 0 and ascii_classes_standard()
    reader.fresh = True
    reader.first = bos if bos > 0 else 0
    reader.n_read = 0
    reader.read_to = -1
    blocks_init(&reader.scan, t.blocks, t.codes if reader.blocks else NULL)


# Split ``text[0:end]`` from ``start``: the (start, end) of each piece that starts before
# ``stop``, at most ``max_pieces`` of them, into ``bounds`` (2 * max_pieces entries); text
# the pattern does not match is skipped. Returns how many; ``next[0]`` is where to go on.
# ``reader``: the caller's, started (``start_reading``) once for the text with this ``bos``;
# the next call on the text must start at ``next[0]``, and takes the pieces of the 64-byte
# block the last one stopped in from where it stopped rather than reading that block again.
cdef Py_ssize_t split_pieces(const Tables* t, PieceReader* reader, Stack* stack, const uint8_t* text,
                             Py_ssize_t start, Py_ssize_t stop, Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds,
                             Py_ssize_t max_pieces, Py_ssize_t* next) except -1 nogil


# ``piece_end`` of the piece at ``start``, the end of the last piece ``reader`` gave (or
# where reading began: the string's start or a safe cut).
cdef inline Py_ssize_t next_piece_end(PieceReader* reader, const Tables* t, Stack* stack, const uint8_t* text,
                                      Py_ssize_t start, Py_ssize_t end, Py_ssize_t bos) except -2 nogil:
    cdef Py_ssize_t found, i
    cdef int gap
    if reader.blocks:
        found = blocks_next(&reader.scan, text, reader.first, start, end)
        if found >= 0:
            if not t.blocks & BLOCKS_LONE_SPACE_GAPS:
                return found
            gap = blocks_gap(text, start, found, end)
            if gap == BLOCKS_PIECE:
                return found
            if gap == BLOCKS_GAP:
                return -1  # (the blocks read on from found: the caller's next start)
        blocks_reset(&reader.scan)
    elif t.dfa_trans != NULL and not t.native:
        # Pieces read ahead answer while the text's end is the same and ``start`` is in the
        # stretch they cover: a piece starts there, or it is in a gap (no match).
        if end == reader.read_end and reader.read_from <= start < reader.read_to:
            i = reader.i_next
            while i < reader.n_read and reader.bounds[2 * i] < start:
                i += 1
            reader.i_next = i
            if i < reader.n_read and reader.bounds[2 * i] == start:
                reader.i_next = i + 1
                return reader.bounds[2 * i + 1]
            if i == 0 or start >= reader.bounds[2 * i - 1]:
                return -1
        reader.n_read = dfa_pieces(t, text, start, end, end, bos, reader.bounds, READ_AHEAD, &reader.read_to, NULL)
        reader.read_from = start
        reader.read_end = end
        reader.i_next = 0
        if reader.n_read and reader.bounds[0] == start:
            reader.i_next = 1
            return reader.bounds[1]
        return -1
    if reader.fresh:
        reader.fresh = False
        stack.memo.text = NULL  # (another text, maybe in the same buffer)
        arm_memo(stack, text, start, end)
    return piece_end(t, stack, text, start, end, bos)

# Bytes of the character at ``i < end`` (1 for a byte that is not valid UTF-8).
cdef Py_ssize_t char_length(const uint8_t* text, Py_ssize_t i, Py_ssize_t end) noexcept nogil

# The last position p in (lo, hi) where the pattern cuts text the same way whatever comes
# before p and after the character at p, or -1 (see _matcher.pyx). The pieces before p
# must be matched with the character at p in view (end > p).
cdef Py_ssize_t last_safe_cut(const Tables* t, const uint8_t* text, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil

cdef void free_stack(Stack* stack) noexcept nogil
