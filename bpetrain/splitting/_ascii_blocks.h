/* The pieces of gpt2, cl100k and o200k (and of the patterns that split by their rules with the
   variants of BPETRAIN_BLOCKS_*: Llama 3's, minbpe's, rustbpe's, nanochat's, Qwen2's, tekken's,
   Hugging Face's ByteLevel strings among them) in ASCII text, 64 bytes at a time, without a
   branch per piece.

   The hand-written matchers (_blocks.pyx: _gpt2, _cl100k, _o200k) find one piece at a time: a
   chain of tests on the first characters, which the branch predictor cannot learn (the
   kinds of pieces follow the text). Here every byte of a 64-byte block is classed at once,
   and the piece starts come from bit operations on the class masks, one bit per byte. The
   approach is that of simdjson's structural masks and gigatoken's mask scanners
   (github.com/marcelroed/gigatoken, src/pretokenize/fast/mask.rs); the rules below are
   derived here from the patterns, as tiktoken publishes them (tiktoken_ext/openai_public.py).

   The rules for cl100k, for ASCII text (gpt2's and o200k's: above bpetrain_gpt2_starts and
   bpetrain_o200k_starts), from its
   pattern
       '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
       |\s++$|\s*[\r\n]|\s+(?!\S)|\s
   Classes: L letters, D digits, W whitespace (\t \n \v \f \r space), NL (\r \n),
   SP (space), O the rest (punctuation, controls), AP the apostrophe (in O). Every ASCII
   character is matched by some alternative, so the pieces tile the text; position q
   starts a piece when:
   - O: unless the character before is O (the run goes on: ``[^\s\p{L}\p{N}]++``) or a
     space (`` ?`` takes it; a space before a non-space always starts a piece, below).
   - L: unless the character before is L (one run), except right after a contraction;
     or is W but not NL (the last space or tab before a word starts its piece, which
     ``[^\r\n\p{L}\p{N}]?+`` takes as its prefix); or is O that starts a piece (the
     prefix again; an O starts one unless its own predecessor is O or a space).
   - D: at the start of a run of digits and every third digit after it
     (``\p{N}{1,3}+``; nothing before a digit joins its piece).
   - a contraction: an apostrophe that starts a piece (the contractions are the first
     alternative), then ``s d m t``
     or ``ll ve re`` in either case; the letter after it starts a new piece.
   - W: the run of whitespace from r to b (b the first non-whitespace) is cut as
     ``\s++$``, ``\s*[\r\n]``, ``\s+(?!\S)`` and ``\s`` cut it: newlines right after an
     O run belong to that piece (``[\r\n]*+``); the rest, from a, is one piece to the
     end of the text if it reaches it, else a piece through its last newline (if any),
     then (if anything is left) a piece up to its last character, whose own piece begins
     there. So the starts are a, the character after the last newline, and b - 1 if it is
     not a newline.
   tests/test_pretok.py compares these rules with the matcher and the regex module on
   generated and real text; the matcher is used wherever a block does not qualify.

   A block is read from three bytes (o200k: four) before a position P that does not
   continue a run of letters, whitespace or digits: the rules then need nothing before P
   but the classes of those bytes, and give the starts from P to the block's end (o200k's
   but for an apostrophe in its last two bytes, below). It
   qualifies if its bytes are ASCII, or (given the classes of U+0080..U+FFFF:
   bpetrain_blocks_init's codes) ASCII and two-byte characters (Latin, Greek,
   Cyrillic, Armenian, Hebrew, Arabic ...; with AVX-512 VBMI three-byte ones too: CJK,
   kana, punctuation) that are letters, O or spaces (\s: NBSP, U+3000; none is \r, \n or
   the space that `` ?`` names), each byte of one with
   its character's classes: a run of such letters (or O, or W) is then a run of bytes of the
   class, "the byte before" a character is the last byte of the character before it,
   and where the rules read the character before that (the O that a letter takes as its
   prefix) or the first byte of a run's last character (b - 1 above: a space's piece) they
   step over its other bytes (cont). The characters the rules cannot read so
   (a number, whose runs are counted by character; a case variant of a
   contraction's letter; for o200k a mark, in both of its case classes, which no ASCII
   character is; and the blocks that bpetrain_two_bytes classes leave o200k's letters in both
   case classes, which VBMI's read) leave
   the block to the matcher. bpetrain_two_bytes classes them one character at a time (at
   most BPETRAIN_TWO_BYTE_MOST bytes of them a block); bpetrain_class_multibyte_vbmi, where the
   CPU has AVX-512 VBMI, all at once (any number: dense Russian or Chinese text too). A run
   of whitespace that goes on past the block is left to the next block (its cuts depend on
   where it ends).

   The classes are the regex module's for ASCII (the caller checks that at start-up:
   bpetrain.splitting._blocks.ascii_classes_standard). */
#ifndef BPETRAIN_ASCII_BLOCKS_H
#define BPETRAIN_ASCII_BLOCKS_H

#include <stdint.h>
#include <string.h>
#include "_portable.h"
/* SSE2 is in every x86-64 CPU; AVX2 and AVX-512BW are chosen at run time where the compiler can
   build them for one function (GCC's and Clang's target attribute) and ask the CPU
   (__builtin_cpu_supports). Not on macOS, where that builtin's runtime support is not
   always linked, nor under MSVC: SSE2 there. */
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(_M_ARM64EC)
#define BPETRAIN_SSE2 1
#if defined(BPETRAIN_GNU_BUILTINS) && !defined(__APPLE__)
#include <immintrin.h>
#define BPETRAIN_AVX512 1
#define BPETRAIN_AVX2 1
#else
#include <emmintrin.h>
#endif
#endif

/* Whether the ASCII byte b is whitespace (\s: \t \n \v \f \r and space); no branch (the byte
   after a block, which it mostly reads, follows no pattern). */
static inline int bpetrain_ascii_space(uint8_t b) {
    return (b == ' ') | ((uint8_t)(b - 9) <= 4);
}

/* Class masks of 64 bytes: bit i describes byte i. */
typedef struct {
    uint64_t l, lw, d, w, nl, sp, ap, sl, hi;  /* lw: a-z (l: either case); sl: '/' */
    uint64_t cont;  /* the bytes of a character but its first (bpetrain_two_bytes*; else 0) */
    uint64_t both;  /* letters in both of o200k's case classes (Lm, Lo; in l, not lw): VBMI's alone */
    /* the byte | 0x20, for contractions: the vector codes class them only in a block with an
       apostrophe (ap; before the string's bytes are picked out), else 0 */
    uint64_t low_s, low_d, low_m, low_t, low_l, low_v, low_r, low_e;
} bpetrain_masks;

static inline uint64_t bpetrain_byte_range(const uint8_t* p, uint8_t fold, uint8_t lo, uint8_t hi) {
    uint64_t bits = 0;
    for (int i = 0; i < 64; i++)
        bits |= (uint64_t)((uint8_t)((p[i] | fold) - lo) <= (uint8_t)(hi - lo)) << i;
    return bits;
}

/* Portable: one byte at a time. */
static inline void bpetrain_masks_bytes(const uint8_t* p, bpetrain_masks* m) {
    m->l = bpetrain_byte_range(p, 0x20, 'a', 'z');
    m->lw = bpetrain_byte_range(p, 0, 'a', 'z');
    m->sl = bpetrain_byte_range(p, 0, '/', '/');
    m->d = bpetrain_byte_range(p, 0, '0', '9');
    m->w = bpetrain_byte_range(p, 0, 9, 13) | bpetrain_byte_range(p, 0, ' ', ' ');
    m->nl = bpetrain_byte_range(p, 0, '\n', '\n') | bpetrain_byte_range(p, 0, '\r', '\r');
    m->sp = bpetrain_byte_range(p, 0, ' ', ' ');
    m->ap = bpetrain_byte_range(p, 0, '\'', '\'');
    m->hi = bpetrain_byte_range(p, 0, 0x80, 0xFF);
    m->low_s = bpetrain_byte_range(p, 0x20, 's', 's'); m->low_d = bpetrain_byte_range(p, 0x20, 'd', 'd');
    m->low_m = bpetrain_byte_range(p, 0x20, 'm', 'm'); m->low_t = bpetrain_byte_range(p, 0x20, 't', 't');
    m->low_l = bpetrain_byte_range(p, 0x20, 'l', 'l'); m->low_v = bpetrain_byte_range(p, 0x20, 'v', 'v');
    m->low_r = bpetrain_byte_range(p, 0x20, 'r', 'r'); m->low_e = bpetrain_byte_range(p, 0x20, 'e', 'e');
}

/* A block without an apostrophe: no contraction's letters are read. */
static inline void bpetrain_no_contraction_masks(bpetrain_masks* m) {
    m->low_s = m->low_d = m->low_m = m->low_t = m->low_l = m->low_v = m->low_r = m->low_e = 0;
}

