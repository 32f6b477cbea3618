"""tiktoken: a rank file plus a JSON sidecar, and a ``tiktoken.Encoding`` built from a tokenizer.

Files
-----
``PATH``
    tiktoken's rank file, one ``base64(token bytes) rank`` line per token with dense
    ranks from 0 (the format of ``tiktoken.load.load_tiktoken_bpe``; written and read
    by :mod:`bpetrain.model_file`). It holds neither the split pattern nor the special
    tokens.
``PATH.json``
    bpetrain's sidecar: ``{"pat_str": <str or null>, "special_tokens": {str: id}}``.
    ``pat_str`` null is raw mode (no pre-tokenization).

Importing recovers the merges from the ranks (:func:`merges_from_ranks`), so files
such as OpenAI's ``cl100k_base.tiktoken`` load as a :class:`~bpetrain.Tokenizer`
that gives tiktoken's ids.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping

from .._atomic import atomic_write
from ..model_file import read_tiktoken, write_tiktoken
from ..pretokenize import resolve_pattern
from ..tokenizer import Tokenizer
from ._vocab import check_exportable, make_tokenizer, read_json

__all__ = ["load", "merges_from_ranks", "save", "sidecar_path", "tiktoken_encoding"]

#: The pattern a raw-mode tokenizer is given in ``tiktoken.Encoding``: each text
#: between special tokens is one piece, as in bpetrain's raw mode.
RAW_MODE_PAT_STR = r"[\s\S]+"


def sidecar_path(path) -> str:
    """The sidecar of the rank file ``path``: ``path + ".json"``."""
    return os.fspath(path) + ".json"


def merges_from_ranks(mergeable_ranks: Mapping[bytes, int]) -> tuple[list[tuple[int, int]], list[int]]:
    """Recover the merges and the byte ids from tiktoken's ``mergeable_ranks``.

    Token ``r`` was made by merging two earlier tokens; which two is what tiktoken's
    encoder finds when it encodes the token's bytes with the ranks below ``r`` only
    (adjacent parts whose concatenation has the lowest rank merge first, leftmost on
    ties: tiktoken's ``byte_pair_merge`` in ``src/lib.rs``), ending at exactly two
    parts; minbpe's ``recover_merges`` (``minbpe/gpt4.py``) does the same. The
    pure-Python oracle, :func:`bpetrain._reference.merges_from_ranks`, replays the id
    merges instead; tests check that both agree.

    Parameters
    ----------
    mergeable_ranks : mapping of bytes to int
        Token bytes -> rank (= token id). Ranks must be 0..n-1 with the 256 one-byte
        tokens at ranks 0..255 (in any order, as in cl100k_base and o200k_base).

    Returns
    -------
    merges : list of (int, int)
        Merge ``i`` joins two ids into id ``256 + i``.
    byte_ids : list of int, length 256
        ``byte_ids[b]`` is the rank of the one-byte token ``b``.

    Raises
    ------
    ValueError
        If the ranks are not dense from 0, ranks 0..255 are not the single bytes, or a
        token does not split into exactly two earlier tokens (no merge can make it).
    """
    tokens: list[bytes | None] = [None] * len(mergeable_ranks)
    for token, rank in mergeable_ranks.items():
        if not 0 <= rank < len(tokens) or tokens[rank] is not None:
            raise ValueError(
                f"the ranks are not dense: {len(tokens)} tokens must have the distinct ranks 0..{len(tokens) - 1} "
                f"(token {token!r} has rank {rank})"
            )
        tokens[rank] = token
    byte_ids = [-1] * 256
    for rank, token in enumerate(tokens[:256]):
        if len(token) != 1:
            raise ValueError(f"rank {rank} is {token!r}: ranks 0..255 must be the 256 one-byte tokens")
        byte_ids[token[0]] = rank
    if len(tokens) < 256:
        raise ValueError(f"only {len(tokens)} tokens: ranks 0..255 must be the 256 one-byte tokens")
    get = mergeable_ranks.get
    merges = []
    for rank in range(256, len(tokens)):
        token = tokens[rank]
        # bounds[j] is where part j starts; pair_ranks[j] is the rank of parts j and j+1
        # joined, or ``rank`` when that is not a token made before this one.
        bounds = list(range(len(token) + 1))
        pair_ranks = [min(get(token[j : j + 2], rank), rank) for j in range(len(token) - 1)]
        while pair_ranks:
            best = min(pair_ranks)
            if best >= rank:
                break
            j = pair_ranks.index(best)
            del bounds[j + 1], pair_ranks[j]
            if j > 0:
                pair_ranks[j - 1] = min(get(token[bounds[j - 1] : bounds[j + 1]], rank), rank)
            if j < len(pair_ranks):
                pair_ranks[j] = min(get(token[bounds[j] : bounds[j + 2]], rank), rank)
        if len(bounds) != 3:
            raise ValueError(
                f"token {rank} ({token!r}) encodes to {len(bounds) - 1} tokens with the earlier ranks, not 2: "
                "no merge can make it"
            )
        merges.append((mergeable_ranks[token[: bounds[1]]], mergeable_ranks[token[bounds[1] :]]))
    return merges, byte_ids


def save(tokenizer: Tokenizer, path) -> None:
    """Write the rank file ``path`` and its sidecar ``path.json``, atomically.

    Raises
    ------
    ValueError
        If two merges spell the same bytes or a token does not encode to itself
        (tiktoken looks whole pieces up in the ranks, so it would output it).
    """
    check_exportable(tokenizer, "tiktoken")
    tokens = [tokenizer.vocab[i] for i in range(256 + len(tokenizer.merges))]
    sidecar = {"pat_str": tokenizer.pat_str, "special_tokens": tokenizer.special_tokens}
    with atomic_write(sidecar_path(path), "w", encoding="utf-8", newline="\n") as f:
        json.dump(sidecar, f, ensure_ascii=False, indent=1)
        f.write("\n")
        write_tiktoken(path, tokens)


def load(path, *, pat_str: str | None = None, special_tokens: Mapping[str, int] | None = None) -> Tokenizer:
    """Read a rank file (and its sidecar ``path.json`` if there is one) as a tokenizer.

    Parameters
    ----------
    path : str or os.PathLike
        The rank file.
    pat_str : str, optional
        The split pattern, or a name from :data:`bpetrain.PATTERNS`; needed when there is
        no sidecar (e.g. ``"cl100k"`` for ``cl100k_base.tiktoken``). Overrides the sidecar.
    special_tokens : mapping of str to int, optional
        Overrides the sidecar's special tokens.

    Raises
    ------
    ValueError
        If the rank file or the sidecar is malformed (the message names the file and
        line), the ranks are not dense, or a token no merge can make; or if there is no
        sidecar and no ``pat_str``.
    """
    name = os.fspath(path)
    sidecar = {}
    if os.path.exists(sidecar_path(path)):
        sidecar = _read_sidecar(sidecar_path(path))
    elif pat_str is None:
        raise ValueError(
            f"{name}: a tiktoken rank file does not say its split pattern and there is no sidecar "
            f"{sidecar_path(path)}; pass pat_str (e.g. pat_str='cl100k' for cl100k_base, 'none' for raw mode; --pattern in the CLI)"
        )
    try:
        merges, byte_ids = merges_from_ranks(read_tiktoken(path))
    except ValueError as exc:
        raise ValueError(exc.args[0] if exc.args[0].startswith(name) else f"{name}: {exc}") from None
    return make_tokenizer(
        name,
        merges,
        pat_str=resolve_pattern(pat_str) if pat_str is not None else sidecar["pat_str"],
        special_tokens=special_tokens if special_tokens is not None else sidecar.get("special_tokens", {}),
        byte_ids=byte_ids,
    )


def _read_sidecar(path: str) -> dict:
    sidecar = read_json(path)
    if not isinstance(sidecar, dict) or set(sidecar) != {"pat_str", "special_tokens"}:
        raise ValueError(f"{path}: expected a JSON object with the keys pat_str and special_tokens")
    if sidecar["pat_str"] is not None and not isinstance(sidecar["pat_str"], str):
        raise ValueError(f"{path}: pat_str must be a string or null")
    specials = sidecar["special_tokens"]
    if not isinstance(specials, dict) or not all(type(v) is int for v in specials.values()):
        raise ValueError(f"{path}: special_tokens must be an object of token -> integer id")
    return sidecar


def tiktoken_encoding(tokenizer: Tokenizer, name: str = "bpetrain"):
    """A ``tiktoken.Encoding`` with the tokenizer's ranks, pattern and special tokens.

    tiktoken is not a dependency of bpetrain; this needs it installed. A raw-mode
    tokenizer gets the pattern ``[\\s\\S]+`` (one piece per text between special tokens).

    Raises
    ------
    ImportError
        If tiktoken is not installed.
    ValueError
        As :func:`save` (duplicate tokens, tokens that do not encode to themselves).
    """
    import tiktoken

    check_exportable(tokenizer, "tiktoken")
    return tiktoken.Encoding(
        name,
        pat_str=RAW_MODE_PAT_STR if tokenizer.pat_str is None else tokenizer.pat_str,
        mergeable_ranks=tokenizer.mergeable_ranks,
        special_tokens=tokenizer.special_tokens,
    )
