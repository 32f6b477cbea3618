/* One loop of the DFA by vector shuffles (_dfa_shuffle.h), written once for each code that
   takes a step: _dfa_shuffle.c includes this file once per code, with these macros defined
   (and undefined here after use):

   BPETRAIN_SHUFFLE_NAME     the function's name
   BPETRAIN_SHUFFLE_TARGET   the instruction sets it is compiled for (GCC's and Clang's target
                             attribute), which the caller checks the CPU has
   BPETRAIN_SHUFFLE_STATE    the vector type that holds the lane in every byte
   BPETRAIN_SHUFFLE_SET1(c)  the state of lane c (its code in every byte)
   BPETRAIN_SHUFFLE_STEP(state, row)  the state after a step by row (a 64-byte line of the
                             table, as the code prepared it)
   BPETRAIN_SHUFFLE_LOW(state)        its first 16 bytes, an __m128i
   BPETRAIN_SHUFFLE_DEAD(r)  whether r's low byte (a state's first) is the dead lane's
   BPETRAIN_SHUFFLE_DECODE(x)         16 states' first bytes (an __m128i) as entries: lane |
                             MATCH 0x40 | CUT 0x80
   BPETRAIN_SHUFFLE_COLLECT(x, k)     keep the state x of the group's step k (acc, or all
                             and the group's line pointer one where BPETRAIN_SHUFFLE_WIDE)
   BPETRAIN_SHUFFLE_LANE(c), BPETRAIN_SHUFFLE_KEY(l), BPETRAIN_SHUFFLE_KEYS, BPETRAIN_SHUFFLE_CUT_SHIFT
                             (optional, all four) a decoded step c is not an entry: its lane,
                             lane l's key (c & KEYS is the key of c's lane, keys in the order of
                             the lanes but the dead lane's, which no mask reads past), and how
                             many bits below an entry's its CUT and MATCH bits are; unset: an
                             entry, its lane c & 63, the key the lane
   BPETRAIN_SHUFFLE_WIDE     (optional) the states are 512-bit and the CPU has AVX-512BW: a
                             block's steps go to one vector, its masks to mask registers
   BPETRAIN_SHUFFLE_FIRST_GROUP       (with BPETRAIN_SHUFFLE_WIDE) the steps of a block's
                             first group (later groups: 16)
   BPETRAIN_SHUFFLE_STICKY   (optional) every step from the dead lane is the dead lane: a whole
                             group with two-byte rows looks for it after every second pair (unset:
                             after every pair)

   No include guard: included once per code. */

