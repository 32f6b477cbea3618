"""Extending a vocabulary that keeps its ids: an imported one (a ``tokenizer.json``, a rank
file that only tiktoken's rule reads) or one that remembers its ``tokenizer.json``.

Every id of the base stays: its tokens, its special and added tokens (with their flags),
wherever they are. New tokens take the ids after the last id in use, or from an id the
user names (``new_ids_from``), in this order:

1. the bytes the base has no token for (a ``BpeTrainer`` run without
   ``initial_alphabet`` has only the bytes it saw), in byte order, so that every text
   can be encoded;
2. the merges learned on the pieces, each piece starting as the base encodes it
   (:class:`bpetrain.Tokenizer`'s rule, compiled where :mod:`bpetrain.encoding.pair_model`
   allows), in the order they are learned (rule 7 of :mod:`bpetrain._reference`); a
   merge whose bytes the base already has as a token makes that token;
3. the trainer's special tokens that the base does not have, in order.

The new merges come after the base's in priority, so the base's ids on any text are
unchanged wherever no new token applies. A base whose merges list every split of every
token (``TikTokenConverter``'s layout, encoded by tiktoken's rule) gets every split of
each new token listed the same way, which keeps that layout (and its compiled encoder).
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import numpy as np

from bpetrain._util.threads import thread_map, usable_cores
from bpetrain.counting.counts import PieceTable
from bpetrain.encoding.added_tokens import AddedToken
from bpetrain.tokenizer import Tokenizer

__all__ = ["keeps_ids", "Extension"]


def keeps_ids(base: Tokenizer) -> bool:
    """Whether extending ``base`` keeps its ids this way (else the trained layout's rule:
    new merges at ``256 + i``, the base's special tokens dropped)."""
    return base.tokens is not None or base.origin is not None


class Extension:
    """The start of a run on ``base`` and the tokenizer it makes (see the module docstring).

    Parameters
    ----------
    base : Tokenizer
    new_ids_from : int, optional
        The first new id (default: the last id in use + 1); the new ids must be free.
    n_new : int
        How many new ids the run may take (for the check that they are free).

    Raises
    ------
    ValueError
        If ``new_ids_from`` is below 0 or the ids from it on are not free.
    """

    def __init__(self, base: Tokenizer, new_ids_from: int | None, n_new: int):
        self.base = base
        vocab = base.vocab
        self.tokens: dict[int, bytes] = {i: vocab[i] for i in
                                         (base.tokens if base.tokens is not None else range(256 + len(base.merges)))}
        in_use = set(self.tokens) | set(base.special_tokens.values())
        have = {t for t in self.tokens.values() if len(t) == 1}
        missing = [bytes([b]) for b in range(256) if bytes([b]) not in have]
        self.first_id = max(in_use) + 1 if new_ids_from is None else new_ids_from
        if self.first_id < 0:
            raise ValueError(f"new_ids_from must be >= 0, got {new_ids_from}")
        n_new += len(missing)
        taken = sorted(i for i in in_use if i >= self.first_id)
        if taken and taken[0] < self.first_id + n_new:
            raise ValueError(
                f"new_ids_from={new_ids_from}: id {taken[0]} is in use by the base, and the new tokens need the ids "
                f"{self.first_id}..{self.first_id + n_new - 1}; name a first id after {max(in_use)}, or one "
                "before a gap that wide"
            )
        #: The bytes the base has no token for, with their new ids.
        self.new_bytes = {token: self.first_id + k for k, token in enumerate(missing)}
        self.tokens.update({i: t for t, i in self.new_bytes.items()})
        merges = list(base.merges)
        if base.tokens is None:  # the trained layout: each merge makes 256 + i
            self.every_split = False
        else:
            self.every_split = len(set(base._model.made)) < len(base.merges)
        #: The base with the missing bytes: how each piece starts.
        self.start = base if not missing else Tokenizer(merges, pat_str=base.pat_str, tokens=self.tokens,
                                                         ignore_merges=base.ignore_merges)
        #: Ids below this are the base's (and the new bytes'); merge ``i`` of the kernel makes ``n_base + i``.
        self.n_base = self.first_id + len(self.new_bytes)

    def initial(self, table: PieceTable) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's start: the byte length of every id below :attr:`n_base` (0 for ids
        that are no ordinary token) and, at each byte of ``table.data``, the id of the token
        that starts there (-1 inside one), each piece encoded by :attr:`start`."""
        lengths = np.zeros(self.n_base, dtype=np.int32)
        for i, token in self.tokens.items():
            if i < self.n_base:
                lengths[i] = len(token)
        encode = _piece_encoder(self.start, table)
        cuts = np.linspace(0, table.n_pieces, usable_cores() + 1).astype(np.int64)
        ids = np.concatenate(thread_map(encode, cuts[:-1], cuts[1:], num_threads=len(cuts) - 1)).astype(np.int32)
        ends = np.cumsum(lengths[ids], dtype=np.int64)
        initial = np.full(len(table.data), -1, dtype=np.int32)
        initial[ends - lengths[ids]] = ids
        return lengths, initial

    def tokenizer(self, new_merges: Sequence[tuple[int, int]], special_tokens: Sequence[str], pat_str) -> Tokenizer:
        """The extended tokenizer: the base, the new bytes, the new merges (renumbered where a
        merge makes a token the base has), then the new special tokens."""
        tokens = dict(self.tokens)
        ids_of = {t: i for i, t in tokens.items()}
        renumber: dict[int, int] = {}
        merges = list(self.base.merges)
        next_id = self.n_base
        for k, (a, b) in enumerate(new_merges):
            a, b = renumber.get(a, a), renumber.get(b, b)
            joined = tokens[a] + tokens[b]
            made = ids_of.get(joined)
            if made is None:
                made = next_id
                next_id += 1
                tokens[made] = joined
                ids_of[joined] = made
            renumber[self.n_base + k] = made
            merges.append((a, b))
        if self.every_split:
            merges = self._every_split(tokens, ids_of)
        added = list(self.base.added_tokens)
        have = {t.content for t in added}
        for token in special_tokens:
            if token not in have:
                added.append(AddedToken(token, next_id))
                next_id += 1
        return Tokenizer(merges, pat_str=pat_str, tokens=tokens, ignore_merges=self.base.ignore_merges,
                         added_tokens=added, origin=self.base.origin)


    def _every_split(self, tokens: dict[int, bytes], ids_of: dict[bytes, int]) -> list[tuple[int, int]]:
        """The base's merges with, for every token, its splits that a new token takes part in,
        listed after the token's other splits, by the ids of the parts (``TikTokenConverter``'s order)."""
        groups: dict[int, list[tuple[int, int]]] = {}
        for pair, made in zip(self.base.merges, self.base._model.made):
            groups.setdefault(made, []).append(pair)
        old = self.base.tokens
        by_prefix = sorted(token for t, token in tokens.items() if t in old)
        by_suffix = sorted(token[::-1] for token in by_prefix)
        found: dict[int, set[tuple[int, int]]] = {}
        for t, token in tokens.items():
            if t in old:
                continue
            n = len(token)
            found[t] = {(ids_of[token[:j]], ids_of[token[j:]]) for j in range(1, n)
                        if token[:j] in ids_of and token[j:] in ids_of}
            for i in range(bisect_left(by_prefix, token), len(by_prefix)):  # old tokens that start with it
                whole = by_prefix[i]
                if not whole.startswith(token):
                    break
                if len(whole) > n and whole[n:] in ids_of:
                    found.setdefault(ids_of[whole], set()).add((t, ids_of[whole[n:]]))
            reverse = token[::-1]
            for i in range(bisect_left(by_suffix, reverse), len(by_suffix)):  # old tokens that end with it
                whole = by_suffix[i][::-1]
                if not by_suffix[i].startswith(reverse):
                    break
                if len(whole) > n and whole[:-n] in ids_of:
                    found.setdefault(ids_of[whole], set()).add((ids_of[whole[:-n]], t))
        for t, splits in found.items():
            groups.setdefault(t, []).extend(sorted(splits))
        return [pair for made in sorted(groups) for pair in groups[made]]


def _piece_encoder(tokenizer: Tokenizer, table: PieceTable):
    """``encode(start, stop)``: the ids of pieces ``start..stop-1`` of ``table`` by ``tokenizer``'s
    rule, compiled (the encoder drops the GIL, so threads share the work) where allowed (the
    tokenizer's own encoder, which warns once where it is not)."""
    compiled, rank_ids = tokenizer._compiled
    if compiled is not None:
        encoder = compiled._bpe
        to_id = None
        if rank_ids:
            to_id = np.arange(max([*compiled.mergeable_ranks.values(), *rank_ids]) + 1, dtype=np.int64)
            to_id[list(rank_ids)] = list(rank_ids.values())

        def encode(start: int, stop: int) -> np.ndarray:
            offsets = table.offsets[start : stop + 1]
            ids = encoder.encode_table(table.data[offsets[0] : offsets[-1]], offsets - offsets[0])
            return ids if to_id is None else to_id[ids]

        return encode
    encode_piece = tokenizer._model.encode_piece

    def encode_plain(start: int, stop: int) -> np.ndarray:
        data, offsets = table.data, table.offsets
        ids: list[int] = []
        for i in range(start, stop):
            ids.extend(encode_piece(bytes(data[offsets[i] : offsets[i + 1]])))
        return np.array(ids, dtype=np.int64)

    return encode_plain