#ifdef BPETRAIN_AVX512
/* AVX-512BW: one compare of all 64 bytes per class. */
__attribute__((target("avx512f,avx512bw")))
static void bpetrain_masks_avx512(const uint8_t* p, bpetrain_masks* m) {
    __m512i v = _mm512_loadu_si512((const void*)p);
    __m512i low = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
#define RANGE(x, lo, n) _mm512_cmple_epu8_mask(_mm512_sub_epi8((x), _mm512_set1_epi8((char)(lo))), _mm512_set1_epi8((char)(n)))
#define EQUAL(x, c) _mm512_cmpeq_epi8_mask((x), _mm512_set1_epi8((char)(c)))
    m->l = RANGE(low, 'a', 25);
    m->lw = RANGE(v, 'a', 25);
    m->sl = EQUAL(v, '/');
    m->d = RANGE(v, '0', 9);
    m->sp = EQUAL(v, ' ');
    m->w = RANGE(v, 9, 4) | m->sp;
    m->nl = EQUAL(v, '\n') | EQUAL(v, '\r');
    m->ap = EQUAL(v, '\'');
    m->hi = _mm512_movepi8_mask(v);
    if (m->ap) {
        m->low_s = EQUAL(low, 's'); m->low_d = EQUAL(low, 'd'); m->low_m = EQUAL(low, 'm'); m->low_t = EQUAL(low, 't');
        m->low_l = EQUAL(low, 'l'); m->low_v = EQUAL(low, 'v'); m->low_r = EQUAL(low, 'r'); m->low_e = EQUAL(low, 'e');
    } else {
        bpetrain_no_contraction_masks(m);
    }
#undef RANGE
#undef EQUAL
}
#endif

#ifdef BPETRAIN_SSE2
/* The classes as the vector codes of 16 and 32 bytes compute them: lane k's bytes v[k]
   (low[k]: | 0x20), by each code's RANGE(x, lo, n) (x - lo <= n, unsigned), EQUAL and OR,
   the 64 bits gathered by BITS(F). The contractions' letters only in a block with an
   apostrophe. */
#define F_L(k) RANGE(low[k], 'a', 25)
#define F_LW(k) RANGE(v[k], 'a', 25)
#define F_D(k) RANGE(v[k], '0', 9)
#define F_SP(k) EQUAL(v[k], ' ')
#define F_W(k) OR(RANGE(v[k], 9, 4), EQUAL(v[k], ' '))
#define F_NL(k) OR(EQUAL(v[k], '\n'), EQUAL(v[k], '\r'))
#define F_AP(k) EQUAL(v[k], '\'')
#define F_HI(k) v[k]
#define F_SL(k) EQUAL(v[k], '/')
#define F_LOW_S(k) EQUAL(low[k], 's')
#define F_LOW_D(k) EQUAL(low[k], 'd')
#define F_LOW_M(k) EQUAL(low[k], 'm')
#define F_LOW_T(k) EQUAL(low[k], 't')
#define F_LOW_L(k) EQUAL(low[k], 'l')
#define F_LOW_V(k) EQUAL(low[k], 'v')
#define F_LOW_R(k) EQUAL(low[k], 'r')
#define F_LOW_E(k) EQUAL(low[k], 'e')
#define CLASS_MASKS()                                                                                \
    do {                                                                                             \
        m->l = BITS(F_L); m->lw = BITS(F_LW); m->d = BITS(F_D); m->sp = BITS(F_SP); m->w = BITS(F_W); \
        m->nl = BITS(F_NL); m->ap = BITS(F_AP); m->hi = BITS(F_HI); m->sl = BITS(F_SL);              \
        if (m->ap) {                                                                                 \
            m->low_s = BITS(F_LOW_S); m->low_d = BITS(F_LOW_D); m->low_m = BITS(F_LOW_M);            \
            m->low_t = BITS(F_LOW_T); m->low_l = BITS(F_LOW_L); m->low_v = BITS(F_LOW_V);            \
            m->low_r = BITS(F_LOW_R); m->low_e = BITS(F_LOW_E);                                      \
        } else {                                                                                     \
            bpetrain_no_contraction_masks(m);                                                        \
        }                                                                                            \
    } while (0)

/* SSE2 (every x86-64): four 16-byte compares per class. */
static inline uint64_t bpetrain_sse2_bits(__m128i a, __m128i b, __m128i c, __m128i d) {
    return (uint64_t)(uint16_t)_mm_movemask_epi8(a) | (uint64_t)(uint16_t)_mm_movemask_epi8(b) << 16
           | (uint64_t)(uint16_t)_mm_movemask_epi8(c) << 32 | (uint64_t)(uint16_t)_mm_movemask_epi8(d) << 48;
}

static void bpetrain_masks_sse2(const uint8_t* p, bpetrain_masks* m) {
    __m128i v[4], low[4];
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (int k = 0; k < 4; k++) {
        v[k] = _mm_loadu_si128((const __m128i*)(p + 16 * k));
        low[k] = _mm_or_si128(v[k], _mm_set1_epi8(0x20));
    }
    /* x - lo <= n unsigned: flip the top bits and compare signed (x - lo > n is the rest) */
#define RANGE(x, lo, n) _mm_andnot_si128(_mm_cmpgt_epi8(_mm_xor_si128(_mm_sub_epi8((x), _mm_set1_epi8((char)(lo))), flip), _mm_set1_epi8((char)((n) ^ 0x80))), _mm_set1_epi8(-1))
#define EQUAL(x, c) _mm_cmpeq_epi8((x), _mm_set1_epi8((char)(c)))
#define OR(a, b) _mm_or_si128((a), (b))
#define BITS(f) bpetrain_sse2_bits(f(0), f(1), f(2), f(3))
    CLASS_MASKS();
#undef BITS
#undef OR
#undef RANGE
#undef EQUAL
}

#ifdef BPETRAIN_AVX2
/* AVX2: two 32-byte compares per class. The bytes x with x - lo <= n (unsigned): min(x - lo, n) == x - lo. */
__attribute__((target("avx2")))
static inline __m256i bpetrain_avx2_range(__m256i x, char lo, char n) {
    __m256i t = _mm256_sub_epi8(x, _mm256_set1_epi8(lo));
    return _mm256_cmpeq_epi8(_mm256_min_epu8(t, _mm256_set1_epi8(n)), t);
}

__attribute__((target("avx2")))
static void bpetrain_masks_avx2(const uint8_t* p, bpetrain_masks* m) {
    __m256i v[2], low[2];
    for (int k = 0; k < 2; k++) {
        v[k] = _mm256_loadu_si256((const __m256i*)(p + 32 * k));
        low[k] = _mm256_or_si256(v[k], _mm256_set1_epi8(0x20));
    }
#define RANGE(x, lo, n) bpetrain_avx2_range((x), (char)(lo), (char)(n))
#define EQUAL(x, c) _mm256_cmpeq_epi8((x), _mm256_set1_epi8((char)(c)))
#define OR(a, b) _mm256_or_si256((a), (b))
#define BITS(f) ((uint64_t)(uint32_t)_mm256_movemask_epi8(f(0)) | (uint64_t)(uint32_t)_mm256_movemask_epi8(f(1)) << 32)
    CLASS_MASKS();
#undef BITS
#undef OR
#undef RANGE
#undef EQUAL
}
#endif
#undef CLASS_MASKS
#undef F_L
#undef F_LW
#undef F_D
#undef F_SP
#undef F_W
#undef F_NL
#undef F_AP
#undef F_HI
#undef F_SL
#undef F_LOW_S
#undef F_LOW_D
#undef F_LOW_M
#undef F_LOW_T
#undef F_LOW_L
#undef F_LOW_V
#undef F_LOW_R
#undef F_LOW_E
#endif

/* Which code classes the bytes: -1 not chosen yet, 0 one byte at a time, 1 SSE2, 2 AVX2,
   3 AVX-512BW, 4 AVX-512BW and its two-byte characters by AVX-512 VBMI (bpetrain_class_multibyte_vbmi,
   any number of them a block). Each module that includes this file has its own; the first block chooses the
   widest the CPU has, and bpetrain.splitting._blocks's tests set theirs to run each. */
static int bpetrain_blocks_isa = -1;

static inline int bpetrain_widest_isa(void) {
#if defined(BPETRAIN_AVX512)
    if (!__builtin_cpu_supports("avx512bw"))
        return __builtin_cpu_supports("avx2") ? 2 : 1;
    return __builtin_cpu_supports("avx512vbmi") ? 4 : 3;
#elif defined(BPETRAIN_SSE2)
    return 1;
#else
    return 0;
#endif
}