/* The DFA from lane *lane (live, not a gap) at s[pos] in the piece that starts at *piece, up
   to limit, while it has room (*count < max_pieces): each piece it ends goes to
   bounds[2 * *count], bounds[2 * *count + 1] (*count then one more), *last to the position of
   the last match end. Returns the position reached; *lane is the lane there, *piece where the
   piece there starts (in a gap: the position).

   A block of up to 64 bytes is read in groups of 16 steps and read back as bit masks (bit i:
   byte i): piece ends (CUT), match ends, the gaps, and the lanes of the kinds that look a byte
   back (_dfa.shuffle_table): back (a piece ends before the byte before), failed (the byte
   before is in the gap), back-failed (both). With 128-bit states each group's steps are
   gathered in a register (palignr), turned into entries (BPETRAIN_SHUFFLE_DECODE) and stored
   in place, and the block's masks are taken 32 steps at a time by AVX2 at its end; with 512-bit ones
   (BPETRAIN_SHUFFLE_WIDE) step i goes to byte i of one 64-byte vector (an AND with a line of
   bpetrain_shuffle_onehot and an OR: off the chain, and off the port of the permutes, which
   palignr shares) and the block's masks are taken at once by AVX-512's compares into mask
   registers. From those come the piece starts (a CUT not into a gap, or the first byte after
   a gap), and the pieces are written with tzcnt: where those after the block's first are a
   byte each (each start the byte before an end), by the ends alone, a run of eight or more
   two pieces a 256-bit store; where the block has no gap (the starts are the ends), each
   piece's start as the last one's end. With two-byte rows the loop takes two bytes
   a step on its chain (the first byte's step, for its flags, off the chain). With 128-bit
   states a group ends at a dead step, or soon after it: a whole group with two-byte rows is
   written out as 8 pairs, and where the dead lane stays dead (BPETRAIN_SHUFFLE_STICKY) its
   steps are looked at after every second pair (the first dead one is found by the mask of dead
   lanes, as below); with 512-bit ones its steps are all taken before a dead one is looked for (at its end: the dead lane's entries are the
   dead lane with no flags, so every step after a dead one is dead too, and the first is
   found by the mask of dead lanes), and a block's first group is shorter
   (BPETRAIN_SHUFFLE_FIRST_GROUP), so that where the loop leaves soon after it starts (a
   pattern whose pieces often fail) it takes fewer steps past the dead one. (pshufb's steps
   cost more than a look at each: taking a group's steps past a dead one cost patterns whose
   pieces often fail up to a sixth of their speed there.) A dead step ends the block.

   A dead step is a byte >= 0x80, or "no thread left" (DFA_SLOW) that the lanes do not take:
   after a match further back in the piece, the piece ends there and the DFA reads on from it;
   with no match in the piece, its first byte goes to the gap and the DFA reads on after it (as
   _matcher.pyx's loop and _dfa_settle do), and with it the bytes after it that the piece's
   lanes cover (t->cover, _dfa._cover_table) where those lanes are in the block. It stops before
   a byte >= 0x80, before a DFA_SLOW it leaves to that loop (the piece has no match and began
   with a byte >= 0x80, or no room is left, or the failed piece is ``reread`` bytes or more and
   covers no byte after its first), at limit, or where the next piece end would not fit. */
