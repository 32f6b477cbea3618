/* Probes: attempts that a byte a few places ahead rules out, before the DFA reads them.

   Where no piece is open (after a failed attempt), the DFA tries an attempt from each next
   character until one matches. Some patterns need a byte of a small set at a fixed distance
   from where an attempt starts, before any match can end: ``[^*-4]{8}+\d{0,30}[!-/]{8}+``
   needs one of ``!-/`` or a digit 8 bytes on, ``\P{Lu}.{2}\+{2,}`` a ``+`` 3 bytes on. Read by
   the DFA, each such attempt takes all the bytes up to there and fails, from every place of
   the text. A probe looks at that byte first.

   The probes come from the DFA's table (_matcher.pyx, Program._read_probes): for the first
   byte b of an attempt (ASCII, whose step from the start state neither ends a match nor a
   piece nor leaves no thread), the states the attempt can be in d characters on (following
   ASCII bytes that end no match and leave a thread) and the ASCII bytes they take there
   (those that keep a thread, or end a match or a piece). Up to the first distance where a
   match or a piece can end, an attempt whose byte at distance d is not one of those stops
   there at the latest with no match (the DFA is deterministic: each of its steps up to there
   is one of those followed). Two sets two characters on or more are kept (``depth[b][k]``, 0:
   none): an attempt that fails on the byte after its first costs the DFA's loops no more
   than a probe.

   A probe reads only where the characters up to it are ASCII bytes (a character of several
   bytes would move the distance) and before ``stop``; elsewhere the attempt is not ruled out.
   So an attempt skipped fails: skipping it gives the pieces the DFA gives. The reading
   skips them where it looks for the next attempt's start (_matcher.pyx, _dfa_gap); with
   probes, the shuffle loop leaves a failed piece of two bytes or more to it, or longer ones
   only where the probes skip too little to pay for that (_matcher.pyx, _dfa_review_probes). (Hyperscan checks
   a literal's bytes at fixed distances before it runs its engines on a place, in its
   "lookaround" checks; these probes come from the DFA itself.) */
#ifndef BPETRAIN_DFA_PROBE_H
#define BPETRAIN_DFA_PROBE_H

#include <stdint.h>
#include <string.h>
#include "_portable.h"
#include "_dfa_shuffle.h"  /* (BPETRAIN_SHUFFLE_X86: x86-64 with the GNU builtins) */

typedef struct bpetrain_probe {
    uint8_t start[128];       /* byte -> 1 if an attempt may begin with it (the start state's step
                                 leaves a thread or ends a match or a piece), 0 if it fails on it */
    uint8_t next[128][16];    /* first byte -> the ASCII bytes an attempt can read right after it (all: any) */
    uint8_t depth[128][2];    /* first byte -> the distances (characters, 2 to 255) of its probes, 0: none */
    uint8_t sets[128][2][16]; /* ... the ASCII bytes an attempt can read there, a bit each (byte >> 3, byte & 7) */
    /* The block probe (bpetrain_probe_blocks; set by bpetrain_probe_prepare_blocks): one
       distance for all first bytes, 32 places at a time. vdist: the distance (2 to 32), 0: none;
       vsets, as pshufb tables (low nibble -> a bit per high nibble 0-7): 0 the bytes an attempt
       may begin with (start), 1 those of them with no probe at vdist, 2 the bytes every such
       attempt can read right after its first (the meet of their next), 3 the union of the sets
       of their probes at vdist. */
    uint8_t vdist;
    uint8_t vsets[4][16];
} bpetrain_probe;

/* Whether the attempt from s[pos] (an ASCII byte, not the string's start) is not ruled out
   by the probes of its first byte, which read bytes before ``end``; ``ascii_to`` is the end of
   a run of ASCII bytes from pos or before it (extended here as far as a probe needs). */
