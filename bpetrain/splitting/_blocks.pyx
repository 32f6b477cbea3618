"""Hand-written matchers for the three named split patterns, on UTF-8 bytes.

The compiled splitter (:mod:`bpetrain.splitting._matcher`) runs any pattern; for these three
strings it hands over to the matchers here and the 64-byte blocks below, together 3.7-4.1x
faster on English text (benchmarks/README.md, "Splitting"). They give
the same pieces as the engine and the ``regex`` module (tests/test_pretok.py compares
all three).

Each pattern (``gpt2``, ``cl100k``, ``o200k``, as tiktoken publishes them in
``tiktoken_ext/openai_public.py``) is written out as the matcher the ``regex`` module
would run: the alternatives in order, each with the backtracking its quantifiers allow
(possessive ones none). The pieces are the ones ``regex.finditer`` gives on the text
decoded with ``errors="surrogateescape"``, re-encoded the same way: every byte that is
not part of valid UTF-8 (Python's strict decoder decides) is one character of its own,
a lone surrogate (category Cs: not a letter, number or space).

Character classes come from the ``regex`` module itself, when the first matcher is
made (:func:`ensure_tables`; :mod:`bpetrain.splitting._charsets` keeps the answers on disk): its ``\\p{L}``,
``\\p{N}``, ``\\s``, the o200k case classes and the case-insensitive letters of the
contractions are evaluated over every code point, so the tables follow whatever Unicode
version the installed ``regex`` implements (Python's ``unicodedata`` may be older), or
the Unicode table a pattern is compiled with (:mod:`bpetrain.splitting.unicode`; each
gets a slot of its own, passed to :c:func:`piece_end` as ``u``). The tables are a
two-stage lookup (code point >> 8 -> block of 256 flags).

The three patterns' ASCII text is also split 64 bytes at a time (``_ascii_blocks.h``: the
piece starts of a block from bit operations on its bytes' classes, no branch per piece), by
every kernel that reads pieces through ``bpetrain.splitting._matcher.next_piece_end``, and so
is mostly ASCII text with some two-byte characters (accented letters, a word of Greek or
Cyrillic: classed by :func:`_char_codes`), and text of two- and three-byte characters
alone (a Russian or a Chinese paragraph) where the CPU has AVX-512 VBMI; the matcher here
takes over wherever a block does not qualify (other text, a run of whitespace longer than a
block). :func:`block_ends` runs the same loop for the tests,
with any of the codes that class the bytes (:func:`use_block_isa`).
``bpetrain.splitting._matcher._py_bytes_by_blocks`` tells the tests how many bytes of a text
the kernels' reader got from the blocks and how many from the matcher.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t

import threading

from bpetrain.splitting._charsets import array_view, read_arrays, store_arrays
from bpetrain.splitting.unicode import class_members

cdef enum:
    F_L = 1     # \p{L}
    F_N = 2     # \p{N}
    F_WS = 4    # \s
    F_U = 8     # o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    F_W = 16    # o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}]

# A byte that is not valid UTF-8: no flags, and equal to no character the patterns name.
DEF INVALID = 0xFFFFFFFF
DEF N_CODE_POINTS = 0x110000

cdef extern from *:
    """
    #include <string.h>
    #include "_portable.h"
    /* End of the run of ASCII bytes b with lo <= (b | fold) <= hi from i, eight bytes
       at a time (SWAR: each byte's range test sets its high bit; no carry crosses a
       byte, as every byte is below 0x80 once its high bit is masked off). */
    static inline Py_ssize_t bpetrain_ascii_run(const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                                uint8_t fold, uint8_t lo, uint8_t hi) {
        const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
        uint64_t x, t, stop;
        while (i + 8 <= end) {
            memcpy(&x, s + i, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            x = __builtin_bswap64(x);
    #endif
            t = (x & ~high) | (fold * ones);
            stop = ~((t + (uint64_t)(0x80 - lo) * ones) & ~(t + (uint64_t)(0x7F - hi) * ones) & ~x) & high;
            if (stop)
                return i + (bpetrain_ctz64(stop) >> 3);
            i += 8;
        }
        while (i < end && s[i] < 0x80 && (uint8_t)(s[i] | fold) >= lo && (uint8_t)(s[i] | fold) <= hi)
            i++;
        return i;
    }
    """
    Py_ssize_t ascii_run "bpetrain_ascii_run"(const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                              uint8_t fold, uint8_t lo, uint8_t hi) noexcept nogil

cdef uint8_t _ascii_flags[128]
# Whether the ASCII letters are A-Z and a-z, F_W's a-z and F_U's A-Z, as the runs of
# letters assume to test eight bytes at a time (the regex module has always said so).
cdef bint _ascii_letters = False
# Whether the ASCII letters, digits and whitespace are those _ascii_blocks.h assumes.
cdef bint _ascii_standard = False
# The non-ASCII flags, one two-stage table per Unicode table (slot 0: the regex module's
# own classes; ensure_tables gives the others theirs).
cdef enum:
    N_SLOTS = 4
cdef const uint16_t* _stage1[N_SLOTS]
cdef const uint8_t* _stage2[N_SLOTS]
# The classes of U+0080..U+FFFF for the 64-byte blocks (_char_codes), one table per slot;
# the same with a combining mark classed as a letter (rules with BLOCKS_MARKS), and with a
# mark left to the matcher (rules with BLOCKS_MARKS_IN_RUNS).
cdef const uint8_t* _codes[N_SLOTS]
cdef const uint8_t* _mark_codes[N_SLOTS]
cdef const uint8_t* _run_mark_codes[N_SLOTS]
# The ASCII letter (lower case) a code point matches case-insensitively, for the letters
# of the contractions ('s 't 're 've 'm 'll 'd); 0 for every other code point.
cdef uint8_t _fold_ascii[128]
cdef uint32_t _fold_extra_cp[16]
cdef uint8_t _fold_extra_to[16]
cdef int _n_fold_extra = 0


#: Each flag and the class whose code points have it (read under a Unicode table).
_FLAG_CLASSES = (
    (F_L, r"\p{L}"),
    (F_N, r"\p{N}"),
    (F_WS, r"\s"),
    (F_U, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
    (F_W, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
)
#: The letters of the contractions, whose case variants (the regex module's) the matchers fold.
_FOLD_LETTERS = "sdmtlver"
#: What the tables kept on disk are made of (their keys hold it, so that other classes,
#: flags or layouts never read them): the flags' classes, the letters, the two stages' layout.
_RECIPE = f"hand-written matchers' tables v1\0{_FLAG_CLASSES!r}\0{_FOLD_LETTERS}\0blocks of 256"
#: The key of the folds kept on disk (:func:`_folds`, :func:`ship_tables`).
_FOLDS_KEY = f"{_RECIPE}\0folds"


def _class_flags(unicode):
    """The flags of every code point (bytearray, 0x110000 bytes) with the classes of the
    Unicode table ``unicode`` (None: the regex module's; :mod:`bpetrain.splitting.unicode`)."""
    flat = bytearray(N_CODE_POINTS)
    cdef uint8_t[::1] out = flat
    cdef const uint8_t[::1] bits
    cdef Py_ssize_t i, k
    cdef uint8_t byte, f
    for f, cls in _FLAG_CLASSES:
        bits = _packed_members(cls, "", unicode)
        for i in range(N_CODE_POINTS // 8):
            byte = bits[i]
            if byte:
                for k in range(8):
                    if byte & (0x80 >> k):  # numpy.packbits' order: the first code point in the high bit
                        out[8 * i + k] |= f
    return flat


def _flag_tables(unicode):
    """The flags of every code point under ``unicode`` (:func:`_class_flags`) as a two-stage
    table: (stage1, uint16 memoryview of shape (0x1100,): block of each 256 code points;
    stage2, the distinct blocks' flags, in order of appearance), kept on disk
    (:func:`bpetrain.splitting._charsets.store_arrays`, under :data:`_RECIPE`, the table's
    digest and the ``regex`` version) so that a process reads them instead of reading the
    classes of every code point (or the build's, :func:`ship_tables`)."""
    key = _tables_key(unicode)
    kept = read_arrays(key)
    if kept is not None and kept.keys() == {"stage1", "stage2"} and kept["stage1"].format == "H" \
            and kept["stage1"].shape == (N_CODE_POINTS // 256,) \
            and 256 * (max(kept["stage1"]) + 1) == kept["stage2"].nbytes:  # every block there, and no more
        return kept["stage1"], kept["stage2"]
    flat = _class_flags(unicode)
    blocks = {}  # each distinct block of 256 flags once, numbered in order of appearance
    view = memoryview(flat)
    stage1 = array_view("H", [blocks.setdefault(bytes(view[256 * b : 256 * (b + 1)]), len(blocks))
                              for b in range(N_CODE_POINTS // 256)])
    stage2 = b"".join(blocks)
    store_arrays(key, {"stage1": stage1, "stage2": stage2})
    return stage1, stage2


def _tables_key(unicode):
    return f"{_RECIPE}\0flags\0{'regex' if unicode is None else unicode.digest}"


def _folds():
    """The code points that match a letter of :data:`_FOLD_LETTERS` case-insensitively (the
    regex module's classes), as (code points, uint32 memoryview; their letters, bytes), kept on
    disk as :func:`_flag_tables` keeps the flags."""
    kept = read_arrays(_FOLDS_KEY)
    if kept is not None and kept.keys() == {"cps", "letters"} and kept["cps"].format == "I" \
            and len(kept["cps"]) == kept["letters"].nbytes:
        return kept["cps"], kept["letters"].tobytes()
    cps, letters = [], bytearray()
    cdef const uint8_t[::1] bits
    cdef Py_ssize_t j, k
    for letter in _FOLD_LETTERS:
        bits = _packed_members(letter, "i", None)
        for j in range(N_CODE_POINTS // 8):
            if bits[j]:
                for k in range(8):
                    if bits[j] & (0x80 >> k):
                        cps.append(8 * j + k)
                        letters.append(ord(letter))
    cps = array_view("I", cps)
    store_arrays(_FOLDS_KEY, {"cps": cps, "letters": bytes(letters)})
    return cps, bytes(letters)


def ship_tables(unicode, folder):
    """Keep the tables of ``unicode`` (:func:`_flag_tables`) and the folds (:func:`_folds`)
    in ``folder`` (the build's :data:`~bpetrain.splitting._charsets.SHIPPED_DIR`)."""
    stage1, stage2 = _flag_tables(unicode)
    store_arrays(_tables_key(unicode), {"stage1": stage1, "stage2": stage2}, folder)
    cps, letters = _folds()
    store_arrays(_FOLDS_KEY, {"cps": cps, "letters": letters}, folder)


def _ascii_flags_of(stage1, stage2):
    """The flags of the 128 ASCII code points in the two-stage table :func:`_flag_tables` gives."""
    return stage2[256 * stage1[0] : 256 * stage1[0] + 128]


def _install(int slot, stage1, stage2):
    """Make ``stage1``, ``stage2`` (:func:`_flag_tables`) the two-stage table of ``slot``,
    with the classes the blocks read characters of two and three bytes by (:func:`_char_codes`)."""
    groups = widest_isa() == BLOCK_ISAS["avx512vbmi"]
    codes = _char_codes(stage1, stage2, groups=groups)
    mark_codes = _char_codes(stage1, stage2, groups=groups, marks="letters")
    run_mark_codes = _char_codes(stage1, stage2, groups=groups, marks="runs")
    _tables[slot] = (stage1, stage2, codes, mark_codes, run_mark_codes)  # keeps the buffers alive
    cdef const uint16_t[::1] s1 = stage1
    cdef const uint8_t[::1] s2 = stage2
    _stage1[slot] = &s1[0]
    _stage2[slot] = &s2[0]
    _codes[slot] = <const uint8_t*><const char*>codes
    _mark_codes[slot] = <const uint8_t*><const char*>mark_codes
    _run_mark_codes[slot] = <const uint8_t*><const char*>run_mark_codes


def _char_codes(stage1, stage2, *, bint groups, marks=None, without=()):
    """The class of each code point below U+10000 for ``_ascii_blocks.h``'s blocks, from
    its flags in the two-stage table ``stage1``, ``stage2`` (:func:`_flag_tables`), then
    that of each group of 64 code points of three bytes in UTF-8, then that of each eight
    groups (bytes, 0x10000 + 0x400 + 128: its BPETRAIN_TWO_* codes, BPETRAIN_CODES_GROUPS
    and BPETRAIN_CODES_LEADS; the groups' and eights' all 0 unless ``groups``: only the
    blocks that AVX-512 VBMI classes read them).

    A code point's is 0 (the blocks leave it to the matcher) for ASCII, a surrogate (its
    bytes are not valid UTF-8), a number and a case variant of a contraction's
    letter (the rules count digits by character, and read the contractions'
    letters as ASCII); else a space (``\\s`` and none of the other classes: the rules cut
    whitespace by byte and step back to a character's first), O (of o200k's case
    classes or not: a mark is in both) or a letter, lower case, upper case or both (o200k's
    classes, ``F_W`` and ``F_U``). The case variants are those :func:`_build_tables` has
    kept (``_fold_extra_cp``), which it finds first. A group's (``cp >> 6`` from U+0800) is
    the code its 64 code points share, ``BPETRAIN_CODES_MIXED`` if they do not share one;
    the eight groups' (groups 8k..8k+7 at entry k: U+4E00..U+9FFF are CJK ideographs alone)
    the code they share, else ``BPETRAIN_CODES_MIXED``. An O in o200k's case classes (a
    combining mark) is ``BPETRAIN_TWO_O_CASED``; with ``marks="letters"`` a letter in both
    (``BPETRAIN_TWO_LETTER``), with ``marks="runs"`` 0, as cl100k's rules with that ``marks``
    read it (:func:`cl100k_rules`). The code points of ``without`` (ranges ``(first, last)``,
    both in) are 0 too, before the groups' codes are worked out: a program's own codes
    (:func:`own_codes`).

    Raises
    ------
    ValueError
        If ``marks`` is not None, ``"letters"`` or ``"runs"``."""
    cdef uint8_t mark_code = _marks_of(marks)[1]
    codes = bytearray(CODES_LEADS + 128)
    cdef unsigned char[::1] out = codes
    cdef const uint16_t[::1] s1 = stage1
    cdef const uint8_t[::1] s2 = stage2
    cdef int cp, f, group, k, eight
    for cp in range(0x80, 0x10000):
        f = s2[256 * s1[cp >> 8] + (cp & 0xFF)]
        if f & F_N or 0xD800 <= cp < 0xE000:
            continue
        if f & F_WS:
            if not f & (F_L | F_U | F_W):
                out[cp] = TWO_SPACE
        elif not f & F_L:
            out[cp] = mark_code if f & (F_U | F_W) else TWO_O
        elif f & F_U and f & F_W:
            out[cp] = TWO_LETTER
        elif f & F_W:
            out[cp] = TWO_LOWER
        elif f & F_U:
            out[cp] = TWO_UPPER
    for k in range(_n_fold_extra):
        if _fold_extra_cp[k] < 0x10000:
            out[_fold_extra_cp[k]] = 0
    for first, last in without:
        for cp in range(max(first, 0x80), min(last + 1, 0x10000)):
            out[cp] = 0
    if not groups:
        return bytes(codes)
    for group in range(0x800 >> 6, 0x10000 >> 6):
        out[CODES_GROUPS + group] = out[group << 6]
        for k in range(1, 64):
            if out[(group << 6) + k] != out[group << 6]:
                out[CODES_GROUPS + group] = CODES_MIXED
                break
    for eight in range(128):
        out[CODES_LEADS + eight] = out[CODES_GROUPS + 8 * eight]
        for k in range(1, 8):
            if out[CODES_GROUPS + 8 * eight + k] != out[CODES_GROUPS + 8 * eight]:
                out[CODES_LEADS + eight] = CODES_MIXED
                break
    return bytes(codes)


def readable(unicode=None):
    """Which code points below U+10000 the blocks may read, under the Unicode table
    ``unicode`` (None: the regex module's), with any rules and on any CPU: ASCII, and those
    whose code (:func:`_char_codes`, combining marks as cl100k's own rules class them) is
    not 0. None if the blocks cannot use the table (:func:`ensure_tables` gives -1).

    Returns
    -------
    bytes or None
        0x10000 bytes, 1 where the code point may be read.
    """
    slot = ensure_tables(unicode)
    if slot < 0:
        return None
    codes = _tables[slot][2]
    return bytes(1 if cp < 0x80 or codes[cp] else 0 for cp in range(0x10000))


def own_codes(int slot, int rules, without):
    """The codes the blocks read a program's characters by (:c:func:`char_codes`' for
    ``rules`` under the table slot ``slot``), with the code points of ``without`` (ranges
    ``(first, last)``, both in) left to the matcher: a program whose pattern cuts as the
    rules only on the others (``BPETRAIN_BLOCKS_OWN_CODES``).

    Returns
    -------
    bytes
        As :func:`_char_codes` gives them (0x10480 bytes).
    """
    stage1, stage2 = _tables[slot][0], _tables[slot][1]
    marks = "letters" if rules & BLOCKS_MARKS else "runs" if rules & BLOCKS_MARKS_IN_RUNS else None
    return _char_codes(stage1, stage2, groups=widest_isa() == BLOCK_ISAS["avx512vbmi"], marks=marks,
                       without=without)


def _build_tables():
    """Slot 0 (the regex module's classes, :func:`_flag_tables`), the ASCII flags and the
    case variants of the contraction letters (:func:`_folds`)."""
    global _n_fold_extra
    stage1, stage2 = _flag_tables(None)
    flat = _ascii_flags_of(stage1, stage2)
    cdef int i
    cdef bint upper, lower
    for i in range(128):
        _ascii_flags[i] = flat[i]
        _fold_ascii[i] = 0
    global _ascii_letters, _ascii_standard
    _ascii_letters = _ascii_standard = True
    for i in range(128):
        upper, lower = 65 <= i <= 90, 97 <= i <= 122
        if (flat[i] & F_L != 0) != (upper or lower) or (flat[i] & F_W != 0) != lower or (flat[i] & F_U != 0) != upper:
            _ascii_letters = _ascii_standard = False
        if (flat[i] & F_N != 0) != (48 <= i <= 57) or (flat[i] & F_WS != 0) != (9 <= i <= 13 or i == 32):
            _ascii_standard = False
    _n_fold_extra = 0
    cps, letters = _folds()
    for cp, letter in zip(cps, letters):
        if cp < 128:
            _fold_ascii[cp] = letter
        else:
            if _n_fold_extra == 16:
                raise RuntimeError("too many case variants of the contraction letters")
            _fold_extra_cp[_n_fold_extra] = cp
            _fold_extra_to[_n_fold_extra] = letter
            _n_fold_extra += 1
    _install(0, stage1, stage2)  # (after the folds: _char_codes reads them)


def _packed_members(source, flags, unicode):
    """The code points the one-character regex ``source`` matches (bytes, 0x110000 bits in
    ``numpy.packbits``' order: :func:`bpetrain.splitting.unicode.class_members`)."""
    packed = class_members(source, flags, unicode)
    if len(packed) != N_CODE_POINTS // 8:
        raise RuntimeError(f"the members of {source!r} are {len(packed)} bytes, not {N_CODE_POINTS // 8}")
    return packed


_tables = {}  # slot -> its (stage1, stage2)
_slots = {}  # Unicode table (None: the regex module's) -> its slot, or -1
_tables_lock = threading.Lock()


def ensure_tables(unicode=None):
    """Build the character tables of the Unicode table ``unicode`` (None: the regex
    module's) on first use (not at import; read from the disk cache, else from the classes
    of every code point: :func:`_flag_tables`), once, whichever thread comes first; the
    regex module's come first, with the ASCII flags.

    Returns
    -------
    int
        The slot to give :c:func:`piece_end`, or -1 if the hand-written matchers cannot
        use the table (its ASCII classes are not the regex module's, or the slots are
        taken): the compiled program splits instead.
    """
    with _tables_lock:
        if 0 not in _tables:
            _build_tables()
            _slots[None] = 0
        if unicode not in _slots:
            stage1, stage2 = _flag_tables(unicode)
            flat = _ascii_flags_of(stage1, stage2)
            if len(_tables) == N_SLOTS or any(_ascii_flags[i] != flat[i] for i in range(128)):
                _slots[unicode] = -1
            else:
                _slots[unicode] = len(_tables)
                _install(len(_tables), stage1, stage2)
        return _slots[unicode]

#: Python names of the compiled patterns' ids (see ``_blocks.pxd``).
GPT2 = PATTERN_GPT2
CL100K = PATTERN_CL100K
O200K = PATTERN_O200K


def cl100k_rules(digits, bint end_of_text, bint newlines_after_o, contractions="either", bint space_prefix=False,
                 marks=None):
    """The block rules (``Program``'s ``blocks``) by which ``_ascii_blocks.h`` reads the
    pieces of a pattern that splits as cl100k's, with variants (bpetrain_cl100k_starts).

    Parameters
    ----------
    digits : int or None
        How many digits a piece of digits holds at most: cl100k's ``\\p{N}{1,3}`` 3,
        ``\\p{N}`` 1, ``\\p{N}{1,k}`` k; None: a run of any length (``\\p{N}+``).
    end_of_text : bool
        Whether a run of whitespace at the end of the text is one piece (cl100k's
        ``\\s++$``) or is cut after its last newline (the strings without it).
    newlines_after_o : bool
        Whether the newlines right after a run of punctuation belong to its piece
        (``[\\r\\n]*+``) or to the whitespace's.
    contractions : {"either", "lower", None}, default "either"
        The pattern's first alternative: cl100k's contractions, their letters in either
        case (``'(?i:[sdmt]|ll|ve|re)``), or in lower case alone (``'(?:[sdmt]|ll|ve|re)``,
        gpt2's); None: it has none (an apostrophe is then the prefix of the letters after
        it).
    space_prefix : bool, default False
        Whether letters take a space alone before them (`` ?\\p{L}++``, gpt2's) rather than
        any character but a letter, digit or newline (``[^\\r\\n\\p{L}\\p{N}]?+``, cl100k's).
    marks : {None, "letters", "runs"}, default None
        What a combining mark (``\\p{M}``) is: None, punctuation, as in cl100k's own classes
        (neither a letter nor a number); ``"letters"``, a letter: ``[\\p{L}\\p{M}]++`` for
        ``\\p{L}++`` and a mark in no run of punctuation (``[^\\s\\p{L}\\p{M}\\p{N}]``), as
        Qwen3.5's pattern has them (``Qwen/Qwen3.5-0.8B``'s tokenizer.json; llama.cpp's
        ``src/llama-vocab.cpp``, ``LLAMA_VOCAB_PRE_TYPE_QWEN35``), and the blocks read a
        two-byte mark as a letter; ``"runs"``, a part of the run it is in:
        ``[\\p{L}\\p{M}]++`` for ``\\p{L}++`` with cl100k's classes otherwise, so that a mark
        after letters is a letter and one in a run of punctuation is punctuation, which no
        class of the rules is: the blocks leave a mark to the matcher (:func:`_char_codes`).

    Raises
    ------
    ValueError
        If ``digits`` is neither None nor a positive int, or ``contractions`` or ``marks``
        is none of those values.
    """
    return ((BLOCKS_CL100K if end_of_text else BLOCKS_CL100K_OPEN) | _digits_rules(digits)
            | (0 if newlines_after_o else BLOCKS_BARE_O) | _contractions_rules(contractions)
            | (BLOCKS_SPACE_PREFIX if space_prefix else 0) | _marks_of(marks)[0])


def o200k_rules(digits, contractions="either", bint space_prefix=False, bint whole_runs=False, bint slash=True):
    """The block rules (``Program``'s ``blocks``) by which ``_ascii_blocks.h`` reads the
    pieces of a pattern that splits as o200k's, with variants (bpetrain_o200k_starts).

    Parameters
    ----------
    digits : int or None
        As :func:`cl100k_rules` takes it (o200k's own: 3), which raises the same error.
    contractions : {"either", "lower", None}, default "either"
        Whether a run of letters takes o200k's contractions after it, their letters in
        either case (``(?i:'s|'t|'re|'ve|'m|'ll|'d)?``) or in lower case alone, or none
        (None); :func:`cl100k_rules` raises the same error.
    space_prefix : bool, default False
        As :func:`cl100k_rules` takes it.
    whole_runs : bool, default False
        Whether the pattern lacks o200k's ``\\s+(?!\\S)``, so that ``\\s+`` takes a run of
        whitespace after its last newline whole, and only a character alone between others
        is the prefix of the letters (a space: of the punctuation) after it.
    slash : bool, default True
        Whether a run of punctuation takes the newlines and slashes after it (o200k's
        ``[\\r\\n/]*``) or the newlines alone (``[\\r\\n]*``, as Kimi K2's pattern,
        ``moonshotai/Kimi-K2-Instruct``'s ``tokenization_kimi.py``).
    """
    return (BLOCKS_O200K | _digits_rules(digits) | _contractions_rules(contractions)
            | (BLOCKS_SPACE_PREFIX if space_prefix else 0) | (BLOCKS_WHOLE_RUNS if whole_runs else 0)
            | (0 if slash else BLOCKS_NO_SLASH))


def gpt2_rules(bint gaps):
    """The block rules (``Program``'s ``blocks``) by which ``_ascii_blocks.h`` reads the
    pieces of a pattern that splits as gpt2's, or (``gaps``) as gpt2's without ``\\s++$`` and
    its last ``\\s`` (Hugging Face's ByteLevel regex as llama.cpp writes it): there a
    whitespace character that ``\\s+(?!\\S)`` cannot take is in no piece
    (bpetrain_blocks_gap)."""
    return BLOCKS_GPT2 | (BLOCKS_LONE_SPACE_GAPS if gaps else 0)


def _contractions_rules(contractions):
    if contractions is None:
        return BLOCKS_NO_CONTRACTIONS
    if not isinstance(contractions, str) or contractions not in CONTRACTIONS:
        raise ValueError(f"contractions must be 'either', 'lower' or None, got {contractions!r}")
    return BLOCKS_LOWER_CONTRACTIONS if contractions == "lower" else 0


#: The values of :func:`cl100k_rules`' ``marks``, and the rules' flag and code of a mark for each.
MARKS = {None: (0, TWO_O_CASED), "letters": (BLOCKS_MARKS, TWO_LETTER), "runs": (BLOCKS_MARKS_IN_RUNS, 0)}


def _marks_of(marks):
    # MARKS[marks], or the error for a value it does not hold
    if not isinstance(marks, (str, type(None))) or marks not in MARKS:
        raise ValueError(f"marks must be None, 'letters' or 'runs', got {marks!r}")
    return MARKS[marks]


def _digits_rules(digits):
    # (BLOCKS_DIGITS_ANY, the field of a run of any length: from that many digits a piece on,
    # the blocks cut every run they read alike, a block holding at most 61 of them)
    if digits is None:
        return BLOCKS_DIGITS_ANY << BLOCKS_DIGITS_SHIFT
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 1:
        raise ValueError(f"digits must be a positive int or None (a run of any length), got {digits!r}")
    return 0 if digits == 3 else min(digits, BLOCKS_DIGITS_ANY) << BLOCKS_DIGITS_SHIFT  # (0: three)


#: The ``digits`` from which :func:`cl100k_rules` and :func:`o200k_rules` are those of a run of
#: any length (None).
DIGITS_ANY = BLOCKS_DIGITS_ANY
#: The values of :func:`cl100k_rules`' and :func:`o200k_rules`' ``contractions``.
CONTRACTIONS = ("either", "lower", None)
#: Every value of :func:`o200k_rules`.
O200K_RULES = frozenset(o200k_rules(digits, contractions, space, whole, slash)
                        for digits in range(1, BLOCKS_DIGITS_ANY + 1) for contractions in CONTRACTIONS
                        for space in (0, 1) for whole in (0, 1) for slash in (0, 1))
#: Every value of :func:`cl100k_rules`, :func:`o200k_rules` and :func:`gpt2_rules`: the rules a
#: ``Program`` without a hand-written matcher may be read by.
RULES = frozenset([*(cl100k_rules(digits, end, after, contractions, space, marks)
                     for digits in range(1, BLOCKS_DIGITS_ANY + 1) for end in (0, 1) for after in (0, 1)
                     for contractions in CONTRACTIONS for space in (0, 1) for marks in MARKS),
                   *O200K_RULES, gpt2_rules(False), gpt2_rules(True)])
#: The classes of two-byte characters for the blocks (:func:`_char_codes`; see
#: ``_ascii_blocks.h``), for the tests.
TWO_O_CODE = TWO_O
TWO_O_CASED_CODE = TWO_O_CASED
TWO_SPACE_CODE = TWO_SPACE
TWO_LOWER_CODE = TWO_LOWER
TWO_UPPER_CODE = TWO_UPPER
TWO_LETTER_CODE = TWO_LETTER
#: Where the groups' codes start in :func:`_char_codes`'s table, and the code of a group
#: whose code points have more than one.
CODES_GROUPS_AT = CODES_GROUPS
CODES_MIXED_CODE = CODES_MIXED
#: Where the codes of each eight groups start (groups 8k..8k+7 at entry k).
CODES_LEADS_AT = CODES_LEADS


cdef inline Py_ssize_t _decode(const uint8_t* s, Py_ssize_t i, Py_ssize_t end, uint32_t* cp) noexcept nogil:
    """The character at ``i`` (``s[i] >= 0x80``): its code point in ``cp``, its length in bytes."""
    cdef uint32_t b0 = s[i], b1, b2, b3
    if b0 < 0xC2 or b0 > 0xF4:
        cp[0] = INVALID
        return 1
    if i + 1 >= end:
        cp[0] = INVALID
        return 1
    b1 = s[i + 1]
    if b0 < 0xE0:
        if (b1 & 0xC0) != 0x80:
            cp[0] = INVALID
            return 1
        cp[0] = ((b0 & 0x1F) << 6) | (b1 & 0x3F)
        return 2
    if (b1 & 0xC0) != 0x80 or (b0 == 0xE0 and b1 < 0xA0) or (b0 == 0xED and b1 >= 0xA0) \
            or (b0 == 0xF0 and b1 < 0x90) or (b0 == 0xF4 and b1 >= 0x90) or i + 2 >= end:
        cp[0] = INVALID
        return 1
    b2 = s[i + 2]
    if (b2 & 0xC0) != 0x80:
        cp[0] = INVALID
        return 1
    if b0 < 0xF0:
        cp[0] = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
        return 3
    if i + 3 >= end:
        cp[0] = INVALID
        return 1
    b3 = s[i + 3]
    if (b3 & 0xC0) != 0x80:
        cp[0] = INVALID
        return 1
    cp[0] = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    return 4


cdef inline uint8_t _flags_of(int u, uint32_t cp) noexcept nogil:
    if cp < 128:
        return _ascii_flags[cp]
    if cp >= N_CODE_POINTS:
        return 0
    return _stage2[u][(<Py_ssize_t>_stage1[u][cp >> 8] << 8) | (cp & 0xFF)]


cdef inline Py_ssize_t _char(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                             uint32_t* cp, uint8_t* flags) noexcept nogil:
    """Decode the character at ``i < end``: code point, flags, length in bytes."""
    cdef uint8_t b = s[i]
    cdef Py_ssize_t n
    if b < 0x80:
        cp[0] = b
        flags[0] = _ascii_flags[b]
        return 1
    n = _decode(s, i, end, cp)
    flags[0] = _flags_of(u, cp[0])
    return n


cdef inline Py_ssize_t _run(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end, uint8_t mask,
                            bint inside=True) noexcept nogil:
    """End of the run from ``i`` of characters with a flag in ``mask`` (``inside``) or
    with none of them (not ``inside``)."""
    cdef uint32_t cp
    cdef uint8_t f
    cdef Py_ssize_t n
    while i < end:
        if s[i] < 0x80:
            if ((_ascii_flags[s[i]] & mask) != 0) != inside:
                return i
            i += 1
        else:
            n = _char(u, s, i, end, &cp, &f)
            if ((f & mask) != 0) != inside:
                return i
            i += n
    return i


cdef inline Py_ssize_t _run_ascii(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end, uint8_t mask,
                                  uint8_t fold, uint8_t lo, uint8_t hi) noexcept nogil:
    """``_run(u, s, i, end, mask)`` for a mask whose ASCII members are the bytes b with
    ``lo <= (b | fold) <= hi``: ASCII text eight bytes at a time, the rest by ``_run``."""
    if _ascii_letters:
        i = ascii_run(s, i, end, fold, lo, hi)
        if i >= end or s[i] < 0x80:
            return i
    return _run(u, s, i, end, mask)


cdef inline Py_ssize_t _letters(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    """End of the run of ``\\p{L}`` from ``i``."""
    return _run_ascii(u, s, i, end, F_L, 0x20, 97, 122)


cdef inline Py_ssize_t _run_other(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    """End of the run of ``[^\\s\\p{L}\\p{N}]`` from ``i``."""
    return _run(u, s, i, end, F_L | F_N | F_WS, False)


cdef inline Py_ssize_t _run_digits3(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    """``\\p{N}{1,3}`` at ``i``, which is known to hold a number."""
    cdef uint32_t cp
    cdef uint8_t f
    cdef int k
    cdef Py_ssize_t n
    i += _char(u, s, i, end, &cp, &f)
    for k in range(2):
        if i >= end:
            break
        n = _char(u, s, i, end, &cp, &f)
        if not (f & F_N):
            break
        i += n
    return i


cdef inline Py_ssize_t _run_bytes(const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                  uint8_t a, uint8_t b, uint8_t c) noexcept nogil:
    """End of the run of the ASCII bytes ``a``, ``b``, ``c`` from ``i``."""
    while i < end and (s[i] == a or s[i] == b or s[i] == c):
        i += 1
    return i


cdef inline uint8_t _fold(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end, Py_ssize_t* n) noexcept nogil:
    """The contraction letter the character at ``i`` matches case-insensitively (0: none)."""
    cdef uint32_t cp
    cdef uint8_t f
    cdef int k
    if i >= end:
        n[0] = 0
        return 0
    n[0] = _char(u, s, i, end, &cp, &f)
    if cp < 128:
        return _fold_ascii[cp]
    for k in range(_n_fold_extra):
        if _fold_extra_cp[k] == cp:
            return _fold_extra_to[k]
    return 0


cdef inline Py_ssize_t _contraction(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                    bint ignore_case) noexcept nogil:
    """End of ``'s|'t|'re|'ve|'m|'ll|'d`` at ``i`` (``s[i]`` is ``'``), or -1.

    The alternatives share no prefix, so their order (gpt2 and cl100k list them
    differently from o200k) does not matter. ``ignore_case``: ``(?i:...)``.
    """
    cdef Py_ssize_t n1, n2
    cdef uint8_t c1, c2
    if ignore_case:
        c1 = _fold(u, s, i + 1, end, &n1)
    else:
        n1 = 1
        c1 = s[i + 1] if i + 1 < end and s[i + 1] < 0x80 else 0
    if c1 == b's' or c1 == b't' or c1 == b'm' or c1 == b'd':
        return i + 1 + n1
    if c1 == b'l' or c1 == b'v' or c1 == b'r':
        if ignore_case:
            c2 = _fold(u, s, i + 1 + n1, end, &n2)
        else:
            n2 = 1
            c2 = s[i + 2] if i + 2 < end and s[i + 2] < 0x80 else 0
        if (c1 == b'l' and c2 == b'l') or (c1 != b'l' and c2 == b'e'):
            return i + 1 + n1 + n2
    return -1


cdef inline Py_ssize_t _whitespace(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end,
                                   Py_ssize_t* last, Py_ssize_t* after_newline) noexcept nogil:
    """The whitespace run at ``i``: its end, the start of its last character, and the
    end of its last ``\\r``/``\\n`` (-1 if it has none)."""
    cdef uint32_t cp
    cdef uint8_t f
    cdef Py_ssize_t n
    last[0] = i
    after_newline[0] = -1
    while i < end:
        n = _char(u, s, i, end, &cp, &f)
        if not (f & F_WS):
            break
        last[0] = i
        if cp == 10 or cp == 13:
            after_newline[0] = i + n
        i += n
    return i


cdef inline Py_ssize_t _punctuation(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end, uint32_t c0,
                                    uint8_t f0, Py_ssize_t n0, uint8_t also) noexcept nogil:
    """`` ?[^\\s\\p{L}\\p{N}]+`` at ``i`` (character ``c0``, flags ``f0``, ``n0`` bytes),
    then a run of ``\\r``, ``\\n`` and ``also``: cl100k's ``[\\r\\n]*`` (``also`` = ``\\n``)
    and o200k's ``[\\r\\n/]*`` (``also`` = ``/``); -1 if it does not match."""
    cdef uint32_t c1
    cdef uint8_t f1
    cdef Py_ssize_t n1
    if c0 == 32 and i + 1 < end:
        n1 = _char(u, s, i + 1, end, &c1, &f1)
        if not (f1 & (F_L | F_N | F_WS)):
            return _run_bytes(s, _run_other(u, s, i + 1 + n1, end), end, 13, 10, also)
    if not (f0 & F_WS):
        return _run_bytes(s, _run_other(u, s, i + n0, end), end, 13, 10, also)
    return -1


cdef Py_ssize_t _gpt2(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    # '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
    cdef uint32_t c0, c1
    cdef uint8_t f0, f1
    cdef Py_ssize_t n0, n1, j, last, nl
    n0 = _char(u, s, i, end, &c0, &f0)
    if c0 == 39:
        j = _contraction(u, s, i, end, False)
        if j >= 0:
            return j
    if c0 == 32 and i + 1 < end:
        n1 = _char(u, s, i + 1, end, &c1, &f1)
        if f1 & F_L:
            return _letters(u, s, i + 1 + n1, end)
        if f1 & F_N:
            return _run(u, s, i + 1 + n1, end, F_N)
        if not (f1 & F_WS):
            return _run_other(u, s, i + 1 + n1, end)
    if f0 & F_L:
        return _letters(u, s, i + n0, end)
    if f0 & F_N:
        return _run(u, s, i + n0, end, F_N)
    if not (f0 & F_WS):
        return _run_other(u, s, i + n0, end)
    j = _whitespace(u, s, i, end, &last, &nl)
    if j == end:
        return end          # \s++$
    if last > i:
        return last         # \s+(?!\S): all but the last space
    return j                # \s


cdef Py_ssize_t _cl100k(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    # '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
    # |\s++$|\s*[\r\n]|\s+(?!\S)|\s
    cdef uint32_t c0, c1
    cdef uint8_t f0, f1
    cdef Py_ssize_t n0, n1, j, last, nl
    n0 = _char(u, s, i, end, &c0, &f0)
    if c0 == 39:
        j = _contraction(u, s, i, end, True)
        if j >= 0:
            return j
    if f0 & F_L:
        return _letters(u, s, i + n0, end)
    if not (f0 & F_N) and c0 != 10 and c0 != 13 and i + n0 < end:
        n1 = _char(u, s, i + n0, end, &c1, &f1)
        if f1 & F_L:
            return _letters(u, s, i + n0 + n1, end)
    if f0 & F_N:
        return _run_digits3(u, s, i, end)
    j = _punctuation(u, s, i, end, c0, f0, n0, 10)
    if j >= 0:
        return j
    j = _whitespace(u, s, i, end, &last, &nl)
    if j == end:
        return end          # \s++$
    if nl >= 0:
        return nl           # \s*[\r\n]
    if last > i:
        return last         # \s+(?!\S)
    return j                # \s


cdef inline Py_ssize_t _o200k_lower(int u, const uint8_t* s, Py_ssize_t p, Py_ssize_t end) noexcept nogil:
    """``[U]*[W]+(?i:'s|...)?`` at ``p`` with the regex module's backtracking, or -1.

    U = [\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}], W = [\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}].
    """
    cdef uint32_t cp
    cdef uint8_t f
    cdef Py_ssize_t n, both_end = -1
    while p < end:  # U* greedily, remembering the end of its last character that is also W
        n = _char(u, s, p, end, &cp, &f)
        if not (f & F_U):
            break
        p += n
        if f & F_W:
            both_end = p
    if p < end:
        n = _char(u, s, p, end, &cp, &f)
        if f & F_W:
            return _o200k_suffix(u, s, _run_ascii(u, s, p + n, end, F_W, 0, 97, 122), end)
    if both_end < 0:
        return -1
    # U* gives back characters until W+ can start: at the last character that is also W.
    return _o200k_suffix(u, s, both_end, end)


cdef inline Py_ssize_t _o200k_upper(int u, const uint8_t* s, Py_ssize_t p, Py_ssize_t end) noexcept nogil:
    """``[U]+[W]*(?i:'s|...)?`` at ``p``, or -1."""
    cdef uint32_t cp
    cdef uint8_t f
    cdef Py_ssize_t n
    if p >= end:
        return -1
    n = _char(u, s, p, end, &cp, &f)
    if not (f & F_U):
        return -1
    return _o200k_suffix(u, s, _run_ascii(u, s, _run_ascii(u, s, p + n, end, F_U, 0, 65, 90), end, F_W, 0, 97, 122), end)


cdef inline Py_ssize_t _o200k_suffix(int u, const uint8_t* s, Py_ssize_t p, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t j
    if p < end and s[p] == 39:
        j = _contraction(u, s, p, end, True)
        if j >= 0:
            return j
    return p


cdef Py_ssize_t _o200k(int u, const uint8_t* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    # [^\r\n\p{L}\p{N}]?[U]*[W]+C?|[^\r\n\p{L}\p{N}]?[U]+[W]*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*
    # |\s*[\r\n]+|\s+(?!\S)|\s+        (C = (?i:'s|'t|'re|'ve|'m|'ll|'d))
    cdef uint32_t c0, c1
    cdef uint8_t f0, f1
    cdef Py_ssize_t n0, j, last, nl
    cdef bint prefix
    n0 = _char(u, s, i, end, &c0, &f0)
    # the case alternatives need a cased character (U or W) where they start: after the
    # optional prefix, or at i; skip the attempts that cannot match
    prefix = not (f0 & (F_L | F_N)) and c0 != 10 and c0 != 13 and i + n0 < end
    if prefix:
        _char(u, s, i + n0, end, &c1, &f1)
        prefix = (f1 & (F_U | F_W)) != 0
    if prefix:
        j = _o200k_lower(u, s, i + n0, end)
        if j >= 0:
            return j
    if f0 & (F_U | F_W):
        j = _o200k_lower(u, s, i, end)
        if j >= 0:
            return j
    if prefix:
        j = _o200k_upper(u, s, i + n0, end)
        if j >= 0:
            return j
    if f0 & (F_U | F_W):
        j = _o200k_upper(u, s, i, end)
        if j >= 0:
            return j
    if f0 & F_N:
        return _run_digits3(u, s, i, end)
    j = _punctuation(u, s, i, end, c0, f0, n0, 47)
    if j >= 0:
        return j
    j = _whitespace(u, s, i, end, &last, &nl)
    if nl >= 0:
        return nl           # \s*[\r\n]+
    if j == end:
        return end          # \s+(?!\S) at the end of the text
    if last > i:
        return last         # \s+(?!\S)
    return j                # \s+ (one character)


cdef Py_ssize_t piece_end(int pattern, int u, const uint8_t* text, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    if pattern == PATTERN_CL100K:
        return _cl100k(u, text, start, end)
    if pattern == PATTERN_O200K:
        return _o200k(u, text, start, end)
    return _gpt2(u, text, start, end)


cdef bint ascii_classes_standard() noexcept nogil:
    return _ascii_standard


cdef const uint8_t* char_codes(int u, int rules) noexcept nogil:
    if rules & BLOCKS_MARKS:
        return _mark_codes[u]
    return _run_mark_codes[u] if rules & BLOCKS_MARKS_IN_RUNS else _codes[u]


cdef extern from "_ascii_blocks.h":
    int blocks_isa "bpetrain_blocks_isa"
    int widest_isa "bpetrain_widest_isa"() noexcept nogil
    enum:
        TWO_O "BPETRAIN_TWO_O"
        TWO_O_CASED "BPETRAIN_TWO_O_CASED"
        TWO_SPACE "BPETRAIN_TWO_SPACE"
        TWO_LOWER "BPETRAIN_TWO_LOWER"
        TWO_UPPER "BPETRAIN_TWO_UPPER"
        TWO_LETTER "BPETRAIN_TWO_LETTER"
        CODES_GROUPS "BPETRAIN_CODES_GROUPS"
        CODES_MIXED "BPETRAIN_CODES_MIXED"
        CODES_LEADS "BPETRAIN_CODES_LEADS"

#: The code that classes a block's bytes (see _ascii_blocks.h), by name.
BLOCK_ISAS = {"bytes": 0, "sse2": 1, "avx2": 2, "avx512bw": 3, "avx512vbmi": 4}


def block_isas():
    """The names of the codes :func:`block_ends` can class bytes with on this CPU,
    narrowest first (the kernels use the last)."""
    return [name for name, isa in BLOCK_ISAS.items() if isa <= widest_isa() and (isa == 0 or widest_isa() > 0)]


def use_block_isa(str name):
    """Make :func:`block_ends` class bytes with the code ``name`` (one of
    :func:`block_isas`), for the tests: the other kernels keep theirs.

    Raises
    ------
    ValueError
        If this CPU cannot run it.
    """
    global blocks_isa
    if name not in block_isas():
        raise ValueError(f"{name!r} is not one of this CPU's block codes: {block_isas()}")
    blocks_isa = BLOCK_ISAS[name]


cdef extern from "_ascii_blocks.h":
    uint64_t smear_up "bpetrain_smear_up"(uint64_t seed, uint64_t within) noexcept nogil
    uint64_t smear_down "bpetrain_smear_down"(uint64_t seed, uint64_t within) noexcept nogil


def _py_smear(uint64_t seed, uint64_t within, bint up):
    """``bpetrain_smear_up`` (``up``) or ``bpetrain_smear_down`` of ``_ascii_blocks.h``, for the
    tests: each bit of ``seed`` set in ``within`` spread to the higher (lower) bits of its run
    in ``within``."""
    return smear_up(seed, within) if up else smear_down(seed, within)


def block_ends(const uint8_t[::1] data not None, str pattern, Py_ssize_t first=0):
    """The ends of the pieces of ``pattern`` ("gpt2", "cl100k" or "o200k") in the UTF-8 string
    ``data[first:]``, found block by block where ``_ascii_blocks.h`` can and by the
    matcher elsewhere (how the kernels split), for the tests: int64 array, shape
    (n_pieces,), positions in ``data``. The bytes before ``first`` are another string's
    (not looked at).

    Raises
    ------
    ValueError
        If ``pattern`` is none of them, or ``first`` is not in ``[0, len(data)]``.
    """
    if pattern not in ("gpt2", "cl100k", "o200k"):
        raise ValueError(f"pattern must be 'gpt2', 'cl100k' or 'o200k', got {pattern!r}")
    if not 0 <= first <= data.shape[0]:
        raise ValueError(f"first must be in [0, {data.shape[0]}], got {first}")
    ensure_tables()
    if not _ascii_standard:
        raise RuntimeError("the regex module's ASCII classes are not the standard ones")
    cdef Py_ssize_t n = data.shape[0], cur = first, end, k = 0
    cdef int which = PATTERN_CL100K if pattern == "cl100k" else PATTERN_O200K if pattern == "o200k" else PATTERN_GPT2
    cdef block_scan it
    cdef const uint8_t* text = &data[0] if n else NULL
    import numpy as np  # for the tests: not imported by the splitter

    ends = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = ends
    blocks_init(&it, blocks_of(which), _codes[0])
    with nogil:
        while cur < n:
            end = blocks_next(&it, text, first, cur, n)
            if end < 0:
                end = piece_end(which, 0, text, cur, n)
                blocks_reset(&it)
            out[k] = end
            k += 1
            cur = end
    return ends[:k]