/* The class masks of the 64 bytes at p (all readable). */
static inline void bpetrain_block_masks(const uint8_t* p, bpetrain_masks* m) {
    if (bpetrain_blocks_isa < 0)
        bpetrain_blocks_isa = bpetrain_widest_isa();
#ifdef BPETRAIN_AVX512
    if (bpetrain_blocks_isa >= 3) {
        bpetrain_masks_avx512(p, m);
        return;
    }
#endif
#ifdef BPETRAIN_AVX2
    if (bpetrain_blocks_isa == 2) {
        bpetrain_masks_avx2(p, m);
        return;
    }
#endif
#ifdef BPETRAIN_SSE2
    if (bpetrain_blocks_isa == 1) {
        bpetrain_masks_sse2(p, m);
        return;
    }
#endif
    bpetrain_masks_bytes(p, m);
}

/* The classes of a character of two or three bytes (U+0080..U+FFFF) for the blocks: one
   byte a code point in the table given to bpetrain_blocks_init (bpetrain.splitting._blocks
   makes it from the pattern's character classes), then at BPETRAIN_CODES_GROUPS one byte a
   group of 64 code points of three bytes (cp >> 6, from U+0800): their code if they all have
   the same, else BPETRAIN_CODES_MIXED; 0 for the groups whose bytes are no character (an
   overlong form, a surrogate). 0: the blocks do not read it (a number, a space, a case
   variant of a contraction's letter). */
#define BPETRAIN_CODES_GROUPS 0x10000
#define BPETRAIN_CODES_MIXED 0x80
/* Then, at BPETRAIN_CODES_LEADS + k, the code of the eight groups 8k..8k+7 (a first byte of
   three's low four bits, the top three of its second's six) if they all have the same
   (U+4E00..U+9FFF: CJK ideographs), else BPETRAIN_CODES_MIXED: 128 bytes. */
#define BPETRAIN_CODES_LEADS (BPETRAIN_CODES_GROUPS + 0x400)
enum {
    BPETRAIN_TWO_O = 1,       /* O, in none of o200k's case classes */
    BPETRAIN_TWO_O_CASED = 2, /* O in both (a mark): not for o200k's blocks */
    BPETRAIN_TWO_SPACE = 3,   /* \s (none is \r or \n, nor a letter, number or mark): W */
    BPETRAIN_TWO_LOWER = 4,   /* a letter in o200k's lower-case class alone (Ll) */
    BPETRAIN_TWO_UPPER = 5,   /* ... in its upper-case class alone (Lu, Lt) */
    BPETRAIN_TWO_LETTER = 6   /* ... in both (Lm, Lo): not for o200k's blocks */
};

/* The most bytes >= 0x80 a block classes one at a time (bpetrain_two_bytes), a quarter of it: text that
   is mostly ASCII, with accented letters or a word of another script here and there.
   Denser text (a Russian sentence) has more pieces in a block, which the matcher, a piece
   at a time, finds in less time than classing each character here and then the block
   (cl100k's split time of a 1 KB document of Spanish text: 2.73 -> 2.33 us; of Russian:
   3.55 -> 3.53, and 3.40 -> 3.98 with every block classed). */
#define BPETRAIN_TWO_BYTE_MOST 16

/* The bytes of the characters that start at the bits of first, given the bytes that are not
   a character's first (cont): a character has at most three bytes in a block. */
static inline uint64_t bpetrain_char_bytes(uint64_t first, uint64_t cont) {
    uint64_t second = (first << 1) & cont;
    return first | second | ((second << 1) & cont);
}

/* The first bytes of the characters whose last bytes are the bits of last, given the bytes
   that are not a character's first (cont); a character cut by the block's start has none. */
static inline uint64_t bpetrain_char_first(uint64_t last, uint64_t cont) {
    uint64_t second = (last & cont) >> 1, third = (second & cont) >> 1;
    return (last & ~cont) | (second & ~cont) | third;
}

/* Spread each set bit of seed to higher bits while within is set at them (runs): adding a
   seed's bit to its run carries through the run's bits above it, which the sum then lacks
   (and sets the bit after the run, which within lacks); a seed above another in the same run
   is the one bit there the sum keeps. */
static inline uint64_t bpetrain_smear_up(uint64_t seed, uint64_t within) {
    uint64_t a = seed & within;
    return (((within + a) ^ within) | a) & within;
}

/* Spread each set bit of seed to lower bits while within is set at them. */
static inline uint64_t bpetrain_smear_down(uint64_t seed, uint64_t within) {
    uint64_t a = seed & within, m = within;
    for (int sh = 1; sh < 64; sh <<= 1) {
        a |= (a >> sh) & m;
        m &= m >> sh;
    }
    return a;
}

/* A block of the string s[first : n]: the class masks of s[Q : Q + 64] (no byte before
   first is read: a string of its own, or a safe cut; none past n). */
typedef struct {
    bpetrain_masks m;   /* the classes of the string's bytes (the rest cleared) */
    uint64_t o;         /* O: neither letter, digit nor whitespace */
    Py_ssize_t Q, stop; /* stop = min(Q + 64, n) */
} bpetrain_block;

/* Class the two-byte characters of the block b at Q, whose bytes >= 0x80 are hi (bit i:
   s[Q + i]), by codes (the codes above; o200k: not the ones its rules cannot read): set
   each one's bytes in l (letters; lw: lower case) and its second byte in cont. A
   character cut by the block's start (its first byte at Q - 1, not before first) is
   classed by both bytes; one cut by its end is left to the next block (b->stop lowered to
   its first byte). Returns 0 if a byte is not part of such a character. */
static inline int bpetrain_two_bytes(const uint8_t* s, Py_ssize_t first, Py_ssize_t Q, Py_ssize_t n,
                                     const uint8_t* codes, int o200k, uint64_t hi, bpetrain_block* b) {
    bpetrain_masks* m = &b->m;
    uint64_t bits, second;
    Py_ssize_t q;
    uint32_t cp;
    uint8_t code;
    while (hi) {
        int i = bpetrain_ctz64(hi);
        q = Q + i;
        if ((uint8_t)(s[q] - 0xC2) < 0x1E) {  /* a first byte: a second must follow */
            if (q + 1 >= n || (s[q + 1] & 0xC0) != 0x80)
                return 0;
            if (q + 1 >= b->stop) {
                b->stop = q;
                return 1;
            }
            cp = ((uint32_t)(s[q] & 0x1F) << 6) | (s[q + 1] & 0x3F);
            second = (uint64_t)2 << i;
            bits = ((uint64_t)1 << i) | second;
        } else if (i == 0 && q - 1 >= first && (s[q] & 0xC0) == 0x80 && (uint8_t)(s[q - 1] - 0xC2) < 0x1E) {
            cp = ((uint32_t)(s[q - 1] & 0x1F) << 6) | (s[q] & 0x3F);
            second = bits = 1;
        } else {
            return 0;
        }
        hi &= ~bits;
        code = codes[cp];
        if (code == 0 || (o200k && (code == BPETRAIN_TWO_O_CASED || code == BPETRAIN_TWO_LETTER)))
            return 0;
        if (code >= BPETRAIN_TWO_LOWER)
            m->l |= bits;
        else if (code == BPETRAIN_TWO_SPACE)
            m->w |= bits;
        if (code == BPETRAIN_TWO_LOWER)
            m->lw |= bits;
        m->cont |= second;
    }
    return 1;
}

