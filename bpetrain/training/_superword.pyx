# cython: language_level=3
"""The merge kernel's rule for superword tokens: which popped pairs may be merged.

SuperBPE (A. Liu, J. Hayase, V. Hofmann, S. Oh, N. A. Smith, Y. Choi, "SuperBPE: Space
Travel for Language Models", COLM 2025, arXiv:2503.13423) lets the second stage of
training merge across spaces; the authors' trainer (their fork of Hugging Face
``tokenizers``, ``BpeTrainer::do_train_extend`` in ``tokenizers/src/models/bpe/trainer.rs``)
refuses a merge whose token would span more than four words (the pieces of the token
between spaces, empty ones not counted) or hold ``": "``. The kernel asks
:meth:`SuperwordRule.allows` about each pair it pops from its heap; a refused pair is
dropped and never merged. Both facts of a joined token follow from facts of its two
parts, kept per id, so each question costs O(1) whatever the tokens' lengths:

- words(a + b) = words(a) + words(b), less one when ``a`` does not end with a space and
  ``b`` does not start with one (the last word of ``a`` and the first of ``b`` join);
- a + b holds ``": "`` if a or b does, or ``a`` ends with ``:`` and ``b`` starts with a space.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t

import numpy as np

from bpetrain._types cimport token_t

cdef uint8_t STARTS_SPACE = 1, ENDS_SPACE = 2, ENDS_COLON = 4, HOLDS_COLON_SPACE = 8


def token_facts(token: bytes) -> tuple[int, int]:
    """The words ``token`` spans and its bits (``_superword.pxd``), as the rule keeps them.

    >>> token_facts(b" of the"), token_facts(b"a: ")
    ((2, 1), (1, 14))
    """
    words = sum(1 for part in token.split(b" ") if part)
    bits = ((STARTS_SPACE if token.startswith(b" ") else 0) | (ENDS_SPACE if token.endswith(b" ") else 0)
            | (ENDS_COLON if token.endswith(b":") else 0) | (HOLDS_COLON_SPACE if b": " in token else 0))
    return words, bits


cdef class SuperwordRule:
    """The constraints on new merges of a superword stage, for :class:`PairMerger`.

    Parameters
    ----------
    tokens : sequence of bytes, length n_base
        The bytes of each id the kernel starts with (``b""`` for an id that is no token).
    max_merges : int
        The merges the kernel may make (new ids ``n_base .. n_base + max_merges - 1``).
    max_words : int
        The most words (runs of bytes between spaces) a new token may span; 0: no limit.
    forbid_colon_space : bool
        Refuse every token that holds ``b": "``.

    Raises
    ------
    ValueError
        If ``max_words`` or ``max_merges`` is negative.
    """

    def __cinit__(self, tokens, int64_t max_merges, int32_t max_words, bint forbid_colon_space):
        if max_words < 0 or max_merges < 0:
            raise ValueError(f"max_words and max_merges must be >= 0, got {max_words} and {max_merges}")
        self.max_words = max_words
        self.forbid_colon_space = forbid_colon_space
        self.n_ids = len(tokens) + max_merges
        self.words_array = np.zeros(self.n_ids, dtype=np.int32)
        self.ends_array = np.zeros(self.n_ids, dtype=np.uint8)
        for i, token in enumerate(tokens):
            self.words_array[i], self.ends_array[i] = token_facts(bytes(token))
        self.n_words = <int32_t*><Py_ssize_t>self.words_array.ctypes.data
        self.ends = <uint8_t*><Py_ssize_t>self.ends_array.ctypes.data

    cdef bint allows(self, token_t a, token_t b, token_t z) noexcept nogil:
        cdef uint8_t ea = self.ends[a], eb = self.ends[b]
        cdef int32_t words = self.n_words[a] + self.n_words[b]
        cdef bint holds = ((ea | eb) & HOLDS_COLON_SPACE) or ((ea & ENDS_COLON) and (eb & STARTS_SPACE))
        if self.n_words[a] and self.n_words[b] and not (ea & ENDS_SPACE) and not (eb & STARTS_SPACE):
            words -= 1
        if (self.max_words and words > self.max_words) or (self.forbid_colon_space and holds):
            self.n_refused += 1
            return False
        self.n_words[z] = words
        self.ends[z] = ((ea & STARTS_SPACE) | (eb & (ENDS_SPACE | ENDS_COLON))
                        | (HOLDS_COLON_SPACE if holds else 0))
        return True

    def _py_allows(self, token_t a, token_t b, token_t z):
        """:meth:`allows` for tests."""
        return self.allows(a, b, z)
