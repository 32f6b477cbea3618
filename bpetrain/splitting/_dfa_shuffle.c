/* The DFA's loops by vector shuffles and the preparation of their tables (_dfa_shuffle.h's head),
   a translation unit of its own in the _matcher extension (setup.py): the loops are large, and
   in _matcher.pyx's unit their size changed what GCC inlined into that module's own loops (a
   larger shuffle loop once made GCC inline the UTF-8 decoder into dfa_pieces, with a byte put
   on the stack and read back wider: non-ASCII text split a third slower). Across units it
   inlines nothing, whatever the size of either. */
#include <Python.h>
#include <string.h>
#include "_dfa_shuffle.h"

/* Whether this CPU (and build) runs the code ``code``. */
int bpetrain_shuffle_supported(int code) {
#ifdef BPETRAIN_SHUFFLE_X86
    if (code == BPETRAIN_SHUFFLE_VPERMB)
        return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw")
               && __builtin_cpu_supports("bmi2");
    if (code == BPETRAIN_SHUFFLE_PSHUFB)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")
               && __builtin_cpu_supports("popcnt");
#endif
    return code == BPETRAIN_SHUFFLE_NONE;
}

/* pshufb's code of the entry e (lane | MATCH 0x40 | CUT 0x80; lane 0: dead) where it reads three or
   four quarters (_dfa_shuffle.h's head). */
static inline uint8_t bpetrain_pshufb_code(uint8_t e) {
    static const uint8_t quarter[4] = {0x00, 0x80, 0x40, 0xC0};
    int slot = ((e & 63) + 63) & 63;  /* lane - 1, the dead lane 0 at 63 */
    return (uint8_t)(quarter[slot >> 4] | (slot & 15) | ((e & 0x80) >> 2) | ((e & 0x40) >> 2));
}

/* pshufb's two-quarter code of the entry e where the lanes go up to 31 (_dfa_shuffle.h's head):
   slot L - 1 of lane L as its place slot % 16 | MATCH in bit 4 | CUT in bit 5 | its quarter
   slot / 16 in bit 6; the dead lane's, slot 31, with bit 7 set too (0xCF). */
static inline uint8_t bpetrain_pshufb_code2(uint8_t e) {
    int slot = ((e & 63) + 31) & 31;
    return (uint8_t)((slot & 15) | ((slot & 16) << 2) | ((e & 0x80) >> 2) | ((e & 0x40) >> 2) | (e & 63 ? 0 : 0x80));
}

/* The 16-lane quarters of a row that pshufb reads for lanes 0 to n_lanes - 1 (_dfa_shuffle.h's head). */
static int bpetrain_pshufb_quarters(int n_lanes) {
    return n_lanes <= 17 ? 1 : (n_lanes - 1 + 15) / 16;
}

/* Prepare t's n 64-byte rows at ``rows`` (stored as _dfa.shuffle_table gives them, over lanes 0
   to n_lanes - 1) for the code t->code, and set t->quarters and t->coded: for pshufb
   (_dfa_shuffle.h's head), reading one quarter, or two of exactly 33 lanes, each row a lane down
   (lane 0's entry dropped, lane 64's dead), then p1 = q0 ^ q1; reading two of up to 32 lanes, each
   entry in pshufb's two-quarter code, and the rows q1, q0 ^ q1 (their entries at place 15
   swapped, for the dead lane's code); reading three or four, each entry
   in pshufb's code, and the rows of the step's terms in turn. */
void bpetrain_shuffle_prepare(bpetrain_shuffle* t, uint8_t* rows, Py_ssize_t n, int n_lanes) {
    Py_ssize_t i;
    int k, j, quarters = bpetrain_pshufb_quarters(n_lanes);
    uint8_t q[4][16];
    t->quarters = quarters;
    t->coded = quarters > 2 || (quarters == 2 && n_lanes <= 32);
    if (t->code != BPETRAIN_SHUFFLE_PSHUFB)
        return;
    for (i = 0; i < n; i++) {
        uint8_t* row = rows + 64 * i;
        if (quarters == 2 && t->coded) {
            for (j = 0; j < 32; j++)  /* slot j: lane j + 1, the last the dead lane's */
                q[j >> 4][j & 15] = bpetrain_pshufb_code2(j < 31 ? row[j + 1] : 0);
            memset(row, 0, 64);
            for (j = 0; j < 16; j++) {
                row[j] = q[1][j];
                row[16 + j] = q[0][j] ^ q[1][j];
            }
            row[15] = q[0][15] ^ q[1][15];  /* place 15: the dead code reads the second term alone */
            row[31] = q[1][15];
            continue;
        }
        if (quarters <= 2) {
            memmove(row, row + 1, 63);
            row[63] = 0;
            for (j = 0; quarters == 2 && j < 16; j++)
                row[16 + j] ^= row[j];
            continue;
        }
        for (k = 0; k < 4; k++)
            for (j = 0; j < 16; j++)
                q[k][j] = bpetrain_pshufb_code(16 * k + j + 1 < 64 ? row[16 * k + j + 1] : 0);
        for (j = 0; j < 16; j++) {
            row[j] = q[2][j];
            row[16 + j] = q[0][j] ^ q[2][j];
            row[32 + j] = quarters == 3 ? q[1][j] : q[3][j];
            row[48 + j] = q[1][j] ^ q[3][j];
        }
    }
}