#ifdef BPETRAIN_AVX512
/* bpetrain_two_bytes for any number of two- and three-byte characters, all 64 bytes at
   once (AVX-512 VBMI), p the block's bytes (those outside the string zero), codes the table
   bpetrain_blocks_init takes (BPETRAIN_CODES_*). A two-byte character's code is entry
   (second byte & 0x3F) of the 64 codes of its first byte's code points: one permutation
   (vpermb) of the block's bytes a distinct first byte (Russian text has two, D0 and D1). A
   three-byte character's is that of its group of 64 code points (first and second byte),
   where the group's code points have one code (all of CJK's ideographs are letters in both
   of o200k's case classes): one vpermi2b for the characters whose group and its seven
   neighbours (512 code points) all have one code (CJK's ideographs), then a vpermb a distinct
   first byte of the others; and where they have not (the
   group of U+2000..U+203F holds spaces, dashes and quotes), the code of its third byte in
   the group's 64: a vpermb a distinct such group in the block. No loop over the characters.
   Returns 0 where bpetrain_two_bytes does (but for its limit of two-byte characters and for
   o200k's letters in both case classes, below), and for a four-byte character, an invalid or
   overlong sequence, a surrogate.

   Letters in both of o200k's case classes (Lm, Lo: Hebrew, Arabic, CJK) are set in both
   (bpetrain_o200k_starts reads them); for o200k a mark (in both classes, not a letter)
   leaves the block to the matcher. */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static int bpetrain_class_multibyte_vbmi(const uint8_t* p, const uint8_t* s, Py_ssize_t first, Py_ssize_t Q,
                                         Py_ssize_t n, const uint8_t* codes, int o200k, uint64_t hi,
                                         bpetrain_block* b) {
    bpetrain_masks* m = &b->m;
    const __m512i v = _mm512_loadu_si512((const void*)p);
    __m512i code = _mm512_setzero_si512();
#define RANGE(lo, n) _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8((char)(lo))), _mm512_set1_epi8((char)(n)))
#define EQUAL(x) _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8((char)(x)))
#define ROW(offset) _mm512_loadu_si512((const void*)(codes + (offset)))
    uint64_t lead2 = RANGE(0xC2, 0x1D) & hi, lead3 = RANGE(0xE0, 0x0F) & hi, cont = RANGE(0x80, 0x3F) & hi;
#undef RANGE
    uint64_t ends, todo, letters, lower, both, spaces, bad, head = 0;
    uint8_t head_code = 0;
    int top, length;
    if (hi & ~(lead2 | lead3 | cont))
        return 0;  /* C0, C1 or a first byte of a four-byte character (or no UTF-8 at all) */
    if (lead2 | lead3) {  /* the last character, if cut by the block's end: left to the next block */
        top = 63 - bpetrain_clz64(lead2 | lead3);
        length = (lead3 >> top) & 1 ? 3 : 2;
        if (Q + top + length > b->stop) {
            for (Py_ssize_t k = Q + top + 1; k < Q + top + length; k++)
                if (k >= n || (s[k] & 0xC0) != 0x80)
                    return 0;
            b->stop = Q + top;
            lead2 &= ~((uint64_t)1 << top);
            lead3 &= ~((uint64_t)1 << top);
            cont &= ((uint64_t)1 << top) - 1;
        }
    }
    if (cont & 1) {  /* the first character, if cut by the block's start: its first byte is before Q */
        uint32_t cp;
        if (Q - 1 >= first && (uint8_t)(s[Q - 1] - 0xC2) < 0x1E) {
            cp = ((uint32_t)(s[Q - 1] & 0x1F) << 6) | (p[0] & 0x3F);
            head = 1;
        } else {
            if (Q - 1 >= first && (s[Q - 1] & 0xF0) == 0xE0 && (cont & 2)) {
                cp = ((uint32_t)(s[Q - 1] & 0x0F) << 12) | ((uint32_t)(p[0] & 0x3F) << 6) | (p[1] & 0x3F);
                head = 3;
            } else if (Q - 2 >= first && (s[Q - 2] & 0xF0) == 0xE0 && (s[Q - 1] & 0xC0) == 0x80) {
                cp = ((uint32_t)(s[Q - 2] & 0x0F) << 12) | ((uint32_t)(s[Q - 1] & 0x3F) << 6) | (p[0] & 0x3F);
                head = 1;
            } else {
                return 0;
            }
            if (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))
                return 0;  /* overlong, or a surrogate: not one character */
        }
        head_code = codes[cp];
    }
    if (cont != ((lead2 << 1) | (lead3 << 1) | (lead3 << 2) | head))
        return 0;  /* a first byte without its other bytes, or another byte without its first */
    for (todo = lead2; todo; ) {  /* two bytes: the code at the second byte */
        uint8_t first_byte = p[bpetrain_ctz64(todo)];
        uint64_t same = EQUAL(first_byte) & todo;
        code = _mm512_mask_permutexvar_epi8(code, same << 1, v, ROW((first_byte & 0x1F) << 6));
        todo &= ~same;
    }
    if (lead3) {  /* three bytes: the group's code at the third byte, the second byte's value moved there */
        const __m512i back_one = _mm512_set_epi8(
            62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36,
            35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,
            7, 6, 5, 4, 3, 2, 1, 0, 0);
        const __m512i seconds = _mm512_permutexvar_epi8(back_one, v);
        const __m512i firsts = _mm512_permutexvar_epi8(back_one, seconds);
        const __m512i eighth = _mm512_or_si512(
            _mm512_slli_epi16(_mm512_and_si512(firsts, _mm512_set1_epi8(0x0F)), 3),
            _mm512_and_si512(_mm512_srli_epi16(seconds, 3), _mm512_set1_epi8(7)));  /* (no bit crosses a byte) */
        const __m512i lead_code = _mm512_maskz_permutex2var_epi8(lead3 << 2, ROW(BPETRAIN_CODES_LEADS), eighth,
                                                                 ROW(BPETRAIN_CODES_LEADS + 64));
        uint64_t uniform = (lead3 << 2) & ~_mm512_cmpeq_epi8_mask(lead_code, _mm512_set1_epi8((char)BPETRAIN_CODES_MIXED));
        code = _mm512_mask_mov_epi8(code, uniform, lead_code);
        for (todo = lead3 & ~(uniform >> 2); todo; ) {
            uint8_t first_byte = p[bpetrain_ctz64(todo)];
            uint64_t same = EQUAL(first_byte) & todo;
            code = _mm512_mask_permutexvar_epi8(code, same << 2, seconds,
                                                ROW(BPETRAIN_CODES_GROUPS + ((first_byte & 0x0F) << 6)));
            todo &= ~same;
        }
        /* groups of more than one code: the third byte's code in the group's 64 */
        todo = _mm512_mask_cmpeq_epi8_mask(lead3 << 2, code, _mm512_set1_epi8((char)BPETRAIN_CODES_MIXED));
        while (todo) {
            int e = bpetrain_ctz64(todo);
            uint64_t same = (EQUAL(p[e - 2]) << 2) & (EQUAL(p[e - 1]) << 1) & todo;
            code = _mm512_mask_permutexvar_epi8(code, same, v, ROW(((p[e - 2] & 0x0F) << 12) | ((p[e - 1] & 0x3F) << 6)));
            todo &= ~same;
        }
    }
#undef EQUAL
#undef ROW
    ends = (lead2 << 1) | (lead3 << 2);
    bad = _mm512_mask_cmpeq_epi8_mask(ends, code, _mm512_setzero_si512()) | (head && head_code == 0);
    if (o200k)
        bad |= _mm512_mask_cmpeq_epi8_mask(ends, code, _mm512_set1_epi8(BPETRAIN_TWO_O_CASED))
               | (head && head_code == BPETRAIN_TWO_O_CASED);
    if (bad)
        return 0;
    /* each character's classes from its last byte to its others (a first byte of three is in lead3) */
#define SPREAD(x) ((x) | ((x) >> 1) | (((x) >> 2) & lead3))
    letters = _mm512_mask_cmpge_epu8_mask(ends, code, _mm512_set1_epi8(BPETRAIN_TWO_LOWER));
    lower = _mm512_mask_cmpeq_epi8_mask(ends, code, _mm512_set1_epi8(BPETRAIN_TWO_LOWER));
    m->l |= SPREAD(letters) | (head_code >= BPETRAIN_TWO_LOWER ? head : 0);
    m->lw |= SPREAD(lower) | (head_code == BPETRAIN_TWO_LOWER ? head : 0);
    if (o200k) {
        both = _mm512_mask_cmpeq_epi8_mask(ends, code, _mm512_set1_epi8(BPETRAIN_TWO_LETTER));
        m->both |= SPREAD(both) | (head_code == BPETRAIN_TWO_LETTER ? head : 0);
    }
    spaces = _mm512_mask_cmpeq_epi8_mask(ends, code, _mm512_set1_epi8(BPETRAIN_TWO_SPACE));
    if (BPETRAIN_UNLIKELY(spaces != 0 || head_code == BPETRAIN_TWO_SPACE))
        m->w |= SPREAD(spaces) | (head_code == BPETRAIN_TWO_SPACE ? head : 0);
#undef SPREAD
    m->cont |= cont;
    return 1;
}
#endif

/* Load the block at Q = P - context; 0 if a byte of it is not ASCII, nor (with codes)
   part of a two-byte character the rules read (bpetrain_two_bytes). *retry: the first
   position P' from which a block at P' - context may qualify. */
static inline int bpetrain_load(const uint8_t* s, Py_ssize_t first, Py_ssize_t Q, Py_ssize_t n, int context,
                                const uint8_t* codes, int o200k, bpetrain_block* b, Py_ssize_t* retry) {
    uint8_t buffer[64];
    const uint8_t* p = buffer;
    Py_ssize_t string_first = first;
    int two_ok;
    b->Q = Q;
    b->stop = Q + 64 < n ? Q + 64 : n;
    if (Q > first)
        first = Q;
    if (first == Q && Q + 64 <= n) {
        p = s + Q;
    } else {
        memset(buffer, 0, sizeof buffer);
        memcpy(buffer + (first - Q), s + first, (size_t)(b->stop - first));
    }
    bpetrain_block_masks(p, &b->m);
    uint64_t exists = (b->stop - Q >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << (b->stop - Q)) - 1))
                      & (~(uint64_t)0 << (first - Q));
    bpetrain_masks* m = &b->m;
    m->cont = 0;
    m->both = 0;
    if (m->hi & exists) {
        if (codes == NULL)
            two_ok = 0;
#ifdef BPETRAIN_AVX512
        else if (bpetrain_blocks_isa == 4)
            two_ok = bpetrain_class_multibyte_vbmi(p, s, string_first, Q, n, codes, o200k, m->hi & exists, b);
#endif
        else
            two_ok = bpetrain_popcount64(m->hi & exists) <= BPETRAIN_TWO_BYTE_MOST
                     && bpetrain_two_bytes(s, string_first, Q, n, codes, o200k, m->hi & exists, b);
        if (!two_ok) {
            /* the last byte >= 0x80 here must be behind the next block's context */
            *retry = Q + 64 + context - bpetrain_clz64(m->hi & exists);
            return 0;
        }
        if (b->stop - Q < 64)
            exists &= ((uint64_t)1 << (b->stop - Q)) - 1;
    }
    *retry = Q + context + 1;
    m->l &= exists; m->lw &= exists; m->d &= exists; m->w &= exists; m->nl &= exists; m->sp &= exists;
    m->ap &= exists; m->sl &= exists; m->cont &= exists;
    b->o = exists & ~(m->l | m->d | m->w);
    return 1;
}

