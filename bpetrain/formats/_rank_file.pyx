# cython: language_level=3
"""tiktoken's rank file in its own layout, read in one pass over the bytes.

:func:`parse_canonical` reads exactly what the line reader of
:mod:`bpetrain.formats.tiktoken` (``_parse_lines``) reads from a file as tiktoken writes
it (``tiktoken.load.dump_tiktoken_bpe``): ``base64(token) rank\\n`` lines, padded
base64 of at least one byte, one space, a rank of 1 to 10 decimal digits below 2**32,
each line ended by ``\\n`` (the last may lack it), no token and no rank twice. Anything
else (other spacing, ``\\r\\n``, empty lines, the empty token ``=``, bad base64, a repeat)
gives None, and the line reader then reads the file or says what is wrong; tests check
that the two agree on random and damaged files.

The base64 alphabet is RFC 4648's (``binascii.a2b_base64``, which ``base64.b64decode``
calls): the bits a padded last group carries past its bytes are ignored, as there.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc

#: Ranks are token ids, which bpetrain and tiktoken hold in 32 bits.
cdef uint64_t MAX_RANK = 0xFFFFFFFF

cdef signed char DECODE[256]


cdef void _fill_decode() noexcept:
    cdef int i
    cdef bytes alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for i in range(256):
        DECODE[i] = -1
    for i in range(64):
        DECODE[<uint8_t>alphabet[i]] = i


_fill_decode()


cdef Py_ssize_t _decoded_length(const uint8_t* s, Py_ssize_t n) noexcept:
    """Bytes that the padded base64 ``s[:n]`` decodes to, or -1 if it is not padded base64
    of at least one byte (``n`` a multiple of 4, the alphabet, ``=`` only at the end)."""
    cdef Py_ssize_t i, pad = 0
    if n == 0 or n % 4:
        return -1
    if s[n - 1] == c'=':
        pad = 2 if s[n - 2] == c'=' else 1
    for i in range(n - pad):
        if DECODE[s[i]] < 0:
            return -1
    return n // 4 * 3 - pad


cdef void _decode(const uint8_t* s, Py_ssize_t n_out, uint8_t* out) noexcept:
    """Decode checked base64 (:func:`_decoded_length`) into its ``n_out`` bytes."""
    cdef Py_ssize_t i = 0, o = 0
    cdef uint32_t word
    while o + 3 <= n_out:
        word = (<uint32_t>DECODE[s[i]] << 18) | (<uint32_t>DECODE[s[i + 1]] << 12) \
            | (<uint32_t>DECODE[s[i + 2]] << 6) | <uint32_t>DECODE[s[i + 3]]
        out[o] = word >> 16
        out[o + 1] = (word >> 8) & 0xFF
        out[o + 2] = word & 0xFF
        i += 4
        o += 3
    if o < n_out:  # a padded last group: one or two bytes
        word = (<uint32_t>DECODE[s[i]] << 18) | (<uint32_t>DECODE[s[i + 1]] << 12)
        if n_out - o == 2:
            word |= <uint32_t>DECODE[s[i + 2]] << 6
            out[o + 1] = (word >> 8) & 0xFF
        out[o] = word >> 16


def parse_canonical(bytes data not None):
    """The ranks of a rank file in tiktoken's own layout (the module docstring says which
    files), or None if ``data`` is not one.

    Parameters
    ----------
    data : bytes
        The whole file.

    Returns
    -------
    dict of bytes to int, or None
        Token bytes -> rank, in the file's order.
    """
    cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i, start, length, n_out, n_lines = 1
    cdef uint64_t rank, max_rank = 0
    cdef int digits
    cdef dict ranks = {}
    cdef bytes token
    cdef uint32_t* values
    if n == 0:
        return None
    for i in range(n):
        n_lines += s[i] == c'\n'
    values = <uint32_t*>malloc(n_lines * sizeof(uint32_t))
    if values == NULL:
        raise MemoryError()
    try:
        i = 0
        n_lines = 0
        while i < n:
            start = i
            while i < n and s[i] != c' ':
                i += 1
            length = i - start
            if i >= n:
                return None
            n_out = _decoded_length(s + start, length)
            if n_out < 0:
                return None
            i += 1  # the space
            rank = 0
            digits = 0
            while i < n and c'0' <= s[i] <= c'9' and digits < 11:
                rank = rank * 10 + (s[i] - c'0')
                digits += 1
                i += 1
            if digits == 0 or digits > 10 or rank > MAX_RANK:
                return None
            if i < n:
                if s[i] != c'\n':
                    return None
                i += 1
            token = PyBytes_FromStringAndSize(NULL, n_out)
            _decode(s + start, n_out, <uint8_t*>PyBytes_AS_STRING(token))
            ranks[token] = rank
            values[n_lines] = <uint32_t>rank
            max_rank = max(max_rank, rank)
            n_lines += 1
        if len(ranks) != n_lines or not _distinct(values, n_lines, max_rank):
            return None
        return ranks
    finally:
        free(values)


cdef bint _distinct(const uint32_t* values, Py_ssize_t n, uint64_t max_rank) except -1:
    """Whether the ``n`` ranks ``values`` (each at most ``max_rank``) are distinct: a bit
    per rank when the ranks are about dense, else a set."""
    cdef uint64_t rank
    cdef uint8_t* seen
    cdef Py_ssize_t k
    if max_rank >= 64 * <uint64_t>n + 4096:
        return len({values[k] for k in range(n)}) == n
    seen = <uint8_t*>calloc(max_rank // 8 + 1, 1)
    if seen == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            rank = values[k]
            if seen[rank >> 3] & (1 << (rank & 7)):
                return False
            seen[rank >> 3] |= 1 << (rank & 7)
        return True
    finally:
        free(seen)