/* Merge the lanes of t's n_rows rows at ``rows`` (and of its n_pair_rows two-byte rows after
   them; all as _dfa.shuffle_table gives them) that no ASCII text tells apart, where that takes
   pshufb fewer quarters a step (_dfa_shuffle.h's head): the coarsest partition of the n_lanes
   lanes that keeps apart the kinds the loop tells by lane (the dead lane, the states, the gap,
   the failed gap and lanes, the back lanes, the back-failed gap and lanes) and under which every
   byte's row takes the lanes of a part to one part with the same flags (Moore's partition
   refinement, as DFA minimisation does: Hopcroft and Ullman, "Introduction to Automata
   Theory", 3.4). A part's lane is its number, in the order of its first lane, so each kind's
   lanes stay together and in order. The rows are rewritten over the parts, t's lanes renamed;
   the rows as they were go to ``keep`` (n_rows * 64 bytes) for the loop to find a lane from
   the last place it knew it (_dfa_shuffle_run.h: a part of one lane, or a lane it set). The
   cover (t->cover, if any) is renamed by bpetrain_shuffle_merge_cover. Returns the lanes
   after merging, n_lanes where nothing is merged (t->full stays NULL). */
int bpetrain_shuffle_merge(bpetrain_shuffle* t, uint8_t* rows, Py_ssize_t n_rows, Py_ssize_t n_pair_rows,
                           int n_lanes, uint8_t* keep) {
    uint8_t part[64], next[64], first[64], row[64];
    int l, m, n_parts = 0, n_next;
    Py_ssize_t c;
    t->full = NULL;
    t->full_restart = t->restart;
    t->full_gap = t->gap;
    memset(t->sole, 0, 64);
    if (n_lanes > 64 || n_lanes < 2)
        return n_lanes;
    for (l = 0; l < n_lanes; l++)  /* the kinds, in lane order (_dfa.shuffle_table) */
        part[l] = (uint8_t)(l == 0 ? 0 : l < t->gap ? 1 : l == t->gap ? 2 : l == t->failed_gap ? 3 : l < t->back ? 4
                            : l < t->back_failed ? 5 : l == t->back_failed ? 6 : 7);
    for (;;) {
        n_next = 0;
        for (l = 0; l < n_lanes; l++) {
            for (m = 0; m < n_next; m++) {
                int a = first[m], same = part[a] == part[l];
                for (c = 0; same && c < n_rows; c++) {
                    uint8_t x = rows[64 * c + l], y = rows[64 * c + a];
                    same = (x & 0xC0) == (y & 0xC0) && part[x & 63] == part[y & 63];
                }
                if (same)
                    break;
            }
            if (m == n_next)
                first[n_next++] = (uint8_t)l;
            next[l] = (uint8_t)m;
        }
        if (n_next == n_parts)
            break;
        n_parts = n_next;
        memcpy(part, next, (size_t)n_lanes);
    }
    if (bpetrain_pshufb_quarters(n_parts) >= bpetrain_pshufb_quarters(n_lanes))
        return n_lanes;
    memcpy(keep, rows, (size_t)(64 * n_rows));
    memset(t->merged, 0, 64);
    memcpy(t->merged, part, (size_t)n_lanes);
    memcpy(t->sole, first, (size_t)n_parts);
    for (l = 0; l < n_lanes; l++)  /* a part of several lanes: none is its sole one */
        if (first[part[l]] != l)
            t->sole[part[l]] = 0;
    for (c = 0; c < n_rows + n_pair_rows; c++) {
        uint8_t* r = rows + 64 * c;
        memset(row, 0, 64);
        for (m = 1; m < n_parts; m++)
            row[m] = (uint8_t)((r[first[m]] & 0xC0) | part[r[first[m]] & 63]);
        memcpy(r, row, 64);
    }
    t->restart = part[t->restart];
    t->gap = part[t->gap];
    t->failed_gap = part[t->failed_gap];
    t->back = part[t->back];
    t->back_failed = part[t->back_failed];
    t->full = keep;
    return n_parts;
}