/* Digits: a piece starts at every k-th digit from the start of each run (\p{N}{1,k}): every
   has bits 0, k, 2k, ... (bpetrain_blocks_digits); bit 0 alone where a run is one piece
   (\p{N}+: a run that goes on past the block goes to the matcher). */
static inline uint64_t bpetrain_digit_starts(uint64_t d, uint64_t every) {
    uint64_t starts = 0, runs = d & ~(d << 1);
    while (runs) {
        int r = bpetrain_ctz64(runs);
        uint64_t rest = ~(d >> r);
        int length = rest ? bpetrain_ctz64(rest) : 64;
        uint64_t run = (length >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << length) - 1)) << r;
        starts |= (every << r) & run;
        runs &= runs - 1;
    }
    return starts;
}

/* The block's whitespace (newlines nl, none for gpt2; absorbed: the newlines that an O
   run's piece takes): the starts of its runs: a (the run's first byte not
   absorbed), the byte after the last newline, and the last byte if it is no newline; at
   the end of the string, a alone (keep_after_newline 0: cl100k's \s++$) or a and the byte
   after the last newline (1: o200k, whose \s*[\r\n]+ comes first, and the strings that
   split as cl100k without its \s++$); with whole_runs (o200k's without \s+(?!\S)) the run's
   last byte only where it starts the run or follows its last newline. *limit is lowered to
   the start of a run that goes on past the block (where it ends decides its cuts); it
   returns 0 if that is at or before P. */
static inline int bpetrain_whitespace_starts(const uint8_t* s, Py_ssize_t n, const bpetrain_block* b, uint64_t nl,
                                             uint64_t absorbed, int keep_after_newline, int whole_runs, Py_ssize_t P,
                                             uint64_t* starts, Py_ssize_t* limit) {
    uint64_t w = b->m.w;
    uint64_t last_bit = (uint64_t)1 << (b->stop - b->Q - 1);
    int goes_on = 0;
    if (b->stop < n) {
        uint8_t next = s[b->stop];  /* a byte that is not ASCII might be whitespace: taken to go on */
        goes_on = (next >= 0x80) | bpetrain_ascii_space(next);
    }
    uint64_t w_next = (w >> 1) | (goes_on ? last_bit : 0);
    uint64_t w_start = w & ~(w << 1), w_end = w & ~w_next;
    uint64_t to_newline = bpetrain_smear_down(nl, w);  /* at or before a newline of the run */
    uint64_t region = w & ~absorbed & (w_start | (absorbed << 1));
    uint64_t after_newline = w & ~to_newline & (to_newline << 1);
    uint64_t last_char = whole_runs ? 0 : w_end & ~to_newline;
    if (BPETRAIN_UNLIKELY(last_char & b->m.cont))  /* a space of more than one byte */
        last_char = bpetrain_char_first(last_char, b->m.cont);
    *starts = region | after_newline | last_char;
    if (w & last_bit) {
        uint64_t last_run = bpetrain_smear_down(last_bit, w);
        if (b->stop == n) {
            *starts = (*starts & ~last_run) | ((region | (keep_after_newline ? after_newline : 0)) & last_run);
        } else if (goes_on) {
            Py_ssize_t run_start = b->Q + bpetrain_ctz64(last_run);
            if (run_start <= P)
                return 0;
            if (run_start < *limit)
                *limit = run_start;
        }
    }
    return 1;
}

/* The block's contractions 's 't 'm 'd ('re 've 'll): bit q of *two (*three) is set where
   an apostrophe of `apostrophes` is followed by those letters, in either case, each of
   them in `letters` (both cases, or the lower case alone for gpt2). */
static inline void bpetrain_contractions(const bpetrain_masks* m, uint64_t letters, uint64_t apostrophes,
                                         uint64_t* two, uint64_t* three) {
    *two = apostrophes & (((m->low_s | m->low_t | m->low_m | m->low_d) & letters) >> 1);
    *three = apostrophes & ((((m->low_r | m->low_v) & (m->low_e >> 1)) | (m->low_l & (m->low_l >> 1)))
                            & letters & (letters >> 1)) >> 1;
}

/* The block's result for the pattern's starts *others (every class but whitespace): the
   whitespace cuts (bpetrain_whitespace_starts) added, the context bytes before P and every
   byte from V on left out. V is the block's end less the bytes after a position that the
   pattern's rules read (lookahead), lowered before a run of whitespace that goes on past
   the block. Returns V, or P if that run starts at P or before. */
static inline Py_ssize_t bpetrain_block_starts(const uint8_t* s, Py_ssize_t n, const bpetrain_block* b, Py_ssize_t P,
                                               int lookahead, uint64_t nl, uint64_t absorbed, int keep_after_newline,
                                               int whole_runs, uint64_t others, uint64_t* starts) {
    uint64_t start_w, keep;
    Py_ssize_t V = b->stop < n ? b->stop - lookahead : b->stop;
    if (!bpetrain_whitespace_starts(s, n, b, nl, absorbed, keep_after_newline, whole_runs, P, &start_w, &V))
        return P;
    keep = V - b->Q >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << (V - b->Q)) - 1);
    *starts = (others | start_w) & keep & (~(uint64_t)0 << (P - b->Q));
    return V;
}

/* Starts of cl100k's pieces in s[P : V], as bits (bit i: position P - 3 + i), in the
   block b loaded from P - 3 of a string of n bytes. P must not continue a run of
   letters, whitespace or digits. Returns V, P < V <= min(P + 61, n), or P if the block
   does not qualify (see the top of this file).

   The same rules serve the patterns written as cl100k was before tiktoken made it
   possessive (Llama 3's, minbpe's and rustbpe's strings) and nanochat's: they lack
   \s++$, so a run of whitespace at the end of the string is cut after its last newline
   (``\s*[\r\n]`` comes first; open_end 1), and nanochat's digits go by two. The other
   differences between those strings (possessive quantifiers, ``\s`` or ``\s+`` last,
   ``[\r\n]+`` or ``[\r\n]`` after ``\s*``) cut no text differently. Either kind may take
   any number of digits a piece (every: bpetrain_digit_starts; ``\p{N}`` as Qwen2's pattern
   does, ``\p{N}{1,2}`` as nanochat's, ``\p{N}+``), may leave out ``[\r\n]*+`` after an O
   run (absorb 0: the newlines are the whitespace's, as in Seed-Coder's pattern), and may
   have no contractions (the reader clears the block's apostrophes, m.ap, for those rules:
   an apostrophe is an O, the prefix of the letters after it) or have them in lower case
   alone (lower_contractions, as gpt2's: an apostrophe before an upper-case letter is such
   an O), and may give letters a space alone before them (space_prefix, gpt2's `` ?``: a
   letter after an O or a tab starts a piece); which of these rules a pattern splits by is found by comparing DFAs
   (bpetrain.splitting.pattern), never by its string. */
