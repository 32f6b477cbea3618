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
#include "_portable.h"

typedef struct bpetrain_probe {
    uint8_t start[128];       /* byte -> 1 if an attempt may begin with it (the start state's step
                                 leaves a thread or ends a match or a piece), 0 if it fails on it */
    uint8_t next[128][16];    /* first byte -> the ASCII bytes an attempt can read right after it (all: any) */
    uint8_t depth[128][2];    /* first byte -> the distances (characters, 2 to 255) of its probes, 0: none */
    uint8_t sets[128][2][16]; /* ... the ASCII bytes an attempt can read there, a bit each (byte >> 3, byte & 7) */
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

/* Past the bytes from pos on (before stop) that no attempt begins with and the attempts
   that the probes rule out and that the DFA's loops would read two bytes or more of: the
   first place where that is not so (a byte >= 0x80, one whose next byte fails the attempt:
   the loops take those a byte at a time, the shuffle loop without stopping), or stop; the
   probes read bytes before end. pos is not the string's start. */
static BPETRAIN_NOINLINE Py_ssize_t bpetrain_probe_skip(const bpetrain_probe* p, const uint8_t* s, Py_ssize_t pos,
                                             Py_ssize_t stop, Py_ssize_t end) {
    Py_ssize_t ascii_to = pos;
    for (; pos < stop; pos++) {
        uint8_t b = s[pos], c;
        if (b >= 0x80 || pos + 1 >= end)
            break;
        if (!p->start[b])
            continue;
        c = s[pos + 1];
        if (c >= 0x80 || !((p->next[b][c >> 3] >> (c & 7)) & 1) || bpetrain_probe_open(p, s, pos, end, &ascii_to))
            break;
    }
    return pos;
}

#endif