/* t's cover (byte -> lanes, a bit each) over the merged lanes: a part covers a byte where all
   its lanes do (an attempt skipped only where the lane it is in would have skipped it). */
void bpetrain_shuffle_merge_cover(const bpetrain_shuffle* t, uint64_t* cover, int n_lanes) {
    int b, l;
    if (t->full == NULL)
        return;
    for (b = 0; b < 256; b++) {
        uint64_t all = ~(uint64_t)0, any = 0;
        for (l = 1; l < n_lanes; l++) {
            uint64_t bit = (uint64_t)1 << t->merged[l];
            if ((cover[b] >> l) & 1)
                any |= bit;
            else
                all &= ~bit;
        }
        cover[b] = any & all;
    }
}

#ifdef BPETRAIN_SHUFFLE_X86
/* The term of pshufb's step off the 16-byte part k of a prepared row, by the index i. */
#define BPETRAIN_PSHUFB_TERM(row, k, i) _mm_shuffle_epi8(_mm_load_si128((const __m128i*)((row) + 16 * (k))), (i))

/* pshufb's step from the lane in every byte of s (flags above it; not the dead lane) by a
   row prepared for one or two quarters. */
__attribute__((target("avx2"), always_inline))
static inline __m128i bpetrain_pshufb_step(__m128i s, const uint8_t* row, int quarters) {
    const __m128i lane = _mm_and_si128(s, _mm_set1_epi8(0x3F));
    __m128i next = BPETRAIN_PSHUFB_TERM(row, 0, _mm_add_epi8(lane, _mm_set1_epi8(-1)));
    if (quarters == 2)
        next = _mm_xor_si128(next, BPETRAIN_PSHUFB_TERM(row, 1, _mm_add_epi8(lane, _mm_set1_epi8(-17))));
    return next;
}

/* pshufb's step from the code x (in the low byte of s; not the dead lane's) by a row prepared
   for three or four quarters: the next code in the low byte (the other bytes: no matter). */
__attribute__((target("avx2"), always_inline))
static inline __m128i bpetrain_pshufb_coded_step(__m128i s, const uint8_t* row, int quarters) {
    const __m128i high = _mm_xor_si128(s, _mm_set1_epi8((char)0x80));
    __m128i next = _mm_xor_si128(BPETRAIN_PSHUFB_TERM(row, 0, s),
                                 BPETRAIN_PSHUFB_TERM(row, 1, _mm_adds_epu8(s, _mm_set1_epi8(0x40))));
    if (quarters == 3)
        return _mm_xor_si128(next, BPETRAIN_PSHUFB_TERM(row, 2, high));
    return _mm_xor_si128(next, _mm_xor_si128(BPETRAIN_PSHUFB_TERM(row, 2, high),
                                             BPETRAIN_PSHUFB_TERM(row, 3, _mm_adds_epu8(high, _mm_set1_epi8(0x40)))));
}

/* pshufb's step from the two-quarter code x (bpetrain_pshufb_code2, in the low byte of s; not the
   dead lane's) by a row prepared for it (q1, q0 ^ q1): pshufb reads q1 at x's place for every x,
   and q0 ^ q1 only at x + 0x40, whose bit 7 is set (a zero) in quarter 1, so the XOR is the entry
   of x's quarter, the next code (the other bytes: no matter). Two pshufb and no AND: 3 cycles. */
__attribute__((target("avx2"), always_inline))
static inline __m128i bpetrain_pshufb_coded2_step(__m128i s, const uint8_t* row) {
    return _mm_xor_si128(BPETRAIN_PSHUFB_TERM(row, 0, s),
                         BPETRAIN_PSHUFB_TERM(row, 1, _mm_add_epi8(s, _mm_set1_epi8(0x40))));
}

/* 16 of pshufb's codes (bpetrain_pshufb_code) back as entries: lane | MATCH 0x40 | CUT 0x80
   (the dead lane's code, slot 63, as lane 0). */