static inline Py_ssize_t bpetrain_cl100k_starts(const uint8_t* s, Py_ssize_t n, const bpetrain_block* b, Py_ssize_t P,
                                                uint64_t every, int open_end, int absorb, int lower_contractions,
                                                int space_prefix, uint64_t* starts) {
    const bpetrain_masks* m = &b->m;
    uint64_t l = m->l, d = m->d, w = m->w, nl = m->nl, sp = m->sp, o = b->o, ap = m->ap;
    /* contractions: the byte after one starts a piece (its apostrophe starts one) */
    uint64_t after_contraction = 0, contraction = 0, two, three;
    if (ap) {
        bpetrain_contractions(m, lower_contractions ? m->lw : l, ap & ~((o | sp) << 1), &two, &three);
        after_contraction = (two << 2) | (three << 3);
        contraction = two | three;  /* (their apostrophes) */
    }
    uint64_t o1 = o << 1, sp1 = sp << 1;
    uint64_t start_o = o & ~(o1 | sp1);
    /* the bytes a letter goes on the piece of: a space or a contraction's apostrophe, or (any
       prefix) whitespace but a newline and the bytes of an O that starts a piece (the
       apostrophes among them) */
    uint64_t prefix = space_prefix ? sp | contraction : (w & ~nl) | bpetrain_char_bytes(start_o, m->cont);
    uint64_t start_l = l & ~(((l << 1) & ~after_contraction) | (prefix << 1));
    uint64_t absorbed = absorb ? bpetrain_smear_up(nl & o1, nl) : 0;  /* [\r\n]*+ after an O run */
    /* (a space prefix: whether a letter after an apostrophe starts a piece depends on up to two
       bytes after it, a contraction's, as in gpt2's rules: the block's last two are left to the next) */
    return bpetrain_block_starts(s, n, b, P, space_prefix && ap ? 2 : 0, nl, absorbed, open_end, 0,
                                 start_o | start_l | bpetrain_digit_starts(d, every),
                                 starts);
}

/* Where o200k cuts a run of letters (lower: W alone, upper: U alone, both: in both case
   classes, B), as the bits of the letters that start a piece inside a run (its first letter
   is left to the rules of the prefix): [U]*[W]+ takes the U and B from the piece's start,
   then W and B, and stops at U; when no W follows (the run ends), it gives back U up to the
   last B, and [U]+[W]* takes the rest. So a U starts a piece when the nearest letter
   before it not in B is W (W and B between), or when it follows a B and the run's letters
   from it on are all U. Without B: where W is followed by U.

   Returns 0 (the matcher decides) where a cut after P depends on a letter before the
   block: a U after a run of B from the block's first byte (whether a W is before it; a
   piece starts inside a run of B only after a contraction, which the rules leave to the
   matcher when a letter follows it, so this is a guard), and lowers *limit to a run of U
   after a B that reaches the block's end of a longer string (whether the run ends with
   it decides the cut). */
static inline int bpetrain_o200k_letter_cuts(Py_ssize_t n, const bpetrain_block* b, Py_ssize_t P, uint64_t lower,
                                             uint64_t upper, uint64_t both, uint64_t* cuts, Py_ssize_t* limit) {
    uint64_t after_w, after_b, last_bit, run_end, to_end, open, after_p = ~(uint64_t)1 << (P - b->Q);
    if (!both || !upper) {  /* no B: the rule above; no U: no cut */
        *cuts = upper & (lower << 1);
        return 1;
    }
    after_w = bpetrain_smear_up(lower, lower | both) << 1;
    after_b = upper & (both << 1);
    last_bit = (uint64_t)1 << (b->stop - b->Q - 1);
    run_end = (lower | upper | both) & ~((lower | upper | both) >> 1);  /* (at the block's end: see open) */
    to_end = bpetrain_smear_down(run_end & upper, upper);
    *cuts = upper & (after_w | (after_b & to_end));
    if (after_b & ~to_end & (bpetrain_smear_up(both & 1, both) << 1) & after_p)
        return 0;
    open = b->stop < n ? after_b & ~after_w & bpetrain_smear_down(last_bit & upper, upper) & after_p : 0;
    if (open && b->Q + bpetrain_ctz64(open) < *limit)
        *limit = b->Q + bpetrain_ctz64(open);
    return 1;
}

/* Starts of o200k's pieces in s[P : V], as bits (bit i: position P - 4 + i), in the
   block b loaded from P - 4; as bpetrain_cl100k_starts, and P's two bytes before it must
   not be \r \n or / (the pieces that end in them are cut from further back). V <= P + 60.

   The four bytes before P are what the rules read behind it: P may be a contraction's
   first letter, whose apostrophe (P - 1) follows a letter (P - 2) and is checked for a
   chain with an apostrophe up to three bytes before it (P - 4); every other rule reads
   one or two bytes back (an O that is a letter's prefix, and the byte before it). Whether
   an apostrophe after a letter starts a piece depends on the two letters after it (a
   contraction's): one in the block's last two bytes ends V there, unless the string ends
   with the block; no other start depends on a byte after it.

   o200k, for ASCII text: U upper-case, W lower-case letters.
       [^\r\n\p{L}\p{N}]?[U]*[W]+C?|[^\r\n\p{L}\p{N}]?[U]+[W]*C?|\p{N}{1,3}
       | ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+        C = (?i:'s|'t|'re|'ve|'m|'ll|'d)
   A letter starts a piece unless the byte before is a letter of the same piece (a run
   of letters is cut only where a lower-case letter is followed by an upper-case one, and
   after a contraction), or the prefix (a space or tab, or an O that starts a piece).
   An apostrophe after a letter, followed by a contraction, belongs to that letter's
   piece (C), as do the contraction's letters; a chain of them ('s's) goes to the
   matcher. O starts a piece unless the byte before is O of the same run or a space;
   \r, \n and / right after an O run belong to its piece. Digits and whitespace as in
   cl100k, except that a run of whitespace at the end of the string is also cut after its
   last newline. Letters in both case classes (B: Lm, Lo), as bpetrain_o200k_letter_cuts
   cuts them; one right after a contraction goes to the matcher. The same rules may take
   any number of digits a piece (every, as bpetrain_cl100k_starts), and no contractions
   (m.ap cleared, as bpetrain_cl100k_starts: an apostrophe is an O, as in Mistral's tekken
   pattern) or contractions in lower case alone (lower_contractions), a space alone
   before letters (space_prefix), no \s+(?!\S) (whole_runs), and [\r\n]* for [\r\n/]* (m.sl cleared, as
   Kimi K2's pattern has it). */
static inline Py_ssize_t bpetrain_o200k_starts(const uint8_t* s, Py_ssize_t n, const bpetrain_block* b, Py_ssize_t P,
                                               uint64_t every, int lower_contractions, int space_prefix, int whole_runs,
                                               uint64_t* starts) {
    const bpetrain_masks* m = &b->m;
    uint64_t l = m->l, lower = m->lw, both = m->both, upper = l & ~lower & ~both, d = m->d, w = m->w, nl = m->nl;
    uint64_t sp = m->sp, o = b->o, ap = m->ap, two, three, cuts;
    Py_ssize_t V, limit = n;
    uint64_t absorbed = bpetrain_smear_up(nl & (o << 1), nl | m->sl);  /* [\r\n/]* after an O run */
    /* contractions after a letter: two[q], three[q]: the apostrophe at q starts one of 2 or 3 bytes */
    uint64_t in_contraction = 0, contraction_end = 0;
    if (ap) {
        bpetrain_contractions(m, lower_contractions ? lower : l, ap & (l << 1), &two, &three);
        if ((two | three) & ((ap << 2) | (ap << 3)))
            return P;  /* 's's: whether the second is a contraction depends on the first */
        in_contraction = two | (two << 1) | three | (three << 1) | (three << 2);
        contraction_end = (two << 1) | (three << 2);
        if ((contraction_end << 1) & both)
            return P;  /* where its piece ends depends on the letters after it */
    }
    if (!bpetrain_o200k_letter_cuts(n, b, P, lower, upper, both, &cuts, &limit))
        return P;
    /* whitespace (but newlines) that a letter, and spaces that an O, after it takes as its prefix:
       all, or (whole_runs: \s+ takes the rest of a run) a character alone between others */
    uint64_t blank = w & ~nl, space = sp;
    if (BPETRAIN_UNLIKELY(whole_runs)) {
        blank = bpetrain_char_bytes(blank & ~(blank << 1), m->cont);
        space &= blank;
    }
    uint64_t start_o = o & ~(((o & ~absorbed) << 1) | (space << 1) | absorbed | in_contraction);
    uint64_t same_piece = (l << 1) & ~cuts & ~(contraction_end << 1);
    /* the bytes a letter goes on the piece of, as bpetrain_cl100k_starts */
    uint64_t prefix = space_prefix ? space : blank | bpetrain_char_bytes(start_o, m->cont);
    uint64_t start_l = l & ~in_contraction & ~(same_piece | (prefix << 1));
    if (b->stop < n && ap) {  /* a contraction may start in the block's last 2 bytes: leave it to the next block */
        int from = b->stop - b->Q > 2 ? (int)(b->stop - b->Q - 2) : 0;
        uint64_t late = ap & (l << 1) & (~(uint64_t)0 << from);
        if (late && b->Q + bpetrain_ctz64(late) < limit)
            limit = b->Q + bpetrain_ctz64(late);
    }
    V = bpetrain_block_starts(s, n, b, P, 0, nl, absorbed, 1, whole_runs,
                              start_o | start_l | bpetrain_digit_starts(d, every), starts);
    if (limit < V) {  /* (limit >= b->Q) */
        *starts &= ((uint64_t)1 << (limit - b->Q)) - 1;
        V = limit;
    }
    return V;
}

