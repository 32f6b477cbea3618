"""Hugging Face ``tokenizer.json`` for a byte-level BPE, written and read.

The layout is what ``transformers``' ``TikTokenConverter`` (``convert_slow_tokenizer.py``)
builds with the ``tokenizers`` library, serialized as ``tokenizers.Tokenizer.to_str``
does:

- ``model``: ``{"type": "BPE", "vocab": {token: id}, "merges": [[left, right], ...],
  "ignore_merges": true, ...}``, tokens in GPT-2's byte-level alphabet
  (:func:`~bpetrain.formats._vocab.token_to_str`). ``ignore_merges`` makes the model
  look a whole piece up in the vocab first, as tiktoken does; exports check that every
  token encodes to itself, so it gives the same ids as the merges.
- ``pre_tokenizer``: ``Sequence[Split(pattern, "Isolated"), ByteLevel(add_prefix_space=false,
  use_regex=false)]``; raw mode (``pat_str`` None) has the ``ByteLevel`` step alone; a
  pipeline of pre-tokenizers (:class:`bpetrain.splitting.pipeline.PreTokenizer`) its own
  steps, then that ``ByteLevel`` unless it ends with one. Reading takes any ``Split``,
  ``Digits`` or ``ByteLevel``, or a ``Sequence`` of them ending in a ``ByteLevel``, and
  normalizers that change no text (:func:`_check_normalizer`).
- ``decoder``: ``ByteLevel``; ``post_processor``: ``ByteLevel(trim_offsets=false)``.
- ``added_tokens``: the special tokens (``special: true``, ``normalized: false``). When
  their ids do not follow the merges without a gap (cl100k_base's start at 100257),
  they are also model vocab entries, as GPT-2's ``<|endoftext|>`` is: ``tokenizers``
  would otherwise give them the next free ids.

``tokenizers`` always cuts special tokens out of the text, so its ids are bpetrain's with
``allowed_special="all"``. The pattern is rewritten for the Oniguruma engine of
``tokenizers`` by :func:`hf_pattern`.
Text the pattern does not match is dropped by bpetrain and tiktoken but kept as its own
piece by an ``Isolated`` ``Split``: a pattern that can leave some (not
:func:`~bpetrain.splitting.pipeline.matches_everywhere`, as the named patterns do) is
written with behavior ``Removed`` and ``invert``, which drops it.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import regex

from bpetrain._util.atomic import atomic_write, file_record, read_recorded, write_folder
from bpetrain._util.read import loads_json
from bpetrain.encoding.merge_rule import unreachable_tokens
from bpetrain.splitting.pattern import PATTERNS
from bpetrain.splitting.pipeline import ByteLevel, PreTokenizer, matches_everywhere
from bpetrain.formats._vocab import (
    MANIFEST_NAME,
    Model,
    listed_merge,
    model_from_vocab,
    no_duplicate_keys,
    read_json,
    read_manifest,
    split_vocab,
    token_to_str,
)
from bpetrain.formats.tiktoken import merges_from_ranks

if TYPE_CHECKING:
    from bpetrain.tokenizer import Tokenizer

__all__ = ["hf_pattern", "load", "save"]

#: The files of a folder export (:func:`save` with a folder).
TOKENIZER_NAME = "tokenizer.json"
CONFIG_NAME = "tokenizer_config.json"

_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
_INTERVAL_POSSESSIVE = regex.compile(r"\{\d+(?:,\d*)?\}\+")


def hf_pattern(pat_str: str) -> str:
    """Rewrite a ``regex``-module pattern so Oniguruma splits text into the same pieces.

    Oniguruma (Ruby syntax) reads ``X{n,m}+`` as ``(?:X{n,m})+``, a repeated interval,
    where the ``regex`` module and tiktoken read a possessive interval: cl100k's
    ``\\p{N}{1,3}+`` then takes any run of digits instead of at most three. Each
    ``X{n,m}+`` becomes the equivalent atomic group ``(?>X{n,m})``; ``++``, ``*+`` and
    ``?+`` mean the same in both engines and stay.

    >>> hf_pattern(r"\\p{N}{1,3}+|[a-z]{2}+")
    '(?>\\\\p{N}{1,3})|(?>[a-z]{2})'
    """
    atoms: list[str] = []  # the pattern so far, one atom (or quantifier, or operator) per item
    groups: list[int] = []  # where each open group starts in ``atoms``
    i, n = 0, len(pat_str)
    while i < n:
        c = pat_str[i]
        interval = _INTERVAL_POSSESSIVE.match(pat_str, i)
        if interval and atoms:
            atoms.append(f"(?>{atoms.pop()}{interval.group()[:-1]})")
            i = interval.end()
            continue
        if c == "\\":
            end = i + 2
            if pat_str[i + 1 : i + 2] in ("p", "P", "x", "N") and pat_str[end : end + 1] == "{":
                end = pat_str.index("}", end) + 1
            elif pat_str[i + 1 : i + 2] in ("x", "u", "U"):
                end += {"x": 2, "u": 4, "U": 8}[pat_str[i + 1]]
            atoms.append(pat_str[i:end])
        elif c == "[":
            end = i + 1
            if pat_str[end : end + 1] == "^":
                end += 1
            if pat_str[end : end + 1] == "]":
                end += 1
            while pat_str[end] != "]":
                end += 2 if pat_str[end] == "\\" else 1
            end += 1
            atoms.append(pat_str[i:end])
        elif c == "(":
            groups.append(len(atoms))
            end = i + 1
            atoms.append(c)
        elif c == ")":
            start = groups.pop()
            atoms[start:] = ["".join(atoms[start:]) + ")"]
            end = i + 1
        else:
            end = i + 1
            atoms.append(c)
        i = end
    return "".join(atoms)


def save(tokenizer: Tokenizer, path) -> None:
    """Write ``tokenizer.json`` for ``tokenizers.Tokenizer.from_file``, atomically; or, when
    ``path`` is a folder (an existing one, or a path ending in ``/``), the folder
    ``transformers.AutoTokenizer.from_pretrained`` loads.

    The folder holds ``tokenizer.json`` and ``tokenizer_config.json``, which names the
    tokenizer class and the end-of-text token (``eos_token``: ``<|endoftext|>`` when it is
    a special token, else the only special token, else none), as ``save_pretrained``
    writes them (a ``tokenizer.json`` alone gives ``eos_token=None`` in ``transformers``).
    A third file, ``.bpetrain.json``, records both (:func:`bpetrain._util.atomic.replace_together`),
    so an interrupted export leaves the old pair or the new one.

    Raises
    ------
    ValueError
        If two merges spell the same bytes or a token does not encode to itself.
    OSError
        If the files cannot be written (a folder this call made is removed again).
    """
    tokenizer.check_exportable("Hugging Face tokenizer.json")
    vocab = tokenizer.vocab
    n_ranked = 256 + len(tokenizer.merges)
    model_vocab = {token_to_str(vocab[i]): i for i in range(n_ranked)}
    special_ids = sorted(tokenizer.special_tokens.values())
    if special_ids != list(range(n_ranked, n_ranked + len(special_ids))):
        # tokenizers gives added tokens the next free ids unless the model vocab has them
        # (as GPT-2's tokenizer.json has <|endoftext|>); a piece of text can only equal a
        # printable-ASCII special token in byte-level form if it is that token.
        for content, token_id in tokenizer.special_tokens.items():
            if not regex.fullmatch(r"[!-~]+", content):
                raise ValueError(
                    f"the special token ids leave gaps after the merges, so tokenizer.json must list them in the "
                    f"model vocab, which is safe only for printable ASCII; {content!r} (id {token_id}) is not"
                )
            model_vocab[content] = token_id
    steps = _pre_tokenizer_steps(tokenizer.pat_str)
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for content, token_id in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": model_vocab,
            "merges": [[token_to_str(vocab[a]), token_to_str(vocab[b])] for a, b in tokenizer.merges],
        },
    }
    data = (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    path = os.fspath(path)
    if not (os.path.isdir(path) or path.endswith(("/", os.sep))):
        with atomic_write(path, "wb") as f:
            f.write(data)
        return
    specials = tokenizer.special_tokens
    eos = "<|endoftext|>" if "<|endoftext|>" in specials else next(iter(specials)) if len(specials) == 1 else None
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "clean_up_tokenization_spaces": False,
              "model_max_length": 1 << 60}
    files = {TOKENIZER_NAME: data, CONFIG_NAME: (json.dumps(config, ensure_ascii=False, indent=2) + "\n").encode()}
    write_folder(path, files, {"format": "hf", "files": {name: file_record(d) for name, d in files.items()}},
                 MANIFEST_NAME)


def load(path) -> Model:
    """Read a byte-level BPE ``tokenizer.json``: the layout :func:`save` writes (one merge per
    token, merge ``k`` making id ``256 + k``, as GPT-2's), or the one ``transformers``'
    ``TikTokenConverter`` writes (every split of every token listed; the merges are then
    recovered from the ids as ranks).

    A pattern that :func:`hf_pattern` makes from a named pattern reads back as that
    name's ``pat_str``; any other is kept as written (the ``regex`` module reads
    Oniguruma's atomic groups the same way).

    Raises
    ------
    ValueError
        If the file is not valid JSON or has a duplicate key (naming the line), is not
        a byte-level BPE of this layout (naming the field), or its vocab and merges do
        not fit together (:func:`~bpetrain.formats._vocab.model_from_vocab`), or ``ignore_merges`` is
        true but a token does not encode to itself.
    """
    name = os.fspath(path)
    if os.path.isdir(name):  # a folder save wrote: its tokenizer.json, checked against the record
        name = os.path.join(name, TOKENIZER_NAME)
        manifest_path = os.path.join(os.fspath(path), MANIFEST_NAME)
        records = read_manifest(manifest_path)["files"] if os.path.exists(manifest_path) else {}
        data = read_recorded(name, records.get(TOKENIZER_NAME), manifest_path, "a tokenizer.json file")
        document = loads_json(data, name, object_pairs_hook=no_duplicate_keys(name))
    else:
        document = read_json(path)
    model = document.get("model") if isinstance(document, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"{name}: model.type must be 'BPE' (bpetrain reads byte-level BPE tokenizers)")
    _check_normalizer(name, document.get("normalizer"))
    for key, expected in (("continuing_subword_prefix", None), ("end_of_word_suffix", None)):
        value = model.get(key)
        if value != expected:
            raise ValueError(f"{name}: {key} is {value!r}; bpetrain reads byte-level BPE without one")
    pat_str = _read_pre_tokenizer(name, document.get("pre_tokenizer"))
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, dict) or not isinstance(merges, list):
        raise ValueError(f"{name}: model.vocab must be an object and model.merges a list")  # noqa: TRY004 (a malformed file)
    pairs = []
    for k, merge in enumerate(merges):
        if isinstance(merge, str):  # the older "left right" form
            merge = merge.split(" ")
        if not (isinstance(merge, list) and len(merge) == 2 and all(isinstance(p, str) for p in merge)):
            raise ValueError(f"{name}: model.merges[{k}] is {merge!r}, not a pair of tokens")
        pairs.append((merge[0], merge[1]))
    special_tokens = {}
    for k, added in enumerate(document.get("added_tokens") or []):
        if not (isinstance(added, dict) and isinstance(added.get("content"), str) and type(added.get("id")) is int):
            raise ValueError(f"{name}: added_tokens[{k}] needs a string content and an integer id")
        special_tokens[added["content"]] = added["id"]
    n_special_entries = sum(vocab.get(content) == token_id for content, token_id in special_tokens.items())
    if len(pairs) > len(vocab) - n_special_entries - 256:
        found = _from_all_splits(name, vocab, pairs, pat_str, special_tokens)
    else:
        found = model_from_vocab(
            vocab,
            pairs,
            pat_str=pat_str,
            special_tokens=special_tokens,
            name=name,
            merges_at=lambda k: f"{name}: model.merges[{k}]",
            extra_tokens_are_special=False,
        )
    if model.get("ignore_merges"):
        unreachable = unreachable_tokens(found.merges)
        if unreachable:
            raise ValueError(
                f"{name}: ignore_merges is true but {len(unreachable)} tokens do not encode to themselves (first: id "
                f"{unreachable[0]}); bpetrain's encoder, which applies the merges, would give other ids"
            )
    return found


def _from_all_splits(name, vocab, pairs, pat_str, special_tokens) -> Model:
    """The layout ``transformers``' ``TikTokenConverter`` writes: ids are tiktoken ranks and
    ``merges`` lists every split of each token into two earlier ones, in the order of the
    ids they make (a split may use a token made later: the converter lists every split
    whose parts are tokens). The merges are recovered from the ranks (tiktoken's rule,
    :func:`~bpetrain.formats.tiktoken.merges_from_ranks`); each must be a listed one.
    """
    ranked, by_id = split_vocab(vocab, dict(special_tokens), None, name, False)
    listed: dict[int, set[tuple[int, int]]] = {}
    last = -1
    for k, (left_text, right_text) in enumerate(pairs):
        where = f"{name}: model.merges[{k}]"
        left_id, right_id, made = listed_merge(left_text, right_text, ranked, where)
        if made < last:
            raise ValueError(
                f"{where}: ({left_text!r}, {right_text!r}) makes id {made}, after a merge that made id {last}; merges "
                "that list several splits of a token must come in the order of the ids they make"
            )
        last = made
        listed.setdefault(made, set()).add((left_id, right_id))
    try:
        merges, byte_ids = merges_from_ranks(ranked)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    for i, pair in enumerate(merges):
        if pair not in listed.get(256 + i, ()):
            raise ValueError(
                f"{name}: token {256 + i} ({by_id[256 + i]!r}) splits into the ids {pair} with the earlier ranks, "
                "but model.merges does not list that merge"
            )
    return Model(merges, pat_str, special_tokens, byte_ids, name)


def _check_normalizer(name: str, normalizer, where: str = "normalizer") -> None:
    """Refuse a ``normalizer`` that can change text: bpetrain reads ``null``, a ``Sequence``
    of none, and those that leave every text as it is (``Strip`` of neither side,
    ``Prepend`` of ``""``, a ``Sequence`` of such).

    Raises
    ------
    ValueError
        Naming the field, for any other (``NFC``, ``Lowercase``, ``Replace``, ...).
    """
    if normalizer is None:
        return
    kind = normalizer.get("type") if isinstance(normalizer, dict) else None
    if kind == "Sequence" and isinstance(normalizer.get("normalizers"), list):
        for k, item in enumerate(normalizer["normalizers"]):
            _check_normalizer(name, item, f"{where}.normalizers[{k}]")
        return
    if (kind == "Strip" and normalizer.get("strip_left") is False and normalizer.get("strip_right") is False) or (
            kind == "Prepend" and normalizer.get("prepend") == ""):
        return
    raise ValueError(
        f"{name}: {where} is {normalizer!r:.120}, which can change the text before it is split; bpetrain reads "
        "tokenizers without a normalizer (null, an empty Sequence, or ones that change nothing)"
    )


def _read_pre_tokenizer(name: str, pre_tokenizer):
    """The ``pat_str`` of a ``pre_tokenizer``: a pattern, ``None`` (raw mode), or the
    :class:`~bpetrain.splitting.pipeline.PreTokenizer` of a pipeline that is not one
    pattern; a pattern :func:`hf_pattern` made from a named one reads as that name's.

    Raises
    ------
    ValueError
        If a step is not one bpetrain reads, or the last step is not a ``ByteLevel``
        (the vocabulary is then not byte-level), naming the field.
    """
    try:
        pre = PreTokenizer.from_hf(pre_tokenizer)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    if not (pre.steps and isinstance(pre.steps[-1], ByteLevel)):
        raise ValueError(
            f"{name}: the pre_tokenizer's last step must be a ByteLevel (the byte-level alphabet of the vocabulary); "
            "bpetrain reads byte-level BPE"
        )
    return pre.as_pat_str(aliases={hf_pattern(pat_str): pat_str for pat_str in PATTERNS.values()})


def _pre_tokenizer_steps(pat_str) -> list[dict]:
    """The ``pretokenizers`` of the ``Sequence`` that splits as ``pat_str`` does, a
    ``ByteLevel`` (no prefix space, no regex) last.

    A pattern that matches at every character is an ``Isolated`` split; another drops
    the text between its matches, as tiktoken does, which ``Split`` does with behavior
    ``Removed`` and ``invert`` (the gaps become the matches it removes).
    """
    if pat_str is None:
        return [_BYTE_LEVEL]
    if isinstance(pat_str, PreTokenizer):
        steps = [step.to_hf() for step in pat_str.steps]
        return steps if isinstance(pat_str.steps[-1], ByteLevel) else [*steps, _BYTE_LEVEL]
    isolated = matches_everywhere(pat_str)
    split = {"type": "Split", "pattern": {"Regex": hf_pattern(pat_str)}, "behavior": "Isolated" if isolated else "Removed",
             "invert": not isolated}
    return [split, _BYTE_LEVEL]