__attribute__((target("avx2"), always_inline))
static inline __m128i bpetrain_pshufb_decode(__m128i x) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(x, 4), nibble);
    /* by bits 7-4 (the quarter 7-6, CUT 5, MATCH 4): 16 * the quarter | the flags */
    const __m128i base = _mm_setr_epi8(0x00, 0x40, (char)0x80, (char)0xC0, 0x20, 0x60, (char)0xA0, (char)0xE0,
                                       0x10, 0x50, (char)0x90, (char)0xD0, 0x30, 0x70, (char)0xB0, (char)0xF0);
    const __m128i t = _mm_shuffle_epi8(base, high);
    /* lane = (the place + 1 + 16 * the quarter) % 64: 64, the dead lane's, is 0 */
    const __m128i lane = _mm_add_epi8(_mm_add_epi8(_mm_and_si128(x, nibble), _mm_set1_epi8(1)),
                                      _mm_and_si128(t, _mm_set1_epi8(0x30)));
    return _mm_or_si128(_mm_and_si128(lane, _mm_set1_epi8(0x3F)), _mm_and_si128(t, _mm_set1_epi8((char)0xC0)));
}

/* loadu at 16 - k: the pshufb that moves the top k bytes of a vector down to its first k (the others zero) */
static const uint8_t bpetrain_shuffle_down[32] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

/* Byte i of line i all ones, the others zero: the vpermb loop puts step i of a block in byte i
   of a vector by (x & line i) | the vector. */
static const uint8_t bpetrain_shuffle_onehot[64 * 64] __attribute__((aligned(64))) = {
#define BPETRAIN_ONEHOT_LINE(i) [65 * (i)] = 0xFF
#define BPETRAIN_ONEHOT_8(i) BPETRAIN_ONEHOT_LINE(i), BPETRAIN_ONEHOT_LINE(i + 1), BPETRAIN_ONEHOT_LINE(i + 2), \
    BPETRAIN_ONEHOT_LINE(i + 3), BPETRAIN_ONEHOT_LINE(i + 4), BPETRAIN_ONEHOT_LINE(i + 5), BPETRAIN_ONEHOT_LINE(i + 6), \
    BPETRAIN_ONEHOT_LINE(i + 7)
    BPETRAIN_ONEHOT_8(0), BPETRAIN_ONEHOT_8(8), BPETRAIN_ONEHOT_8(16), BPETRAIN_ONEHOT_8(24),
    BPETRAIN_ONEHOT_8(32), BPETRAIN_ONEHOT_8(40), BPETRAIN_ONEHOT_8(48), BPETRAIN_ONEHOT_8(56)
#undef BPETRAIN_ONEHOT_8
#undef BPETRAIN_ONEHOT_LINE
};

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_vpermb
#define BPETRAIN_SHUFFLE_WIDE 1
#define BPETRAIN_SHUFFLE_FIRST_GROUP 8
#define BPETRAIN_SHUFFLE_COLLECT(x, i) \
    (all = _mm512_ternarylogic_epi32(all, (x), _mm512_load_si512((const void*)(one + 64 * (i))), 0xF8))
#define BPETRAIN_SHUFFLE_TARGET "avx512f,avx512bw,avx512vbmi,bmi2"
#define BPETRAIN_SHUFFLE_STATE __m512i
#define BPETRAIN_SHUFFLE_SET1(c) _mm512_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) _mm512_permutexvar_epi8((state), _mm512_load_si512((const void*)(row)))
#define BPETRAIN_SHUFFLE_LOW(state) _mm512_castsi512_si128(state)
#define BPETRAIN_SHUFFLE_DEAD(r) (!((r) & 63))
#define BPETRAIN_SHUFFLE_DECODE(x) (x)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb1
#define BPETRAIN_SHUFFLE_STICKY 1
#define BPETRAIN_SHUFFLE_COLLECT(x, i) (acc = _mm_alignr_epi8(BPETRAIN_SHUFFLE_LOW(x), acc, 1))
#define BPETRAIN_SHUFFLE_MERGED 1
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_step((state), (row), 1)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#define BPETRAIN_SHUFFLE_DEAD(r) (!((r) & 63))
#define BPETRAIN_SHUFFLE_DECODE(x) (x)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb2
#define BPETRAIN_SHUFFLE_STICKY 1
#define BPETRAIN_SHUFFLE_COLLECT(x, i) (acc = _mm_alignr_epi8(BPETRAIN_SHUFFLE_LOW(x), acc, 1))
#define BPETRAIN_SHUFFLE_MERGED 1
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_step((state), (row), 2)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#define BPETRAIN_SHUFFLE_DEAD(r) (!((r) & 63))
#define BPETRAIN_SHUFFLE_DECODE(x) (x)
#include "_dfa_shuffle_run.h"