/* Starts of gpt2's pieces in s[P : V], as bits (bit i: position P - 3 + i), in the
   block b loaded from P - 3; as bpetrain_cl100k_starts, V <= P + 59.

   gpt2, for ASCII text: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
   A letter, digit or O starts a piece unless the byte before is of its own class (one
   run) or a space (`` ?`` takes the last space of a run, which starts a piece). A
   contraction (lower-case only) is an apostrophe that starts a piece (not after O or a
   space) and its letters; what follows it starts a piece. A run of whitespace is cut
   before its last byte unless it ends the string; no newline is special. */
static inline Py_ssize_t bpetrain_gpt2_starts(const uint8_t* s, Py_ssize_t n, const bpetrain_block* b, Py_ssize_t P,
                                              uint64_t* starts) {
    const bpetrain_masks* m = &b->m;
    uint64_t l = m->l, lower = m->lw, d = m->d, sp = m->sp, o = b->o, ap = m->ap;
    uint64_t in_contraction = 0, after_contraction = 0, two, three;
    if (ap) {
        bpetrain_contractions(m, lower, ap & ~((o | sp) << 1), &two, &three);
        in_contraction = two | (two << 1) | three | (three << 1) | (three << 2);
        after_contraction = (two << 2) | (three << 3);
    }
    uint64_t sp1 = sp << 1;
    uint64_t start_o = o & ~((o << 1) | sp1);
    uint64_t start_l = l & ~in_contraction & ~(((l << 1) & ~after_contraction) | sp1);
    uint64_t start_d = d & ~((d << 1) | sp1);
    /* whether a letter after an apostrophe starts a piece depends on up to two bytes
       after it: leave the block's last two bytes to the next */
    return bpetrain_block_starts(s, n, b, P, 2, 0, 0, 0, 0, start_o | start_l | start_d, starts);
}

/* Whether a continues b's run of letters, whitespace or digits (a before b). Without
   branches (& and |, not && and ||): the bytes are the text's, which a branch would guess. */
static inline int bpetrain_same_run(uint8_t a, uint8_t b) {
    int la = ((uint8_t)((a | 0x20) - 'a') < 26) & (a < 0x80), lb = ((uint8_t)((b | 0x20) - 'a') < 26) & (b < 0x80);
    int da = (uint8_t)(a - '0') < 10, db = (uint8_t)(b - '0') < 10;
    int wa = bpetrain_ascii_space(a), wb = bpetrain_ascii_space(b);
    return (la & lb) | (da & db) | (wa & wb);
}

static inline int bpetrain_newline_or_slash(uint8_t a) {
    return (a == '\n') | (a == '\r') | (a == '/');
}

/* Reading pieces block by block: the starts of the current block not yet returned. */
enum {
    BPETRAIN_BLOCKS_CL100K = 1,
    BPETRAIN_BLOCKS_O200K = 2,
    BPETRAIN_BLOCKS_GPT2 = 3,
    BPETRAIN_BLOCKS_CL100K_OPEN = 4,  /* cl100k's rules without \s++$ (Llama 3's, minbpe's, rustbpe's strings) */
    BPETRAIN_BLOCKS_KIND = 7,         /* the bits above; the variants ORed into them: */
    BPETRAIN_BLOCKS_SPACE_PREFIX = 8, /* cl100k's, o200k's: letters take a space alone before them
                                         ( ?\p{L}++, gpt2's), not any character but a letter, digit
                                         or newline ([^\r\n\p{L}\p{N}]?+): a letter after an O or a
                                         tab starts a piece */
    BPETRAIN_BLOCKS_LOWER_CONTRACTIONS = 16, /* cl100k's, o200k's: contractions in lower case alone
                                             ('(?:[sdmt]|ll|ve|re), as gpt2's): "'S" is no contraction */
    BPETRAIN_BLOCKS_BARE_O = 32,      /* cl100k's: no [\r\n]* after a run of O: its newlines go to the whitespace */
    BPETRAIN_BLOCKS_NO_CONTRACTIONS = 64, /* cl100k's: no '(?i:[sdmt]|ll|ve|re); o200k's: no
                                             (?i:'s|'t|'re|'ve|'m|'ll|'d)? after letters */
    BPETRAIN_BLOCKS_LONE_SPACE_GAPS = 128, /* gpt2's without \s++$ and the last \s: a lone whitespace
                                             character before a non-space is in no piece (bpetrain_blocks_gap) */
    /* cl100k's, o200k's: how many digits a piece takes at most, k in bits 8-14 (k << 8): 0 three
       (\p{N}{1,3}, their own), 1 to 63 that many, BPETRAIN_BLOCKS_DIGITS_ANY a run of any length
       (\p{N}+; from 64 on all cut the same runs of a block alike, and a longer run goes to the
       matcher) */
    BPETRAIN_BLOCKS_DIGITS_SHIFT = 8,
    BPETRAIN_BLOCKS_DIGITS = 127 << 8,
    BPETRAIN_BLOCKS_DIGITS_ANY = 64,
    /* o200k's: no \s+(?!\S): \s+ takes a run of whitespace after its last newline whole, and only
       a character alone between others is the prefix of a letter (a space: of an O) after it */
    BPETRAIN_BLOCKS_WHOLE_RUNS = 1 << 15,
    /* cl100k's: combining marks are letters ([\p{L}\p{M}]++ for \p{L}++, and a mark in no run of
       O: Qwen3.5's): not read here, but by bpetrain.splitting._blocks, which gives such rules the
       table of codes where a mark's is a letter's (BPETRAIN_TWO_LETTER, not BPETRAIN_TWO_O_CASED) */
    BPETRAIN_BLOCKS_MARKS = 1 << 16,
    /* cl100k's: a combining mark is a part of the run it is in ([\p{L}\p{M}]++ for \p{L}++ with
       cl100k's classes otherwise: a letter after letters, punctuation in a run of it), which no
       class here is: not read here either, but by bpetrain.splitting._blocks, which gives such
       rules the table of codes where a mark's is 0 (left to the matcher) */
    BPETRAIN_BLOCKS_MARKS_IN_RUNS = 1 << 17,
    /* o200k's: [\r\n]* after a run of O, not [\r\n/]* (Kimi K2's pattern) */
    BPETRAIN_BLOCKS_NO_SLASH = 1 << 18,
    /* not a rule, but how far they hold: the pattern cuts as the rules only where the blocks'
       characters are read (a program with codes of its own, which leave the others to the
       matcher; bpetrain.splitting._dfa.first_difference's ``reads``). Its pieces before a
       block may then differ from the rules', and a block is read only from a position that
       the rules also start a piece at (else the matcher reads on) */
    BPETRAIN_BLOCKS_OWN_CODES = 1 << 19
};

/* What bpetrain_blocks_gap says of a piece the blocks gave. */
enum { BPETRAIN_BLOCKS_PIECE = 0, BPETRAIN_BLOCKS_GAP = 1, BPETRAIN_BLOCKS_UNSURE = 2 };

/* For rules with BPETRAIN_BLOCKS_LONE_SPACE_GAPS: whether the piece s[cur : end] that gpt2's rules
   gave is a piece of the pattern, or a gap. gpt2's pieces are the pattern's but those its last
   alternative \s gives: a whitespace character that \s+(?!\S) cannot take, the last of a run
   followed by a non-space (a space there is taken by `` ?``, and \s++$ takes what the other
   takes at the end of the string). Those the pattern matches nowhere (its next attempt starts
   after it, where gpt2's next piece does). UNSURE where the character or the one after it is
   not ASCII (the caller asks the program). */
static inline int bpetrain_blocks_gap(const uint8_t* s, Py_ssize_t cur, Py_ssize_t end, Py_ssize_t n) {
    uint8_t a = s[cur], b;
    if (BPETRAIN_LIKELY(((uint8_t)(a - 9) > 4) & (a < 0x80)))  /* (one test: most pieces start otherwise) */
        return BPETRAIN_BLOCKS_PIECE;
    if (a >= 0x80)
        return end - cur <= 3 ? BPETRAIN_BLOCKS_UNSURE : BPETRAIN_BLOCKS_PIECE;  /* (a lone character of two or three bytes) */
    if (end != cur + 1 || end == n)  /* (a is \t \n \v \f \r) */
        return BPETRAIN_BLOCKS_PIECE;
    b = s[end];
    if (b >= 0x80)
        return BPETRAIN_BLOCKS_UNSURE;
    return bpetrain_ascii_space(b) ? BPETRAIN_BLOCKS_PIECE : BPETRAIN_BLOCKS_GAP;
}

/* The digits that start a piece in a run of them (bpetrain_digit_starts) by the rules' variant:
   bits 0, k, 2k, ... for k digits a piece. */
static inline uint64_t bpetrain_blocks_digits(int pattern) {
    int k = (pattern & BPETRAIN_BLOCKS_DIGITS) >> BPETRAIN_BLOCKS_DIGITS_SHIFT, i;
    uint64_t every = 0;
    if (k == 0)
        k = 3;
    for (i = 0; i < 64; i += k)
        every |= (uint64_t)1 << i;
    return every;
}

