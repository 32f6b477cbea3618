/* The split pattern's DFA on ASCII text, a vector shuffle a byte (bpetrain.splitting._dfa.shuffle_table).

   The splitting loop's DFA (_matcher.pyx, _dfa_fast) takes a byte by reading its next state from
   a table whose address depends on the state before: a chain of dependent loads, one a byte.
   Here the state is a byte broadcast in every lane of a vector, and a step is a shuffle of
   the row of the byte's class by that vector: every lane gets the row's entry at the state, so
   the vector holds the next state everywhere. The row does not depend on the state (it is
   loaded ahead), and a shuffle takes 1-3 cycles where a dependent load takes 5 and more. This
   is Hyperscan's "Sheng" DFA (Intel, github.com/intel/hyperscan, src/nfa/sheng_impl.h: 16
   states by one pshufb, and since its 5.4 release 32 and 64 by AVX-512 VBMI vpermb), written
   here from that description. Two codes take a step:

   - vpermb (AVX-512 VBMI): one permute of the 64-byte row, 3 cycles;
   - pshufb (AVX2, for the many CPUs without VBMI): pshufb looks up 16 bytes, and zeroes a
     byte whose index has bit 7 set. No step is taken from the dead lane 0, so a row's
     entries of lanes 1-64 (64: dead) are read, in quarters q0..q3 of 16 (lanes 1-16, ...,
     49-64), stored as p0 = q0, pk = q(k-1) ^ qk (bpetrain_shuffle_prepare); the step XORs
     pshufb(pk, lane - 1 - 16k): that index has bit 7 set (a zero) where lane - 1 < 16k, so
     the XOR of the rest is q((lane - 1) / 16) at (lane - 1) % 16 (from lane 0: dead). A table
     whose lanes go up to 16, 32, 48 or 63 takes one to four pshufb a step; the flags are
     cleared off the index first (one AND), and a step takes 4-5 cycles. (Hyperscan runs
     more than 16 states without VBMI by other DFAs, McClellan's and McSheng's; this
     composition is bpetrain's.)

   An entry is the next state's lane (6 bits, 0: dead) | 0x40 if a match ends before the byte
   (DFA_MATCH) | 0x80 if a piece ends before it (DFA_CUT). A step into the dead lane is one the
   caller takes one character at a time (DFA_SLOW, or a byte >= 0x80, whose row is all dead).

   The loop itself is _dfa_shuffle_run.h, included here once per code (as Hyperscan includes
   sheng_impl.h once per variant, with macros naming its parts). */
#ifndef BPETRAIN_DFA_SHUFFLE_H
#define BPETRAIN_DFA_SHUFFLE_H

#include <stdint.h>
#include <string.h>
#include "_portable.h"

#if (defined(__x86_64__) || defined(_M_X64)) && defined(BPETRAIN_GNU_BUILTINS) && !defined(__APPLE__)
#include <immintrin.h>
#define BPETRAIN_SHUFFLE_X86 1
#endif

/* The codes that take a step, as Program(shuffle=...) names them: 0 none (the caller's own
   loop), 1 vpermb (AVX-512 VBMI), 2 pshufb (AVX2). */
enum { BPETRAIN_SHUFFLE_NONE = 0, BPETRAIN_SHUFFLE_VPERMB = 1, BPETRAIN_SHUFFLE_PSHUFB = 2 };

/* The shortest failed piece (no match from its start, in bytes) that the shuffle loop leaves to
   its caller, as the caller asks (``reread``), rather than reading again from its next byte:
   the caller keeps its states and reads the next attempts against them (_matcher.pyx,
   _dfa_record and _dfa_guarded). */
#define BPETRAIN_SHUFFLE_REREAD 4