__attribute__((target(BPETRAIN_SHUFFLE_TARGET)))
static Py_ssize_t BPETRAIN_SHUFFLE_NAME(const uint8_t* s, Py_ssize_t pos, Py_ssize_t limit, const bpetrain_shuffle* t,
                                       int* lane, Py_ssize_t* piece, Py_ssize_t* bounds, Py_ssize_t* count,
                                       Py_ssize_t max_pieces, Py_ssize_t* last, Py_ssize_t reread) {
    const uint8_t* rows = t->rows;
    const uint16_t* offsets = t->offsets;
    const uint8_t* pairs = t->pairs;
    const uint32_t* pair_offsets = t->pair_offsets;
    uint8_t steps[64];  /* the block's steps in place */
    Py_ssize_t n_pieces = *count, open = *piece;  /* open: where the current piece starts, -1 in the gap */
    int cur = *lane, stop;
#ifdef BPETRAIN_SHUFFLE_MERGED
    /* lanes merged (bpetrain_shuffle_merge): the lane is found again from the last place known */
    Py_ssize_t known = pos;
    int known_lane = cur;
    if (t->full != NULL)
        cur = t->merged[cur];
#endif
#ifndef BPETRAIN_SHUFFLE_FIRST_GROUP
#define BPETRAIN_SHUFFLE_FIRST_GROUP 16
#endif
#ifndef BPETRAIN_SHUFFLE_LANE  /* the steps are stored as entries */
#define BPETRAIN_SHUFFLE_LANE(c) ((c) & 63)
#define BPETRAIN_SHUFFLE_KEY(l) (l)
#define BPETRAIN_SHUFFLE_KEYS 0x3F
#define BPETRAIN_SHUFFLE_CUT_SHIFT 0
#endif
    BPETRAIN_SHUFFLE_STATE state, first;
#ifdef BPETRAIN_SHUFFLE_WIDE
    __m512i all;  /* the block's steps so far, step i in byte i (the others zero) */
#else
    /* the masks compare the states' keys (BPETRAIN_SHUFFLE_KEY: in the order of the lanes) */
    const __m256i lane_bits = _mm256_set1_epi8(BPETRAIN_SHUFFLE_KEYS);
    const __m256i gap_lane = _mm256_set1_epi8((char)BPETRAIN_SHUFFLE_KEY(t->gap));
    const __m256i failed_gap = _mm256_set1_epi8((char)BPETRAIN_SHUFFLE_KEY(t->failed_gap));
    const __m256i before_failed = _mm256_set1_epi8((char)(BPETRAIN_SHUFFLE_KEY(t->failed_gap) - 1));
    const __m256i before_back = _mm256_set1_epi8((char)(BPETRAIN_SHUFFLE_KEY(t->back) - 1));
    const __m256i back_failed_gap = _mm256_set1_epi8((char)BPETRAIN_SHUFFLE_KEY(t->back_failed));
    const __m256i before_back_failed = _mm256_set1_epi8((char)(BPETRAIN_SHUFFLE_KEY(t->back_failed) - 1));
    const __m256i dead_key = _mm256_set1_epi8((char)BPETRAIN_SHUFFLE_KEY(0));
    __m128i acc;
    __m256i half[2];  /* the block's steps 0-31 and 32-63 (past the last: zero, or no matter: kept off by keep) */
#endif
    while (pos < limit && n_pieces < max_pieces) {
#ifdef BPETRAIN_SHUFFLE_MERGED
        if (t->sole[cur]) {
            known = pos;
            known_lane = t->sole[cur];
        }
#endif
        int len = limit - pos < 64 ? (int)(limit - pos) : 64, n = 0;
        Py_ssize_t k = 0;
        uint64_t cut = 0, match = 0, gap = 0, dead = 0, back = 0, failed = 0, back_failed = 0;
        uint32_t r = (uint32_t)cur;
        const uint8_t* q = s + pos;
        const Py_ssize_t block = pos;  /* where the block starts, in lane cur0 */
        const int cur0 = cur;
        state = BPETRAIN_SHUFFLE_SET1((char)cur);
#ifdef BPETRAIN_SHUFFLE_WIDE
        all = _mm512_setzero_si512();
#endif
        while (n < len) {  /* groups of up to 16 steps, the last stopped by a dead one */
            const Py_ssize_t group = n ? 16 : BPETRAIN_SHUFFLE_FIRST_GROUP, m = len - n < group ? len - n : group;
            k = 0;
#ifdef BPETRAIN_SHUFFLE_WIDE
            const uint8_t* one = bpetrain_shuffle_onehot + 64 * n;  /* step k's line */
#else
            acc = _mm_setzero_si128();
#endif
            if (pairs != NULL) {
/* the steps k and k + 1 (the first off the chain, for its flags), and a look for a dead step
   after them (128-bit states) that ends the group after step j - 1 */
#define BPETRAIN_SHUFFLE_PAIR(k)                                                                           \
    do {                                                                                                   \
        first = BPETRAIN_SHUFFLE_STEP(state, rows + offsets[q[(k)]]);                                      \
        state = BPETRAIN_SHUFFLE_STEP(state, pairs + pair_offsets[q[(k)]] + offsets[q[(k) + 1]]);          \
        BPETRAIN_SHUFFLE_COLLECT(first, (k));                                                              \
        BPETRAIN_SHUFFLE_COLLECT(state, (k) + 1);                                                          \
    } while (0)
#define BPETRAIN_SHUFFLE_LOOK(j)                                                                           \
    do {                                                                                                   \
        r = (uint32_t)_mm_cvtsi128_si32(BPETRAIN_SHUFFLE_LOW(state));                                      \
        if (BPETRAIN_UNLIKELY(BPETRAIN_SHUFFLE_DEAD(r))) {                                                 \
            k = (j);                                                                                       \
            goto group_done;                                                                               \
        }                                                                                                  \
    } while (0)
#ifdef BPETRAIN_SHUFFLE_STICKY
#define BPETRAIN_SHUFFLE_LOOK_UNSTICKY(j) ((void)0)
#else
#define BPETRAIN_SHUFFLE_LOOK_UNSTICKY(j) BPETRAIN_SHUFFLE_LOOK(j)
#endif
#ifndef BPETRAIN_SHUFFLE_WIDE
                if (m == 16) {  /* a whole group: 8 pairs written out, a look after every second (STICKY) or every one */
                    BPETRAIN_SHUFFLE_PAIR(0); BPETRAIN_SHUFFLE_LOOK_UNSTICKY(2);
                    BPETRAIN_SHUFFLE_PAIR(2); BPETRAIN_SHUFFLE_LOOK(4);
                    BPETRAIN_SHUFFLE_PAIR(4); BPETRAIN_SHUFFLE_LOOK_UNSTICKY(6);
                    BPETRAIN_SHUFFLE_PAIR(6); BPETRAIN_SHUFFLE_LOOK(8);
                    BPETRAIN_SHUFFLE_PAIR(8); BPETRAIN_SHUFFLE_LOOK_UNSTICKY(10);
                    BPETRAIN_SHUFFLE_PAIR(10); BPETRAIN_SHUFFLE_LOOK(12);
                    BPETRAIN_SHUFFLE_PAIR(12); BPETRAIN_SHUFFLE_LOOK_UNSTICKY(14);
                    BPETRAIN_SHUFFLE_PAIR(14);
                    r = (uint32_t)_mm_cvtsi128_si32(BPETRAIN_SHUFFLE_LOW(state));
                    k = 16;
                    goto group_done;
                }
#endif
                for (; k + 2 <= m; k += 2) {
                    BPETRAIN_SHUFFLE_PAIR(k);
#ifndef BPETRAIN_SHUFFLE_WIDE
                    BPETRAIN_SHUFFLE_LOOK(k + 2);
#endif
                }
#undef BPETRAIN_SHUFFLE_LOOK_UNSTICKY
#undef BPETRAIN_SHUFFLE_LOOK
#undef BPETRAIN_SHUFFLE_PAIR
            }
            for (; k < m; k++) {
                state = BPETRAIN_SHUFFLE_STEP(state, rows + offsets[q[k]]);
                BPETRAIN_SHUFFLE_COLLECT(state, k);
#ifndef BPETRAIN_SHUFFLE_WIDE
                r = (uint32_t)_mm_cvtsi128_si32(BPETRAIN_SHUFFLE_LOW(state));
                if (BPETRAIN_SHUFFLE_DEAD(r)) {
                    k++;
                    break;
                }
#endif
            }
#ifdef BPETRAIN_SHUFFLE_WIDE
            r = (uint32_t)_mm_cvtsi128_si32(BPETRAIN_SHUFFLE_LOW(state));
#else
        group_done:;
            /* the group's k steps are the top k bytes of acc (as entries): to steps[n..n + k - 1] */
            acc = BPETRAIN_SHUFFLE_DECODE(acc);
            if (BPETRAIN_UNLIKELY(k < 16))
                acc = _mm_shuffle_epi8(acc, _mm_loadu_si128((const __m128i*)(bpetrain_shuffle_down + 16 - k)));
            _mm_storeu_si128((__m128i*)(steps + n), acc);
            if (n & 16)  /* (the groups before a last, shorter one are whole: n is 16 times the group's number) */
                half[n >> 5] = _mm256_inserti128_si256(half[n >> 5], acc, 1);
            else
                half[n >> 5] = _mm256_castsi128_si256(acc);
#endif
            q += k;
            n += k;
            if (BPETRAIN_SHUFFLE_DEAD(r))
                break;
        }
        uint64_t keep = n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);  /* the block's n steps */
#ifdef BPETRAIN_SHUFFLE_WIDE
        {  /* the block's n steps are bytes 0 to n - 1 of all (the others zero): their masks at once */
            const __m512i lanes = _mm512_and_si512(all, _mm512_set1_epi8(0x3F));
            const __mmask64 after_back = _mm512_cmpgt_epi8_mask(lanes, _mm512_set1_epi8((char)(t->back - 1)));
            const __mmask64 after_back_failed = _mm512_cmpgt_epi8_mask(lanes,
                                                                       _mm512_set1_epi8((char)(t->back_failed - 1)));
            _mm512_storeu_si512((void*)steps, all);
            cut = _mm512_movepi8_mask(all);
            match = _mm512_test_epi8_mask(all, _mm512_set1_epi8(0x40));
            gap = _mm512_cmpeq_epi8_mask(lanes, _mm512_set1_epi8((char)t->gap))
                  | _mm512_cmpeq_epi8_mask(lanes, _mm512_set1_epi8((char)t->failed_gap))
                  | _mm512_cmpeq_epi8_mask(lanes, _mm512_set1_epi8((char)t->back_failed));
            dead = _mm512_testn_epi8_mask(lanes, lanes) & keep;
            back = after_back & ~after_back_failed;
            back_failed = after_back_failed;
            failed = _mm512_cmpgt_epi8_mask(lanes, _mm512_set1_epi8((char)(t->failed_gap - 1))) & ~after_back;
        }
#else
        {  /* the block's n steps, half[0] and half[1]: their masks 32 at a time (the bytes after them are
              kept off by keep) */
            int h;
            for (h = 0; h < n; h += 32) {
                const __m256i x = half[h >> 5];
                const __m256i lanes = _mm256_and_si256(x, lane_bits);
                const __m256i after_back = _mm256_cmpgt_epi8(lanes, before_back);
                const __m256i after_back_failed = _mm256_cmpgt_epi8(lanes, before_back_failed);
                cut |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(x, BPETRAIN_SHUFFLE_CUT_SHIFT)) << h;
                match |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(x, BPETRAIN_SHUFFLE_CUT_SHIFT + 1))
                         << h;
                gap |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_or_si256(
                           _mm256_or_si256(_mm256_cmpeq_epi8(lanes, gap_lane), _mm256_cmpeq_epi8(lanes, failed_gap)),
                           _mm256_cmpeq_epi8(lanes, back_failed_gap))) << h;
                dead |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lanes, dead_key)) << h;
                back |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_andnot_si256(after_back_failed, after_back)) << h;
                back_failed |= (uint64_t)(uint32_t)_mm256_movemask_epi8(after_back_failed) << h;
                failed |= (uint64_t)(uint32_t)_mm256_movemask_epi8(
                              _mm256_andnot_si256(after_back, _mm256_cmpgt_epi8(lanes, before_failed))) << h;
            }
            dead &= keep;
        }
