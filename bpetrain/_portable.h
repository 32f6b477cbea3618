/* The compiler builtins the kernels use, for every compiler the wheels are built with.

   GCC and Clang (Linux, macOS, clang-cl): their builtins, as written before this header
   existed, so what they compile is unchanged. MSVC on 64-bit x86 and ARM: its intrinsics.
   Any other compiler (or BPETRAIN_PORTABLE defined, which lets GCC build what the others
   run, for a test run: CFLAGS=-DBPETRAIN_PORTABLE): plain C. Each gives the same result;
   the hints (branch weights, inlining, prefetches) change speed only.

   bpetrain_ctz64(x), bpetrain_clz64(x): the number of zero bits below the lowest set bit
   of x, above the highest; x must not be 0 (as for __builtin_ctzll, __builtin_clzll). */
#ifndef BPETRAIN_PORTABLE_H
#define BPETRAIN_PORTABLE_H

#include <stdint.h>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(BPETRAIN_PORTABLE)
#define BPETRAIN_GNU_BUILTINS 1
#endif

#if defined(BPETRAIN_GNU_BUILTINS)
#define bpetrain_ctz64(x) __builtin_ctzll(x)
#define bpetrain_clz64(x) __builtin_clzll(x)
#define BPETRAIN_UNLIKELY(c) __builtin_expect(!!(c), 0)
#define BPETRAIN_LIKELY(c) __builtin_expect(!!(c), 1)
#define BPETRAIN_NOINLINE __attribute__((noinline))
/* rw: 0 read, 1 write; locality 0 (used once) to 3 (keep in every cache level) */
#define BPETRAIN_PREFETCH(p, rw, locality) __builtin_prefetch((const void*)(p), (rw), (locality))
#else
#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64)) && !defined(BPETRAIN_PORTABLE)
#include <intrin.h>
static __forceinline int bpetrain_ctz64(uint64_t x) {
    unsigned long i;
    _BitScanForward64(&i, x);
    return (int)i;
}
static __forceinline int bpetrain_clz64(uint64_t x) {
    unsigned long i;
    _BitScanReverse64(&i, x);
    return 63 - (int)i;
}
#else
/* Binary search: halve the part of x that holds the bit six times. */
static inline int bpetrain_ctz64(uint64_t x) {
    int n = 0;
    if (!(x & 0xFFFFFFFFu)) { n += 32; x >>= 32; }
    if (!(x & 0xFFFFu)) { n += 16; x >>= 16; }
    if (!(x & 0xFFu)) { n += 8; x >>= 8; }
    if (!(x & 0xFu)) { n += 4; x >>= 4; }
    if (!(x & 0x3u)) { n += 2; x >>= 2; }
    return n + (int)!(x & 1u);
}
static inline int bpetrain_clz64(uint64_t x) {
    int n = 0;
    if (!(x >> 32)) { n += 32; x <<= 32; }
    if (!(x >> 48)) { n += 16; x <<= 16; }
    if (!(x >> 56)) { n += 8; x <<= 8; }
    if (!(x >> 60)) { n += 4; x <<= 4; }
    if (!(x >> 62)) { n += 2; x <<= 2; }
    return n + (int)!(x >> 63);
}
#endif
#define BPETRAIN_UNLIKELY(c) (c)
#define BPETRAIN_LIKELY(c) (c)
#if defined(_MSC_VER)
#define BPETRAIN_NOINLINE __declspec(noinline)
#else
#define BPETRAIN_NOINLINE
#endif
#define BPETRAIN_PREFETCH(p, rw, locality) ((void)(p))
#endif

#endif
