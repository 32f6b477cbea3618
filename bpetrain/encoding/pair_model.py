"""Hugging Face's byte-level BPE model over a vocabulary with any ids, and when the
compiled encoder gives its ids.

The model (``tokenizers``, ``src/models/bpe/model.rs``) encodes one piece:

1. with ``ignore_merges``, a piece that is a token is that token, whole;
2. else each byte becomes the id of its one-byte token; a byte that has none is
   dropped (``unk_token`` null), so its neighbours become adjacent;
3. the adjacent pair listed first in ``merges`` joins into the token its bytes spell,
   the leftmost of equal ones, until no adjacent pair is listed
   (:func:`~bpetrain.encoding.merge_rule.encode_with_pairs`).

:class:`bpetrain.Encoding` runs tiktoken's rule instead: the whole piece is looked up,
then the adjacent pair whose concatenation has the lowest rank joins. The two give the
same ids on every piece in two families of vocabularies, which
:meth:`PairModel.compiled_ranks` recognises (anything else is encoded by the pair rule
in plain Python, exact and slow):

- **one merge per token** (GPT-2, ``ByteLevelBPETokenizer``, ``BpeTrainer``, bpetrain's
  own): every byte has a token, each merge makes another token, and every merge token
  encodes to itself by the pair rule. A token is then ranked by the position of its
  merge (bpetrain's theorem for trained vocabularies, also checked by rust-gems ``bpe``'s
  constructor). Tokens that no merge makes are left out of the ranks, or, with
  ``ignore_merges``, kept for the whole lookup if no two producible tokens spell them.
- **every split listed** (``transformers``' ``TikTokenConverter``: Llama 3): the merges
  list, for every token, each split into two tokens, in the order of the ids they
  make, and ``ignore_merges`` is true. Then the first listed adjacent pair is one
  whose concatenation has the lowest id, as in tiktoken's rule with ranks = ids. The
  rules choose differently only between different splits of one token present at
  once: Hugging Face takes the one listed first, tiktoken the leftmost. That is left
  unchecked: a pair of a rank below those joined so far appears only next to the token
  just made, so it takes two such splits in place when a token's rank is reached, or
  made by one join, which real vocabularies do not show (Llama 3's ``tokenizer.json``
  and its rank file give the same ids on every text the tests and
  ``benchmarks/extend_base.py`` tried); the tests compare both rules with
  ``tokenizers`` on real and random text.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from bpetrain.encoding.merge_rule import encode_with_pairs

__all__ = ["PairModel"]


class PairModel:
    """The merges and tokens of a byte-level BPE, encoded by Hugging Face's rule.

    Parameters
    ----------
    tokens : mapping of int to bytes
        Every ordinary (not added) token by id.
    merges : sequence of (int, int)
        The merged pairs of ids, in priority order.
    made : sequence of int, optional
        The id each merge makes (bpetrain's trained layout: ``256 + i``, where two
        merges may spell the same bytes). Default: the token the pair's bytes spell,
        as Hugging Face finds it.
    ignore_merges : bool
        Look a whole piece up first.

    Raises
    ------
    ValueError
        If two tokens spell the same bytes (without ``made``), or a merge names an id
        that is not a token or joins into bytes that are not one.
    """

    def __init__(
        self,
        tokens: Mapping[int, bytes],
        merges: Sequence[tuple[int, int]],
        *,
        made: Sequence[int] | None = None,
        ignore_merges: bool = False,
    ):
        self.tokens = tokens
        self.merges = merges
        self.ignore_merges = ignore_merges
        #: Token bytes -> id (the lowest id where two merges spell the same bytes).
        self.ids_of: dict[bytes, int] = {}
        for token_id, token in tokens.items():
            if self.ids_of.setdefault(token, token_id) != token_id and made is None:
                raise ValueError(
                    f"ids {self.ids_of[token]} and {token_id} are the same token {token!r}; token bytes must be unique"
                )
        if made is None:
            try:
                made = [self.ids_of[tokens[a] + tokens[b]] for a, b in merges]
            except KeyError:
                made = None
        if made is None:  # say which merge is wrong
            for i, (a, b) in enumerate(merges):
                if a not in tokens or b not in tokens:
                    raise ValueError(f"merge {i} ({a}, {b}) names an id that is not a token")
                if tokens[a] + tokens[b] not in self.ids_of:
                    raise ValueError(
                        f"merge {i} ({a}, {b}) joins into {tokens[a] + tokens[b]!r}, which is not a token"
                    )
        self.made = made
        #: ``byte_ids[b]``: the id of the one-byte token ``b``, -1 if it has none.
        self.byte_ids = [self.ids_of.get(bytes([b]), -1) for b in range(256)]
        #: (left, right) -> (rank, made id); of a pair listed twice, the later entry (as in ``tokenizers``).
        self.pairs = {pair: (rank, m) for rank, (pair, m) in enumerate(zip(merges, made))}

    @property
    def missing_bytes(self) -> bytes:
        """The bytes that have no one-byte token (dropped when encoding)."""
        return bytes(b for b in range(256) if self.byte_ids[b] < 0)

    def encode_piece(self, piece: bytes) -> list[int]:
        """The ids of one piece by Hugging Face's rule (the module docstring), in plain Python."""
        if self.ignore_merges:
            whole = self.ids_of.get(piece)
            if whole is not None:
                return [whole]
        byte_ids = self.byte_ids
        return encode_with_pairs([byte_ids[b] for b in piece if byte_ids[b] >= 0], self.pairs)

    def unreachable(self) -> list[int]:
        """The ids of merge tokens that their own bytes do not encode to by the pair rule."""
        found = []
        for m in dict.fromkeys(self.made):
            token = self.tokens[m]
            ids = [self.byte_ids[b] for b in token]
            if -1 in ids or encode_with_pairs(ids, self.pairs) != [m]:
                found.append(m)
        return found

    def compiled_ranks(self) -> tuple[dict[bytes, int], dict[int, int] | None]:
        """Ranks for :class:`bpetrain.Encoding` that give this model's ids on every piece.

        Returns
        -------
        mergeable_ranks : dict of bytes to int
            The tokens the model can output, ranked.
        rank_ids : dict of int to int or None
            Rank -> id where they differ (the merge order is not the id order), else None.

        Raises
        ------
        ValueError
            Saying why tiktoken's rule could give other ids (the pair rule must be run).
        """
        missing = self.missing_bytes
        if missing:
            raise ValueError(
                f"{len(missing)} bytes have no token (first: {missing[:1]!r}); Hugging Face drops them from a piece"
            )
        if len(set(self.made)) == len(self.made):
            try:
                return self._one_merge_per_token()
            except ValueError:
                if not self.ignore_merges:
                    raise
                try:  # a vocabulary with tokens reached only whole may list every split, one each
                    return self._every_split_listed(), None
                except ValueError:
                    pass
                raise
        return self._every_split_listed(), None

    def _one_merge_per_token(self) -> tuple[dict[bytes, int], dict[int, int] | None]:
        unreachable = self.unreachable()
        if unreachable:
            first = unreachable[0]
            raise ValueError(
                f"{len(unreachable)} tokens do not encode to themselves with the merges (first: id {first}, "
                f"{self.tokens[first]!r})"
            )
        made = set(self.made)
        produced = {self.byte_ids[b] for b in range(256)} | made
        others = [t for t in self.tokens if t not in produced]
        ranks = {self.tokens[t]: t for t in produced}
        if self.ignore_merges:  # the tokens reached only whole
            for t in others:
                token = self.tokens[t]
                split = next((k for k in range(1, len(token)) if self.ids_of.get(token[:k]) in produced
                              and self.ids_of.get(token[k:]) in produced), None)
                if split is not None:
                    raise ValueError(
                        f"token {t} ({token!r}) is reached only whole, but tiktoken's rule would also join "
                        f"{token[:split]!r} and {token[split:]!r} into it"
                    )
                ranks[token] = t
        if len(ranks) != len(produced):
            raise ValueError("two merges spell the same bytes")
        if all(a < b for a, b in zip(self.made, self.made[1:])):
            return ranks, None
        # the merge order is not the id order: the merge tokens take their own ids as ranks, in merge order
        rank_of = dict(zip(self.made, sorted(self.made)))
        for m, rank in rank_of.items():
            ranks[self.tokens[m]] = rank
        return ranks, {rank: m for m, rank in rank_of.items() if rank != m}

    def _every_split_listed(self) -> dict[bytes, int]:
        if not self.ignore_merges:
            raise ValueError("several merges make one token but ignore_merges is false")
        tokens, ids_of, pairs = self.tokens, self.ids_of, self.pairs
        last = -1
        for rank, m in enumerate(self.made):
            if m < last:
                raise ValueError(
                    f"merge {rank} makes id {m} after a merge that made id {last}: merges that list several splits "
                    "of a token must come in the order of the ids they make"
                )
            last = m
        for t, token in tokens.items():
            for k in range(1, len(token)):
                left, right = ids_of.get(token[:k]), ids_of.get(token[k:])
                if left is not None and right is not None and pairs.get((left, right), (0, -1))[1] != t:
                    raise ValueError(
                        f"token {t} ({token!r}) splits into the tokens {token[:k]!r} and {token[k:]!r}, but the merges "
                        "do not list that split (a vocabulary that lists several splits of a token must list all)"
                    )
        return {token: t for t, token in tokens.items()}