typedef struct {
    int pattern;        /* BPETRAIN_BLOCKS_*, variants ORed in */
    uint64_t digits;    /* the digits that start a piece in a run (bpetrain_blocks_digits) */
    const uint8_t* codes;  /* the codes of U+0080..U+FFFF (BPETRAIN_CODES_*), or NULL: ASCII blocks only */
    Py_ssize_t base;    /* bit i of starts is position base + i */
    Py_ssize_t valid;   /* V: starts are known below it (-1: no block) */
    Py_ssize_t retry;   /* no block is tried for a piece starting before it */
    uint64_t starts;    /* bit i: base + i starts a piece after the current one */
} bpetrain_block_scan;

static inline void bpetrain_blocks_init(bpetrain_block_scan* it, int pattern, const uint8_t* codes) {
    it->pattern = pattern;
    it->digits = bpetrain_blocks_digits(pattern);
    it->codes = codes;
    it->base = 0;
    it->valid = -1;
    it->retry = 0;
    it->starts = 0;
}

/* After the matcher gave a piece: the block's starts are no longer in step. */
static inline void bpetrain_blocks_reset(bpetrain_block_scan* it) {
    it->valid = -1;
    it->starts = 0;
}

/* Whether a block may not start at P: P continues a run of letters, whitespace or
   digits, or (o200k) one of the two bytes before it is \r \n or /. */
static inline int bpetrain_mid_run(const bpetrain_block_scan* it, const uint8_t* s, Py_ssize_t first, Py_ssize_t P) {
    int mid;
    if (P <= first)
        return 0;
    mid = bpetrain_same_run(s[P - 1], s[P]);
    if ((it->pattern & BPETRAIN_BLOCKS_KIND) == BPETRAIN_BLOCKS_O200K) {
        mid |= bpetrain_newline_or_slash(s[P - 1]);
        if (P - 2 >= first)
            mid |= bpetrain_newline_or_slash(s[P - 2]);
    }
    return mid;
}

/* bpetrain_blocks_next when the block's starts are used up: a new block. Out of line,
   so that the loop that asks for pieces stays small. */
BPETRAIN_NOINLINE
static Py_ssize_t bpetrain_blocks_refill(bpetrain_block_scan* it, const uint8_t* s, Py_ssize_t first, Py_ssize_t cur,
                                         Py_ssize_t n) {
    Py_ssize_t end, P, lowest;
    bpetrain_block block;
    int context, kind = it->pattern & BPETRAIN_BLOCKS_KIND;
    if (it->valid == n)
        return n;
    if (cur < it->retry)
        return -1;
    /* a new block from cur, or from where the run cur is in starts */
    P = cur;
    lowest = cur - 32 > first ? cur - 32 : first;
    while (bpetrain_mid_run(it, s, first, P)) {  /* (one call a place: most blocks start at cur) */
        if (P <= lowest) {
            it->retry = cur + 1;
            return -1;
        }
        P--;
    }
    context = kind == BPETRAIN_BLOCKS_O200K ? 4 : 3;
    it->base = P - context;
    if (!bpetrain_load(s, first, it->base, n, context, it->codes, kind == BPETRAIN_BLOCKS_O200K, &block,
                       &it->retry)) {
        it->valid = P;
    } else {
        if (it->pattern & BPETRAIN_BLOCKS_NO_CONTRACTIONS)
            block.m.ap = 0;  /* no contractions: an apostrophe is an O like any other (b->o keeps it) */
        int lower = (it->pattern & BPETRAIN_BLOCKS_LOWER_CONTRACTIONS) != 0;
        int space = (it->pattern & BPETRAIN_BLOCKS_SPACE_PREFIX) != 0;
        if (it->pattern & BPETRAIN_BLOCKS_NO_SLASH)
            block.m.sl = 0;  /* [\r\n]* after an O run: a / is an O like any other */
        if (kind == BPETRAIN_BLOCKS_O200K && !(it->pattern & BPETRAIN_BLOCKS_WHOLE_RUNS))
            it->valid = bpetrain_o200k_starts(s, n, &block, P, it->digits, lower, space, 0, &it->starts);
        else if (kind == BPETRAIN_BLOCKS_O200K)  /* (a copy of its own: o200k's rules as they were without it) */
            it->valid = bpetrain_o200k_starts(s, n, &block, P, it->digits, lower, space, 1, &it->starts);
        else if (kind == BPETRAIN_BLOCKS_GPT2)
            it->valid = bpetrain_gpt2_starts(s, n, &block, P, &it->starts);
        else
            it->valid = bpetrain_cl100k_starts(s, n, &block, P, it->digits, kind == BPETRAIN_BLOCKS_CL100K_OPEN,
                                               !(it->pattern & BPETRAIN_BLOCKS_BARE_O), lower, space, &it->starts);
    }
    if (it->valid == P) {
        it->valid = -1;
        it->starts = 0;
        return -1;
    }
    if ((it->pattern & BPETRAIN_BLOCKS_OWN_CODES) && !((it->starts >> (cur - it->base)) & 1)) {
        it->valid = -1;  /* cur starts no piece of the rules: they may have cut the text before otherwise */
        it->starts = 0;
        it->retry = cur + 1;
        return -1;
    }
    it->starts &= ~(((uint64_t)2 << (cur - it->base)) - 1);  /* those after cur */
    if (it->starts == 0) {
        if (it->valid == n)
            return n;
        it->retry = cur + 1;
        return -1;
    }
    end = it->base + bpetrain_ctz64(it->starts);
    it->starts &= it->starts - 1;
    return end;
}

/* The pieces of the current block's starts not yet returned, as bpetrain_blocks_next gives them
   one at a time, in the text s of n bytes, while *cur < stop and fewer than room are written:
   each piece's start and end to bounds (from bounds[0]), the end of the last at *cur. For rules
   with BPETRAIN_BLOCKS_LONE_SPACE_GAPS, a gap (bpetrain_blocks_gap) is passed over, and a piece
   it is unsure of left to the caller. Returns how many it wrote (none once the block's starts
   are used up: bpetrain_blocks_next reads the next block). In one loop whose state stays in
   registers; the rules without gaps have a loop of their own (left to the compiler, whether
   it takes the test of the rules out of the loop depends on what else it inlines). */
static inline Py_ssize_t bpetrain_blocks_drain(bpetrain_block_scan* it, const uint8_t* s, Py_ssize_t n,
                                              Py_ssize_t* cur, Py_ssize_t stop, Py_ssize_t* bounds, Py_ssize_t room) {
    uint64_t starts = it->starts;
    const Py_ssize_t base = it->base;
    Py_ssize_t c = *cur, k = 0, end;
    if (!(it->pattern & BPETRAIN_BLOCKS_LONE_SPACE_GAPS)) {
        for (; starts && k < room && c < stop; starts &= starts - 1, c = end, k++) {
            end = base + bpetrain_ctz64(starts);
            bounds[2 * k] = c;
            bounds[2 * k + 1] = end;
        }
    } else {
        for (; starts && k < room && c < stop; starts &= starts - 1, c = end) {
            end = base + bpetrain_ctz64(starts);
            const int gap = bpetrain_blocks_gap(s, c, end, n);
            if (gap == BPETRAIN_BLOCKS_UNSURE)
                break;
            if (gap == BPETRAIN_BLOCKS_PIECE) {
                bounds[2 * k] = c;
                bounds[2 * k + 1] = end;
                k++;
            }
        }
    }
    it->starts = starts;
    *cur = c;
    return k;
}

/* Whether the blocks gave the last piece: asked after bpetrain_blocks_next (and
   bpetrain_blocks_reset, if that gave -1), for the tests. Only a block's reading leaves
   valid set: every -1 is followed by a reset. */
static inline int bpetrain_blocks_gave(const bpetrain_block_scan* it) {
    return it->valid >= 0;
}

/* End of the piece that starts at cur in the string s[first : n], or -1 if the blocks
   cannot tell (the caller uses the matcher for that piece, then calls
   bpetrain_blocks_reset). cur is the end of the last piece returned (or where splitting
   began: first or a safe cut). */
static inline Py_ssize_t bpetrain_blocks_next(bpetrain_block_scan* it, const uint8_t* s, Py_ssize_t first,
                                             Py_ssize_t cur, Py_ssize_t n) {
    Py_ssize_t end;
    if (BPETRAIN_UNLIKELY(it->starts == 0)) {
        if (cur < it->retry && it->valid != n)
            return -1;  /* no block may qualify yet: the matcher, without a call here */
        return bpetrain_blocks_refill(it, s, first, cur, n);
    }
    end = it->base + bpetrain_ctz64(it->starts);
    it->starts &= it->starts - 1;
    return end;
}

#endif
