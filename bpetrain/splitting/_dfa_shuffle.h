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
   - pshufb (AVX2, for the many CPUs without VBMI): pshufb looks up 16 bytes by the low four
     bits of each index byte, and zeroes a byte whose index has bit 7 set. No step is taken
     from the dead lane 0, so a row's entries of lanes 1-64 (64: dead) are read, in quarters
     q0..q3 of 16 (lanes 1-16, ..., 49-64). A table whose lanes go up to 16 (or exactly to
     32) keeps them as p0 = q0 (p1 = q0 ^ q1) (bpetrain_shuffle_prepare); the step clears the
     flags off the index (one AND) and XORs pshufb(pk, lane - 1 - 16k): that index has bit 7
     set (a zero) where lane - 1 < 16k, so the XOR of the rest is q((lane - 1) / 16) at
     (lane - 1) % 16 (from lane 0: dead). One pshufb a step, 3 cycles (two: 4).
     A table whose lanes go from 17 up to 31 (almost every published pattern's) keeps the
     lane in a two-quarter code (bpetrain_pshufb_code2): lane L's slot L - 1 (the dead lane's:
     31) as its place (L - 1) % 16 | MATCH in bit 4 | CUT in bit 5 | its quarter in bit 6,
     and its rows q1, q0 ^ q1 in that code. The step from the code x is pshufb(q1, x) ^
     pshufb(q0 ^ q1, x + 0x40): x + 0x40 has bit 7 set (a zero) in quarter 1 and not in
     quarter 0, so the XOR is q1 in quarter 1 and q0 in quarter 0, the next code: two pshufb,
     an add and an XOR, 3 cycles on the chain, with no AND. The dead lane's code has bit 7 set
     as well (0xCF), so that the loop's look for it is a test of one bit: from it the first
     pshufb gives zero and x + 0x40 wraps to place 15 of quarter 0, so the step reads the
     second row alone there; the two rows' entries at place 15 are swapped (q0 ^ q1 first,
     then q1, the dead lane's code), which lane 16 (place 15, quarter 0, reading both) does not
     tell apart and which keeps the dead lane dead (slot 31 as a live code is never entered).
     A table whose lanes go up to 48 or 63 takes three or four pshufb a step; there the step
     keeps the lane in a code of its own that indexes the rows as it is, which saves the AND
     and the subtractions (bpetrain_pshufb_code): lane L's slot L - 1 (the dead lane's: 63)
     is its quarter s = (L - 1) / 16 and place i = (L - 1) % 16, stored as i | MATCH in bit 4
     | CUT in bit 5 (bits pshufb does not read) | s in bits 7-6 as 00, 10, 01, 11. Each
     pshufb's index is one operation from the code x, and pshufb zeroes all but some quarters:
     x (00, 01), x ^ 0x80 (10, 11), adds_epu8(x, 0x40) (00 alone: 01 and 10 go to 1x, 11
     saturates to 0xFF), adds_epu8(x ^ 0x80, 0x40) (10 alone); the terms' rows are q2,
     q0 ^ q2, q1 (four quarters: q3), q1 ^ q3, whose XOR is the entry of x's quarter, 4-5
     cycles a step. There a group of 16 steps is turned back into lanes and flags once
     (bpetrain_pshufb_decode); the two-quarter code needs no such step, as the block's masks
     read it as it is (place | quarter << 6 is in the order of the lanes, the flags are two
     bits below an entry's). With one pshufb a step a code would save less than it costs.
     (Hyperscan runs more than 16 states without VBMI by other DFAs, McClellan's and
     McSheng's; these compositions are bpetrain's.)

   An entry is the next state's lane (6 bits, 0: dead) | 0x40 if a match ends before the byte
   (DFA_MATCH) | 0x80 if a piece ends before it (DFA_CUT). A step into the dead lane is one the
   caller takes one character at a time (DFA_SLOW, or a byte >= 0x80, whose row is all dead).

   The loop itself is _dfa_shuffle_run.h, included in _dfa_shuffle.c once per code (as Hyperscan
   includes sheng_impl.h once per variant, with macros naming its parts); that file, compiled on
   its own, holds every function declared here. */
#ifndef BPETRAIN_DFA_SHUFFLE_H
#define BPETRAIN_DFA_SHUFFLE_H

#include <stdint.h>
#include "_portable.h"

/* x86-64 with the GNU builtins: the shuffle loops here, and the probes' blocks (_dfa_probe.h). */
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
    int coded;                     /* pshufb: the state is a code of the lane (two quarters: bpetrain_pshufb_code2;
                                      three or four: bpetrain_pshufb_code), not the lane */
    const uint64_t* cover;         /* byte -> the lanes (a bit each) whose failed attempt through the byte fails
                                      the attempt from it too (_dfa._cover_table); NULL: none */
    /* pshufb, lanes merged (bpetrain_shuffle_merge; the fields above then name merged lanes): */
    const uint8_t* full;           /* the rows before merging (as shuffle_table gives them), by the offsets above;
                                      NULL: no lanes merged */
    uint8_t merged[64];            /* a lane -> its merged lane */
    uint8_t sole[64];              /* a merged lane -> its one lane, 0 if it has several */
    int full_restart, full_gap;    /* the lanes of restart and gap before merging */
} bpetrain_shuffle;

/* The functions of _dfa_shuffle.c (compiled on its own, so that the size of its loops does not
   change what the compiler inlines into _matcher.pyx's; see there for what each does). */
BPETRAIN_HIDDEN int bpetrain_shuffle_supported(int code);
BPETRAIN_HIDDEN void bpetrain_shuffle_prepare(bpetrain_shuffle* t, uint8_t* rows, Py_ssize_t n, int n_lanes);
BPETRAIN_HIDDEN int bpetrain_shuffle_merge(bpetrain_shuffle* t, uint8_t* rows, Py_ssize_t n_rows,
                                           Py_ssize_t n_pair_rows, int n_lanes, uint8_t* keep);
BPETRAIN_HIDDEN void bpetrain_shuffle_merge_cover(const bpetrain_shuffle* t, uint64_t* cover, int n_lanes);
BPETRAIN_HIDDEN Py_ssize_t bpetrain_shuffle_run(const uint8_t* s, Py_ssize_t pos, Py_ssize_t limit,
                                                const bpetrain_shuffle* t, int* lane, Py_ssize_t* piece,
                                                Py_ssize_t* bounds, Py_ssize_t* count, Py_ssize_t max_pieces,
                                                Py_ssize_t* last, Py_ssize_t reread);

#endif