static inline int bpetrain_probe_open(const bpetrain_probe* p, const uint8_t* s, Py_ssize_t pos, Py_ssize_t end,
                                      Py_ssize_t* ascii_to) {
    uint8_t b = s[pos];
    int k;
    if (!p->start[b])
        return 0;
    for (k = 0; k < 2 && p->depth[b][k]; k++) {
        Py_ssize_t q = pos + p->depth[b][k], a = *ascii_to;
        uint8_t c;
        if (q >= end)
            continue;
        if (a < pos)
            a = pos;
        while (a <= q && s[a] < 0x80)
            a++;
        *ascii_to = a;
        if (a <= q)
            continue;  /* a byte >= 0x80 up to there */
        c = s[q];
        if (!((p->sets[b][k][c >> 3] >> (c & 7)) & 1))
            return 0;
    }
    return 1;
}

/* Whether bpetrain_probe_skip stops at pos (< end): see there. */
static inline int bpetrain_probe_stops(const bpetrain_probe* p, const uint8_t* s, Py_ssize_t pos, Py_ssize_t end,
                                       Py_ssize_t* ascii_to) {
    uint8_t b = s[pos], c;
    if (b >= 0x80 || pos + 1 >= end)
        return 1;
    if (!p->start[b])
        return 0;
    c = s[pos + 1];
    return c >= 0x80 || !((p->next[b][c >> 3] >> (c & 7)) & 1) || bpetrain_probe_open(p, s, pos, end, ascii_to);
}

/* The block probe: the one distance d (2 to 32) whose probes rule out the most (the first
   bytes that have one there, times the bytes outside the union of their sets there), and the
   sets bpetrain_probe_blocks tests 32 places at a time with; none (vdist 0) where no ASCII
   byte has a probe, or on a CPU without AVX2. A place there may stop bpetrain_probe_skip
   only if its byte may begin an attempt and either has no probe at d, or the byte after it
   is not one every such attempt can read, or the byte d on is in the union, or a byte >= 0x80
   lies from it to d on: elsewhere the attempt's own probe at d rules it out (its set is in
   the union; its next holds the meet), as bpetrain_probe_stops finds. */
static inline void bpetrain_probe_prepare_blocks(bpetrain_probe* p) {
    int d, b, k, best = 0, best_score = 0;
    p->vdist = 0;
    memset(p->vsets, 0, sizeof(p->vsets));
#ifdef BPETRAIN_SHUFFLE_X86
    if (!__builtin_cpu_supports("avx2"))
        return;
    for (d = 2; d <= 32; d++) {
        uint8_t any[16] = {0};
        int n = 0, size = 0;
        for (b = 0; b < 128; b++)
            for (k = 0; k < 2; k++)
                if (p->start[b] && p->depth[b][k] == d) {
                    int i;
                    for (i = 0; i < 16; i++)
                        any[i] |= p->sets[b][k][i];
                    n++;
                }
        for (b = 0; b < 128; b++)
            size += (any[b >> 3] >> (b & 7)) & 1;
        if (n * (128 - size) > best_score) {
            best_score = n * (128 - size);
            best = d;
        }
    }
    if (!best)
        return;
    for (b = 0; b < 128; b++) {
        int lo = b & 15, bit = 1 << (b >> 4), probed = 0;
        if (!p->start[b])
            continue;
        p->vsets[0][lo] |= bit;
        for (k = 0; k < 2; k++)
            if (p->depth[b][k] == best) {
                int i;
                for (i = 0; i < 128; i++)
                    if ((p->sets[b][k][i >> 3] >> (i & 7)) & 1)
                        p->vsets[3][i & 15] |= 1 << (i >> 4);
                probed = 1;
            }
        if (!probed)
            p->vsets[1][lo] |= bit;
    }
    for (b = 0; b < 128; b++) {  /* the meet of the starting bytes' next */
        int a, meet = 1;
        for (a = 0; a < 128 && meet; a++)
            if (p->start[a])
                meet = (p->next[a][b >> 3] >> (b & 7)) & 1;
        if (meet)
            p->vsets[2][b & 15] |= 1 << (b >> 4);
    }
    p->vdist = (uint8_t)best;
#endif
}

