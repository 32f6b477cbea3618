"""tiktoken support in one place: the rank file, bpetrain's sidecar, :func:`load_tiktoken`,
and conversion between ranks and merges.

Files
-----
``PATH``
    tiktoken's rank file, one ``base64(token bytes) rank`` line per token with dense
    ranks from 0 (the format of ``tiktoken.load.load_tiktoken_bpe``; :func:`read_tiktoken`,
    :func:`write_tiktoken`). It holds neither the split pattern nor the special tokens.
``PATH.json``
    bpetrain's sidecar: ``{"pat_str": <str or null>, "special_tokens": {str: id},
    "rank_file": {"n_bytes": int, "sha256": hex}}``. ``pat_str`` null is raw mode (no
    pre-tokenization); ``{"pre_tokenizer": ...}`` a pipeline of Hugging Face pre-tokenizers
    (:class:`bpetrain.splitting.pipeline.PreTokenizer`, as in the model file). ``rank_file`` records the rank file the sidecar was written with:
    the two are replaced as one artifact (:func:`bpetrain._util.atomic.replace_together`) and
    a rank file that does not match is refused, so a sidecar's pattern and special
    tokens are never applied to another export's ranks. Sidecars without ``rank_file``
    (bpetrain before 0.2) are read without the check.

Importing recovers the merges from the ranks (:func:`merges_from_ranks`), so files
such as OpenAI's ``cl100k_base.tiktoken`` load as a :class:`~bpetrain.Tokenizer`
(:meth:`bpetrain.Tokenizer.from_file`) that gives tiktoken's ids.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bpetrain._util.atomic import atomic_write, file_record, read_recorded, replace_together
from bpetrain._util.read import read_bytes
from bpetrain.formats._rank_file import parse_canonical
from bpetrain.encoding.core import Encoding
from bpetrain.encoding.merge_rule import split_with_ranks
from bpetrain.splitting.pattern import resolve_pattern
from bpetrain.formats._vocab import Model, read_json

if TYPE_CHECKING:
    from bpetrain.tokenizer import Tokenizer

__all__ = [
    "load",
    "load_tiktoken",
    "merges_from_ranks",
    "model_of_ranks",
    "read_tiktoken",
    "save",
    "sidecar_path",
    "tiktoken_encoding",
    "write_tiktoken",
]

#: Ranks are token ids, which bpetrain and tiktoken hold in 32 bits.
MAX_RANK = 2**32 - 1

#: How a rank file spells the empty token: the padding alone, base64 of no bytes for
#: tiktoken (``base64.b64decode``), as the last line of Whisper's ``multilingual.tiktoken``
#: (``= 50256``).
EMPTY_TOKEN = b"="

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
    ties: :func:`bpetrain.encoding.merge_rule.split_with_ranks`), ending at exactly two
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
    merges = []
    for rank in range(256, len(tokens)):
        parts = split_with_ranks(tokens[rank], mergeable_ranks, rank)
        if len(parts) != 2:
            raise ValueError(
                f"token {rank} ({tokens[rank]!r}) encodes to {len(parts)} tokens with the earlier ranks, not 2: "
                "no merge can make it"
            )
        merges.append((mergeable_ranks[parts[0]], mergeable_ranks[parts[1]]))
    return merges, byte_ids


def model_of_ranks(mergeable_ranks: Mapping[bytes, int], pat_str, special_tokens, name: str) -> Model:
    """The model of tiktoken's ``mergeable_ranks``: the trained layout where one merge makes
    each token (:func:`merges_from_ranks`), else the imported layout with tiktoken's rule.

    Rank files such as Llama 3's hold tokens that no merge of two earlier tokens makes
    (``b'.:.:'``): tiktoken reaches them only as a whole piece. They are then read as
    :class:`~bpetrain.Tokenizer`'s imported layout: every token at its rank, the merges
    every split of every token into two tokens, in the order of the ranks they make and
    then of the ranks of the parts (as ``transformers``' ``TikTokenConverter`` lists them),
    and ``ignore_merges`` (:mod:`bpetrain.encoding.pair_model` says when that rule is
    tiktoken's, and so compiled). Either splits with tiktoken's character classes
    (``unicode_version="tiktoken"``).

    Raises
    ------
    ValueError
        If the ranks are not dense from 0 with the bytes at 0..255 (:func:`merges_from_ranks`)
        and are not a vocabulary with a token for each of the 256 bytes either.
    """
    try:
        merges, byte_ids = merges_from_ranks(mergeable_ranks)
        return Model(merges, pat_str, special_tokens, byte_ids, name, unicode_version="tiktoken")
    except ValueError as exc:
        if sum(len(token) == 1 for token in mergeable_ranks) < 256:
            raise
        refusal = exc
    tokens = {rank: token for token, rank in mergeable_ranks.items()}
    if len(tokens) < len(mergeable_ranks):
        raise refusal
    splits = []
    for rank in sorted(tokens):
        token = tokens[rank]
        found = [(mergeable_ranks[token[:k]], mergeable_ranks[token[k:]]) for k in range(1, len(token))
                 if token[:k] in mergeable_ranks and token[k:] in mergeable_ranks]
        splits.extend(sorted(found))
    return Model(splits, pat_str, special_tokens, None, name, unicode_version="tiktoken", tokens=tokens,
                 ignore_merges=True)


def write_tiktoken(path, tokens) -> None:
    """Write tiktoken's rank file alone, atomically: token ``i`` of ``tokens`` (bytes) gets rank ``i``."""
    with atomic_write(path, "wb") as f:
        f.write(_rank_file_bytes(tokens))


def _rank_file_bytes(tokens) -> bytes:
    """The rank file's lines; an empty token is written ``=`` (as Whisper's files hold it: an
    empty field would leave the line one word, which tiktoken cannot read)."""
    return b"".join((base64.b64encode(token) or EMPTY_TOKEN) + b" %d\n" % rank for rank, token in enumerate(tokens))


def read_tiktoken(path) -> dict[bytes, int]:
    """Read tiktoken's rank file into ``mergeable_ranks`` (token bytes -> rank).

    The format is tiktoken's ``load_tiktoken_bpe``: one ``base64(token) rank`` line per
    token. Unlike tiktoken this reader checks the file: the ranks must be distinct
    integers in ``[0, 2**32)`` and no token may appear twice (empty lines are skipped).
    A token written ``=`` is the empty token, as tiktoken reads it (Whisper's
    ``multilingual.tiktoken`` ends with ``= 50256``); :class:`~bpetrain.Encoding` never
    gives it and decodes it to ``b""``.
    The file is read whole, up to :func:`bpetrain._util.read.max_file_bytes`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a line is not ``base64 rank``, a token or rank repeats, a rank is out of
        range, or the file is empty or too large; the message names the file and line.
    """
    return parse_tiktoken(read_bytes(path, "a tiktoken rank file"), os.fspath(path))


def parse_tiktoken(data: bytes, name: str) -> dict[bytes, int]:
    """:func:`read_tiktoken` on the file's content ``data``; ``name`` names it in errors.

    A file as tiktoken writes it is checked and decoded in one pass in C
    (:func:`bpetrain.formats._rank_file.parse_canonical`); any other layout, and every
    malformed file, is read line by line, which accepts what the one pass does with the
    same result and gives the messages.
    """
    ranks = parse_canonical(data)
    return ranks if ranks is not None else _parse_lines(data, name)


def _parse_lines(data: bytes, name: str) -> dict[bytes, int]:
    """:func:`parse_tiktoken` line by line, with a message naming the line at the first fault."""
    ranks: dict[bytes, int] = {}
    seen: dict[int, int] = {}
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise ValueError(f"{name}:{lineno}: expected 'base64-token rank', got {line[:60]!r}")
        try:
            token = b"" if parts[0] == EMPTY_TOKEN else base64.b64decode(parts[0], validate=True)
        except binascii.Error:
            raise ValueError(f"{name}:{lineno}: the token {parts[0][:40]!r} is not valid base64") from None
        if len(parts[1]) > 10 or int(parts[1]) > MAX_RANK:
            raise ValueError(f"{name}:{lineno}: rank {parts[1][:40].decode()} is out of range (ranks are below 2**32)")
        rank = int(parts[1])
        if token in ranks:
            raise ValueError(f"{name}:{lineno}: token {token!r} already has rank {ranks[token]}")
        if rank in seen:
            raise ValueError(f"{name}:{lineno}: rank {rank} was already given on line {seen[rank]}")
        ranks[token] = rank
        seen[rank] = lineno
    if not ranks:
        raise ValueError(f"{name}: the rank file holds no tokens")
    return ranks


def save(tokenizer: Tokenizer, path) -> None:
    """Write the rank file ``path`` and its sidecar ``path.json`` as one artifact.

    The sidecar records the rank file's length and SHA-256 and the two are replaced
    together (:func:`bpetrain._util.atomic.replace_together`): an interrupted export leaves
    the old pair or the new one readable, never a mix.

    Raises
    ------
    ValueError
        If two merges spell the same bytes or a token does not encode to itself
        (tiktoken looks whole pieces up in the ranks, so it would output it).
    OSError
        If the files cannot be written.
    """
    from bpetrain.splitting.pipeline import pat_str_to_json

    tokenizer.check_exportable("tiktoken")
    ranks = _rank_file_bytes(tokenizer.vocab[i] for i in range(256 + len(tokenizer.merges)))
    sidecar = {
        "pat_str": pat_str_to_json(tokenizer.pat_str),
        "special_tokens": tokenizer.special_tokens,
        "rank_file": file_record(ranks),
    }
    text = json.dumps(sidecar, ensure_ascii=False, indent=1) + "\n"
    replace_together({os.fspath(path): ranks}, sidecar_path(path), text.encode("utf-8"))


def _read_pair(path, pat_str) -> tuple[dict[bytes, int], dict | None]:
    """The ranks of ``path`` and its sidecar (None if it has none), checked against each other.

    Raises
    ------
    ValueError
        If there is no sidecar and no ``pat_str``, a file is malformed, or the rank file
        is not the one the sidecar records.
    """
    name = os.fspath(path)
    if not os.path.exists(sidecar_path(path)):
        if pat_str is None:
            raise ValueError(
                f"{name}: a tiktoken rank file does not say its split pattern and there is no sidecar "
                f"{sidecar_path(path)}; pass pat_str (e.g. pat_str='cl100k' for cl100k_base, 'none' for raw mode; "
                "--pat-str in the CLI)"
            )
        return read_tiktoken(path), None
    sidecar = _read_sidecar(sidecar_path(path))
    data = read_recorded(path, sidecar.get("rank_file"), sidecar_path(path), "a tiktoken rank file")
    return parse_tiktoken(data, name), sidecar


def load(path, *, pat_str: str | None = None, special_tokens: Mapping[str, int] | None = None) -> Model:
    """Read a rank file (and its sidecar ``path.json`` if there is one) as a model.

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
        line), the two do not belong together, the ranks are neither dense with the
        bytes at 0..255 nor hold all 256 bytes (:func:`model_of_ranks`), or the empty
        token is among them; or if there is no sidecar and no ``pat_str``.
    """
    name = os.fspath(path)
    ranks, sidecar = _read_pair(path, pat_str)
    if b"" in ranks:
        raise ValueError(
            f"{name}: rank {ranks[b'']} is the empty token (as in Whisper's files), which no merge makes: "
            "a Tokenizer is its merges; load the file as an Encoding instead (bpetrain.load_tiktoken), "
            "which accepts it as tiktoken does"
        )
    try:
        return model_of_ranks(
            ranks,
            resolve_pattern(pat_str) if pat_str is not None else sidecar["pat_str"],
            special_tokens if special_tokens is not None else (sidecar or {}).get("special_tokens", {}),
            name,
        )
    except ValueError as exc:
        raise ValueError(exc.args[0] if exc.args[0].startswith(name) else f"{name}: {exc}") from None


def load_tiktoken(
    path,
    *,
    pat_str: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
    name: str | None = None,
) -> Encoding:
    """Read a tiktoken rank file into an :class:`~bpetrain.Encoding`.

    Parameters
    ----------
    path : str or os.PathLike
        A ``base64(token) rank`` file (tiktoken's format; e.g. ``cl100k_base.tiktoken``).
        Its sidecar ``path.json`` (written by :meth:`bpetrain.Tokenizer.save_tiktoken`)
        gives the pattern and special tokens when it exists.
    pat_str : str, optional
        The split pattern: a regex, a name such as ``"cl100k"`` or ``"o200k"``, or
        ``"none"`` for raw mode. Needed when there is no sidecar; overrides the sidecar.
    special_tokens : mapping of str to int, optional
        Overrides the sidecar's special tokens (default: the sidecar's, or none).
    name : str, optional
        The encoding's name; the file name without its extension by default.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the rank file or the sidecar is malformed (:func:`read_tiktoken`), the two do
        not belong together, there is neither a sidecar nor ``pat_str``, or the encoding
        is inconsistent (:class:`~bpetrain.Encoding`; the message names the file).
    """
    ranks, sidecar = _read_pair(path, pat_str)
    if pat_str is None:
        pat_str = sidecar["pat_str"]
    if special_tokens is None and sidecar is not None:
        special_tokens = sidecar["special_tokens"]
    if name is None:
        name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    try:
        return Encoding(name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special_tokens)
    except ValueError as exc:
        raise ValueError(f"{os.fspath(path)}: {exc}") from None


def _read_sidecar(path: str) -> dict:
    from bpetrain.splitting.pipeline import pat_str_from_json  # only with a sidecar: not for OpenAI's files

    sidecar = read_json(path)
    if not isinstance(sidecar, dict) or not {"pat_str", "special_tokens"} <= set(sidecar) <= {
        "pat_str", "special_tokens", "rank_file"
    }:
        raise ValueError(f"{path}: expected a JSON object with the keys pat_str, special_tokens (and rank_file)")
    sidecar["pat_str"] = pat_str_from_json(sidecar["pat_str"], f"{path}: pat_str")
    specials = sidecar["special_tokens"]
    if not isinstance(specials, dict) or not all(type(v) is int and 0 <= v <= MAX_RANK for v in specials.values()):
        raise ValueError(f"{path}: special_tokens must be an object of token -> integer id in [0, 2**32)")
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

    from bpetrain.splitting.pipeline import PreTokenizer

    tokenizer.check_exportable("tiktoken")
    if isinstance(tokenizer.pat_str, PreTokenizer):
        raise ValueError(
            "tiktoken splits by one regex and this tokenizer splits by a pipeline of pre-tokenizers; use it as a "
            "bpetrain Encoding (tokenizer.encoding()) or export it in the Hugging Face format"
        )
    return tiktoken.Encoding(
        name,
        pat_str=RAW_MODE_PAT_STR if tokenizer.pat_str is None else tokenizer.pat_str,
        mergeable_ranks=tokenizer.mergeable_ranks,
        special_tokens=tokenizer.special_tokens,
    )
