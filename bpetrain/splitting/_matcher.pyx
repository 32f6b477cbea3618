# cython: language_level=3
"""The compiled splitter: a backtracking matcher for split patterns, on UTF-8 bytes.

It runs the programs of :mod:`bpetrain.splitting._compiler` the way the ``regex`` module
runs the pattern: depth first, the first alternative that matches wins, quantifiers
greedy, lazy or possessive, so the pieces are those of ``regex.finditer``. What makes it
fast on split patterns:

- each character is decoded once per test and looked up in one table that gives all its
  sets at once (a bit each); ASCII bytes skip the decoding;
- a run of one set (``\\p{L}+``, ``[^\\s\\p{L}\\p{N}]*``, ``\\p{N}{1,3}``) is one
  instruction and one tight loop; a greedy run pushes one backtracking point for all
  its characters, which gives them back one at a time (to where the next instruction's
  set matches), and none when nothing can follow it;
- the first character picks the top-level alternatives that can start with it.

Bytes that are not valid UTF-8 (Python's strict decoder decides) are one character each,
the lone surrogate U+DC80 + (byte - 0x80) that ``errors="surrogateescape"`` decodes them
to, and are classed as the ``regex`` module classes that surrogate.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove, memset

from bpetrain.splitting import _blocks
from bpetrain.splitting._blocks cimport blocks_drain, blocks_gave

cdef extern from "_portable.h":
    int ctz64 "bpetrain_ctz64"(uint64_t x) noexcept nogil
    int64_t clock_ns "bpetrain_clock_ns"() noexcept nogil

cdef extern from "_dfa_probe.h":
    Py_ssize_t probe_skip "bpetrain_probe_skip"(const probe_tables* p, const uint8_t* s, Py_ssize_t pos,
                                                Py_ssize_t stop, Py_ssize_t end) noexcept nogil
    void probe_prepare_blocks "bpetrain_probe_prepare_blocks"(probe_tables* p) noexcept nogil

cdef extern from "_dfa_shuffle.h":
    int SHUFFLE_REREAD "BPETRAIN_SHUFFLE_REREAD"
    int shuffle_supported "bpetrain_shuffle_supported"(int code) noexcept nogil
    void shuffle_prepare "bpetrain_shuffle_prepare"(shuffle_tables* t, uint8_t* rows, Py_ssize_t n,
                                                    int n_lanes) noexcept nogil
    int shuffle_merge "bpetrain_shuffle_merge"(shuffle_tables* t, uint8_t* rows, Py_ssize_t n_rows,
                                               Py_ssize_t n_pair_rows, int n_lanes, uint8_t* keep) noexcept nogil
    void shuffle_merge_cover "bpetrain_shuffle_merge_cover"(const shuffle_tables* t, uint64_t* cover,
                                                            int n_lanes) noexcept nogil
    Py_ssize_t shuffle_run "bpetrain_shuffle_run"(const uint8_t* s, Py_ssize_t pos, Py_ssize_t limit,
                                                  const shuffle_tables* t, int* lane, Py_ssize_t* piece,
                                                  Py_ssize_t* bounds, Py_ssize_t* count, Py_ssize_t max_pieces,
                                                  Py_ssize_t* last, Py_ssize_t reread) noexcept nogil

cdef enum:  # kinds of backtracking points
    BT_BRANCH = 0   # resume at pc, pos
    BT_GREEDY = 1   # give back one character of the run of instruction pc: pos its end, pos2 its least end
    BT_LAZY = 2     # take one more character into the run of instruction pc: pos its end, pos2 its length
    BT_ATOMIC = 3   # an atomic group's start; pos2: the enclosing one's (-1: none)
    BT_RESTORE = 4  # register pc held pos before an OP_MARK

#: Backtracking steps allowed at one piece start before BacktrackLimitExceeded (about 0.01-0.1 s).
MAX_BACKTRACKS = 2_000_000
cdef Py_ssize_t _max_backtracks = MAX_BACKTRACKS



cdef extern from "_ascii_blocks.h":
    int blocks_isa "bpetrain_blocks_isa"


def use_block_isa(str name):
    """Make this module's splitters (``Program.split``, ``Program.n_pieces``) class the bytes
    of ``_ascii_blocks.h``'s blocks with the code ``name``, one of
    :func:`bpetrain.splitting._blocks.block_isas` (each module that includes that header has
    its own choice; :func:`bpetrain.splitting._blocks.use_block_isa` sets that module's), for
    tests and benchmarks: SSE2 is what a CPU without AVX2 runs.

    Raises
    ------
    ValueError
        If this CPU cannot run it.
    """
    global blocks_isa
    _blocks.use_block_isa(name)  # checks the name (and sets _blocks' own)
    blocks_isa = _blocks.BLOCK_ISAS[name]


#: The codes that read a DFA's ASCII text by vector shuffles (``_dfa_shuffle.h``), by name,
#: widest first: ``Program(shuffle=True)`` takes the first this CPU runs.
SHUFFLE_VARIANTS = {"vpermb": 1, "pshufb": 2}


def shuffle_variants() -> list[str]:
    """The names of the codes of :data:`SHUFFLE_VARIANTS` this CPU (and build) runs, widest first."""
    return [name for name, code in SHUFFLE_VARIANTS.items() if shuffle_supported(code)]


class BacktrackLimitExceeded(ValueError):
    """The matcher backtracked more than :data:`MAX_BACKTRACKS` times at one place in a text."""


cdef int _rows(rows, Py_ssize_t width, const int64_t** data, Py_ssize_t* n) except -1:
    """Point ``data`` at the int64 rows of ``width`` columns of the buffer ``rows`` (a
    memoryview or numpy array; an empty one may have any shape), their number in ``n``."""
    cdef const int64_t[:, ::1] view
    n[0] = len(rows)
    data[0] = NULL
    if n[0]:
        try:
            view = rows
        except (ValueError, TypeError):
            raise ValueError("not a program from bpetrain.splitting._compiler.compile_program") from None
        if view.shape[1] != width:
            raise ValueError("not a program from bpetrain.splitting._compiler.compile_program")
        data[0] = &view[0, 0]
    return 0


cdef Instr* _instructions(rows) except NULL:
    """Rows (op, a, b, c, 0, 0, mask bits) as ``Instr`` (at least one), in memory the
    caller frees with ``PyMem_Free``."""
    cdef const int64_t* r
    cdef Py_ssize_t n, i
    _rows(rows, 7, &r, &n)
    cdef Instr* out = <Instr*>PyMem_Malloc(max(n, 1) * sizeof(Instr))
    if out == NULL:
        raise MemoryError()
    memset(out, 0, max(n, 1) * sizeof(Instr))
    for i in range(n):
        out[i].mask = <uint64_t>r[7 * i + 6]
        out[i].op = <int32_t>r[7 * i]
        out[i].a = <int32_t>r[7 * i + 1]
        out[i].b = <int32_t>r[7 * i + 2]
        out[i].c = <int32_t>r[7 * i + 3]
    return out


# ------------------------------------------------------------------ characters

cdef inline Py_ssize_t _decode(const uint8_t* s, Py_ssize_t i, Py_ssize_t end, uint32_t* cp) noexcept nogil:
    """The character at ``i`` (``s[i] >= 0x80``): its code point in ``cp``, its length in
    bytes. A byte that does not start valid UTF-8 is U+DC00 + byte, one byte long."""
    cdef uint32_t b0 = s[i], b1, b2, b3, low
    cp[0] = 0xDC00 | b0
    if b0 < 0xC2 or b0 > 0xF4 or i + 1 >= end:
        return 1
    b1 = s[i + 1]
    if (b1 & 0xC0) != 0x80:
        return 1
    if b0 < 0xE0:
        cp[0] = ((b0 & 0x1F) << 6) | (b1 & 0x3F)
        return 2
    if (b0 == 0xE0 and b1 < 0xA0) or (b0 == 0xED and b1 >= 0xA0) \
            or (b0 == 0xF0 and b1 < 0x90) or (b0 == 0xF4 and b1 >= 0x90) or i + 2 >= end:
        return 1
    b2 = s[i + 2]
    if (b2 & 0xC0) != 0x80:
        return 1
    # the low 12 bits at once, the continuation bytes used where they are read: where GCC
    # inlines this into a long loop (dfa_pieces), it kept b2 across the branch below as a byte
    # on the stack read back 32 bits wide (a store that cannot be forwarded to the load: a
    # stall on every CJK character, non-ASCII text a third slower)
    low = ((b1 & 0x3F) << 6) | (b2 & 0x3F)
    if b0 < 0xF0:
        cp[0] = ((b0 & 0x0F) << 12) | low
        return 3
    if i + 3 >= end:
        return 1
    b3 = s[i + 3]
    if (b3 & 0xC0) != 0x80:
        return 1
    cp[0] = ((b0 & 0x07) << 18) | (low << 6) | (b3 & 0x3F)
    return 4


cdef inline uint16_t _signature(const Tables* t, uint32_t cp) noexcept nogil:
    return t.stage2[(<Py_ssize_t>t.stage1[cp >> 8] << 8) | (cp & 0xFF)]


cdef inline uint64_t _sets_at(const Tables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                              Py_ssize_t* n) noexcept nogil:
    """The sets of the character at ``i < end`` (a bit each); its length in ``n``."""
    if s[i] < 0x80:  # kept this small so that it is inlined everywhere
        n[0] = 1
        return t.ascii_mask[s[i]]
    return _sets_beyond_ascii(t, s, i, end, n)


cdef uint64_t _sets_beyond_ascii(const Tables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                 Py_ssize_t* n) noexcept nogil:
    cdef uint32_t cp
    n[0] = _decode(s, i, end, &cp)
    return t.sig_mask[_signature(t, cp)]


cdef Py_ssize_t char_length(const uint8_t* text, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    cdef uint32_t cp
    if text[i] < 0x80:
        return 1
    return _decode(text, i, end, &cp)


cdef inline Py_ssize_t _char_before(const uint8_t* s, Py_ssize_t lo, Py_ssize_t p) noexcept nogil:
    """Start of the character that ends at ``p`` (``lo < p``, ``lo`` starts a character).

    Every byte that is not a continuation byte starts a character; a continuation byte
    ends one only as the last byte of the valid sequence that its lead byte starts,
    else it is a character of its own.
    """
    cdef Py_ssize_t q = p - 1
    cdef uint32_t cp
    if s[q] < 0x80:
        return q
    while q > lo and p - q < 4 and (s[q] & 0xC0) == 0x80:
        q -= 1
    if s[q] >= 0xC2 and _decode(s, q, p, &cp) == p - q:
        return q
    return p - 1


# ------------------------------------------------------------------ the matcher

cdef int _grow(Stack* stack) except -1 nogil:
    cdef Py_ssize_t cap = 2 * stack.cap if stack.cap else 64
    cdef Backtrack* items = <Backtrack*>realloc(stack.items, cap * sizeof(Backtrack))
    if items == NULL:
        with gil:
            raise MemoryError()
    stack.items = items
    stack.cap = cap
    return 0


cdef inline int _push(Stack* stack, Py_ssize_t* sp, int32_t kind, int32_t pc, Py_ssize_t pos,
                      Py_ssize_t pos2) except -1 nogil:
    cdef Backtrack* e
    if sp[0] == stack.cap:
        _grow(stack)
    e = &stack.items[sp[0]]
    e.kind = kind
    e.pc = pc
    e.pos = pos
    e.pos2 = pos2
    sp[0] += 1
    return 0


cdef void free_stack(Stack* stack) noexcept nogil:
    free(stack.items)
    stack.items = NULL
    stack.cap = 0


cdef int _run(const Tables* t, Stack* stack, Py_ssize_t* sp, int32_t pc, const uint8_t* s,
              Py_ssize_t* at, Py_ssize_t end) except -1 nogil:
    """OP_RUN at ``at[0]``: a run of one set, ``a`` to ``b`` (-1: any number) characters.

    Returns 1 and moves ``at`` to the run's end (greedy and possessive: the longest,
    lazy: the shortest), with a backtracking point unless the run cannot change; 0 if
    fewer than ``a`` characters are in the set.
    """
    cdef const Instr* ins = &t.code[pc]
    cdef Py_ssize_t pos = _take(t, s, at[0], end, ins.mask, ins.a), floor
    if pos < 0:
        return 0
    floor = pos
    if ins.c == LAZY:
        if ins.b < 0 or ins.a < ins.b:
            _push(stack, sp, BT_LAZY, pc, pos, ins.a)
        at[0] = pos
        return 1
    if ins.b < 0:
        pos = _run_end(t, &stack.memo, s, pos, end, ins.mask, stack.start)
    else:
        pos = _extend(t, s, pos, end, ins.mask, ins.b - ins.a)
    if ins.c == GREEDY and pos > floor and t.code[pc + 1].op != OP_MATCH and t.code[pc + 1].op != OP_LOOK_END:
        _push(stack, sp, BT_GREEDY, pc, pos, floor)
    at[0] = pos
    return 1


cdef enum:
    MEMO_MIN = 16  # the shortest stretch (bytes) a RunMemo keeps


cdef inline bint _memo_holds(const RunMemo* m, const uint8_t* s, Py_ssize_t end, Py_ssize_t start) noexcept nogil:
    """Whether ``m`` may keep and tell facts of this text at an attempt at ``start``: a reading
    of it in order armed it (``arm_memo``), and no attempt since was before ``start``."""
    return m.text == s and m.end == end and m.start <= start


cdef inline void _memo_keeps(RunMemo* m, const uint8_t* s, Py_ssize_t end, Py_ssize_t start) noexcept nogil:
    """``m`` is about to keep a fact of this text, learnt by an attempt at ``start``
    (``_memo_holds``)."""
    m.start = start


cdef inline Py_ssize_t _run_end(const Tables* t, RunMemo* m, const uint8_t* s, Py_ssize_t pos, Py_ssize_t end,
                                uint64_t bit, Py_ssize_t start) noexcept nogil:
    """The end of the run of characters of ``bit``'s set from ``pos`` (``_skip``), known at once
    where the last long run of that set read covers ``pos``: an attempt from each character
    of a run that the pattern reads to its end and gives back (``\\P{Sm}{3,}\\u2028`` on a
    line without ``\\u2028``) reads it once, not from each of its characters."""
    cdef Py_ssize_t to
    if m.run_mask == bit and m.run_lo <= pos <= m.run_hi and _memo_holds(m, s, end, start):
        return m.run_hi
    to = _skip(t.ascii_mask, t, s, pos, end, bit)
    if to - pos >= MEMO_MIN and _memo_holds(m, s, end, start):
        _memo_keeps(m, s, end, start)
        m.run_mask = bit
        m.run_lo = pos
        m.run_hi = to
    return to


cdef inline Py_ssize_t _give_back(const Tables* t, RunMemo* m, const uint8_t* s, Py_ssize_t floor, Py_ssize_t p,
                                  Py_ssize_t end, uint64_t want, Py_ssize_t start) noexcept nogil:
    """The last place in ``[floor, p]`` (``p`` a character's start) whose character is in
    ``want``'s sets, or ``floor``: where a greedy run gives back to when the next instruction
    must start with such a character. The places it skips are kept (``m.gap_*``), and the
    stretch kept is skipped at once: later attempts that give back the same run do not look
    at its characters again."""
    cdef Py_ssize_t top = p, n
    cdef bint holds = _memo_holds(m, s, end, start), known = holds and m.gap_mask == want
    while p > floor and (_sets_at(t, s, p, end, &n) & want) == 0:
        if known and m.gap_lo < p <= m.gap_hi:
            p = m.gap_lo if m.gap_lo > floor else floor
            continue
        p = _char_before(s, floor, p)
    if top - p >= MEMO_MIN and holds:  # no character that starts in (p, top] is in want
        _memo_keeps(m, s, end, start)
        if m.gap_mask == want and p <= m.gap_hi and m.gap_lo <= top:
            m.gap_lo = min(p, m.gap_lo)
            m.gap_hi = max(top, m.gap_hi)
        else:
            m.gap_mask = want
            m.gap_lo = p
            m.gap_hi = top
    return p


cdef Py_ssize_t _match(const Tables* t, Stack* stack, Py_ssize_t sp, int32_t pc, const uint8_t* s,
                       Py_ssize_t pos, Py_ssize_t end, Py_ssize_t bos) except -2 nogil:
    """Run the program from instruction ``pc`` at ``pos``: the end of the first match, or -1.

    Backtracking points go on ``stack`` above ``sp``; a lookahead runs as a nested call
    above the caller's points and is atomic (its points are dropped when it returns).
    """
    cdef Py_ssize_t base = sp, atomic = -1, n, p, floor
    cdef Py_ssize_t registers[MAX_SLOTS]
    cdef const Instr* ins
    cdef Backtrack* e
    cdef uint64_t want
    cdef int32_t op
    cdef bint ok
    while True:
        ins = &t.code[pc]
        op = ins.op
        ok = True
        if op == OP_SET:
            if pos < end and (_sets_at(t, s, pos, end, &n) & ins.mask) != 0:
                pos += n
                pc += 1
            else:
                ok = False
        elif op == OP_RUN:
            ok = _run(t, stack, &sp, pc, s, &pos, end)
            pc += 1
        elif op == OP_MATCH or op == OP_LOOK_END:
            return pos
        elif op == OP_SPLIT:
            if ins.c and (pos >= end or (_sets_at(t, s, pos, end, &n) & ins.mask) == 0):
                pc = ins.b  # the first way cannot start here
            else:
                _push(stack, &sp, BT_BRANCH, ins.b, pos, 0)
                pc = ins.a
        elif op == OP_JMP:
            pc = ins.a
        elif op == OP_MARK:
            _push(stack, &sp, BT_RESTORE, ins.a, registers[ins.a], 0)
            registers[ins.a] = pos
            pc += 1
        elif op == OP_CHECK:
            pc = ins.b if pos == registers[ins.a] else pc + 1
        elif op == OP_ATOMIC:
            _push(stack, &sp, BT_ATOMIC, 0, 0, atomic)
            atomic = sp - 1
            pc += 1
        elif op == OP_ATOMIC_END:
            sp = atomic  # drop every point inside the group, and its start
            atomic = stack.items[sp].pos2
            pc += 1
        elif op == OP_LOOK:
            ok = (_match(t, stack, sp, pc + 1, s, pos, end, bos) >= 0) != (ins.a != 0)
            pc = ins.b
        elif op == OP_BOS:
            ok = pos == bos
            pc += 1
        elif op == OP_EOS:
            ok = pos == end
            pc += 1
        else:  # OP_EOL: the end, or a final newline
            ok = pos == end or (pos + 1 == end and s[pos] == 10)
            pc += 1
        if ok:
            continue
        while True:  # backtrack to the latest point that gives another way
            if sp == base:
                return -1
            stack.steps += 1
            if stack.steps > _max_backtracks:
                _too_many_backtracks(pos)
            sp -= 1
            e = &stack.items[sp]
            if e.kind == BT_BRANCH:
                pc = e.pc
                pos = e.pos
                break
            if e.kind == BT_GREEDY:
                floor = e.pos2
                p = _char_before(s, floor, e.pos)
                ins = &t.code[e.pc + 1]
                if ins.op == OP_SET or (ins.op == OP_RUN and ins.a > 0):
                    p = _give_back(t, &stack.memo, s, floor, p, end, ins.mask, stack.start)  # to where the next can start
                if p > floor:
                    e.pos = p
                    sp += 1
                pc = e.pc + 1
                pos = p
                break
            if e.kind == BT_LAZY:
                ins = &t.code[e.pc]
                if e.pos < end and (_sets_at(t, s, e.pos, end, &n) & ins.mask) != 0:
                    pos = e.pos + n
                    pc = e.pc + 1
                    if ins.b < 0 or e.pos2 + 1 < ins.b:
                        e.pos = pos
                        e.pos2 += 1
                        sp += 1
                    break
            elif e.kind == BT_ATOMIC:
                atomic = e.pos2
            elif e.kind == BT_RESTORE:
                registers[e.pc] = e.pos


cdef uint64_t NOT_YET = 0xFFFFFFFFFFFFFFFFULL  # the second character's sets, before they are looked up


cdef inline Py_ssize_t _match_steps(const Tables* t, const Alternative* alt, Stack* stack, const uint8_t* s,
                                    Py_ssize_t pos, Py_ssize_t end, Py_ssize_t bos) except -2 nogil:
    """An alternative of steps and a tail (``Alternative``): depth first over the steps'
    choices, kept in arrays on the C stack, then the tail, which cannot fail."""
    cdef Py_ssize_t top[MAX_STEPS]    # a run's current end
    cdef Py_ssize_t low[MAX_STEPS]    # greedy: the run's least end; lazy: its length
    cdef const Instr* steps = t.steps + alt.first_step
    cdef const Instr* ins
    cdef int i = 0, j, n_steps = alt.n_steps
    cdef Py_ssize_t n, p
    cdef uint64_t bit
    cdef uint8_t b
    cdef bint ok
    while True:
        while i < n_steps:  # forward, each step at its first choice
            ins = &steps[i]
            bit = ins.mask
            if OP_OPT <= ins.op <= OP_PLUS:
                if ins.op == OP_PLUS:
                    if pos >= end or (_sets_at(t, s, pos, end, &n) & bit) == 0:
                        break
                    pos += n
                low[i] = pos
                if ins.op != OP_OPT:
                    pos = _skip(t.ascii_mask, t, s, pos, end, bit)
                elif pos < end and (_sets_at(t, s, pos, end, &n) & bit) != 0:
                    pos += n
                top[i] = pos
                if ins.c == POSSESSIVE:
                    low[i] = pos
            elif ins.op == OP_RUN:
                p = _take(t, s, pos, end, bit, ins.a)
                if p < 0:
                    break
                pos = low[i] = p
                if ins.c == LAZY:
                    low[i] = ins.a
                else:
                    pos = _extend(t, s, pos, end, bit, ins.b - ins.a if ins.b >= 0 else -1)
                top[i] = pos
            elif ins.op == OP_SET:
                if pos >= end or (_sets_at(t, s, pos, end, &n) & bit) == 0:
                    break
                pos += n
            elif ins.op == OP_LOOK:
                ok = pos < end and (_sets_at(t, s, pos, end, &n) & bit) != 0
                if ok == (ins.a != 0):
                    break
            elif ins.op == OP_EOS:
                if pos != end:
                    break
            elif pos != end and not (pos + 1 == end and s[pos] == 10):  # OP_EOL
                break
            i += 1
        if i == n_steps:
            if alt.tail < 0 or (alt.guarded and (pos >= end or (_sets_at(t, s, pos, end, &n) & alt.tail_mask) == 0)):
                return pos
            return _match(t, stack, 0, alt.tail, s, pos, end, bos)
        stack.steps += 1
        if stack.steps > _max_backtracks:
            _too_many_backtracks(pos)
        j = i - 1  # step i failed: back to the latest step with another choice
        while j >= 0:
            ins = &steps[j]
            if (ins.op == OP_RUN or OP_OPT <= ins.op <= OP_PLUS) and ins.c == GREEDY and top[j] > low[j]:
                p = _char_before(s, low[j], top[j])
                if j + 1 < n_steps and (steps[j + 1].op == OP_SET or steps[j + 1].op == OP_PLUS
                                        or (steps[j + 1].op == OP_RUN and steps[j + 1].a > 0)):
                    bit = steps[j + 1].mask  # give back to where the next step can start
                    while p > low[j] and (_sets_at(t, s, p, end, &n) & bit) == 0:
                        p = _char_before(s, low[j], p)
                top[j] = p
                break
            if ins.op == OP_RUN and ins.c == LAZY and (ins.b < 0 or low[j] < ins.b) and top[j] < end \
                    and (_sets_at(t, s, top[j], end, &n) & ins.mask) != 0:
                top[j] += n
                low[j] += 1
                break
            j -= 1
        if j < 0:
            return -1
        pos = top[j]
        i = j + 1


cdef inline Py_ssize_t _skip(const uint64_t* ascii_mask, const Tables* t, const uint8_t* s, Py_ssize_t pos,
                             Py_ssize_t end, uint64_t bit) noexcept nogil:
    """The end of the run of characters in ``bit``'s set from ``pos``."""
    cdef Py_ssize_t n
    cdef uint8_t b
    while pos < end:
        b = s[pos]
        if b < 0x80:
            if (ascii_mask[b] & bit) == 0:
                return pos
            pos += 1
        elif (_sets_at(t, s, pos, end, &n) & bit) != 0:
            pos += n
        else:
            return pos
    return pos


cdef inline Py_ssize_t _take(const Tables* t, const uint8_t* s, Py_ssize_t pos, Py_ssize_t end, uint64_t bit,
                             Py_ssize_t count) noexcept nogil:
    """The end of ``count`` characters of ``bit``'s set from ``pos``, or -1 if there are fewer."""
    cdef Py_ssize_t n
    while count > 0:
        if pos >= end or (_sets_at(t, s, pos, end, &n) & bit) == 0:
            return -1
        pos += n
        count -= 1
    return pos


cdef inline Py_ssize_t _extend(const Tables* t, const uint8_t* s, Py_ssize_t pos, Py_ssize_t end, uint64_t bit,
                               Py_ssize_t most) noexcept nogil:
    """The end of the run of characters of ``bit``'s set from ``pos``, at most ``most`` of
    them (-1: any number)."""
    cdef Py_ssize_t n
    if most < 0:
        return _skip(t.ascii_mask, t, s, pos, end, bit)
    while most > 0 and pos < end and (_sets_at(t, s, pos, end, &n) & bit) != 0:
        pos += n
        most -= 1
    return pos


cdef inline Py_ssize_t _match_linear(const Tables* t, const Instr* ins, const uint8_t* s, Py_ssize_t pos,
                                     Py_ssize_t end) noexcept nogil:
    """Steps without choices (possessive runs, sets, one-character lookaheads, anchors)
    and no tail: one pass, no backtracking (``Alternative.linear``)."""
    cdef const uint64_t* ascii_mask = t.ascii_mask
    cdef uint64_t bit
    cdef Py_ssize_t n
    cdef int32_t op
    while True:
        op = ins.op
        bit = ins.mask
        if op == OP_PLUS or op == OP_SET:
            if pos >= end or (_sets_at(t, s, pos, end, &n) & bit) == 0:
                return -1
            pos += n
            if op == OP_PLUS:
                pos = _skip(ascii_mask, t, s, pos, end, bit)
        elif op == OP_STAR:
            pos = _skip(ascii_mask, t, s, pos, end, bit)
        elif op == OP_OPT:
            if pos < end and (_sets_at(t, s, pos, end, &n) & bit) != 0:
                pos += n
        elif op == OP_MATCH:
            return pos
        elif op == OP_RUN:
            pos = _take(t, s, pos, end, bit, ins.a)
            if pos < 0:
                return -1
            pos = _extend(t, s, pos, end, bit, ins.b - ins.a if ins.b >= 0 else -1)
        elif op == OP_LOOK:
            if (pos < end and (_sets_at(t, s, pos, end, &n) & bit) != 0) == (ins.a != 0):
                return -1
        elif op == OP_EOS:
            if pos != end:
                return -1
        elif pos != end and not (pos + 1 == end and s[pos] == 10):  # OP_EOL
            return -1
        ins += 1


cdef int _too_many_backtracks(Py_ssize_t pos) except -1 nogil:
    with gil:
        raise BacktrackLimitExceeded(
            f"the split pattern backtracked more than {_max_backtracks:,} times to match near byte {pos}: "
            "it is catastrophically slow on this text, as backtracking regexes can be (nested quantifiers "
            "such as (a|aa)+ or (x?x?)+); simplify the pattern"
        )


cdef inline Py_ssize_t _piece_end(const Tables* t, Stack* stack, const uint8_t* text, Py_ssize_t start,
                                  Py_ssize_t end, Py_ssize_t bos) except -2 nogil:
    cdef uint64_t cand, first, second = NOT_YET
    cdef uint32_t cp
    cdef uint16_t sig
    cdef Py_ssize_t found, n, n2
    cdef const Alternative* alt
    if start >= end:
        return -1
    stack.steps = 0
    stack.start = start
    if text[start] < 0x80:
        cand = t.ascii_cand[text[start]]
        first = t.ascii_mask[text[start]]
        n = 1
    else:
        n = _decode(text, start, end, &cp)
        sig = _signature(t, cp)
        cand = t.sig_cand[sig]
        first = t.sig_mask[sig]
    while cand:
        alt = &t.alternatives[ctz64(cand)]
        if alt.prefix and (first & alt.after) == 0:  # the first character can only be the prefix
            if second == NOT_YET:
                second = _sets_at(t, text, start + n, end, &n2) if start + n < end else 0
            if (second & alt.after) == 0:
                cand &= cand - 1
                continue
        if alt.linear:
            found = _match_linear(t, t.steps + alt.first_step, text, start, end)
        elif alt.n_steps >= 0:
            found = _match_steps(t, alt, stack, text, start, end, bos)
        else:
            found = _match(t, stack, 0, alt.start, text, start, end, bos)
        if found >= 0:
            return found
        cand &= cand - 1
    return -1


cdef Py_ssize_t program_piece_end(const Tables* t, Stack* stack, const uint8_t* text, Py_ssize_t start,
                                  Py_ssize_t end, Py_ssize_t bos) except -2 nogil:
    return _piece_end(t, stack, text, start, end, bos)


# ------------------------------------------------------------------ the DFA

cdef inline uint32_t _dfa_class(const Tables* t, const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                Py_ssize_t* n) noexcept nogil:
    """The DFA's class of the character at ``i < end``; its length in ``n``."""
    cdef uint32_t cp
    if s[i] < 0x80:
        n[0] = 1
        return t.dfa_class[s[i]]
    n[0] = _decode(s, i, end, &cp)
    return _signature(t, cp)


cdef enum:  # flags of a DFA transition (bpetrain.splitting._dfa._fast_table)
    DFA_CUT = 1    # a piece ends before the character, the next starts with it
    DFA_MATCH = 2  # a match ends before the character; the piece goes on
    DFA_SLOW = 4   # no thread is left: back to the last match, or no match here
    DFA_FLAGS = 7
    PAIR_CUT0 = 1  # the same on two characters at once (_dfa.pair_table): a piece ends before the first,
    PAIR_MATCH0 = 4  # a match ends before the first,
    PAIR_MATCH1 = 8  # or the second (PAIR_CUT1 = 2: a piece ends before the second)
    PAIR_SLOW = 16   # read the two one at a time
    PAIR_FLAGS = 31


cdef inline Py_ssize_t _dfa_piece_end_at(const Tables* t, const uint8_t* s, Py_ssize_t start, Py_ssize_t end,
                                         Py_ssize_t bos, Py_ssize_t* stopped) noexcept nogil:
    # One transition a character; the last match recorded is the piece. Where the attempt
    # stopped goes to ``stopped``: DFA_SLOW or DFA_CUT before the character there, or ``end``.
    cdef const uint32_t* trans = t.dfa_trans
    cdef uint32_t off = t.dfa_start[start == bos], e
    cdef Py_ssize_t pos = start, last = -1, n
    while pos < end:
        e = trans[off + _dfa_class(t, s, pos, end, &n)]
        if e & (DFA_CUT | DFA_SLOW):
            stopped[0] = pos
            return pos if e & DFA_CUT else last
        if e & DFA_MATCH:
            last = pos
        off = e & ~(<uint32_t>DFA_FLAGS)
        pos += n
    stopped[0] = end
    e = t.dfa_eot[off >> t.dfa_shift]
    return end if e == 1 else end - 1 if e == 2 else last


cdef Py_ssize_t dfa_piece_end(const Tables* t, const uint8_t* s, Py_ssize_t start, Py_ssize_t end,
                              Py_ssize_t bos) noexcept nogil:
    cdef Py_ssize_t stopped
    if t.dfa_held != NULL:
        return _dfa_held_piece_end(t, s, start, end, bos)
    return _dfa_piece_end_at(t, s, start, end, bos, &stopped)


cdef enum:  # reading where matches start backwards (_dfa._reverse_table; RevMarks, _matcher.pxd)
    REV_AUTO = 1      # Program(reverse=None): once failed attempts cost more than the marks (REV_PAYS)
    REV_ALWAYS = 2    # Program(reverse=True): from a text's first failed attempt
    REV_PAYS = 1      # use the marks once the failed attempts of a stretch of text (that read a
    REV_SLACK = 256   # byte or more) read more than this many bytes per byte it goes, and this
                      # many more (a window costs about a step a byte)
    REV_RETURN = 8    # what a failed attempt costs beyond its bytes (as PROBE_RETURN)
    REV_STRETCH = 8192  # a whole text's reading is timed this many bytes at a time (_rev_steer) ...
    REV_HOLD_MAX = 256  # ... and the way that took less time kept for up to this many stretches
    REV_LOOK_AT = 64    # a trial's time is looked at once this many bytes further


cdef RevMarks* _rev_new(bint whole, Py_ssize_t begin, bint armed) noexcept nogil:
    # Marks with no window filled yet; NULL where memory is short (the reading is then only
    # slower)
    cdef RevMarks* m = <RevMarks*>malloc(sizeof(RevMarks))
    if m != NULL:
        m.lo = m.hi = 0
        m.look = REV_LOOK
        m.cost = 0
        m.begin = m.x0 = m.xc = begin
        m.armed = armed
        m.whole = whole
        m.t0 = -1
        m.rate[0] = m.rate[1] = 0
        m.hold = 1
        m.left = 0
        m.trial = False
    return m


cdef void rev_free(RevMarks** home) noexcept nogil:
    free(home[0])
    home[0] = NULL


cdef inline bint _rev_ascii(const uint8_t* b, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    # Whether b[i:j] is ASCII
    cdef uint64_t high = 0, word
    while i + 8 <= j:
        memcpy(&word, b + i, 8)
        high |= word
        i += 8
    while i < j:
        high |= b[i]
        i += 1
    return not high & 0x8080808080808080ULL


cdef uint32_t _rev_span(RevMarks* m, const Tables* t, const uint8_t* b, Py_ssize_t j, Py_ssize_t to,
                        uint32_t e, bint keep) noexcept nogil:
    # Read the window's bytes b[to:j] backwards from the reverse state ``e`` (its row offset):
    # their marks go to m.bits where ``keep`` (``to`` a multiple of 64; the bits above j in
    # its word clear); the state after them.
    cdef const uint32_t* rev = t.dfa_rev
    cdef const uint16_t* classes = t.dfa_class
    cdef Py_ssize_t w
    cdef uint64_t word
    cdef uint32_t k
    while j > to:  # a word of marks (64 bytes) at a time, the highest first
        w = max((j - 1) >> 6 << 6, to)
        word = 0
        if _rev_ascii(b, w, j):  # (no test a byte)
            while j > w:
                j -= 1
                e = rev[(e & ~(<uint32_t>1)) + classes[b[j]]]
                word |= (<uint64_t>(e & 1)) << (j & 63)
        while j > w:
            j -= 1
            if b[j] < 0x80:
                k = classes[b[j]]
            else:
                k = m.cls[j]
                if k == 0xFFFF:
                    continue
            e = rev[(e & ~(<uint32_t>1)) + k]
            word |= (<uint64_t>(e & 1)) << (j & 63)
        if keep:
            m.bits[w >> 6] = word
    return e


cdef void _rev_fill(RevMarks* m, const Tables* t, const uint8_t* s, Py_ssize_t x, Py_ssize_t stop,
                    Py_ssize_t end) noexcept nogil:
    # Mark where a match may start from ``x`` (a character's first byte) on: REV_WINDOW bytes
    # (and REV_BACK before x, from a character's first byte: a byte that is not 10xxxxxx,
    # which no character before takes in), or for a reading's own marks up to ``stop``,
    # reading the text backwards from ``look`` bytes further (or the end of the text, where
    # the marks are exact) by the reverse automaton: an ASCII byte by its class, a longer
    # character by the class found when its first byte was read forwards, 8 ASCII bytes at a
    # time past (``cls``; 0xFFFF inside a character).
    cdef Py_ssize_t lo = x, hi, i, j, n, w, half
    cdef const uint32_t* rev = t.dfa_rev
    cdef const uint32_t* pairs = t.dfa_rev_pairs
    cdef const uint8_t* codes = t.dfa_rev_codes
    cdef int code_shift = t.dfa_rev_code_shift, pair_shift = 2 * t.dfa_rev_code_shift
    cdef const uint16_t* classes = t.dfa_class
    cdef const uint8_t* b
    cdef uint32_t e, e2
    cdef uint64_t word, word2
    if m.whole:
        lo = max(x - REV_BACK, 0)
        while lo < x and (s[lo] & 0xC0) == 0x80:
            lo += 1
        hi = min(end, x + REV_WINDOW)
    else:
        hi = min(end, max(min(x + REV_WINDOW, stop), x + m.look))
    m.lo = lo
    m.hi = hi
    hi = min(end, hi + m.look)
    b = s + lo
    i = lo
    while i < hi:
        if i + 8 <= hi:
            memcpy(&word, s + i, 8)
            if not word & 0x8080808080808080ULL:
                i += 8
                continue
        if s[i] < 0x80:
            i += 1
            continue
        m.cls[i - lo] = <uint16_t>_dfa_class(t, s, i, end, &n)
        for j in range(1, n):
            m.cls[i - lo + j] = 0xFFFF
        i += n
    hi = i
    while m.hi < hi and (s[m.hi] & 0xC0) == 0x80 and m.cls[m.hi - lo] == 0xFFFF:  # (marks end between characters)
        m.hi += 1
    if hi >= end:
        m.hi = hi
    # Two readings at once where the window is long (a read of the table waits on the one
    # before it in the same reading only): the lower half from ``look`` bytes into the upper
    # half, from every state (its last marks as loose as a window's), beside the upper half;
    # 64 ASCII bytes of each by the pair table where there is one (a read per two bytes)
    n = hi - lo
    half = (n >> 7) << 6 if n >= 512 else 0
    e = _rev_span(m, t, b, n, 2 * half, t.dfa_rev_start[hi >= end], True)
    if not half:
        return
    e2 = _rev_span(m, t, b, min(n, half + m.look), half, t.dfa_rev_start[0], False)
    i = 2 * half
    j = half
    while j > 0:  # a word of each at a time
        i -= 64
        j -= 64
        if not (_rev_ascii(b, i, i + 64) and _rev_ascii(b, j, j + 64)):
            e = _rev_span(m, t, b, i + 64, i, e, True)
            e2 = _rev_span(m, t, b, j + 64, j, e2, True)
        elif pairs != NULL:  # (two bytes a read: states as the pair table's row offsets there)
            e = (e >> t.dfa_shift) << pair_shift
            e2 = (e2 >> t.dfa_shift) << pair_shift
            word = word2 = 0
            for w in range(63, 0, -2):
                e = pairs[(e & ~(<uint32_t>3)) + (codes[b[i + w]] << code_shift) + codes[b[i + w - 1]]]
                word |= (<uint64_t>(e & 3)) << (w - 1)
                e2 = pairs[(e2 & ~(<uint32_t>3)) + (codes[b[j + w]] << code_shift) + codes[b[j + w - 1]]]
                word2 |= (<uint64_t>(e2 & 3)) << (w - 1)
            m.bits[i >> 6] = word
            m.bits[j >> 6] = word2
            e = (e >> pair_shift) << t.dfa_shift
            e2 = (e2 >> pair_shift) << t.dfa_shift
        else:
            word = word2 = 0
            for w in range(63, -1, -1):
                e = rev[(e & ~(<uint32_t>1)) + classes[b[i + w]]]
                word |= (<uint64_t>(e & 1)) << w
                e2 = rev[(e2 & ~(<uint32_t>1)) + classes[b[j + w]]]
                word2 |= (<uint64_t>(e2 & 1)) << w
            m.bits[i >> 6] = word
            m.bits[j >> 6] = word2


cdef Py_ssize_t _rev_next(RevMarks* m, const Tables* t, const uint8_t* s, Py_ssize_t x, Py_ssize_t stop,
                          Py_ssize_t end) noexcept nogil:
    # The first place from ``x`` (a character's first byte) where a match may start, by the
    # marks (windows filled as needed); or, where none starts before it past ``stop``, that
    # place; or ``end``; or, where the marks are put aside (_rev_steer) before a window, that
    # window's first place.
    cdef Py_ssize_t w, last
    cdef uint64_t word
    while x < end:
        if not m.lo <= x < m.hi:
            _rev_at(m, t, x)
            if not m.armed:
                break
            _rev_fill(m, t, s, x, stop, end)
        w = (x - m.lo) >> 6
        last = (m.hi - m.lo - 1) >> 6
        word = m.bits[w] & (~(<uint64_t>0) << ((x - m.lo) & 63))
        while not word and w < last:
            w += 1
            word = m.bits[w]
        if word and m.lo + (w << 6) + ctz64(word) < m.hi:
            x = m.lo + (w << 6) + ctz64(word)
            break
        x = m.hi
        if x >= stop:
            break
    return x


cdef inline bint _rev_loose(RevMarks* m, Py_ssize_t x) noexcept nogil:
    # The attempt from ``x`` failed: whether the marks said a match may start there (a mark
    # loose for lack of text read beyond it: the next windows read twice as far). The
    # attempts after it are then left to the cover table and the guards, which read a
    # failed one once.
    if m == NULL or not m.armed or not m.lo <= x < m.hi or not (m.bits[(x - m.lo) >> 6] >> ((x - m.lo) & 63)) & 1:
        return False
    m.look = min(2 * m.look, REV_LOOK_MAX)
    return True


cdef inline bint _rev_on(const RevMarks* m) noexcept nogil:
    # Whether a failed attempt goes to the next mark
    return m != NULL and m.armed


cdef bint _rev_armed(RevMarks** m, RevMarks** home, const Tables* t, Py_ssize_t begin) noexcept nogil:
    # An attempt failed, in a reading that began at ``begin``: whether the next starts at the
    # next mark (``_rev_after``), by the marks ``m[0]``, made here at the first failed attempt
    # (armed at once with Program(reverse=True)) and kept in ``home`` where not NULL.
    if t.dfa_rev_mode == 0:
        return False
    if m[0] == NULL and home != NULL:  # (the other interleaved reading's)
        m[0] = home[0]
    if m[0] == NULL:
        m[0] = _rev_new(home != NULL, begin, t.dfa_rev_mode == REV_ALWAYS)
        if home != NULL:
            home[0] = m[0]
    return _rev_on(m[0])


cdef inline Py_ssize_t _rev_after(RevMarks* m, const Tables* t, const uint8_t* s, Py_ssize_t x, Py_ssize_t stop,
                                  Py_ssize_t end) noexcept nogil:
    # _rev_next past the character at ``x``
    return _rev_next(m, t, s, x + char_length(s, x, end), stop, end)


cdef void _rev_tally(RevMarks* m, Py_ssize_t failed, Py_ssize_t pos) noexcept nogil:
    # The attempt from ``failed`` read to ``pos`` and failed, and the next starts without the
    # marks (after the cover table, the probes and the gap): what it read counts (REV_RETURN
    # more for going back), and once the last stretch of text's count passes what marking
    # it would cost (REV_PAYS, REV_SLACK), the marks are armed (Program(reverse=None); for a
    # whole text only until its reading is timed: _rev_steer).
    if m == NULL or m.armed or m.t0 >= 0:
        return
    if failed - m.begin > REV_WINDOW:  # (what the last stretch of text cost)
        m.begin = failed
        m.cost = 0
    if pos > failed:  # (one that read nothing costs a look at the start state's row: the gap)
        m.cost += pos - failed + REV_RETURN
    m.armed = m.cost > REV_PAYS * (failed - m.begin) + REV_SLACK


cdef uint64_t _chance = 0  # not 0 (tests: _steer_by_chance): the state of the clock that goes on by chance
cdef int64_t _chance_now = 0


def _steer_by_chance(uint64_t seed):
    """Tests: time the stretches of ``_rev_steer`` by a clock that goes on by pseudo-random
    steps (xorshift64, from ``seed``; 0: by the real clock again), so that the marks are
    taken up and put aside at places that depend on the seed, not on the machine. For one
    thread at a time."""
    global _chance, _chance_now
    _chance = seed
    _chance_now = 0


cdef int64_t _steer_clock() noexcept nogil:
    # bpetrain_clock_ns, or the clock that goes on by chance (_steer_by_chance): up to 1 ms a read
    global _chance, _chance_now
    if _chance == 0:
        return clock_ns()
    _chance ^= _chance << 13
    _chance ^= _chance >> 7
    _chance ^= _chance << 17
    _chance_now += <int64_t>(_chance >> 44)
    return _chance_now


cdef void _rev_steer(RevMarks* m, Py_ssize_t x) noexcept nogil:
    # Program(reverse=None), a reading of one whole text at ``x`` (where it stopped: _rev_at),
    # a stretch's end or on in a trial: whether failed attempts go to the next mark, by the
    # time each way took. A stretch (REV_STRETCH bytes) after the marks were made, the
    # tally's choice until then (_rev_tally), the reading is timed a stretch at a time: the
    # way kept for ``hold`` stretches, then the other way for one, a trial (looked at every
    # REV_LOOK_AT bytes, cut short once it is twice as slow as the way kept, and a little
    # more). The faster way is kept: where it was already, for twice as many stretches as
    # before (eight times after a trial twice as slow; up to REV_HOLD_MAX); else for one,
    # then tried against again. Bytes per second decide, not what the marks skipped: the
    # cover table and the guards skip failed attempts too, at another cost. The pieces are
    # the same either way.
    cdef int64_t now
    cdef double rate, kept
    m.xc = x + REV_LOOK_AT
    now = _steer_clock()
    if m.t0 < 0:  # the first stretch, partly the tally's: not timed
        m.t0 = now
        m.x0 = x
        return
    rate = (now - m.t0) / <double>max(x - m.x0, 1)
    kept = m.rate[not m.armed]
    if m.trial:
        if x - m.x0 < REV_STRETCH and now - m.t0 <= kept * (2 * (x - m.x0) + REV_STRETCH // 8):
            return  # (the trial goes on while it is not twice as slow, and a little more)
        m.trial = False
        if rate < kept:
            m.rate[m.armed] = rate
            m.hold = m.left = 1
        else:
            m.armed = not m.armed
            m.hold = min(m.hold * (8 if rate > 2 * kept else 2), REV_HOLD_MAX)
            m.left = m.hold
    else:
        m.rate[m.armed] = rate if m.rate[m.armed] == 0 else (m.rate[m.armed] + rate) / 2
        if m.left > 0:
            m.left -= 1
        else:
            m.armed = not m.armed
            m.trial = True
    m.t0 = now
    m.x0 = x


cdef inline void _rev_at(RevMarks* m, const Tables* t, Py_ssize_t x) noexcept nogil:
    # A reading stopped at ``x``: _rev_steer, for a whole text's marks with Program(reverse=None),
    # at the end of a stretch or on in a trial
    if m != NULL and m.whole and t.dfa_rev_mode == REV_AUTO and (
            x - m.x0 >= REV_STRETCH or m.trial and x >= m.xc):
        _rev_steer(m, x)


cdef enum:  # flags of a DFA's held matches (bpetrain.splitting._dfa.KEEP, COMMIT)
    DFA_KEEP = 1    # a match ends before the character, held: keep its position
    DFA_COMMIT = 2  # the held match stands: it is the last match


cdef inline bint _held_at(const uint8_t* held, Py_ssize_t at) noexcept nogil:
    # Whether the transition at ``at`` keeps or commits a held match (``held``: the DFA's
    # ``dfa_held``, NULL where it holds none). The probes (Program._read_probes) stop at such
    # a transition as at one that ends a match: an attempt holds a match only from a KEEP on
    # (its start state holds none; a held match is one of the state's threads, so only a
    # state reached through a KEEP can COMMIT one or end the text with it, dfa_eot 3). An
    # attempt that the probes rule out takes, up to the byte a probe reads, transitions with
    # no MATCH, CUT, KEEP or COMMIT, then one that leaves no thread and commits nothing: it
    # records no match and holds none, so it fails as it does without held matches.
    return held != NULL and held[at] != 0


cdef Py_ssize_t _dfa_held_pieces(const Tables* t, const uint8_t* s, Py_ssize_t start, Py_ssize_t stop,
                                 Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds, Py_ssize_t max_pieces,
                                 Py_ssize_t* next, RevMarks** home) noexcept nogil:
    # dfa_pieces for a DFA that holds matches: one transition a character, a piece end
    # folded into the next piece's first transition (DFA_CUT) as _dfa_fast does; a failed
    # attempt goes back to the character after its start, then past those no piece starts
    # with and those the probes rule out (_dfa_gap, _held_at; no cover, dominance, second
    # reading or shuffles). Where the probes seldom rule one out, they are asked only after
    # failed attempts twice as long (``probe_min``, as ``probe_reread`` in DfaRun).
    cdef const uint32_t* trans = t.dfa_trans
    cdef const uint8_t* held = t.dfa_held
    cdef uint32_t off = t.dfa_start[start == bos], e, at
    cdef Py_ssize_t pos = start, piece = start, last = -1, kept = -1, count = 0, n, gap, past
    cdef Py_ssize_t probe_min = 1, probe_cost = 0, probe_saved = 0
    cdef uint8_t h
    cdef RevMarks* rev = home[0] if home != NULL else NULL
    while piece < stop and count < max_pieces:
        if pos < end:
            at = off + _dfa_class(t, s, pos, end, &n)
            e = trans[at]
            h = held[at]
            if h & DFA_COMMIT:
                last = kept
            if h & DFA_KEEP:
                kept = pos
            if not e & (DFA_CUT | DFA_SLOW):
                if e & DFA_MATCH:
                    last = pos
                off = e & ~(<uint32_t>DFA_FLAGS)
                pos += n
                continue
            if e & DFA_CUT:  # a piece ends before the character; the next starts with it, if one can
                bounds[2 * count] = piece
                bounds[2 * count + 1] = pos
                count += 1
                piece = pos
                last = -1
                if not e & DFA_SLOW:
                    off = e & ~(<uint32_t>DFA_FLAGS)
                    pos += n
                    continue
                # (no piece starts with the character: it is skipped below)
        else:
            e = t.dfa_eot[off >> t.dfa_shift]
            if e:
                last = end if e == 1 else end - 1 if e == 2 else kept
        if last > piece:
            bounds[2 * count] = piece
            bounds[2 * count + 1] = last
            count += 1
            piece = last
        elif piece < end and not _rev_loose(rev, piece) and _rev_armed(&rev, home, t, start):
            piece = _rev_after(rev, t, s, piece, stop, end)
        elif piece < end:  # no match at piece: on past the characters no piece starts with
            gap = _dfa_gap_unprobed(t, s, piece, stop, end)
            if t.dfa_probe != NULL and pos - piece >= probe_min and gap < stop:  # past those the probes rule out
                past = _dfa_gap_probed(t, s, gap, stop, end)
                if not _probes_pay(&probe_cost, &probe_saved, past - gap, pos - piece):
                    probe_min *= 2
                gap = past
            _rev_tally(rev, piece, pos)
            piece = gap
        _rev_at(rev, t, piece)
        pos = piece
        off = t.dfa_start[piece == bos]
        last = -1
    if home == NULL:
        free(rev)
    next[0] = piece
    return count


cdef Py_ssize_t _dfa_held_piece_end(const Tables* t, const uint8_t* s, Py_ssize_t start, Py_ssize_t end,
                                    Py_ssize_t bos) noexcept nogil:
    # dfa_piece_end for a DFA that holds matches: the piece at start, if one starts there
    cdef Py_ssize_t bounds[2]
    cdef Py_ssize_t next
    return bounds[1] if _dfa_held_pieces(t, s, start, start + 1, end, bos, bounds, 1, &next, NULL) else -1


cdef Py_ssize_t _dfa_gap_probed(const Tables* t, const uint8_t* s, Py_ssize_t pos, Py_ssize_t stop,
                                Py_ssize_t end) noexcept nogil:
    # _dfa_gap with probes (kept out of line: the loops that inline _dfa_gap stay as small
    # for the patterns that have none)
    cdef const uint32_t* row = t.dfa_trans + t.dfa_start[0]
    cdef Py_ssize_t n, past
    while pos < stop:
        if not row[_dfa_class(t, s, pos, end, &n)] & DFA_SLOW:
            past = probe_skip(t.dfa_probe, s, pos, stop, end)
            if past == pos:
                break
            pos = past
            continue
        pos += n
    return pos


cdef inline Py_ssize_t _dfa_gap(const Tables* t, const uint8_t* s, Py_ssize_t pos, Py_ssize_t stop,
                                Py_ssize_t end) noexcept nogil:
    """Past the character at ``pos`` (no match starts there), and every character after it
    that no match can start with, up to ``stop``: those the start state takes to no thread,
    and the ASCII bytes whose attempts the probes rule out (_dfa_probe.h)."""
    if t.dfa_probe != NULL:
        return _dfa_gap_probed(t, s, pos + char_length(s, pos, end), stop, end)
    return _dfa_gap_unprobed(t, s, pos, stop, end)


cdef inline Py_ssize_t _dfa_gap_unprobed(const Tables* t, const uint8_t* s, Py_ssize_t pos, Py_ssize_t stop,
                                         Py_ssize_t end) noexcept nogil:
    # _dfa_gap without the probes: past the character at pos and those the start state takes
    # to no thread
    cdef const uint32_t* row = t.dfa_trans + t.dfa_start[0]
    cdef Py_ssize_t n
    pos += char_length(s, pos, end)
    while pos < stop and row[_dfa_class(t, s, pos, end, &n)] & DFA_SLOW:
        pos += n
    return pos


cdef enum:  # the DFA's probes (_dfa_probe.h, Program._read_probes)
    PROBE_DEPTH = 32    # the farthest a probe looks, in characters after the first
    PROBE_STATES = 64   # the most states an attempt can be in at a distance that probes look past
    PROBE_BYTES = 120   # the most ASCII bytes (of 128) a probe's set holds: one that rules out fewer is dropped


cdef enum:
    GUARD_SPAN = 8192  # the longest failed attempt whose states a reading keeps (bytes; the
                       # shortest: ``reread``, at first SHUFFLE_REREAD, from which the shuffle
                       # loop leaves them to it)
    GUARD_SLACK = 64   # what the guards may cost before they pay, per byte of ``reread``
    PROBE_RETURN = 8   # what a failed attempt that the shuffle loop leaves to the probes costs, in
                       # bytes of attempts that they must rule out to pay for it (_dfa_review_probes)
    PROBE_SLACK = 64   # what the probes may cost before they pay, in those bytes


cdef struct DfaRun:
    # One reading of the DFA (``dfa_pieces``), resumable: its pieces go to bounds[2 * i],
    # bounds[2 * i + 1] for i < count (the starts of those from ``first`` on are filled in
    # by ``_dfa_settle``); ``piece``: where the current piece starts; ``off``: the state's
    # row offset at ``pos``; ``stuck``: DFA_SLOW (``e``) at ``pos``. The guard: an attempt
    # with no match after ``guard_lo`` (its start, or its last match; DFA_SLOW ``guard_e`` at
    # ``guard_hi``) and its state before each byte after it, ``guard[i - guard_lo]``
    # (``_dfa_record``; memory for ``guard_room`` states, freed by ``_dfa_end``); ``reread``:
    # the shortest such stretch it keeps (more than GUARD_SPAN: none), and the shortest
    # stretch past its last match from which the fast loops leave an attempt to
    # ``_dfa_settle``; what the guards cost and saved since ``reread``
    # was set, in bytes (``_dfa_review_guards``). ``probe_reread``: the shortest failed
    # attempt that the shuffle loop leaves to the probes (_dfa_gap_probed), at first 2 (more
    # than GUARD_SPAN: none, without probes); what that cost and saved since it was set, in
    # bytes (``_dfa_review_probes``). ``rev``: the marks of where a match may start
    # (``_rev_tally``: NULL until an attempt fails; once they are armed, a failed attempt
    # goes to the next mark), kept in ``home`` (NULL: the reading's own); ``begin``: where
    # the reading began.
    RevMarks* rev
    RevMarks** home
    Py_ssize_t begin
    Py_ssize_t reread
    Py_ssize_t probe_reread
    Py_ssize_t probe_cost
    Py_ssize_t probe_saved
    Py_ssize_t guard_cost
    Py_ssize_t guard_saved
    Py_ssize_t guard_lo
    Py_ssize_t guard_hi
    uint32_t guard_e
    uint32_t* guard
    Py_ssize_t guard_room
    Py_ssize_t* bounds
    Py_ssize_t max_pieces
    Py_ssize_t count
    Py_ssize_t first
    Py_ssize_t stop
    Py_ssize_t limit
    Py_ssize_t pos
    Py_ssize_t piece
    Py_ssize_t last
    uint32_t off
    uint32_t e
    bint stuck
    bint done


cdef inline void _dfa_begin(DfaRun* r, const Tables* t, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t end,
                            Py_ssize_t bos, Py_ssize_t* bounds, Py_ssize_t max_pieces, RevMarks** home) noexcept nogil:
    r.bounds = bounds
    r.max_pieces = max_pieces
    r.count = r.first = 0
    r.stop = stop
    r.limit = min(stop, end)
    r.pos = r.piece = start
    r.last = -1
    r.off = t.dfa_start[start == bos]
    r.e = 0
    r.stuck = False
    r.done = start >= stop or max_pieces <= 0
    r.guard_lo = r.guard_hi = -1
    r.reread = SHUFFLE_REREAD
    r.guard_cost = r.guard_saved = 0
    r.probe_reread = 2 if t.dfa_probe != NULL else GUARD_SPAN + 1
    r.probe_cost = r.probe_saved = 0
    r.guard = NULL
    r.guard_room = 0
    r.begin = start
    r.home = home
    r.rev = home[0] if home != NULL else NULL


cdef inline void _dfa_end(DfaRun* r) noexcept nogil:
    free(r.guard)
    r.guard = NULL
    r.guard_room = 0
    if r.home == NULL:
        free(r.rev)
    r.rev = NULL


cdef inline void _dfa_record(DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end, Py_ssize_t bos,
                             Py_ssize_t piece, Py_ssize_t keep, Py_ssize_t pos) noexcept nogil:
    # The attempt from ``piece`` read to ``pos`` and stopped there (DFA_SLOW, ``r.e``) with no
    # match after ``keep`` (``piece`` itself: no match at all; else its last match): read it
    # again, keeping its state before each character after ``keep``, so that a later attempt
    # that reaches one of those places in the same state stops at once (_dfa_guarded): from
    # there it reads as this one did, to ``pos`` without a match. Without it, an attempt from
    # each character of a run that the pattern reads to its end and then fails on
    # (``\p{L}+\p{Pf}``, ``\s*\n`` on words and indentation) reads the rest of the run
    # again, and where a long alternative ahead of a short one reads on past the short one's
    # match (``\P{Po}{8,}@|\w+|[ \t]+`` on words up to a full stop), every piece from each
    # word does: quadratic in the run's length.
    cdef const uint32_t* trans = t.dfa_trans
    cdef uint32_t off = t.dfa_start[piece == bos]
    cdef Py_ssize_t i = piece, n
    cdef uint32_t* room
    if pos - keep < r.reread or pos - piece > GUARD_SPAN:
        return
    if pos - keep + 1 > r.guard_room:
        room = <uint32_t*>realloc(r.guard, (pos - keep + 1) * sizeof(uint32_t))
        if room == NULL:  # (no guard: the reading is only slower)
            return
        r.guard = room
        r.guard_room = pos - keep + 1
    room = r.guard
    r.guard_cost += pos - piece
    memset(r.guard, 0xFF, (pos - keep + 1) * sizeof(uint32_t))  # (no state: inside a character)
    while i < keep:
        off = trans[off + _dfa_class(t, s, i, end, &n)] & ~(<uint32_t>DFA_FLAGS)
        i += n
    while i < pos:
        room[i - keep] = off
        off = trans[off + _dfa_class(t, s, i, end, &n)] & ~(<uint32_t>DFA_FLAGS)
        i += n
    room[pos - keep] = off
    r.guard_lo = keep
    r.guard_hi = pos
    r.guard_e = r.e


cdef inline void _dfa_review_guards(DfaRun* r) noexcept nogil:
    # Keep guards of longer failed attempts only (``reread`` doubled) where those kept so far
    # cost more than they saved, with some slack: each costs the bytes of its failed attempt
    # read again (_dfa_record) and those read under it one at a time (_dfa_guarded); a meeting
    # saves those from it to the guard's end. Where the pattern counts (``.{8}x``), an attempt
    # from inside the guard reaches the same place in another state and never meets it; where
    # it reads a run to its end from every byte of it (``\S{8,}\D*+\d\S`` on the words up to
    # a lone digit), the attempts meet the guard in a few bytes, and save the rest of a long
    # one. Short failed attempts cost little either way (the shuffle loop reads them again
    # from their next byte), so a text whose short ones never meet a guard keeps the guards
    # for its long ones. Bytes, not attempts, so that many short ones do not outweigh a long
    # one.
    if r.guard_cost > 2 * r.guard_saved + GUARD_SLACK * r.reread:
        r.reread *= 2
        r.guard_cost = r.guard_saved = 0


cdef inline void _dfa_review_probes(DfaRun* r, Py_ssize_t failed, Py_ssize_t pos, Py_ssize_t next) noexcept nogil:
    # The attempt from ``failed`` failed at ``pos`` and came back from the shuffle loop for
    # the probes only (shorter than ``reread``); the next attempt starts at ``next``. The
    # return costs about PROBE_RETURN bytes of the loop's reading; each attempt skipped
    # after its first byte (by the probes, or the cover table) saved about as many bytes as
    # it read, and a dead step of the loop, as dear as a return. Where the probes seldom rule out an attempt (they are on a few of the
    # first bytes the text's attempts have, or their sets hold most bytes), leave them only
    # failed attempts twice as long (``probe_reread`` doubled): the probes cost the loop
    # nothing below that (_dfa_gap still skips past the attempts they rule out).
    if not _probes_pay(&r.probe_cost, &r.probe_saved, next - failed - 1, pos - failed):
        r.probe_reread *= 2


cdef inline bint _probes_pay(Py_ssize_t* cost, Py_ssize_t* saved, Py_ssize_t skipped, Py_ssize_t read) noexcept nogil:
    # After a failed attempt of ``read`` bytes that was left to the probes (about PROBE_RETURN
    # bytes of reading), ``skipped`` attempts after its first byte were ruled out, each about
    # as dear as it: whether the probes asked so far still pay, with some slack (if not, the
    # counts start again).
    cost[0] += PROBE_RETURN
    saved[0] += skipped * (read + PROBE_RETURN)
    if cost[0] > saved[0] + PROBE_SLACK:
        cost[0] = saved[0] = 0
        return False
    return True


cdef inline bint _dfa_covers(const Tables* t, uint32_t off, uint32_t k) noexcept nogil:
    # Whether a failed attempt in the state at row offset ``off`` before a character of class
    # ``k`` fails the attempt from that character too (_dfa._cover_table; the table's rows are
    # a bit a class: offset / 8).
    return (t.dfa_cover[(off >> 3) + (k >> 3)] >> (k & 7)) & 1


cdef inline Py_ssize_t _dfa_start_from(const Tables* t, const uint8_t* s, Py_ssize_t end, Py_ssize_t failed,
                                       Py_ssize_t i, Py_ssize_t stop) noexcept nogil:
    # After the attempt from ``failed``, those before ``i`` fail too: where the next starts,
    # ``i`` or past the characters from it that no piece starts with (``_dfa_gap``; from
    # ``failed`` itself where ``i`` is the character after it).
    cdef Py_ssize_t n
    if i == failed + char_length(s, failed, end):
        return _dfa_gap(t, s, failed, stop, end)
    if i >= stop:
        return i
    if t.dfa_probe != NULL:
        return _dfa_gap_probed(t, s, i, stop, end)  # (from i: past the attempts the probes rule out)
    if not t.dfa_trans[t.dfa_start[0] + _dfa_class(t, s, i, end, &n)] & DFA_SLOW:
        return i
    return _dfa_gap(t, s, i, stop, end)


cdef inline bint _dfa_ruled_out(const Tables* t, uint32_t off, uint32_t k, uint32_t kept) noexcept nogil:
    # Whether an attempt from a character of class ``k`` fails where one that failed (or
    # read on past its last match to no thread left) was in the state at row offset ``off``
    # before that character and at ``kept`` after it: its cover bit (_dfa._cover_table), or
    # the start state's step on the character leaves no thread, or a state the kept one
    # dominates (_dfa_meets).
    cdef uint32_t e
    if t.dfa_cover != NULL and _dfa_covers(t, off, k):
        return True
    if t.dfa_dominate == NULL:
        return False
    e = t.dfa_trans[t.dfa_start[0] + k]
    if e & DFA_FLAGS:
        return (e & DFA_FLAGS) == DFA_SLOW
    return _dfa_meets(t, e, kept)


cdef inline Py_ssize_t _dfa_retry(const Tables* t, const uint8_t* s, Py_ssize_t end, Py_ssize_t bos,
                                  Py_ssize_t piece, Py_ssize_t pos, Py_ssize_t stop) noexcept nogil:
    # The attempt from ``piece`` read to ``pos`` and failed there without a match (at the
    # character there, or at the end of the text): where the next attempt starts, which
    # may be ``stop`` or past it. Read again, every place after ``piece`` where its state
    # rules out the attempt from there (_dfa_ruled_out) starts an attempt that fails too;
    # the first place it does not (or ``pos``), past the characters no piece starts with
    # (``_dfa_gap``). Without a cover or a dominance table: the character after ``piece``.
    cdef const uint32_t* trans = t.dfa_trans
    cdef uint32_t off = t.dfa_start[piece == bos], k, nxt
    cdef Py_ssize_t i = piece, n
    if t.dfa_cover == NULL and t.dfa_dominate == NULL:
        return _dfa_gap(t, s, piece, stop, end)
    k = _dfa_class(t, s, i, end, &n)
    off = trans[off + k] & ~(<uint32_t>DFA_FLAGS)
    i += n
    while i < pos:
        k = _dfa_class(t, s, i, end, &n)
        nxt = trans[off + k] & ~(<uint32_t>DFA_FLAGS)
        if not _dfa_ruled_out(t, off, k, nxt):
            break
        off = nxt
        i += n
    return _dfa_start_from(t, s, end, piece, i, stop)


cdef inline Py_ssize_t _dfa_past_guard(const DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end,
                                       Py_ssize_t cur) noexcept nogil:
    # The attempt from ``cur`` (inside the guard) met the guard without a match: where the
    # next attempt starts. The guard's attempt has no match from there to its end either, so
    # the places after ``cur`` where its state rules out the attempt from there
    # (_dfa_ruled_out, as _dfa_retry has it) start attempts that fail as well; the first it
    # does not rule out, past the characters no piece starts with. Without a cover or a
    # dominance table: the character after ``cur``.
    cdef Py_ssize_t i = cur + char_length(s, cur, end), n
    cdef uint32_t k
    if t.dfa_cover == NULL and t.dfa_dominate == NULL:
        return _dfa_gap(t, s, cur, r.stop, end)
    while i < r.guard_hi:
        k = _dfa_class(t, s, i, end, &n)
        if not _dfa_ruled_out(t, r.guard[i - r.guard_lo], k, r.guard[i + n - r.guard_lo]):
            break
        i += n
    return _dfa_start_from(t, s, end, cur, i, r.stop)


cdef inline bint _dfa_meets(const Tables* t, uint32_t off, uint32_t kept) noexcept nogil:
    # Whether an attempt in the state at row offset ``off`` ends where a kept one in the state
    # ``kept`` at the same place did (_dfa_guarded): the same state, or one it dominates
    # (_dfa._dominance_table). (``kept`` all ones: the kept attempt had no state there, inside
    # a character.)
    cdef uint32_t x, y
    if kept == off:
        return True
    if t.dfa_dominate == NULL or kept == 0xFFFFFFFFU:
        return False
    x = off >> t.dfa_shift
    y = kept >> t.dfa_shift
    return (t.dfa_dominate[x * t.dfa_dominate_row + (y >> 3)] >> (y & 7)) & 1


cdef inline void _dfa_guarded(DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end,
                              Py_ssize_t bos) noexcept nogil:
    # ``_dfa_fast`` one character a step up to the guard's end, checking the guard: an
    # attempt in the state the kept one had at the same place (or one that state dominates:
    # _dfa_meets) reads as it did, to ``guard_hi`` without a match (or less far), and stops
    # there (the DFA is deterministic, and reads no further back than a piece's start). So
    # it goes back to its last match at
    # once, or, with none, the next attempt starts after its first character (and the
    # characters no piece starts with), as ``_dfa_settle`` would have it; an attempt that
    # skips past the guard stops at its end for ``_dfa_settle``.
    cdef Py_ssize_t* bounds = r.bounds
    cdef Py_ssize_t pos = r.pos, last = r.last, count = r.count, first = r.first, piece = r.piece
    cdef Py_ssize_t lo = r.guard_lo, hi = r.guard_hi, limit = min(r.limit, hi + 1), cur, after, i, n
    cdef Py_ssize_t max_pieces = r.max_pieces, open = bounds[2 * count - 1] if count > first else piece
    cdef const uint32_t* guard = r.guard  # (kept in registers: the loop writes through bounds)
    cdef const uint32_t* trans = t.dfa_trans
    cdef const uint16_t* classes = t.dfa_class
    cdef uint32_t off = r.off, e = 0
    while pos < limit and count < max_pieces:
        if pos > lo and _dfa_meets(t, off, guard[pos - lo]):
            r.guard_saved += hi - pos
            cur = open
            if last > cur:  # back to the last match
                bounds[2 * count + 1] = last
                count += 1
                pos = open = last
                off = t.dfa_start[pos == bos]
                continue
            after = _dfa_past_guard(r, t, s, end, cur)  # no match at cur
            if after >= limit:
                pos = hi
                r.stuck = True
                r.e = r.guard_e
                break
            for i in range(first, count):
                bounds[2 * i] = bounds[2 * i - 1] if i > first else piece
            first = count
            piece = pos = open = after
            off = t.dfa_start[pos == bos]
            continue
        if s[pos] < 0x80:  # (as _dfa_char, its state in registers)
            e = trans[off + classes[s[pos]]]
            n = 1
        else:
            e = trans[off + _dfa_class(t, s, pos, end, &n)]
        if e & DFA_SLOW:
            if e & DFA_CUT or last <= open:
                r.stuck = True
                r.e = e
                break
            bounds[2 * count + 1] = last  # the usual DFA_SLOW: back to the last match
            count += 1
            pos = open = last
            off = t.dfa_start[pos == bos]
            continue
        bounds[2 * count + 1] = pos
        if e & DFA_CUT:
            count += 1
            open = pos
        if e & DFA_MATCH:
            last = pos
        off = e & ~(<uint32_t>DFA_FLAGS)
        pos += n
    r.guard_cost += pos - r.pos if pos > r.pos else 0
    r.pos = pos
    r.last = last
    r.count = count
    r.first = first
    r.piece = piece
    r.off = off


cdef inline void _take_pair(Py_ssize_t* bounds, Py_ssize_t pos, uint32_t e, Py_ssize_t* count,
                            Py_ssize_t* last) noexcept nogil:
    # A reading takes the two bytes at ``pos`` by pair-table entry ``e`` (not PAIR_SLOW): a
    # piece ends before either byte where e says so (the end is written whether or not it
    # counts: the next one overwrites it), and the last match moves to after either byte.
    bounds[2 * count[0] + 1] = pos
    count[0] += e & PAIR_CUT0
    bounds[2 * count[0] + 1] = pos + 1
    count[0] += (e >> 1) & 1
    last[0] = pos + 1 if e & PAIR_MATCH1 else pos if e & PAIR_MATCH0 else last[0]


cdef inline void _dfa_fast(DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end, Py_ssize_t bos) noexcept nogil:
    # The fast loop takes the usual end of a piece (DFA_CUT) without a branch: it writes
    # the position as the end of the current piece whatever the flag says and counts it
    # only then, and notes where a match ends (``last``: the current piece's if after its
    # start). DFA_SLOW (no thread left) where a match ended in the piece ends the piece
    # there and reads on from it; other DFA_SLOWs, the end of the text and ``stop`` are
    # dealt with by ``_dfa_settle``. (A piece is at least a byte long: there are never more
    # pieces than bytes read.)
    cdef const uint32_t* trans = t.dfa_trans
    cdef const uint32_t* pairs = t.dfa_pairs
    cdef const uint8_t* codes = t.dfa_codes
    cdef int shift = t.dfa_shift, pair_shift = t.dfa_pair_shift, code_shift = t.dfa_code_shift
    cdef Py_ssize_t* bounds = r.bounds
    cdef Py_ssize_t pos = r.pos, last = r.last, count = r.count, limit = r.limit, max_pieces = r.max_pieces, n = 1
    cdef Py_ssize_t first = r.first
    cdef uint32_t off = r.off, poff, e = 0
    cdef Py_ssize_t piece = r.piece, i
    cdef int lane
    cdef bint ascii2
    while pos < limit and count < max_pieces:
        # ASCII bytes by vector shuffles, or two a step, while it can, from two of them on (or
        # the last): a lone one between characters of more bytes (a space in Chinese text)
        # costs less as a character than as those loops' entry and exit
        ascii2 = s[pos] < 0x80 and (pos + 1 >= limit or s[pos + 1] < 0x80)
        if t.shuffle.rows != NULL and ascii2:
            # the state's lane, by where its piece started (here, a byte back, or before)
            i = pos - (bounds[2 * count - 1] if count > first else piece)
            lane = t.dfa_lane[(2 if i == 0 else 1 if i == 1 else 0) * t.dfa_n_states + (off >> shift)]
            if not lane:
                lane = t.dfa_lane[off >> shift]
            if lane:
                # the pieces before ``first`` are read in full: the shuffle loop writes their starts
                for i in range(first, count):
                    bounds[2 * i] = bounds[2 * i - 1] if i > first else piece
                if count > first:
                    piece = bounds[2 * count - 1]
                # (with probes, a failed piece of ``probe_reread`` bytes or more goes back here:
                # _dfa_retry then skips past the attempts the probes rule out, which the loop
                # would read)
                pos = shuffle_run(s, pos, limit, &t.shuffle, &lane, &piece, bounds, &count, max_pieces, &last,
                                  1 if _rev_on(r.rev) else min(r.reread, r.probe_reread))
                first = count
                off = t.dfa_lane_state[lane]
                if pos >= limit or count == max_pieces:
                    break
        elif pairs != NULL and ascii2:
            poff = (off >> shift) << pair_shift
            while pos + 1 < limit and count + 1 < max_pieces:  # a byte >= 0x80 makes PAIR_SLOW
                e = pairs[poff + ((<uint32_t>codes[s[pos]] << code_shift) | codes[s[pos + 1]])]
                if e & PAIR_SLOW:
                    break
                _take_pair(bounds, pos, e, &count, &last)
                poff = e & ~(<uint32_t>PAIR_FLAGS)
                pos += 2
            off = (poff >> pair_shift) << shift
            if pos >= limit or count == max_pieces:
                break
        e = trans[off + _dfa_class(t, s, pos, end, &n)]  # one character a step (as _dfa_char, kept
        if e & DFA_SLOW:                                   # here: its state stays in registers)
            if e & DFA_CUT or last <= (bounds[2 * count - 1] if count > first else piece) \
                    or pos - last >= r.reread:  # (a long way back: _dfa_settle keeps its states)
                r.stuck = True
                break
            bounds[2 * count + 1] = last  # the usual DFA_SLOW: back to the last match, here
            count += 1
            pos = last
            off = t.dfa_start[pos == bos]
            continue
        bounds[2 * count + 1] = pos
        count += e & DFA_CUT
        last = pos if e & DFA_MATCH else last
        off = e & ~(<uint32_t>DFA_FLAGS)
        pos += n
    r.pos = pos
    r.last = last
    r.count = count
    r.first = first
    r.piece = piece
    r.off = off
    r.e = e


cdef inline bint _dfa_halted(const DfaRun* r) noexcept nogil:
    """Whether the fast loop stopped for ``_dfa_settle`` to go on."""
    return r.stuck or r.pos >= r.limit or r.count >= r.max_pieces


cdef enum:
    STEP_ON = 0     # the reading took a character
    STEP_AGAIN = 1  # it went back to its last match: take the loop again
    STEP_HALT = 2   # it reached its limit or its room, or is stuck (DFA_SLOW, for _dfa_settle)


cdef inline int _dfa_char2(DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end, uint32_t restart,
                           Py_ssize_t* pos, Py_ssize_t* last, Py_ssize_t* count, uint32_t* off) noexcept nogil:
    # One character of reading ``r`` in ``_dfa_fast2``, where it could not take a pair;
    # ``pos``, ``last``, ``count`` and ``off`` (a pair-table row offset) are the loop's copies
    # of its fields. As ``_dfa_fast`` takes a character: the usual DFA_SLOW (no thread
    # left) goes back to the last match in the piece; any other stops the reading there.
    cdef Py_ssize_t n
    cdef int shift = t.dfa_shift, pair_shift = t.dfa_pair_shift
    cdef uint32_t e
    if pos[0] >= r.limit or count[0] >= r.max_pieces:
        return STEP_HALT
    e = t.dfa_trans[((off[0] >> pair_shift) << shift) + _dfa_class(t, s, pos[0], end, &n)]
    if e & DFA_SLOW:
        if e & DFA_CUT or last[0] <= (r.bounds[2 * count[0] - 1] if count[0] > r.first else r.piece) \
                or pos[0] - last[0] >= r.reread:
            r.stuck = True
            r.e = e
            return STEP_HALT
        r.bounds[2 * count[0] + 1] = last[0]  # back to the last match (as _dfa_fast)
        count[0] += 1
        pos[0] = last[0]
        off[0] = restart
        return STEP_AGAIN
    r.bounds[2 * count[0] + 1] = pos[0]
    count[0] += e & DFA_CUT
    last[0] = pos[0] if e & DFA_MATCH else last[0]
    off[0] = ((e & ~(<uint32_t>DFA_FLAGS)) >> shift) << pair_shift
    pos[0] += n
    return STEP_ON


cdef inline void _dfa_fast2(DfaRun* a, DfaRun* b, const Tables* t, const uint8_t* s, Py_ssize_t end) noexcept nogil:
    # ``_dfa_fast`` on two readings at once (``t.dfa_pairs`` not NULL), a step of each in
    # turn: each step's table read waits on the one before it in the same reading only,
    # so the CPU overlaps the two chains. The inner loop takes two bytes of each a step,
    # as many steps as both readings have bytes and room for (a step adds at most two
    # pieces), without other tests; a PAIR_SLOW (or too few bytes) goes one character at a
    # time in that reading. Stops when either reading halts (_dfa_halted). The states are
    # kept as pair-table row offsets, converted for a single step.
    cdef const uint32_t* pairs = t.dfa_pairs
    cdef const uint8_t* codes = t.dfa_codes
    cdef int shift = t.dfa_shift, pair_shift = t.dfa_pair_shift, code_shift = t.dfa_code_shift
    cdef Py_ssize_t* abounds = a.bounds
    cdef Py_ssize_t* bbounds = b.bounds
    cdef Py_ssize_t apos = a.pos, alast = a.last, acount = a.count, alimit = a.limit, amax = a.max_pieces
    cdef Py_ssize_t bpos = b.pos, blast = b.last, bcount = b.count, blimit = b.limit, bmax = b.max_pieces
    cdef uint32_t aoff = (a.off >> shift) << pair_shift, boff = (b.off >> shift) << pair_shift, ea, eb
    cdef uint32_t restart = (t.dfa_start[0] >> shift) << pair_shift  # neither reading starts at bos
    cdef Py_ssize_t steps
    cdef int step
    while True:
        # (a character of several bytes may have taken a reading past its limit)
        steps = max(min(min(alimit - apos, blimit - bpos), min(amax - acount, bmax - bcount)) >> 1, 0)
        ea = eb = 0
        while steps > 0:
            ea = pairs[aoff + ((<uint32_t>codes[s[apos]] << code_shift) | codes[s[apos + 1]])]
            eb = pairs[boff + ((<uint32_t>codes[s[bpos]] << code_shift) | codes[s[bpos + 1]])]
            if (ea | eb) & PAIR_SLOW:
                break
            _take_pair(abounds, apos, ea, &acount, &alast)
            aoff = ea & ~(<uint32_t>PAIR_FLAGS)
            apos += 2
            _take_pair(bbounds, bpos, eb, &bcount, &blast)
            boff = eb & ~(<uint32_t>PAIR_FLAGS)
            bpos += 2
            steps -= 1
        # one character in each reading that could not take a pair (none took one if
        # steps is 0: then both go a character)
        if steps == 0 or ea & PAIR_SLOW:
            step = _dfa_char2(a, t, s, end, restart, &apos, &alast, &acount, &aoff)
            if step == STEP_HALT:
                break
            if step == STEP_AGAIN:
                continue
        if steps == 0 or eb & PAIR_SLOW:
            step = _dfa_char2(b, t, s, end, restart, &bpos, &blast, &bcount, &boff)
            if step == STEP_HALT:
                break
            if step == STEP_AGAIN:
                continue
    a.pos = apos
    a.last = alast
    a.count = acount
    a.off = (aoff >> pair_shift) << shift
    b.pos = bpos
    b.last = blast
    b.count = bcount
    b.off = (boff >> pair_shift) << shift


cdef inline void _dfa_settle(DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end,
                             Py_ssize_t bos) noexcept nogil:
    # After the fast loop: the starts of the pieces it found, then DFA_SLOW at ``pos``, the
    # end of the text or ``stop``; then the reading is done or starts again at ``piece``.
    cdef Py_ssize_t* bounds = r.bounds
    cdef Py_ssize_t pos = r.pos, piece = r.piece, last = r.last, count = r.count, first = r.first, i, failed
    cdef Py_ssize_t stop = r.stop, max_pieces = r.max_pieces
    cdef uint32_t e
    _rev_at(r.rev, t, pos)
    for i in range(first, count):
        bounds[2 * i] = bounds[2 * i - 1] if i > first else piece
    if count > first:
        piece = bounds[2 * count - 1]
    if r.stuck:  # DFA_SLOW at pos
        if r.e & DFA_CUT:  # the piece ends here, and no piece starts with this character
            bounds[2 * count] = piece
            bounds[2 * count + 1] = pos
            count += 1
            if _rev_on(r.rev):
                piece = _rev_after(r.rev, t, s, pos, stop, end)
            else:
                piece = _dfa_gap(t, s, pos, stop, end)
        elif last > piece:  # back to the last match
            if pos - last >= r.reread and pos != r.guard_hi:  # (the fast loops leave long ones here)
                _dfa_review_guards(r)
                _dfa_record(r, t, s, end, bos, piece, last, pos)
            bounds[2 * count] = piece
            bounds[2 * count + 1] = last
            count += 1
            piece = last
        else:  # no match at piece
            failed = piece
            if not _rev_loose(r.rev, failed) and _rev_armed(&r.rev, r.home, t, r.begin):
                piece = _rev_after(r.rev, t, s, failed, stop, end)
            else:
                piece = _dfa_retry(t, s, end, bos, piece, pos, stop)
                _rev_tally(r.rev, failed, pos)
                # (an attempt that met the guard stops where it does; none to keep where the
                # attempts it rules out reach where it stopped)
                if pos != r.guard_hi and piece < pos:
                    _dfa_review_guards(r)
                    _dfa_record(r, t, s, end, bos, failed, failed, pos)
                if r.probe_reread <= pos - failed < r.reread:
                    _dfa_review_probes(r, failed, pos, piece)
    elif count == max_pieces or piece >= stop:
        pass
    elif pos >= end:
        e = t.dfa_eot[r.off >> t.dfa_shift]
        if e:
            last = end if e == 1 else end - 1
        if last > piece:
            bounds[2 * count] = piece
            bounds[2 * count + 1] = last
            count += 1
            piece = last
        elif not _rev_loose(r.rev, piece) and _rev_armed(&r.rev, r.home, t, r.begin):  # no match
            piece = _rev_after(r.rev, t, s, piece, stop, end)
        else:  # no match at piece, and none at the end: the attempts it covers fail too
            piece = _dfa_retry(t, s, end, bos, piece, pos, stop)
    elif pos >= stop:  # the last piece goes on past stop: read it again, to its end
        pos = _dfa_piece_end_at(t, s, piece, end, bos, &failed)
        if pos < 0 and _rev_on(r.rev):  # no match at piece: on to the next mark
            piece = _rev_after(r.rev, t, s, piece, stop, end)
        elif pos < 0:  # no match at piece: the attempts it covers fail too (up to where it
            piece = _dfa_retry(t, s, end, bos, piece, failed, stop)  # failed, past stop maybe)
        else:
            bounds[2 * count] = piece
            bounds[2 * count + 1] = pos
            count += 1
            piece = pos
    r.count = r.first = count
    r.piece = r.pos = piece
    r.last = last
    r.stuck = False
    r.done = count == max_pieces or piece >= stop
    r.off = t.dfa_start[piece == bos]


cdef inline void _dfa_read(DfaRun* r, const Tables* t, const uint8_t* s, Py_ssize_t end, Py_ssize_t bos) noexcept nogil:
    # Reading ``r`` on until it halts (_dfa_halted): by the guard while the guard lies ahead.
    if r.guard_hi >= r.pos:
        _dfa_guarded(r, t, s, end, bos)
    if not _dfa_halted(r):
        _dfa_fast(r, t, s, end, bos)


cdef Py_ssize_t dfa_pieces(const Tables* t, const uint8_t* s, Py_ssize_t start, Py_ssize_t stop,
                           Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds, Py_ssize_t max_pieces,
                           Py_ssize_t* next, RevMarks** home) noexcept nogil:
    cdef DfaRun r
    if t.dfa_held != NULL:
        return _dfa_held_pieces(t, s, start, stop, end, bos, bounds, max_pieces, next, home)
    _dfa_begin(&r, t, start, stop, end, bos, bounds, max_pieces, home)
    while not r.done:
        _dfa_read(&r, t, s, end, bos)
        _dfa_settle(&r, t, s, end, bos)
    _dfa_end(&r)
    next[0] = r.piece
    return r.count


cdef Py_ssize_t dfa_pieces_interleaved(const Tables* t, const uint8_t* s, Py_ssize_t start, Py_ssize_t stop,
                                       Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds, Py_ssize_t span,
                                       Py_ssize_t* next, RevMarks** home) noexcept nogil:
    # Reading A splits text[start:g] (g = start + span, moved to a character's first byte)
    # from where it truly starts; reading B splits text[g:start + 2 * span] as if a piece
    # started at g, interleaved with A (_dfa_fast2). Then A reads on, piece by piece, until
    # it starts a piece, or skips to a place, where B starts a piece: from such a place on,
    # the pieces depend on the text after it only (no lookbehind, and it is not ``bos``),
    # so B's pieces from there are A's. If A passes B's last piece start without that, B's
    # reading is dropped and A's pieces so far are returned.
    #
    # Each piece is at least a byte long: A's pieces (all starting before start + 2 * span)
    # fit in bounds[0 : 4 * span], B's (starting in [g, start + 2 * span)) in the span
    # after, and at most 2 * span come back.
    cdef DfaRun a, b
    cdef Py_ssize_t g = start + span, b_stop = start + 2 * span, j = 0, count, a_next, b_start
    cdef Py_ssize_t* b_bounds = bounds + 4 * span
    if not t.dfa_interleave or span < 8 or bos > start or stop - start < 2 * span:
        return dfa_pieces(t, s, start, stop, end, bos, bounds, 2 * span, next, home)
    while (s[g] & 0xC0) == 0x80 and g < start + span + 3:
        g += 1
    _dfa_begin(&a, t, start, g, end, bos, bounds, 2 * span, home)
    _dfa_begin(&b, t, g, b_stop, end, bos, b_bounds, span, home)
    while not a.done and not b.done:
        if a.guard_hi >= a.pos:  # (one reading at a time while a guard lies ahead of it)
            _dfa_guarded(&a, t, s, end, bos)
            if _dfa_halted(&a):
                _dfa_settle(&a, t, s, end, bos)
            continue
        if b.guard_hi >= b.pos:
            _dfa_guarded(&b, t, s, end, bos)
            if _dfa_halted(&b):
                _dfa_settle(&b, t, s, end, bos)
            continue
        _dfa_fast2(&a, &b, t, s, end)
        if _dfa_halted(&a):
            _dfa_settle(&a, t, s, end, bos)
        if _dfa_halted(&b):
            _dfa_settle(&b, t, s, end, bos)
    while not a.done:
        _dfa_read(&a, t, s, end, bos)
        _dfa_settle(&a, t, s, end, bos)
    while not b.done:
        _dfa_read(&b, t, s, end, bos)
        _dfa_settle(&b, t, s, end, bos)
    _dfa_end(&a)
    _dfa_end(&b)
    count = a.count
    a_next = a.piece
    while True:
        while j < b.count and b_bounds[2 * j] < a_next:
            j += 1
        if j == b.count:  # no place left where the two can meet
            next[0] = a_next
            return count
        b_start = b_bounds[2 * j]
        if b_start == a_next:  # they meet: B's pieces from j on are A's
            memmove(bounds + 2 * count, b_bounds + 2 * j, 2 * (b.count - j) * sizeof(Py_ssize_t))
            next[0] = b.piece
            return count + b.count - j
        count += dfa_pieces(t, s, a_next, b_start, end, bos, bounds + 2 * count, 2 * span - count, &a_next, home)
        if a_next < b_start:  # no room left (cannot happen: see above)
            next[0] = a_next
            return count


cdef Py_ssize_t split_pieces(const Tables* t, PieceReader* reader, Stack* stack, const uint8_t* text,
                             Py_ssize_t start, Py_ssize_t stop, Py_ssize_t end, Py_ssize_t bos, Py_ssize_t* bounds,
                             Py_ssize_t max_pieces, Py_ssize_t* next) except -1 nogil:
    cdef Py_ssize_t count = 0, j
    if dfa_splits(t):
        return dfa_pieces(t, text, start, stop, end, bos, bounds, max_pieces, next, NULL)
    arm_memo(stack, text, start, end)
    reader.fresh = False
    while start < stop and count < max_pieces:
        if reader.blocks:  # the rest of the block's pieces in one loop (next_piece_end reads the next block)
            count += blocks_drain(&reader.scan, text, end, &start, stop, bounds + 2 * count, max_pieces - count)
            if start >= stop or count == max_pieces:
                break
        j = next_piece_end(reader, t, stack, text, start, end, bos)
        if j < 0:  # a program matches nothing here (the hand-written matchers match everywhere)
            start += char_length(text, start, end)
        else:
            bounds[2 * count] = start
            bounds[2 * count + 1] = j
            count += 1
            start = j
    next[0] = start
    return count


cdef Py_ssize_t last_safe_cut(const Tables* t, const uint8_t* text, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    # A cut at p, between the characters x (before p) and y (at p), is safe when no attempt
    # to match reads y right after x: t.follow holds, for each set, the sets that can be
    # read right after it (lookaheads and $ included). Then every attempt that started
    # before p stops at y at the latest, so the pieces before p end at p or before it and
    # need only y in view; the pieces from p on do not look before p (the programs have no
    # lookbehind), and p > 0 is no string start for ^. So the text splits as a whole.
    # ``lo`` only bounds the cuts: it may fall inside a character (callers pass byte
    # offsets), so x is read from the text before it too (``text`` starts a character).
    # Two ASCII characters that were just found unsafe in that order are passed over without
    # their sets: a run of one byte (a file of zeros, a line of dashes) is read at memory speed.
    cdef Py_ssize_t p = hi - 1, q, n
    cdef uint64_t before, after, follow
    cdef uint8_t b
    cdef int pair, unsafe = -1
    while p > lo:
        b = text[p]
        if b < 0x80 and text[p - 1] < 0x80:
            pair = (text[p - 1] << 8) | b
            if pair == unsafe:
                p -= 1
                continue
            unsafe = pair  # (if it is safe, p is returned below)
        if (b & 0xC0) != 0x80 and p + (4 if b >= 0xF0 else 3 if b >= 0xE0 else 2 if b >= 0xC0 else 1) <= hi:
            after = _sets_at(t, text, p, hi, &n)
            q = _char_before(text, 0, p)
            before = _sets_at(t, text, q, p, &n)
            follow = 0
            while before:
                follow |= t.follow[ctz64(before)]
                before &= before - 1
            if (follow & after) == 0:
                return p
        p -= 1
    return -1


# ------------------------------------------------------------------ the program object

cdef str NOT_A_DFA = "not a DFA from bpetrain.splitting._compiler.compile_program"


cdef uint32_t _largest(const uint32_t* table, Py_ssize_t n) noexcept nogil:
    cdef uint32_t largest = 0
    cdef Py_ssize_t i
    for i in range(n):
        largest = max(largest, table[i])
    return largest


cdef const uint32_t* _pair_rows(dict arrays, str name, Py_ssize_t n_rows, dict owned, int* shift,
                                uint32_t* largest, const uint8_t** codes_out) except NULL:
    # A DFA's table ``arrays[name]`` on two ASCII bytes at once (the forward pairs, or the
    # reverse ones), uint32 of shape (n_rows, size * size), read by ``dfa_codes`` (uint8,
    # shape (256,), each < size; size a power of two >= 8): its first entry, its buffers kept
    # alive in ``owned``; ``shift`` log2(size), ``largest`` its largest entry (for the caller to
    # check the rows it names), ``codes_out`` the codes.
    cdef const uint32_t[:, ::1] rows
    cdef const uint8_t[::1] codes
    cdef Py_ssize_t size, i
    try:
        rows, codes = arrays[name], arrays["dfa_codes"]
    except (ValueError, TypeError):
        raise ValueError(NOT_A_DFA) from None
    size = int(round(rows.shape[1] ** 0.5))
    if rows.shape[0] != n_rows or rows.shape[1] != size * size or size & (size - 1) or size < 8 \
            or codes.shape[0] != 256 or any(codes[i] >= size for i in range(256)):
        raise ValueError(NOT_A_DFA)
    owned[name], owned["dfa_codes"] = arrays[name], arrays["dfa_codes"]
    shift[0] = size.bit_length() - 1
    largest[0] = _largest(&rows[0, 0], rows.shape[0] * rows.shape[1])
    codes_out[0] = &codes[0]
    return &rows[0, 0]


cdef int _read_reverse(Tables* t, dict arrays, Py_ssize_t width, reverse, dict owned) except -1:
    # The reverse automaton (``dfa_rev``, ``dfa_rev_start``; _dfa._reverse_table) and its
    # table on two ASCII bytes at once (``dfa_rev_pairs``) into ``t``, unless ``reverse`` is
    # False or the program has none (``t``'s are then left NULL, as Program.__cinit__ set them).
    cdef const uint32_t[::1] rev_start
    cdef const uint32_t[:, ::1] rev
    cdef const uint32_t* pairs
    cdef uint32_t largest
    cdef int shift
    if reverse is False or not len(arrays.get("dfa_rev", ())):
        return 0
    try:
        rev, rev_start = arrays["dfa_rev"], arrays["dfa_rev_start"]
    except (ValueError, TypeError):
        raise ValueError(NOT_A_DFA) from None
    largest = _largest(&rev[0, 0], rev.shape[0] * rev.shape[1])
    if rev.shape[1] != width or rev_start.shape[0] != 2 or largest // width >= rev.shape[0] \
            or max(rev_start[0], rev_start[1]) // width >= rev.shape[0]:
        raise ValueError(NOT_A_DFA)
    owned.update(dfa_rev=arrays["dfa_rev"], dfa_rev_start=arrays["dfa_rev_start"])
    t.dfa_rev = &rev[0, 0]
    t.dfa_rev_start[0] = rev_start[0]
    t.dfa_rev_start[1] = rev_start[1]
    t.dfa_rev_mode = REV_ALWAYS if reverse else REV_AUTO
    if len(arrays.get("dfa_rev_pairs", ())):
        pairs = _pair_rows(arrays, "dfa_rev_pairs", rev.shape[0], owned, &shift, &largest, &t.dfa_rev_codes)
        if largest >> (2 * shift) >= <uint32_t>rev.shape[0]:
            raise ValueError(NOT_A_DFA)
        t.dfa_rev_pairs = pairs
        t.dfa_rev_code_shift = shift
    return 0


cdef const uint8_t* _bit_rows(dict arrays, str name, Py_ssize_t n_rows, Py_ssize_t row_bytes,
                              dict owned) except? NULL:
    # A DFA's optional bit table ``arrays[name]`` (the cover or the dominance bits) of
    # ``n_rows`` rows of ``row_bytes`` bytes, its buffer kept alive in ``owned``; NULL where
    # the program has none (one compiled before it was).
    cdef const uint8_t[:, ::1] rows
    if not len(arrays.get(name, ())):
        return NULL
    try:
        rows = arrays[name]
    except (ValueError, TypeError):
        raise ValueError(NOT_A_DFA) from None
    if rows.shape[0] != n_rows or rows.shape[1] != row_bytes:
        raise ValueError(NOT_A_DFA)
    owned[name] = arrays[name]
    return &rows[0, 0]


cdef class Program:
    """A split pattern compiled for the matcher (:func:`bpetrain.splitting._compiler.compile_program`).

    Parameters
    ----------
    pat_str : str
        The pattern (kept for ``repr`` and errors).
    arrays : dict of numpy.ndarray
        What :func:`~bpetrain.splitting._compiler.compile_program` returns.
    native : int
        The id of a hand-written matcher in :mod:`bpetrain.splitting._blocks` that splits exactly
        as the program does, faster (``bpetrain.splitting.pattern`` decides); 0: none. The
        program's tables still give the safe cuts. Its ASCII text is read 64 bytes at a
        time (``_ascii_blocks.h``). Where ``arrays`` has ``like_without`` (below), the pattern
        cuts as the matcher's only on the other characters: its rules read the blocks, the
        program the rest.
    blocks : int
        Without a hand-written matcher: the rules by which ``_ascii_blocks.h`` reads the
        pattern's ASCII text 64 bytes at a time, where they give exactly the program's
        pieces (one of ``_blocks.RULES``, ``bpetrain.splitting.pattern`` decides); 0: none.
        The program finds the other pieces. Where ``arrays`` has ``like_without`` (uint32,
        ranges of code points as first, last, ...: :func:`bpetrain.splitting._dfa.rules_alphabet`),
        the program cuts as the rules only on the characters the blocks read but those, which
        they leave to the program (``_ascii_blocks.h``: ``BPETRAIN_BLOCKS_OWN_CODES``).
    unicode : bpetrain.splitting.unicode.UnicodeTable or None
        The Unicode table the program's classes were compiled with (None: the ``regex``
        module's), which a hand-written matcher must use too; if it cannot
        (``_blocks.ensure_tables`` gives -1), the program splits alone.
    dfa : bool, default True
        Split with the program's DFA (``arrays["dfa_trans"]``, :mod:`bpetrain.splitting._dfa`)
        where it has one and no hand-written matcher takes over; False: the backtracking
        program (tests and benchmarks compare the two).
    shuffle : bool or str, default True
        Where the DFA splits, read ASCII text by vector shuffles (``arrays["shuffle_rows"]``,
        ``_dfa_shuffle.h``) where the pattern and the CPU allow, by the widest code of
        :func:`shuffle_variants`; a name of one of them: by that code (tests and benchmarks
        run each); False: by the DFA's own tables alone (tests compare them).
    reverse : bool or None, default None
        Where the DFA splits and has a reverse automaton (``arrays["dfa_rev"]``,
        :func:`bpetrain.splitting._dfa._reverse_table`): None, go from a failed attempt
        straight to the next place where a match can start, marked by reading the text
        backwards, once a stretch of text's failed attempts have cost more than the marks
        would, and over a whole text (``split`` with ``span``, ``n_pieces``, training's
        counting) from its second 8 KB on, where that took less time than the cover table
        and the guards (timed 8 KB at a time, the other way tried now and then:
        ``_rev_steer``); True: from a text's first failed attempt on; False: never (tests
        compare the three, and time the reading by a clock that goes on by chance:
        ``_steer_by_chance``).

    Attributes
    ----------
    dfa_reason : str
        Why the DFA does not split ("" when it does).
    shuffle_reason : str
        Why the DFA does not read ASCII text by vector shuffles ("" when it does).
    shuffle_variant : str
        The code that reads it by vector shuffles, a name of :data:`SHUFFLE_VARIANTS` ("" when
        none does).
    blocks_without : tuple of (int, int)
        The code points the blocks leave to the program though they could read them
        (``arrays["like_without"]``), as ranges (first, last), both in; empty when none.

    Raises
    ------
    ValueError
        If ``shuffle`` names a code this CPU does not run, or the arrays are not a program.
    TypeError
        If ``shuffle`` is neither a bool nor a str, or ``reverse`` neither a bool nor None.
    """

    def __cinit__(self, str pat_str not None, dict arrays not None, int native=0, int blocks=0, unicode=None,
                  *, bint dfa=True, shuffle=True, reverse=None):
        # The arrays are read through typed memoryviews (numpy arrays or the memoryviews of
        # _charsets.read_arrays alike), so that a program read back from the cache at
        # start-up needs no numpy; ``owned`` keeps the buffers alive.
        cdef const uint64_t[::1] ascii_mask, ascii_cand, sig_mask, sig_cand, follow
        cdef const uint16_t[::1] stage1, stage2, dfa_class
        cdef const uint32_t[:, ::1] trans
        cdef const uint8_t[::1] eot
        cdef const uint8_t[:, ::1] held
        cdef const int64_t* rows
        cdef Py_ssize_t n_alternatives, i, n_states, width
        cdef uint32_t largest
        cdef int shift
        cdef bint bad
        cdef int code
        if reverse is not None and not isinstance(reverse, bool):
            raise TypeError(f"reverse must be None, True or False, got {type(reverse).__name__}")
        if isinstance(shuffle, str):
            if shuffle not in shuffle_variants():
                raise ValueError(f"shuffle={shuffle!r} is not one of this CPU's shuffle codes: {shuffle_variants()} "
                                 f"(pass True for the widest, False for none)")
            code = SHUFFLE_VARIANTS[shuffle]
        elif isinstance(shuffle, bool):
            code = SHUFFLE_VARIANTS[shuffle_variants()[0]] if shuffle and shuffle_variants() else 0
        else:
            raise TypeError(f"shuffle must be a bool or one of {list(SHUFFLE_VARIANTS)}, got {type(shuffle).__name__}")
        alternatives = arrays["alternatives"]
        try:
            ascii_mask, ascii_cand = arrays["ascii_mask"], arrays["ascii_cand"]
            sig_mask, sig_cand, follow = arrays["sig_mask"], arrays["sig_cand"], arrays["follow"]
            stage1, stage2 = arrays["stage1"], arrays["stage2"]
        except (ValueError, TypeError):
            raise ValueError("not a program from bpetrain.splitting._compiler.compile_program") from None
        if follow.shape[0] != 64 or ascii_mask.shape[0] != 128 or ascii_cand.shape[0] != 128 \
                or len(alternatives) > 64 or not len(sig_mask) or not len(stage1) or not len(stage2):
            raise ValueError("not a program from bpetrain.splitting._compiler.compile_program")
        owned = {name: arrays[name] for name in
                 ("ascii_mask", "ascii_cand", "stage1", "stage2", "sig_mask", "sig_cand", "follow", "code")}
        self._arrays = owned
        self.pat_str = pat_str
        self.code = _instructions(arrays["code"])
        self.steps = _instructions(arrays["steps"])
        _rows(alternatives, 9, &rows, &n_alternatives)
        self.alternatives = <Alternative*>PyMem_Malloc(max(n_alternatives, 1) * sizeof(Alternative))
        if self.alternatives == NULL:
            raise MemoryError()
        memset(self.alternatives, 0, max(n_alternatives, 1) * sizeof(Alternative))
        for i in range(n_alternatives):
            self.alternatives[i].tail_mask = <uint64_t>rows[9 * i + 8]
            self.alternatives[i].prefix = <uint64_t>rows[9 * i + 6]
            self.alternatives[i].after = <uint64_t>rows[9 * i + 7]
            self.alternatives[i].start = <int32_t>rows[9 * i]
            self.alternatives[i].first_step = <int32_t>rows[9 * i + 1]
            self.alternatives[i].n_steps = <int32_t>rows[9 * i + 2]
            self.alternatives[i].tail = <int32_t>rows[9 * i + 3]
            self.alternatives[i].guarded = <int32_t>rows[9 * i + 4]
            self.alternatives[i].linear = <int32_t>rows[9 * i + 5]
        self.tables.code = self.code
        self.tables.steps = self.steps
        self.tables.alternatives = self.alternatives
        self.tables.ascii_mask = &ascii_mask[0]
        self.tables.ascii_cand = &ascii_cand[0]
        self.tables.stage1 = &stage1[0]
        self.tables.stage2 = &stage2[0]
        self.tables.sig_mask = &sig_mask[0]
        self.tables.sig_cand = &sig_cand[0]
        self.tables.follow = &follow[0]
        if native and "like_without" in arrays:  # the matcher reads every character: its rules, the blocks'
            native, blocks = 0, blocks_of(native)
        if blocks and blocks not in _blocks.RULES:
            raise ValueError(f"blocks must be 0 or one of _blocks.RULES (_blocks.cl100k_rules, o200k_rules, gpt2_rules), "
                             f"got {blocks}")
        self.tables.unicode = 0
        if native or blocks:
            self.tables.unicode = _blocks.ensure_tables(unicode)
            if self.tables.unicode < 0:
                self.tables.unicode = native = blocks = 0
        self.tables.native = native
        self.tables.blocks = blocks_of(native) if native else blocks
        self.tables.codes = char_codes(self.tables.unicode, self.tables.blocks)
        self.blocks_without = ()
        if blocks and "like_without" in arrays:  # the rules hold only on the blocks' characters but these
            without = list(arrays["like_without"])
            self.blocks_without = tuple(zip(without[::2], without[1::2]))
            owned["codes"] = _blocks.own_codes(self.tables.unicode, blocks, self.blocks_without)
            self.tables.codes = <const uint8_t*><const char*>owned["codes"]
            self.tables.blocks |= BLOCKS_OWN_CODES
        self.dfa_reason = bytes(arrays["dfa_reason"]).decode() if "dfa_reason" in arrays else "no DFA compiled"
        self.tables.dfa_trans = NULL
        self.tables.dfa_rev = NULL
        self.tables.dfa_rev_pairs = NULL
        self.tables.dfa_rev_mode = 0
        self.tables.dfa_probe = NULL
        self.tables.shuffle.rows = NULL
        if not self.dfa_reason and not dfa:
            self.dfa_reason = "not asked for"
        if not self.dfa_reason:
            try:
                trans, dfa_class, eot = arrays["dfa_trans"], arrays["dfa_class"], arrays["dfa_eot"]
            except (ValueError, TypeError):
                raise ValueError(NOT_A_DFA) from None
            start = arrays["dfa_start"]
            n_states, width = trans.shape[0], trans.shape[1]
            largest = _largest(&trans[0, 0], n_states * width)
            bad = any(dfa_class[i] >= width for i in range(dfa_class.shape[0]))
            if bad or not n_states or width & (width - 1) or dfa_class.shape[0] != 128 or eot.shape[0] != n_states \
                    or len(start) != 2 or not all(0 <= int(x) // width < n_states for x in start) \
                    or largest // width >= n_states or len(sig_mask) > width:
                raise ValueError(NOT_A_DFA)
            owned.update(dfa_trans=arrays["dfa_trans"], dfa_class=arrays["dfa_class"], dfa_eot=arrays["dfa_eot"])
            self.tables.dfa_trans = &trans[0, 0]
            self.tables.dfa_class = &dfa_class[0]
            self.tables.dfa_eot = &eot[0]
            self.tables.dfa_start[0] = int(start[0])
            self.tables.dfa_start[1] = int(start[1])
            self.tables.dfa_shift = width.bit_length() - 1
            self.tables.dfa_held = NULL
            if "dfa_held" in arrays:
                held = arrays["dfa_held"]
                if held.shape[0] != n_states or held.shape[1] != width or any(eot[i] > 3 for i in range(n_states)):
                    raise ValueError(NOT_A_DFA)
                owned.update(dfa_held=held)
                self.tables.dfa_held = &held[0, 0]
            elif any(eot[i] > 2 for i in range(n_states)):
                raise ValueError(NOT_A_DFA)
            self.tables.dfa_pairs = NULL
            self.tables.dfa_interleave = False
            self.tables.dfa_cover = _bit_rows(arrays, "dfa_cover", n_states, width // 8, owned)
            self.tables.dfa_dominate_row = (n_states + 7) // 8
            self.tables.dfa_dominate = _bit_rows(arrays, "dfa_dominate", n_states, self.tables.dfa_dominate_row,
                                                 owned)
            self._read_probes(n_states, width)
            _read_reverse(&self.tables, arrays, width, reverse, owned)
            if len(arrays["dfa_pairs"]):
                self.tables.dfa_pairs = _pair_rows(arrays, "dfa_pairs", n_states, owned, &shift, &largest,
                                                   &self.tables.dfa_codes)
                if largest >> 5 >= n_states << shift:
                    raise ValueError(NOT_A_DFA)
                self.tables.dfa_code_shift = shift
                self.tables.dfa_pair_shift = 2 * shift
                # Two readings pay where the loop runs long: not where ASCII text has gaps that
                # no piece covers (every one stops the loop), as ``bloom``'s and ``falcon``'s
                # whitespace (benchmarks/README.md, Splitting).
                self.tables.dfa_interleave = not any(
                    trans[int(start[0]) // width, dfa_class[i]] & 4 for i in range(128))

            self.shuffle_reason = bytes(arrays["shuffle_reason"]).decode() if "shuffle_reason" in arrays \
                else "no shuffle table compiled"
            if not self.shuffle_reason and shuffle is False:
                self.shuffle_reason = "not asked for"
            if not self.shuffle_reason and not code:
                self.shuffle_reason = "this CPU (or build) has neither AVX-512 VBMI nor AVX2"
            if not self.shuffle_reason:
                self._read_shuffle(arrays, n_states, width, owned, code)
        else:
            self.shuffle_reason = self.dfa_reason
        self.shuffle_variant = next((name for name, c in SHUFFLE_VARIANTS.items()
                                     if self.tables.shuffle.rows != NULL and c == self.tables.shuffle.code), "")

    cdef int _read_shuffle(self, arrays, Py_ssize_t n_states, Py_ssize_t width, dict owned, int code) except -1:
        """Point ``self.tables.shuffle`` at the shuffle table of ``arrays``
        (:func:`bpetrain.splitting._dfa.shuffle_table`), read through typed memoryviews, as
        the DFA's arrays are, after checking that every lane and row it names exists, and
        prepared for the code ``code`` (``SHUFFLE_VARIANTS``) to read."""
        cdef const uint8_t[:, ::1] rows, pairs, lanes
        cdef const uint8_t[::1] codes, special
        cdef const uint32_t[::1] lane_state
        cdef Py_ssize_t i, j, n_rows
        cdef int n_lanes = 1
        cdef bint bad, has_pairs
        try:
            rows, lanes = arrays["shuffle_rows"], arrays["shuffle_lane"]
            has_pairs = len(arrays["shuffle_pairs"]) > 0  # none: stored with shape (0,) (_charsets.read_arrays)
            if has_pairs:
                pairs = arrays["shuffle_pairs"]
            codes, special = arrays["shuffle_codes"], arrays["shuffle_special"]
            lane_state = arrays["shuffle_state"]
        except (KeyError, ValueError, TypeError):
            raise ValueError("not a shuffle table from bpetrain.splitting._compiler.compile_program") from None
        n_rows = rows.shape[0]
        bad = (not n_rows or rows.shape[1] != 64 or codes.shape[0] != 256 or lanes.shape[0] != 3
               or lanes.shape[1] != n_states or lane_state.shape[0] != 64 or special.shape[0] != 5
               or (has_pairs and (pairs.shape[0] != n_rows * n_rows or pairs.shape[1] != 64)))
        for i in range(256):
            bad = bad or codes[i] >= n_rows
        for i in range(3 * n_states):
            bad = bad or (&lanes[0, 0])[i] >= 64
            n_lanes = max(n_lanes, (&lanes[0, 0])[i] + 1)
        for i in range(64):
            bad = bad or lane_state[i] // width >= n_states
        for i in range(5):
            bad = bad or special[i] >= 64
            n_lanes = max(n_lanes, special[i] + 1)
        for i in range(n_rows * 64):  # the lanes a step reaches (a pair's too: the second of two steps)
            n_lanes = max(n_lanes, ((&rows[0, 0])[i] & 63) + 1)
        if bad:
            raise ValueError("not a shuffle table from bpetrain.splitting._compiler.compile_program")
        owned.update(shuffle_lane=arrays["shuffle_lane"], shuffle_state=arrays["shuffle_state"])
        # The rows and pairs on 64-byte lines, so that no step's 64-byte load spans two (the
        # arrays read back from the cache lie anywhere in its buffer), then each byte's
        # offset of its row in them and, as the first of two bytes, in the pairs.
        cdef Py_ssize_t n_pair_bytes = pairs.shape[0] * 64 if has_pairs else 0
        PyMem_Free(self.shuffle_memory)
        self.shuffle_memory = PyMem_Malloc(n_rows * 64 + n_pair_bytes + 256 * (sizeof(uint16_t) + sizeof(uint32_t))
                                           + 256 * sizeof(uint64_t) + n_rows * 64 + 63)
        if self.shuffle_memory == NULL:
            raise MemoryError()
        cdef uint8_t* lines = <uint8_t*>((<uintptr_t>self.shuffle_memory + 63) & ~(<uintptr_t>63))
        cdef uint16_t* offsets = <uint16_t*>(lines + n_rows * 64 + n_pair_bytes)
        cdef uint32_t* pair_offsets = <uint32_t*>(offsets + 256)
        cdef uint64_t* cover = <uint64_t*>(pair_offsets + 256)
        cdef uint8_t* unmerged = <uint8_t*>(cover + 256)  # the rows before pshufb merges lanes (n_rows * 64)
        cdef int n_merged = n_lanes
        memcpy(lines, &rows[0, 0], n_rows * 64)
        if has_pairs:
            memcpy(lines + n_rows * 64, &pairs[0, 0], n_pair_bytes)
        self.tables.shuffle.restart = special[0]
        self.tables.shuffle.gap = special[1]
        self.tables.shuffle.failed_gap = special[2]
        self.tables.shuffle.back = special[3]
        self.tables.shuffle.back_failed = special[4]
        if code == SHUFFLE_VARIANTS["pshufb"]:  # lanes no ASCII text tells apart, merged where pshufb gains by it
            n_merged = shuffle_merge(&self.tables.shuffle, lines, n_rows, n_pair_bytes // 64, n_lanes, unmerged)
        # pshufb reads the quarters of a row that hold lanes 1 to n_merged - 1, 16 each, in the code that
        # shuffle_prepare picks by their number (_dfa_shuffle.h)
        self.tables.shuffle.code = code
        shuffle_prepare(&self.tables.shuffle, lines, n_rows + n_pair_bytes // 64, n_merged)
        for i in range(256):
            offsets[i] = <uint16_t>(codes[i] * 64)
            pair_offsets[i] = <uint32_t>(codes[i] * n_rows * 64)
        self.tables.shuffle.rows = lines
        self.tables.shuffle.offsets = offsets
        self.tables.shuffle.pairs = lines + n_rows * 64 if has_pairs else NULL
        self.tables.shuffle.pair_offsets = pair_offsets
        # each ASCII byte's lanes whose failed attempt through it fails the one from it too
        self.tables.shuffle.cover = NULL
        if self.tables.dfa_cover != NULL:
            for i in range(256):
                cover[i] = 0
                for j in range(1, 64 if i < 0x80 else 1):
                    if _dfa_covers(&self.tables, lane_state[j], self.tables.dfa_class[i]):
                        cover[i] |= (<uint64_t>1) << j
            if code == SHUFFLE_VARIANTS["pshufb"]:
                shuffle_merge_cover(&self.tables.shuffle, cover, n_lanes)
            self.tables.shuffle.cover = cover
        self.tables.dfa_lane = &lanes[0, 0]
        self.tables.dfa_n_states = n_states
        self.tables.dfa_lane_state = &lane_state[0]
        # one reading: a step does not wait on a load, so a second reading gains nothing
        self.tables.dfa_interleave = False
        return 0

    cdef int _read_probes(self, Py_ssize_t n_states, Py_ssize_t width) except -1:
        """Set ``self.tables.dfa_probe`` (and the shuffle table's) to the DFA's probes
        (_dfa_probe.h), or NULL where no ASCII byte has one: for each class of a first byte,
        the states an attempt can be in a character further on each time (at most
        PROBE_STATES of them), following the ASCII bytes that keep a thread without ending
        a match or a piece or keep or commit a held one (_held_at), and the ASCII bytes those
        states take, until one can end a match or a piece (or PROBE_DEPTH characters on). Its probes, two characters on or more: the
        smallest of those sets of bytes (at most PROBE_BYTES; the nearest of equal ones), and
        the smallest of the others (the farthest of equal ones); the set one character on is
        ``next``."""
        cdef const uint32_t* trans = self.tables.dfa_trans
        cdef const uint8_t* held = self.tables.dfa_held
        cdef const uint16_t* cls = self.tables.dfa_class
        cdef int shift = self.tables.dfa_shift
        cdef uint32_t e, x
        cdef Py_ssize_t c0, c, b, d, i, n_cur, n_next, size, found = 0
        cdef bint flagged
        cdef uint8_t used[256]
        cdef uint8_t allowed[256]
        cdef Py_ssize_t sizes[PROBE_DEPTH + 1]  # a distance's set of bytes: its size (none: more than PROBE_BYTES)
        cdef uint8_t sets[PROBE_DEPTH + 1][16]  # and its bytes, a bit each
        cdef uint8_t first_next[16]  # the bytes one character on
        cdef Py_ssize_t near, far
        PyMem_Free(self.probe_memory)
        self.probe_memory = NULL
        self.tables.dfa_probe = NULL
        if width > 256:
            return 0
        cdef probe_tables* p = <probe_tables*>PyMem_Malloc(sizeof(probe_tables))
        cdef uint32_t* states = <uint32_t*>PyMem_Malloc(2 * (PROBE_STATES + 1) * sizeof(uint32_t))
        cdef int32_t* seen = <int32_t*>PyMem_Malloc(n_states * sizeof(int32_t))
        if p == NULL or states == NULL or seen == NULL:
            PyMem_Free(p)
            PyMem_Free(states)
            PyMem_Free(seen)
            raise MemoryError()
        memset(p, 0, sizeof(probe_tables))
        memset(used, 0, sizeof(used))
        for b in range(128):
            used[cls[b]] = 1
        for i in range(n_states):
            seen[i] = -1
        for c0 in range(width):
            if not used[c0]:
                continue
            e = trans[self.tables.dfa_start[0] + c0]
            for d in range(PROBE_DEPTH + 1):
                sizes[d] = PROBE_BYTES + 1
            memset(first_next, 0xFF, 16)
            if not e & (DFA_CUT | DFA_MATCH) and not e & DFA_SLOW and not _held_at(held, self.tables.dfa_start[0] + c0):
                states[0] = e & ~(<uint32_t>DFA_FLAGS)
                n_cur = 1
                for d in range(1, PROBE_DEPTH + 1):
                    memset(allowed, 0, sizeof(allowed))
                    flagged = False
                    n_next = 0
                    for i in range(n_cur):
                        for c in range(width):
                            if not used[c]:
                                continue
                            e = trans[states[i] + c]
                            if e & (DFA_CUT | DFA_MATCH) or _held_at(held, states[i] + c):
                                allowed[c] = 1
                                flagged = True
                            elif not e & DFA_SLOW:
                                allowed[c] = 1
                                x = e & ~(<uint32_t>DFA_FLAGS)
                                if seen[x >> shift] != c0 * (PROBE_DEPTH + 1) + d and n_next <= PROBE_STATES:
                                    seen[x >> shift] = c0 * (PROBE_DEPTH + 1) + d
                                    states[PROBE_STATES + 1 + n_next] = x
                                    n_next += 1
                    size = 0
                    for b in range(128):
                        size += allowed[cls[b]]
                    if d == 1:
                        memset(first_next, 0, 16)
                        for b in range(128):
                            if allowed[cls[b]]:
                                first_next[b >> 3] |= 1 << (b & 7)
                    elif size <= PROBE_BYTES:
                        sizes[d] = size
                        memset(sets[d], 0, 16)
                        for b in range(128):
                            if allowed[cls[b]]:
                                sets[d][b >> 3] |= 1 << (b & 7)
                    if flagged or n_next == 0 or n_next > PROBE_STATES:
                        break
                    memcpy(states, states + PROBE_STATES + 1, n_next * sizeof(uint32_t))
                    n_cur = n_next
            # the smallest set (the nearest of equal ones), then the smallest of the others (the
            # farthest of equal ones: where an attempt reads a run, the farther rules out more)
            near = far = 0
            for d in range(2, PROBE_DEPTH + 1):
                if sizes[d] < sizes[near]:
                    near = d
            for d in range(2, PROBE_DEPTH + 1):
                if d != near and sizes[d] <= min(sizes[far], PROBE_BYTES):
                    far = d
            e = trans[self.tables.dfa_start[0] + c0]
            for b in range(128):
                if cls[b] != c0:
                    continue
                p.start[b] = not (e & DFA_SLOW) or (e & (DFA_CUT | DFA_MATCH)) != 0 \
                    or _held_at(held, self.tables.dfa_start[0] + c0)
                memcpy(p.next[b], first_next, 16)
                if near:
                    p.depth[b][0] = near
                    memcpy(p.sets[b][0], sets[near], 16)
                    found += 1
                if near and far:
                    p.depth[b][1] = far
                    memcpy(p.sets[b][1], sets[far], 16)
        PyMem_Free(states)
        PyMem_Free(seen)
        if not found:
            PyMem_Free(p)
            return 0
        probe_prepare_blocks(p)
        self.probe_memory = p
        self.tables.dfa_probe = p
        return 0

    def __dealloc__(self):
        PyMem_Free(self.code)
        PyMem_Free(self.steps)
        PyMem_Free(self.alternatives)
        PyMem_Free(self.shuffle_memory)
        PyMem_Free(self.probe_memory)

    def __repr__(self):
        return f"<Program {self.pat_str!r}: {len(self._arrays['code'])} instructions>"

    @property
    def has_dfa(self) -> bool:
        """Whether the DFA splits (else the program, or a hand-written matcher; ``dfa_reason`` says why)."""
        return self.tables.dfa_trans != NULL

    def _py_probes(self):
        """The DFA's probes (_dfa_probe.h), for tests: ``{byte: ((distance, bytes), ...)}``
        for each ASCII first byte that has one (the bytes an attempt can read that many
        characters on, as a ``bytes`` of them), or None where there are none."""
        cdef const probe_tables* p = self.tables.dfa_probe
        if p == NULL:
            return None
        return {b: tuple((p.depth[b][k], bytes(c for c in range(128) if (p.sets[b][k][c >> 3] >> (c & 7)) & 1))
                         for k in range(2) if p.depth[b][k])
                for b in range(128) if p.depth[b][0]}

    def _py_probe_blocks(self) -> int:
        """For tests: the distance of the block probe (_dfa_probe.h,
        bpetrain_probe_prepare_blocks), 0 where there is none."""
        return self.tables.dfa_probe.vdist if self.tables.dfa_probe != NULL else 0

    def _py_probe_reread(self, data):
        """For tests: the shortest failed attempt that the shuffle loop leaves to the probes
        (``probe_reread``, _dfa_review_probes) after one reading of the DFA over all of
        ``data`` (UTF-8 bytes; 2 where the probes paid throughout), or None without probes."""
        cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
        cdef Py_ssize_t n = len(data)
        cdef Py_ssize_t* bounds
        cdef DfaRun r
        if self.tables.dfa_probe == NULL:
            return None
        bounds = <Py_ssize_t*>PyMem_Malloc((2 * n + 2) * sizeof(Py_ssize_t))
        if bounds == NULL:
            raise MemoryError()
        with nogil:
            _dfa_begin(&r, &self.tables, 0, n, n, 0, bounds, n, NULL)
            while not r.done:
                _dfa_read(&r, &self.tables, &view[0], n, 0)
                _dfa_settle(&r, &self.tables, &view[0], n, 0)
            _dfa_end(&r)
        PyMem_Free(bounds)
        return r.probe_reread

    @property
    def native(self) -> int:
        """The hand-written matcher used instead of the program (0: none)."""
        return self.tables.native

    @property
    def blocks(self) -> int:
        """The rules that read the pattern's ASCII text 64 bytes at a time (0: none)."""
        return self.tables.blocks & ~BLOCKS_OWN_CODES

    def split(self, data, stop=None, *, bint at_start=True, Py_ssize_t span=DFA_SPAN):
        """The pieces of UTF-8 ``data`` (bytes-like) as ``bytes``, as ``regex.finditer`` gives them.

        Pieces that start before ``stop`` (default: the end) are returned; the text after
        ``stop`` is context only. ``at_start``: ``data`` starts the string (``^``). ``span``:
        where the DFA splits, the bytes each of its two interleaved readings covers
        (:c:func:`dfa_pieces_interleaved`; 0: one reading; tests give small spans to make
        the readings meet often).
        """
        cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
        cdef Py_ssize_t n = len(data), i = 0, k, found, bos = 0 if at_start else -1
        cdef Py_ssize_t last = n if stop is None else stop
        cdef Py_ssize_t* bounds
        cdef bint interleave
        cdef Stack stack = new_stack()
        cdef RevMarks* rev = NULL
        cdef PieceReader reader
        if not 0 <= last <= n:
            raise ValueError(f"stop={stop} is outside the data (0..{n})")
        if span < 0:
            raise ValueError(f"span must be >= 0, got {span}")
        raw = bytes(data)
        pieces = []
        interleave = dfa_splits(&self.tables) and span > 0
        bounds = <Py_ssize_t*>PyMem_Malloc((6 * span if interleave else 128) * sizeof(Py_ssize_t))
        if bounds == NULL:
            raise MemoryError()
        start_reading(&reader, &self.tables, bos)
        try:
            while i < last:
                if interleave:
                    found = dfa_pieces_interleaved(&self.tables, &view[0], i, last, n, bos, bounds, span, &i, &rev)
                else:
                    found = split_pieces(&self.tables, &reader, &stack, &view[0], i, last, n, bos, bounds, 64, &i)
                for k in range(found):
                    pieces.append(raw[bounds[2 * k] : bounds[2 * k + 1]])
        finally:
            free_stack(&stack)
            rev_free(&rev)
            PyMem_Free(bounds)
        return pieces

    def n_pieces(self, data):
        """How many pieces ``data`` (UTF-8 bytes) splits into; the matcher alone, without
        the GIL (for benchmarks)."""
        cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
        cdef Py_ssize_t n = len(data), i = 0, count = 0
        cdef Py_ssize_t bounds[6 * DFA_SPAN]
        cdef Stack stack = new_stack()
        cdef RevMarks* rev = NULL
        cdef PieceReader reader
        start_reading(&reader, &self.tables, 0)
        try:
            with nogil:
                while i < n:
                    if dfa_splits(&self.tables):
                        count += dfa_pieces_interleaved(&self.tables, &view[0], i, n, n, 0, bounds, DFA_SPAN, &i, &rev)
                    else:
                        count += split_pieces(&self.tables, &reader, &stack, &view[0], i, n, n, 0, bounds, 64, &i)
        finally:
            free_stack(&stack)
            rev_free(&rev)
        return count

    def safe_cut(self, data, Py_ssize_t lo=0, hi=None):
        """:c:func:`last_safe_cut`: the last safe cut in ``data[lo:hi]`` (bytes-like), or -1."""
        cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
        cdef Py_ssize_t h = len(data) if hi is None else hi
        if not 0 <= lo <= h <= len(data):
            raise ValueError("need 0 <= lo <= hi <= len(data)")
        return last_safe_cut(&self.tables, &view[0], lo, h)


def _py_pshufb_quarters(Program program not None) -> int:
    """The 16-lane quarters of a row that a step of ``program``'s DFA by ``pshufb`` reads, after
    its lanes that no ASCII text tells apart are merged (``_dfa_shuffle.h``,
    ``bpetrain_shuffle_merge``), for the tests: 1 to 4, 0 if the DFA does not read by ``pshufb``.
    """
    if program.tables.shuffle.rows == NULL or program.tables.shuffle.code != SHUFFLE_VARIANTS["pshufb"]:
        return 0
    return program.tables.shuffle.quarters


def _py_pshufb_coded(Program program not None) -> bool:
    """Whether a step of ``program``'s DFA by ``pshufb`` keeps the lane in a code of its own
    (``_dfa_shuffle.h``: two quarters of up to 32 lanes, three, four) rather than the lane itself
    (one quarter, or two of exactly 33 lanes), for the tests; False if it does not read by ``pshufb``."""
    return _py_pshufb_quarters(program) > 0 and program.tables.shuffle.coded != 0


def _py_bytes_by_blocks(Program program not None, data):
    """How the kernels' reader (:c:func:`next_piece_end`, as :c:func:`split_pieces` runs
    it) reads the UTF-8 string ``data`` with ``program``: the bytes of the pieces that
    ``_ascii_blocks.h``'s blocks gave, and of those the matcher gave (the hand-written one,
    the program or its DFA), for the tests.

    Parameters
    ----------
    program : Program
        The pattern's program (``split_pattern(pat_str).program``).
    data : bytes-like
        A whole string, UTF-8.

    Returns
    -------
    tuple of int
        ``(n_bytes_blocks, n_bytes_matcher)``: their sum is ``len(data)`` less the bytes
        no piece matched. A pattern read without blocks gives 0 first.
    """
    cdef const uint8_t[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
    cdef Py_ssize_t n = len(data), start = 0, j, n_blocks = 0, n_matcher = 0
    cdef PieceReader reader
    cdef Stack stack = new_stack()
    try:
        start_reading(&reader, &program.tables, 0)
        while start < n:
            j = next_piece_end(&reader, &program.tables, &stack, &view[0], start, n, 0)
            if j < 0:  # a program matches nothing here
                start += char_length(&view[0], start, n)
                continue
            if blocks_gave(&reader.scan):
                n_blocks += j - start
            else:
                n_matcher += j - start
            start = j
    finally:
        free_stack(&stack)
    return n_blocks, n_matcher


def _py_split_in_one_buffer(Program program not None, list texts not None, bint by_reader=False):
    """The pieces of each of ``texts`` (bytes, UTF-8 strings), each split in turn in one
    buffer with one stack, as the counting and encoding kernels reuse theirs: by
    :c:func:`split_pieces` (``by_reader`` False) or piece by piece by :c:func:`next_piece_end`
    (True), for the tests (what the matcher learnt of one text's runs, ``RunMemo``, must not
    serve the next).

    Returns
    -------
    list of list of bytes
        Each text's pieces.
    """
    cdef Py_ssize_t size = max([len(x) for x in texts] + [1]), n, start, j, count, k
    cdef bytearray buffer = bytearray(size)
    cdef uint8_t* buf = buffer
    cdef Stack stack = new_stack()
    cdef PieceReader reader
    cdef Py_ssize_t bounds[128]
    out = []
    try:
        for data in texts:
            n = len(data)
            buffer[:n] = data
            pieces = []
            start = 0
            start_reading(&reader, &program.tables, 0)  # each text its own reading
            if by_reader:
                while start < n:
                    j = next_piece_end(&reader, &program.tables, &stack, buf, start, n, 0)
                    if j < 0:
                        start += char_length(buf, start, n)
                    else:
                        pieces.append(bytes(buffer[start:j]))
                        start = j
            else:
                while start < n:
                    count = split_pieces(&program.tables, &reader, &stack, buf, start, n, n, 0, bounds, 64, &start)
                    for k in range(count):
                        pieces.append(bytes(buffer[bounds[2 * k]:bounds[2 * k + 1]]))
            out.append(pieces)
    finally:
        free_stack(&stack)
    return out