#ifdef BPETRAIN_SHUFFLE_X86
/* The bytes of x in the set ``set`` (a vsets table), a bit each. */
__attribute__((target("avx2"), always_inline))
static inline uint32_t bpetrain_probe_members(__m256i x, __m256i set) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i high_bit = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0,
                                              1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256i row = _mm256_shuffle_epi8(set, _mm256_and_si256(x, nibble));
    __m256i bit = _mm256_shuffle_epi8(high_bit, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
    return ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(row, bit), _mm256_setzero_si256()));
}

/* bpetrain_probe_skip's places from pos on, 32 at a time while the block and the bytes its
   block probe reads lie before stop and end: the first place where it stops, or where the
   blocks end. */
__attribute__((target("avx2,bmi")))
static BPETRAIN_NOINLINE Py_ssize_t bpetrain_probe_blocks(const bpetrain_probe* p, const uint8_t* s, Py_ssize_t pos,
                                                          Py_ssize_t stop, Py_ssize_t end, Py_ssize_t* ascii_to) {
    const int d = p->vdist;
    const __m256i start = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)p->vsets[0]));
    const __m256i open = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)p->vsets[1]));
    const __m256i meet = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)p->vsets[2]));
    const __m256i far = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)p->vsets[3]));
    while (pos + 32 <= stop && pos + 32 + d <= end) {
        __m256i x = _mm256_loadu_si256((const __m256i*)(s + pos));
        __m256i y = _mm256_loadu_si256((const __m256i*)(s + pos + 1));
        __m256i z = _mm256_loadu_si256((const __m256i*)(s + pos + d));
        uint64_t high = (uint32_t)_mm256_movemask_epi8(x) | ((uint64_t)(uint32_t)_mm256_movemask_epi8(z) << d);
        uint32_t maybe = bpetrain_probe_members(x, start)
                         & (bpetrain_probe_members(x, open) | ~bpetrain_probe_members(y, meet)
                            | bpetrain_probe_members(z, far));
        if (high) {  /* the places with a byte >= 0x80 from them to d on */
            int len = 1;
            while (2 * len <= d + 1) {
                high |= high >> len;
                len *= 2;
            }
            high |= high >> (d + 1 - len);
            maybe |= (uint32_t)high;
        }
        while (maybe) {
            Py_ssize_t q = pos + bpetrain_ctz64(maybe);
            if (bpetrain_probe_stops(p, s, q, end, ascii_to))
                return q;
            maybe &= maybe - 1;
        }
        pos += 32;
    }
    return pos;
}
#endif

/* Past the bytes from pos on (before stop) that no attempt begins with and the attempts
   that the probes rule out and that the DFA's loops would read two bytes or more of: the
   first place where that is not so (a byte >= 0x80, one whose next byte fails the attempt:
   the loops take those a byte at a time, the shuffle loop without stopping), or stop; the
   probes read bytes before end. pos is not the string's start. */
static BPETRAIN_NOINLINE Py_ssize_t bpetrain_probe_skip(const bpetrain_probe* p, const uint8_t* s, Py_ssize_t pos,
                                             Py_ssize_t stop, Py_ssize_t end) {
    Py_ssize_t ascii_to = pos;
#ifdef BPETRAIN_SHUFFLE_X86
    if (p->vdist) {  /* (the first place alone first: where the probes rule out little, it stops there) */
        if (pos < stop && bpetrain_probe_stops(p, s, pos, end, &ascii_to))
            return pos;
        pos = bpetrain_probe_blocks(p, s, pos, stop, end, &ascii_to);
        if (pos + 32 <= stop && pos + 32 + p->vdist <= end)
            return pos;  /* (it stops there) */
    }
#endif
    for (; pos < stop; pos++)
        if (bpetrain_probe_stops(p, s, pos, end, &ascii_to))
            break;
    return pos;
}

#endif