/* (the loop's masks read the two-quarter codes as they are: place | quarter << 6 is in the order
   of the lanes, the dead lane's last; CUT and MATCH are two bits lower than in an entry) */
#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb2_coded
#define BPETRAIN_SHUFFLE_STICKY 1
#define BPETRAIN_SHUFFLE_COLLECT(x, i) (acc = _mm_alignr_epi8(BPETRAIN_SHUFFLE_LOW(x), acc, 1))
#define BPETRAIN_SHUFFLE_MERGED 1
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8((char)bpetrain_pshufb_code2((uint8_t)(c)))
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_coded2_step((state), (row))
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#define BPETRAIN_SHUFFLE_DEAD(r) ((r) & 0x80)
#define BPETRAIN_SHUFFLE_DECODE(x) (x)
#define BPETRAIN_SHUFFLE_LANE(c) (((((c) & 15) | (((c) >> 2) & 16)) + 1) & 31)
#define BPETRAIN_SHUFFLE_KEY(l) (bpetrain_pshufb_code2((uint8_t)(l)) & 0x4F)
#define BPETRAIN_SHUFFLE_KEYS 0x4F
#define BPETRAIN_SHUFFLE_CUT_SHIFT 2
#include "_dfa_shuffle_run.h"

/* (the dead lane's code 0xCF does not stay dead here: its step reads q1 at place 15, lane 32's entry) */
#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb3
#define BPETRAIN_SHUFFLE_COLLECT(x, i) (acc = _mm_alignr_epi8(BPETRAIN_SHUFFLE_LOW(x), acc, 1))
#define BPETRAIN_SHUFFLE_MERGED 1
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8((char)bpetrain_pshufb_code((uint8_t)(c)))
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_coded_step((state), (row), 3)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#define BPETRAIN_SHUFFLE_DEAD(r) (((r) & 0xCF) == 0xCF)
#define BPETRAIN_SHUFFLE_DECODE(x) bpetrain_pshufb_decode(x)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb4
#define BPETRAIN_SHUFFLE_STICKY 1
#define BPETRAIN_SHUFFLE_COLLECT(x, i) (acc = _mm_alignr_epi8(BPETRAIN_SHUFFLE_LOW(x), acc, 1))
#define BPETRAIN_SHUFFLE_MERGED 1
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8((char)bpetrain_pshufb_code((uint8_t)(c)))
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_coded_step((state), (row), 4)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#define BPETRAIN_SHUFFLE_DEAD(r) (((r) & 0xCF) == 0xCF)
#define BPETRAIN_SHUFFLE_DECODE(x) bpetrain_pshufb_decode(x)
#include "_dfa_shuffle_run.h"
#endif

/* The DFA from lane *lane at s[pos] by the code t->code (see _dfa_shuffle_run.h for what it
   reads and writes). Returns the position reached; pos itself where t->code cannot run here
   (never: Program sets no code this CPU lacks). */
Py_ssize_t bpetrain_shuffle_run(const uint8_t* s, Py_ssize_t pos, Py_ssize_t limit,
                               const bpetrain_shuffle* t, int* lane, Py_ssize_t* piece,
                               Py_ssize_t* bounds, Py_ssize_t* count, Py_ssize_t max_pieces,
                               Py_ssize_t* last, Py_ssize_t reread) {
#ifdef BPETRAIN_SHUFFLE_X86
    if (t->code == BPETRAIN_SHUFFLE_VPERMB)
        return bpetrain_shuffle_run_vpermb(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
    if (t->code == BPETRAIN_SHUFFLE_PSHUFB) {
        if (t->quarters == 1)
            return bpetrain_shuffle_run_pshufb1(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
        if (t->quarters == 2 && t->coded)
            return bpetrain_shuffle_run_pshufb2_coded(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last,
                                                      reread);
        if (t->quarters == 2)
            return bpetrain_shuffle_run_pshufb2(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
        if (t->quarters == 3)
            return bpetrain_shuffle_run_pshufb3(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
        return bpetrain_shuffle_run_pshufb4(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
    }
#else
    (void)s; (void)limit; (void)t; (void)lane; (void)piece; (void)bounds; (void)count; (void)max_pieces; (void)last;
    (void)reread;
#endif
    return pos;
}