/* Whether this CPU (and build) runs the code ``code``. */
static inline int bpetrain_shuffle_supported(int code) {
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

/* A pattern's shuffle table (bpetrain.splitting._dfa.shuffle_table). */
typedef struct {
    const uint8_t* rows;           /* 64-byte rows: next lane | MATCH 0x40 | CUT 0x80 (as code prepared them) */
    const uint16_t* offsets;       /* byte -> the byte offset of its row */
    const uint8_t* pairs;          /* two bytes a, b: the row at pair_offsets[a] + offsets[b]; NULL: none */
    const uint32_t* pair_offsets;
    int restart;                   /* the lane of the start state away from the string's start */
    int gap;                       /* the lane of the gap (bytes between pieces) */
    int failed_gap;                /* the gap's lane after a failed piece's byte; the failed lanes follow it */
    int back;                      /* the first lane entered by going back a byte; the others follow it */
    int back_failed;               /* the gap's lane after going back to a byte no piece takes; such lanes follow */
    int code;                      /* the code that takes a step (BPETRAIN_SHUFFLE_*) */
    int quarters;                  /* pshufb: 16-lane quarters of a row a step reads (1 to 4) */
    const uint64_t* cover;         /* byte -> the lanes (a bit each) whose failed attempt through the byte fails
                                      the attempt from it too (_dfa._cover_table); NULL: none */
} bpetrain_shuffle;

/* Prepare n 64-byte rows at ``rows`` (stored as _dfa.shuffle_table gives them) for the code
   ``code`` reading ``quarters`` of each: for pshufb, each row a lane down (lane 0's entry
   dropped, lane 64's dead), then pk = q(k-1) ^ qk, last quarter first. */
static inline void bpetrain_shuffle_prepare(uint8_t* rows, Py_ssize_t n, int code, int quarters) {
    Py_ssize_t i;
    int k, j;
    if (code != BPETRAIN_SHUFFLE_PSHUFB)
        return;
    for (i = 0; i < n; i++) {
        uint8_t* row = rows + 64 * i;
        memmove(row, row + 1, 63);
        row[63] = 0;
        for (k = quarters - 1; k > 0; k--)
            for (j = 0; j < 16; j++)
                row[16 * k + j] ^= row[16 * (k - 1) + j];
    }
}

#ifdef BPETRAIN_SHUFFLE_X86
/* The k-th term of pshufb's step: pshufb(pk, lane - 1 - 16k). */
#define BPETRAIN_PSHUFB_TERM(row, lane, k) \
    _mm_shuffle_epi8(_mm_load_si128((const __m128i*)((row) + 16 * (k))), \
                     _mm_add_epi8((lane), _mm_set1_epi8((char)(-1 - 16 * (k)))))

/* pshufb's step from the lane in every byte of s (flags above it; not the dead lane) by a
   prepared row of ``quarters`` quarters. */
__attribute__((target("avx2"), always_inline))
static inline __m128i bpetrain_pshufb_step(__m128i s, const uint8_t* row, int quarters) {
    const __m128i lane = _mm_and_si128(s, _mm_set1_epi8(0x3F));
    __m128i next = BPETRAIN_PSHUFB_TERM(row, lane, 0);
    if (quarters == 2)
        next = _mm_xor_si128(next, BPETRAIN_PSHUFB_TERM(row, lane, 1));
    if (quarters == 3)
        next = _mm_xor_si128(next, _mm_xor_si128(BPETRAIN_PSHUFB_TERM(row, lane, 1), BPETRAIN_PSHUFB_TERM(row, lane, 2)));
    if (quarters == 4)
        next = _mm_xor_si128(_mm_xor_si128(next, BPETRAIN_PSHUFB_TERM(row, lane, 1)),
                             _mm_xor_si128(BPETRAIN_PSHUFB_TERM(row, lane, 2), BPETRAIN_PSHUFB_TERM(row, lane, 3)));
    return next;
}

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_vpermb
#define BPETRAIN_SHUFFLE_TARGET "avx512f,avx512bw,avx512vbmi,bmi2"
#define BPETRAIN_SHUFFLE_STATE __m512i
#define BPETRAIN_SHUFFLE_SET1(c) _mm512_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) _mm512_permutexvar_epi8((state), _mm512_load_si512((const void*)(row)))
#define BPETRAIN_SHUFFLE_LOW(state) _mm512_castsi512_si128(state)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb1
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_step((state), (row), 1)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb2
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_step((state), (row), 2)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb3
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_step((state), (row), 3)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#include "_dfa_shuffle_run.h"

#define BPETRAIN_SHUFFLE_NAME bpetrain_shuffle_run_pshufb4
#define BPETRAIN_SHUFFLE_TARGET "avx2,bmi2,popcnt"
#define BPETRAIN_SHUFFLE_STATE __m128i
#define BPETRAIN_SHUFFLE_SET1(c) _mm_set1_epi8(c)
#define BPETRAIN_SHUFFLE_STEP(state, row) bpetrain_pshufb_step((state), (row), 4)
#define BPETRAIN_SHUFFLE_LOW(state) (state)
#include "_dfa_shuffle_run.h"
#endif

/* The DFA from lane *lane at s[pos] by the code t->code (see _dfa_shuffle_run.h for what it
   reads and writes). Returns the position reached; pos itself where t->code cannot run here
   (never: Program sets no code this CPU lacks). */
static inline Py_ssize_t bpetrain_shuffle_run(const uint8_t* s, Py_ssize_t pos, Py_ssize_t limit,
                                              const bpetrain_shuffle* t, int* lane, Py_ssize_t* piece,
                                              Py_ssize_t* bounds, Py_ssize_t* count, Py_ssize_t max_pieces,
                                              Py_ssize_t* last, Py_ssize_t reread) {
#ifdef BPETRAIN_SHUFFLE_X86
    if (t->code == BPETRAIN_SHUFFLE_VPERMB)
        return bpetrain_shuffle_run_vpermb(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
    if (t->code == BPETRAIN_SHUFFLE_PSHUFB) {
        if (t->quarters == 1)
            return bpetrain_shuffle_run_pshufb1(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
        if (t->quarters == 2)
            return bpetrain_shuffle_run_pshufb2(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
        if (t->quarters == 3)
            return bpetrain_shuffle_run_pshufb3(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
        return bpetrain_shuffle_run_pshufb4(s, pos, limit, t, lane, piece, bounds, count, max_pieces, last, reread);
    }
#else
    (void)s; (void)limit; (void)t; (void)lane; (void)piece; (void)bounds; (void)count; (void)max_pieces; (void)last;
#endif
    return pos;
}

#endif
