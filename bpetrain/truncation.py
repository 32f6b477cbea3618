"""Truncating a tokenizer to a smaller vocabulary: the model that training to that size gives.

Why this is exact (the prefix property). Every trainer of bpetrain chooses merge ``k``
from the state the first ``k`` merges left (the pieces and their tokens, the pair
counts) and from its options: ``min_frequency`` (a threshold on a count),
``max_token_length`` (a filter on the joined length), ``tie_break`` (an order of ids),
a ``base`` (the starting tokens), the parity-aware trainer's choice of language (from the
token counts so far and, for the window variant, its last choices). None of these
depends on ``vocab_size``, which only says when the loop stops; training also stops
early when no pair reaches ``min_frequency``, at the same merge for every size. So the
first ``k`` merges of a run to any size are the merges of the run to the size that
holds exactly ``k`` merges, and the special tokens, which training numbers after the
merges in the order given, take the ids after the kept merges. ``tests/test_truncation.py``
checks this against training to each size, option by option.

An imported vocabulary (:class:`~bpetrain.Tokenizer`'s imported layout: a
``tokenizer.json`` whose ids are not bytes then merges) is truncated when its ids
follow the merge order, as Hugging Face's ``BpeTrainer`` numbers them (special
tokens, then the alphabet, then one id per merge, increasing): the tokens no merge
makes and the first ``k`` merges' tokens keep their ids, so the result is the
vocabulary of the ids below the size. Any other order is refused: the first merges
would leave ids scattered over the old range, which no training to that size gives.
"""
from __future__ import annotations

from collections.abc import Mapping

__all__ = ["truncated_fields"]


def truncated_fields(tokenizer, vocab_size: int) -> dict:
    """The constructor arguments of ``tokenizer`` cut to ``vocab_size`` tokens.

    Parameters
    ----------
    tokenizer : bpetrain.Tokenizer
        Duck-typed: ``merges``, ``special_tokens``, ``added_tokens``, ``tokens``,
        ``byte_ids``, ``pat_str``, ``ignore_merges``, ``origin``, ``unicode_version``.
    vocab_size : int
        Tokens to keep, counting everything as ``BpeTrainer(vocab_size=...)`` does: the
        256 bytes (or an imported vocabulary's tokens that no merge makes), the merges
        and the special tokens.

    Returns
    -------
    dict
        Keyword arguments for :class:`~bpetrain.Tokenizer`.

    Raises
    ------
    TypeError
        If ``vocab_size`` is not an int.
    ValueError
        If ``vocab_size`` is below the tokens no merge makes plus the special tokens, or
        above the tokenizer's size, or the tokenizer is imported with ids out of merge
        order (the message says which), or its Hugging Face post-processor names
        special-token ids that truncation would change.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}: {vocab_size!r}")
    merges = tokenizer.merges
    n_special = len(tokenizer.special_tokens)
    if tokenizer.tokens is None:
        n_plain, made, last_plain = 256, None, 255
    else:
        made, last_plain = _merge_ordered_ids(tokenizer)
        n_plain = len(tokenizer.tokens) - len(merges)
    floor, size = n_plain + n_special, n_plain + len(merges) + n_special
    what = "256 bytes" if made is None else f"{n_plain} tokens that no merge makes"
    if vocab_size < floor:
        raise ValueError(
            f"vocab_size={vocab_size} is below the {what} + {n_special} special tokens = {floor}, which every "
            "truncation keeps"
        )
    if vocab_size > size:
        raise ValueError(
            f"vocab_size={vocab_size} is above this tokenizer's {size} tokens ({what}, {len(merges)} merges, "
            f"{n_special} special tokens); truncation only removes merges: train to a larger size instead"
        )
    k = vocab_size - floor
    fields = {"merges": merges[:k], "pat_str": tokenizer.pat_str, "unicode_version": tokenizer.unicode_version}
    if made is None:
        fields["byte_ids"] = tokenizer.byte_ids
        next_id = 256 + k
    else:
        kept = set(made[:k])
        dropped = set(made[k:])
        fields["tokens"] = {i: t for i, t in tokenizer.tokens.items() if i not in dropped}
        fields["ignore_merges"] = tokenizer.ignore_merges
        next_id = max([last_plain, *kept]) + 1
    first_merge_id = 256 if made is None else (made[0] if made else last_plain + 1)
    id_map = {}
    for added in sorted(tokenizer.added_tokens, key=lambda t: t.id):
        if added.id >= first_merge_id:  # after the merges: numbered after the kept ones, in order
            id_map[added.id] = next_id
            next_id += 1
        else:
            id_map[added.id] = added.id
    fields["added_tokens"] = [t._replace(id=id_map[t.id]) for t in tokenizer.added_tokens]
    fields["origin"] = _origin_after(tokenizer.origin, id_map)
    return fields


def _merge_ordered_ids(tokenizer) -> tuple[list[int], int]:
    """The id each merge makes (increasing) and the largest id of a token no merge makes,
    for an imported tokenizer whose ids follow the merge order; else ValueError."""
    tokens = tokenizer.tokens
    ids_of = {token: token_id for token_id, token in tokens.items()}
    made = [ids_of[tokens[a] + tokens[b]] for a, b in tokenizer.merges]
    for i in range(1, len(made)):
        if made[i] <= made[i - 1]:
            raise ValueError(
                f"this imported vocabulary's ids do not follow its merge order (merge {i} makes id {made[i]}, "
                f"merge {i - 1} made id {made[i - 1]}), so no vocabulary of its first merges holds the ids "
                "below a size; truncation keeps the ids of vocabularies numbered as training numbers them"
            )
    made_set = set(made)
    plain = [i for i in tokens if i not in made_set]
    last_plain = max(plain, default=-1)
    if made and last_plain > made[0]:
        raise ValueError(
            f"this imported vocabulary has token id {last_plain} ({tokens[last_plain]!r}), which no merge makes, "
            f"after the first merge's id {made[0]}; truncating would leave it among dropped ids, which no "
            "training to a smaller size gives"
        )
    special_ids = [t.id for t in tokenizer.added_tokens]
    if made and any(made[0] < i < made[-1] for i in special_ids):
        raise ValueError(
            "this imported vocabulary has special tokens among its merge ids (between "
            f"{made[0]} and {made[-1]}); truncating it is not defined"
        )
    return made, last_plain


def _origin_after(origin: Mapping | None, id_map: dict[int, int]) -> dict | None:
    """The ``origin`` of a truncated tokenizer: the ids of added tokens the model vocab
    listed, renumbered; refused when a post-processor names ids that change."""
    if origin is None:
        return None
    origin = dict(origin)
    moved = {old for old, new in id_map.items() if old != new}
    processor = (origin.get("tokenizer.json") or {}).get("post_processor")
    if moved and processor is not None and processor.get("type") != "ByteLevel":
        raise ValueError(
            f"this tokenizer's post_processor ({processor.get('type')}) names special tokens by id, and "
            f"truncating renumbers ids {sorted(moved)}; remove the post_processor, truncate, and set it again"
        )
    if "in_model_vocab" in origin:
        origin["in_model_vocab"] = sorted(id_map.get(i, i) for i in origin["in_model_vocab"])
    return origin
