/* The compiler builtins the kernels use, for every compiler the wheels are built with.

   GCC and Clang (Linux, macOS, clang-cl): their builtins, as written before this header
   existed, so what they compile is unchanged. MSVC on 64-bit x86 and ARM: its intrinsics.
   Any other compiler (or BPETRAIN_PORTABLE defined, which lets GCC build what the others
   run, for a test run: CFLAGS=-DBPETRAIN_PORTABLE): plain C. Each gives the same result;
   the hints (branch weights, inlining, prefetches) change speed only.

   bpetrain_ctz64(x), bpetrain_clz64(x): the number of zero bits below the lowest set bit
   of x, above the highest; x must not be 0 (as for __builtin_ctzll, __builtin_clzll).
   bpetrain_popcount64(x): the number of set bits. */
#ifndef BPETRAIN_PORTABLE_H
#define BPETRAIN_PORTABLE_H

#include <stdint.h>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(BPETRAIN_PORTABLE)
#define BPETRAIN_GNU_BUILTINS 1
#endif

#if defined(BPETRAIN_GNU_BUILTINS)
#define bpetrain_ctz64(x) __builtin_ctzll(x)
#define bpetrain_clz64(x) __builtin_clzll(x)
#define bpetrain_popcount64(x) __builtin_popcountll(x)
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
/* Pairs, nibbles, bytes, then the bytes' sum by one multiply (each count fits a byte). */
static inline int bpetrain_popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}
#define BPETRAIN_UNLIKELY(c) (c)
#define BPETRAIN_LIKELY(c) (c)
#if defined(_MSC_VER)
#define BPETRAIN_NOINLINE __declspec(noinline)
#else
#define BPETRAIN_NOINLINE
#endif
#define BPETRAIN_PREFETCH(p, rw, locality) ((void)(p))
#endif

/* BPETRAIN_HIDDEN: a function of one translation unit that others of the same extension call
   (the shared object's own symbol, called directly rather than through its symbol table; not
   exported). Windows' DLLs export nothing unless asked. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32)
#define BPETRAIN_HIDDEN __attribute__((visibility("hidden")))
#else
#define BPETRAIN_HIDDEN
#endif

/* bpetrain_table_calloc(n), bpetrain_table_free(p, n): n zeroed bytes for a large table
   read at random (NULL if there is no memory), and their release (p may be NULL). From
   2 MiB up (n then a multiple of 4 KiB), on Linux, the block is a 2 MiB-aligned mapping of
   its own, asked to be backed by huge pages before its first write (fresh pages are zero:
   nothing is written here), so its random reads need a few TLB entries rather than one
   per 4 KiB page (transparent huge pages in "madvise" mode, the common default; a hint
   the system may refuse). gigatoken's piece cache does the same (src/bpe/pretoken_cache.rs).
   Smaller blocks, and other systems: calloc and free. */
#include <stdlib.h>
#define BPETRAIN_HUGE_PAGE ((size_t)2 << 20)
#if defined(__linux__)
#include <sys/mman.h>
static inline void* bpetrain_table_calloc(size_t n) {
    char* map;
    size_t head;
    if (n < BPETRAIN_HUGE_PAGE) {
        return calloc(n, 1);
    }
    map = (char*)mmap(NULL, n + BPETRAIN_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == (char*)MAP_FAILED) {
        return NULL;
    }
    /* keep the 2 MiB-aligned n bytes; give back what is before and after them */
    head = (BPETRAIN_HUGE_PAGE - ((uintptr_t)map & (BPETRAIN_HUGE_PAGE - 1))) & (BPETRAIN_HUGE_PAGE - 1);
    if (head) {
        (void)munmap(map, head);
    }
    (void)munmap(map + head + n, BPETRAIN_HUGE_PAGE - head);
    (void)madvise(map + head, n, MADV_HUGEPAGE);
    return map + head;
}
static inline void bpetrain_table_free(void* p, size_t n) {
    if (n < BPETRAIN_HUGE_PAGE) {
        free(p);
    } else if (p != NULL) {
        (void)munmap(p, n);
    }
}
#else
static inline void* bpetrain_table_calloc(size_t n) { return calloc(n, 1); }
static inline void bpetrain_table_free(void* p, size_t n) { (void)n; free(p); }
#endif

/* bpetrain_clock_ns(): a clock in nanoseconds, for choosing between two ways of doing the
   same work by which took less time (never for what a result is): CLOCK_MONOTONIC where
   POSIX has it (read without a system call on Linux and macOS), C11's timespec_get
   elsewhere (Windows' UCRT), whose steps when the system's time is set only mislead one
   such choice. */
#include <time.h>
static inline int64_t bpetrain_clock_ns(void) {
    struct timespec now;
#if defined(CLOCK_MONOTONIC) && !defined(_WIN32)
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
#else
    (void)timespec_get(&now, TIME_UTC);
#endif
    return (int64_t)now.tv_sec * 1000000000 + (int64_t)now.tv_nsec;
}

#endif