#endif
        stop = dead != 0;
        if (dead) {
            n = bpetrain_ctz64(dead);
            keep = ((uint64_t)1 << n) - 1;
        }
        Py_ssize_t room = max_pieces - n_pieces;
        back = (back | back_failed) & keep;  /* a lane gone back a byte: a piece ends before the byte before */
        if (BPETRAIN_UNLIKELY(__builtin_popcountll(cut & keep) + __builtin_popcountll(back) > room)) {
            /* no room for them all: stop before the byte whose piece ends would not fit */
            int used = 0, b;
            for (b = 0; b < n; b++) {
                int ends = (int)((cut >> b) & 1) + (int)((back >> b) & 1);
                if (used + ends > room)
                    break;
                used += ends;
            }
            n = b;
            keep = n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
            back &= keep;
            stop = 2;
        }
        cut = (cut & keep) | (back >> 1);
        match &= keep;
        failed = (failed | back_failed) & keep;  /* a lane after a failed piece's byte: that byte is in the gap */
        gap = (gap & keep) | (failed >> 1);
        uint64_t starts = (cut & ~gap)
                          | (~gap & keep & ((gap << 1) | (uint64_t)(cur == t->gap || cur == t->failed_gap
                                                                 || cur == t->back_failed || (failed & 1))));
        if (match)
            *last = pos + 63 - bpetrain_clz64(match);
        if (back & 1) {  /* the piece ends before the byte before the block */
            bounds[2 * n_pieces] = open;
            bounds[2 * n_pieces + 1] = pos - 1;
            n_pieces++;
            open = pos - 1;
        }
        if (open >= pos - 1 && (failed >> (open - pos + 1)) & 1)  /* the open piece failed: its byte is in the gap */
            open = -1;
        if (open < 0 && starts) {
            open = pos + bpetrain_ctz64(starts);
            starts &= starts - 1;
        }
        if (open >= 0 && (cut & (cut - 1))) {
            /* pieces of a byte each after the first: (c - 1, c) for each later end c, starts at
               each byte before one (and no other start before the last end) */
            const uint64_t rest = cut & (cut - 1), below = ((uint64_t)1 << (63 - bpetrain_clz64(rest))) - 1;
            if (BPETRAIN_UNLIKELY((starts & below) == rest >> 1)) {
                uint64_t one = rest >> 1;
                const __m256i two = _mm256_set1_epi64x(2), pair = _mm256_setr_epi64x(0, 1, 1, 2);
                bounds[2 * n_pieces] = open;
                bounds[2 * n_pieces + 1] = pos + bpetrain_ctz64(cut);
                Py_ssize_t* w = bounds + 2 * n_pieces + 2;
                n_pieces += __builtin_popcountll(cut);
                if (__builtin_popcountll(one) >= 8 * __builtin_popcountll(one & ~(one << 1))) {
                    while (one) {  /* long runs of them (8 a run or more on average): a run at a time */
                        const int a = bpetrain_ctz64(one), length = bpetrain_ctz64(~(one >> a));  /* (bit 63 of one is 0) */
                        __m256i v = _mm256_add_epi64(_mm256_set1_epi64x((long long)(pos + a)), pair);
                        int i;
                        for (i = 0; i + 1 < length; i += 2) {
                            _mm256_storeu_si256((__m256i*)w, v);
                            v = _mm256_add_epi64(v, two);
                            w += 4;
                        }
                        if (i < length) {  /* the run's last piece alone */
                            _mm_storeu_si128((__m128i*)w, _mm256_castsi256_si128(v));
                            w += 2;
                        }
                        one &= ~(uint64_t)0 << (a + length);  /* (a + length <= 63) */
                    }
                } else {
                    const __m128i next = _mm_set_epi64x(1, 0);
                    for (; one; one &= one - 1, w += 2)  /* short ones: a piece at a time */
                        _mm_storeu_si128((__m128i*)w, _mm_add_epi64(_mm_set1_epi64x((long long)(pos + bpetrain_ctz64(one))), next));
                }
                starts &= ~below;
                open = starts ? pos + bpetrain_ctz64(starts) : -1;
                cut = 0;
            } else if (starts == cut) {  /* no gap: each piece starts where the one before ends */
                while (cut) {
                    const Py_ssize_t e = pos + bpetrain_ctz64(cut);
                    bounds[2 * n_pieces] = open;
                    bounds[2 * n_pieces + 1] = e;
                    open = e;
                    n_pieces++;
                    cut &= cut - 1;
                }
            }
        }
        while (cut) {
            bounds[2 * n_pieces] = open;
            bounds[2 * n_pieces + 1] = pos + bpetrain_ctz64(cut);
            n_pieces++;
            cut &= cut - 1;
            open = -1;
            if (starts) {
                open = pos + bpetrain_ctz64(starts);
                starts &= starts - 1;
            }
        }
        if (n) {  /* the lane after byte n - 1 */
            int j = n - 1;
            cur = BPETRAIN_SHUFFLE_LANE(steps[j]);
            pos += n;
        }
        if (stop == 1 && s[pos] < 0x80 && open >= 0) {  /* DFA_SLOW: no thread left */
            if (*last > open && n_pieces < max_pieces) {
                /* after a match in the piece: the piece ends there, and the DFA reads on from it */
                bounds[2 * n_pieces] = open;
                bounds[2 * n_pieces + 1] = *last;
                n_pieces++;
                pos = open = *last;
                cur = t->restart;
#ifdef BPETRAIN_SHUFFLE_MERGED
                known = pos;  /* (the gap is a part of its own: the top of the loop knows it) */
                known_lane = t->full_restart;
#endif
                continue;
            }
            if (*last <= open && s[open] < 0x80 && t->cover != NULL && open >= block - 1) {
                /* no match where the piece started, and its lanes in this block: the attempts
                   from its next bytes fail too while the failed one's lane covers them
                   (_dfa._cover_table), so the next attempt starts at the first byte it does
                   not cover, or at the byte it failed on */
                Py_ssize_t x = open + 1;
                for (; x < pos; x++) {
                    int j = (int)(x - 1 - block);
                    int at = j < 0 ? cur0 : BPETRAIN_SHUFFLE_LANE(steps[j]);
                    if (!((t->cover[s[x]] >> at) & 1))
                        break;
                }
                if (x > open + 1 && (x == pos || pos - open < reread)) {
                    /* (a longer one covered in part goes to the caller, which keeps its states
                       for the attempts after the first byte it does not cover) */
                    pos = x;
                    open = -1;
                    cur = t->gap;
                    continue;
                }
            }
            if (*last <= open && s[open] < 0x80 && pos - open < reread) {
                /* no match where the piece started: its first byte is in the gap (a longer
                   failed piece goes back to the caller, which reads it again once, keeping
                   its states, rather than from each of its bytes: _matcher.pyx, _dfa_record) */
                pos = open + 1;
                open = -1;
                cur = t->gap;
                continue;
            }
        }
