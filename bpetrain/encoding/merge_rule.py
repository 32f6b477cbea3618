"""The merge rule in plain Python, one piece at a time, where the compiled encoder does not apply.

BPE encodes a piece by joining, again and again, the adjacent pair of parts with the
lowest rank, the leftmost of equal ones, until no pair has a rank (tiktoken's
``byte_pair_merge`` in ``src/lib.rs``). :class:`bpetrain.Encoding` runs that rule
compiled, on ``mergeable_ranks``, after looking the whole piece up. This module runs it
on what the compiled encoder does not take:

- :func:`encode_with_merges`: ids ranked by the merges in training order (a pair ranks as
  the id it makes: minbpe's rule), for vocabularies in which two merges spell the same
  bytes (:class:`bpetrain.Tokenizer` then encodes with it) and for
  :func:`unreachable_tokens`;
- :func:`split_with_ranks`: bytes ranked by ``mergeable_ranks``, optionally only those below
  a rank, without the whole-piece lookup (recovering the merges of a rank file,
  :func:`bpetrain.formats.tiktoken.merges_from_ranks`; tiktoken's ``byte_pair_encode``,
  :func:`bpetrain.encoding.unstable.byte_pair_encode`).

The tests compare both with :mod:`bpetrain._reference`, which replaces every occurrence
of the best pair at once, as minbpe does.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from math import inf

__all__ = ["encode_with_merges", "encode_with_pairs", "merge_lowest", "split_with_ranks", "unreachable_tokens"]


def merge_lowest(
    parts: list, rank: Callable[[object, object], float], join: Callable[[object, object, float], object],
    stop: float = inf,
) -> list:
    """Join adjacent ``parts`` (in place), the pair with the lowest ``rank(left, right)``
    first and the leftmost of equal ones, until every pair ranks ``stop`` or more.

    Only the two ranks beside a join are computed again. ``join(left, right, rank)``
    makes the new part.

    >>> merge_lowest([1, 2, 3], lambda a, b: {(1, 2): 5, (5, 3): 6}.get((a, b), inf), lambda a, b, r: r)
    [6]
    """
    ranks = [rank(a, b) for a, b in zip(parts, parts[1:])]
    while ranks:
        best = min(ranks)
        if best >= stop:
            break
        j = ranks.index(best)
        parts[j : j + 2] = [join(parts[j], parts[j + 1], best)]
        del ranks[j]
        if j > 0:
            ranks[j - 1] = rank(parts[j - 1], parts[j])
        if j < len(ranks):
            ranks[j] = rank(parts[j], parts[j + 1])
    return parts


def encode_with_merges(ids: Iterable[int], merge_ids: Mapping[tuple[int, int], int]) -> list[int]:
    """Encode a piece, given as its byte ids, by the merges in training order.

    ``merge_ids[(a, b)]`` is the id merge ``(a, b)`` makes (``256 + i`` for merge ``i``);
    the pair that makes the lowest id joins first. This reproduces the segmentation
    training produced for any piece it saw.

    >>> encode_with_merges(b"aaab", {(97, 97): 256, (256, 98): 257})
    [256, 97, 98]
    """
    return merge_lowest(list(ids), lambda a, b: merge_ids.get((a, b), inf), lambda a, b, made: made)


def encode_with_pairs(ids: Iterable[int], pairs: Mapping[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Encode a piece, given as its byte ids, with Hugging Face's BPE rule.

    ``pairs[(a, b)]`` is ``(rank, made)``: the position of the merge in the model's
    ``merges`` and the id of the token it makes. The adjacent pair with the lowest rank
    joins first, the leftmost of equal ones (``tokenizers``, ``src/models/bpe/word.rs``,
    ``Word::merge_all``). :func:`encode_with_merges` is the case ``rank == made``.

    >>> encode_with_pairs([97, 97, 98], {(97, 98): (0, 7), (97, 97): (1, 5)})
    [97, 7]
    """
    get = pairs.get
    absent = (inf, -1)
    return merge_lowest(list(ids), lambda a, b: get((a, b), absent)[0], lambda a, b, _: pairs[(a, b)][1])


def split_with_ranks(piece: bytes, mergeable_ranks: Mapping[bytes, int], below: float = inf) -> list[bytes]:
    """The parts tiktoken's rule splits ``piece`` into, using only the ranks below ``below``.

    >>> split_with_ranks(b"abcd", {b"a": 0, b"b": 1, b"c": 2, b"d": 3, b"cd": 4, b"bcd": 5, b"ab": 6})
    [b'a', b'bcd']
    """
    get = mergeable_ranks.get
    parts = [piece[i : i + 1] for i in range(len(piece))]
    return merge_lowest(parts, lambda a, b: get(a + b, below), lambda a, b, _: a + b, below)


def unreachable_tokens(merges: Sequence[tuple[int, int]]) -> list[int]:
    """The merge tokens (ids ``256 + i``) that :func:`encode_with_merges` does not make
    from their own bytes: they can never appear in an encoding.

    A token's bytes, as byte ids, are its merge tree's leaves, whatever id each byte has,
    so only the merges are needed.

    >>> unreachable_tokens([(98, 99), (97, 98), (99, 100), (257, 258)])  # 'abcd' encodes a|bc|d
    [259]
    """
    merge_ids = {pair: 256 + i for i, pair in enumerate(merges)}
    leaves: list[tuple[int, ...]] = [(b,) for b in range(256)]
    found = []
    for i, (a, b) in enumerate(merges):
        leaves.append(leaves[a] + leaves[b])
        if encode_with_merges(leaves[-1], merge_ids) != [256 + i]:
            found.append(256 + i)
    return found