#ifdef BPETRAIN_SHUFFLE_MERGED
        if (t->full != NULL && !t->sole[cur] && (stop || pos >= limit || n_pieces >= max_pieces)) {
            /* stopping in a part of several lanes: the last lane of a part of one in this block is
               known, if after the last place known */
            int j = n - 1;
            for (; j >= 0 && block + j + 1 > known; j--) {
                int at = BPETRAIN_SHUFFLE_LANE(steps[j]);
                if (t->sole[at]) {
                    known = block + j + 1;
                    known_lane = t->sole[at];
                    break;
                }
            }
        }
#endif
        if (stop)
            break;
    }
    *count = n_pieces;
    *lane = cur;
    *piece = cur == t->gap || cur == t->failed_gap || cur == t->back_failed ? pos : open;
#ifdef BPETRAIN_SHUFFLE_MERGED
    if (t->full != NULL) {  /* the lane: its part's one, or by the rows before merging from the last one known */
        int l = t->sole[cur] ? t->sole[cur] : known_lane;
        for (; !t->sole[cur] && known < pos; known++)
            l = t->full[offsets[s[known]] + l] & 63;
        *lane = l;
    }
#endif
    return pos;
}

#undef BPETRAIN_SHUFFLE_NAME
#undef BPETRAIN_SHUFFLE_TARGET
#undef BPETRAIN_SHUFFLE_STATE
#undef BPETRAIN_SHUFFLE_SET1
#undef BPETRAIN_SHUFFLE_STEP
#undef BPETRAIN_SHUFFLE_LOW
#undef BPETRAIN_SHUFFLE_DEAD
#undef BPETRAIN_SHUFFLE_DECODE
#undef BPETRAIN_SHUFFLE_MERGED
#undef BPETRAIN_SHUFFLE_WIDE
#undef BPETRAIN_SHUFFLE_FIRST_GROUP
#undef BPETRAIN_SHUFFLE_COLLECT
#undef BPETRAIN_SHUFFLE_LANE
#undef BPETRAIN_SHUFFLE_KEY
#undef BPETRAIN_SHUFFLE_KEYS
#undef BPETRAIN_SHUFFLE_CUT_SHIFT
#undef BPETRAIN_SHUFFLE_STICKY
