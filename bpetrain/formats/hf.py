"""Hugging Face ``tokenizer.json`` for a byte-level BPE, written and read.

:func:`load` reads what ``tokenizers`` reads for a BPE over ByteLevel bytes, with every id
as ``tokenizers`` gives it, and remembers the file's other sections (the tokenizer's
``origin``); :func:`save` writes a tokenizer that has an origin back in that file's form.
A tokenizer without one (trained by bpetrain) gets the layout that ``transformers``'
``TikTokenConverter`` (``convert_slow_tokenizer.py``) builds with the ``tokenizers``
library, serialized as ``tokenizers.Tokenizer.to_str`` does:

- ``model``: ``{"type": "BPE", "vocab": {token: id}, "merges": [[left, right], ...],
  "ignore_merges": true, ...}``, tokens in GPT-2's byte-level alphabet
  (:func:`~bpetrain.formats._vocab.token_to_str`). ``ignore_merges`` makes the model
  look a whole piece up in the vocab first, as tiktoken does; exports check that every
  token encodes to itself, so it gives the same ids as the merges.
- ``pre_tokenizer``: ``Sequence[Split(pattern, "Isolated"), ByteLevel(add_prefix_space=false,
  use_regex=false)]``; raw mode (``pat_str`` None) has the ``ByteLevel`` step alone; a
  pipeline of pre-tokenizers (:class:`bpetrain.splitting.pipeline.PreTokenizer`) its own
  steps, then that ``ByteLevel`` unless it ends with one. Reading takes any ``Split``,
  ``Digits`` or ``ByteLevel``, or a ``Sequence`` of them ending in a ``ByteLevel``.
- ``normalizer``: null, or the normalizer of a pipeline
  (:class:`bpetrain.splitting.normalizers.Normalizer`: ``NFC``, ``NFD``, ``NFKC``,
  ``NFKD``, ``Lowercase``, a ``Sequence`` of them); reading takes those and the ones that
  change no text, and refuses the others naming the field.
- ``decoder``: ``ByteLevel``; ``post_processor``: ``ByteLevel(trim_offsets=false)``.
- ``added_tokens``: the special tokens (``special: true``, ``normalized: false``, or
  their flags as read). When their ids are not the ones ``tokenizers`` would give them
  (the next ids after the model's vocab, in order: cl100k_base's start at 100257 after
  a gap), they are also model vocab entries, as GPT-2's ``<|endoftext|>`` is.

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
from bpetrain._util.byte_alphabet import CHAR_TO_BYTE
from bpetrain._util.read import loads_json
from bpetrain.encoding.added_tokens import AddedToken
from bpetrain.encoding.merge_rule import unreachable_tokens
from bpetrain.encoding.pair_model import PairModel
from bpetrain.splitting.pattern import PATTERNS
from bpetrain.splitting.pipeline import ByteLevel, PreTokenizer, matches_everywhere, pat_str_to_json
from bpetrain.formats._vocab import (
    MANIFEST_NAME,
    Model,
    listed_merge,
    model_from_vocab,
    no_duplicate_keys,
    read_json,
    read_manifest,
    split_vocab,
    str_to_token,
    token_to_str,
    vocab_by_id,
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


def save(tokenizer: Tokenizer, path, **config) -> None:
    """Write ``tokenizer.json`` for ``tokenizers.Tokenizer.from_file``, atomically; or, when
    ``path`` is a folder (an existing one, or a path ending in ``/``), the folder
    ``transformers.AutoTokenizer.from_pretrained`` loads.

    A tokenizer read from a ``tokenizer.json`` (its ``origin``) gets that file back: its
    sections that bpetrain does not model (normalizer, post-processor, decoder,
    truncation, padding, the model's options; the pre-tokenizer while the pattern is the
    one read from it) verbatim, its added tokens with their flags and ids, its vocab and
    merges in its own order and form, with the new tokens after them. A folder also gets
    the ``tokenizer_config.json``, ``special_tokens_map.json`` and ``chat_template.jinja``
    of the folder the tokenizer came from (``added_tokens_decoder`` updated for new
    special tokens). Without an origin, ``tokenizer_config.json`` names the tokenizer
    class and the end-of-text token (``eos_token``: ``<|endoftext|>`` when it is a special
    token, else the only special token, else none), as ``save_pretrained`` writes them (a
    ``tokenizer.json`` alone gives ``eos_token=None`` in ``transformers``). A last file,
    ``.bpetrain.json``, records them all (:func:`bpetrain._util.atomic.replace_together`),
    so an interrupted export leaves the old files or the new ones.

    Parameters
    ----------
    config
        ``tokenizer_config.json`` fields to set in a folder export: the roles
        ``bos_token``, ``eos_token``, ``pad_token``, ``unk_token`` (each a special token
        or None), ``chat_template`` (a string), ``model_max_length`` (an int).

    Raises
    ------
    ValueError
        If two merges spell the same bytes or a token does not encode to itself (trained
        layout), an added token that ``tokenizers`` would renumber is spelled by other bytes in
        GPT-2's byte-level alphabet (:func:`_safe_in_model_vocab`),
        ``config`` names an unknown field or a role that is not a special token, or
        ``config`` is given for a single file.
    OSError
        If the files cannot be written (a folder this call made is removed again).
    """
    origin = tokenizer.origin or {}
    if tokenizer.tokens is None:
        tokenizer.check_exportable("Hugging Face tokenizer.json")
        vocab = tokenizer.vocab
        ordinary = {i: vocab[i] for i in range(256 + len(tokenizer.merges))}
    else:
        ordinary = tokenizer.tokens
    model_vocab = {token_to_str(token): i for i, token in ordinary.items()}
    for token in _in_model_vocab(tokenizer.added_tokens, len(model_vocab), set(origin.get("in_model_vocab", ()))):
        model_vocab[token.content] = token.id
    steps = _pre_tokenizer_steps(tokenizer.pat_str)
    document = _document(tokenizer, origin, model_vocab, steps)
    data = (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    path = os.fspath(path)
    if not (os.path.isdir(path) or path.endswith(("/", os.sep))):
        if config:
            raise ValueError(f"{', '.join(config)} go to tokenizer_config.json: export to a folder (a path ending in /)")
        with atomic_write(path, "wb") as f:
            f.write(data)
        return
    files = {TOKENIZER_NAME: data, **_folder_files(tokenizer, origin.get("files") or {}, config)}
    write_folder(path, files, {"format": "hf", "files": {name: file_record(d) for name, d in files.items()}},
                 MANIFEST_NAME)


def _in_model_vocab(added, n_ordinary: int, kept: set[int]) -> list[AddedToken]:
    """The added tokens ``model.vocab`` must list so that ``tokenizers`` gives them their
    ids: those the origin's vocab listed, and those it would otherwise number
    differently (the next ids after the vocab, in order; :func:`_added_tokens`)."""
    listed = {t.id for t in added if t.id in kept}
    while True:
        next_id = n_ordinary + len(listed)
        moved = None
        for token in sorted((t for t in added if t.id not in listed), key=lambda t: t.id):
            if token.id != next_id:
                moved = token
                break
            next_id += 1
        if moved is None:
            break
        if not _safe_in_model_vocab(moved.content):
            raise ValueError(
                f"the special token ids leave gaps after the merges, so tokenizer.json must list them in the "
                f"model vocab, which is safe only for a token no piece of text spells in GPT-2's byte-level "
                f"alphabet but itself; {moved.content!r} (id {moved.id}) is spelled by the bytes "
                f"{bytes(CHAR_TO_BYTE[c] for c in moved.content)!r}"
            )
        listed.add(moved.id)
    return [t for t in added if t.id in listed]


def _safe_in_model_vocab(content: str) -> bool:
    """Whether ``content`` can be a ``model.vocab`` entry without a piece of other text
    becoming it: its byte-level form is the text itself (printable ASCII), or a character of
    it is outside GPT-2's byte-level alphabet, so no piece's byte-level string equals it."""
    return regex.fullmatch(r"[!-~]+", content) is not None or any(c not in CHAR_TO_BYTE for c in content)


def _document(tokenizer: Tokenizer, origin: dict, model_vocab: dict, steps: list) -> dict:
    """The ``tokenizer.json`` document: the origin's sections where it has them."""
    base = origin.get("tokenizer.json") or {}
    vocab = tokenizer.vocab
    merges = [(token_to_str(vocab[a]), token_to_str(vocab[b])) for a, b in tokenizer.merges]
    model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        **base.get("model", {}),
        "ignore_merges": tokenizer.ignore_merges if tokenizer.tokens is not None
        else base.get("model", {}).get("ignore_merges", True),
        "vocab": model_vocab,
        "merges": [f"{a} {b}" for a, b in merges] if origin.get("merges_as_strings") else [list(m) for m in merges],
    }
    pre_tokenizer = {"type": "Sequence", "pretokenizers": steps}
    pat_str = tokenizer.pat_str
    normalizer = pat_str.normalizer.to_hf() if isinstance(pat_str, PreTokenizer) and pat_str.normalizer else None
    if "pre_tokenizer" in base and origin.get("pat_str") == pat_str_to_json(pat_str):
        pre_tokenizer, normalizer = base["pre_tokenizer"], base.get("normalizer")
    sections = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        **{key: value for key, value in base.items() if key not in ("model", "pre_tokenizer", "normalizer")},
    }
    return {
        "version": sections.pop("version"),
        "truncation": sections.pop("truncation"),
        "padding": sections.pop("padding"),
        "added_tokens": [
            {"id": t.id, "content": t.content, "single_word": t.single_word, "lstrip": t.lstrip, "rstrip": t.rstrip,
             "normalized": t.normalized, "special": t.special}
            for t in sorted(tokenizer.added_tokens, key=lambda t: t.id)
        ],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        **sections,
        "model": model,
    }


#: ``tokenizer_config.json`` fields a folder export can be given.
CONFIG_FIELDS = ("bos_token", "eos_token", "pad_token", "unk_token", "chat_template", "model_max_length")


def _folder_files(tokenizer: Tokenizer, kept: dict, config: dict) -> dict[str, bytes]:
    """``tokenizer_config.json`` and the origin folder's other files (:func:`save`)."""
    unknown = set(config).difference(CONFIG_FIELDS)
    if unknown:
        raise ValueError(f"unknown tokenizer_config.json fields {sorted(unknown)}; the fields are {', '.join(CONFIG_FIELDS)}")
    specials = tokenizer.special_tokens
    for role in ("bos_token", "eos_token", "pad_token", "unk_token"):
        if config.get(role) is not None and config[role] not in specials:
            raise ValueError(f"{role}={config[role]!r} is not a special token; the special tokens are {sorted(specials)}")
    if CONFIG_NAME in kept:
        settings = json.loads(kept[CONFIG_NAME])
        if isinstance(settings.get("added_tokens_decoder"), dict):
            settings["added_tokens_decoder"] = {
                str(t.id): {"content": t.content, "lstrip": t.lstrip, "normalized": t.normalized, "rstrip": t.rstrip,
                            "single_word": t.single_word, "special": t.special}
                for t in sorted(tokenizer.added_tokens, key=lambda t: t.id)
            }
    else:
        eos = "<|endoftext|>" if "<|endoftext|>" in specials else next(iter(specials)) if len(specials) == 1 else None
        settings = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos,
                    "clean_up_tokenization_spaces": False, "model_max_length": 1 << 60}
    settings.update(config)
    files = {name: text.encode("utf-8") for name, text in kept.items()}
    files[CONFIG_NAME] = (json.dumps(settings, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    if "special_tokens_map.json" in kept and any(role in config for role in CONFIG_FIELDS[:4]):
        roles = json.loads(kept["special_tokens_map.json"])
        roles.update({role: config[role] for role in CONFIG_FIELDS[:4] if role in config})
        files["special_tokens_map.json"] = (json.dumps(roles, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    return files


def load(path) -> Model:
    """Read a byte-level BPE ``tokenizer.json``, or a folder holding one, with every id Hugging Face gives.

    What ``tokenizers`` reads for a BPE over ByteLevel bytes is read: merges as
    ``"left right"`` strings or pairs, in any order; ``ignore_merges``; tokens no merge
    makes (reached only whole, or never); bytes without a token (dropped, as with
    ``unk_token`` null); ``continuing_subword_prefix``/``end_of_word_suffix`` null or
    ``""``; added tokens at any ids, with their flags, numbered as ``tokenizers`` numbers
    them (the id of their entry in ``model.vocab``, else the next id after the model's
    vocabulary, in the order of the list; :mod:`bpetrain.encoding.added_tokens`).

    Files in bpetrain's own layout, GPT-2's (merge ``k`` making id ``256 + k``) and
    ``TikTokenConverter``'s whose ranks recover one merge per token read as the trained
    layout of :class:`~bpetrain.Tokenizer`; every other file keeps its ids as they are
    (the imported layout). Either way the tokenizer remembers the file's other sections
    (and, for a folder, ``tokenizer_config.json``, ``special_tokens_map.json`` and
    ``chat_template.jinja``) as its ``origin``, which :func:`save` writes back.

    A pattern that :func:`hf_pattern` makes from a named pattern reads back as that
    name's ``pat_str``; any other is kept as written (the ``regex`` module reads
    Oniguruma's atomic groups the same way).

    Raises
    ------
    ValueError
        If the file is not valid JSON or has a duplicate key (naming the line), or holds
        what bpetrain cannot represent exactly (naming the field and what is supported):
        another model type, a normalizer other than the Unicode forms and ``Lowercase``
        (:meth:`~bpetrain.splitting.normalizers.Normalizer.from_hf`), ``byte_fallback``, dropout,
        a non-empty prefix or suffix, an ``unk_token`` with bytes that have no token,
        tokens outside the byte-level alphabet, two tokens on one id, or merges whose
        parts or result are not in the vocab.
    """
    name, document, extras = _read_document(path)
    model = document.get("model") if isinstance(document, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"{name}: model.type must be 'BPE' (bpetrain reads byte-level BPE tokenizers)")
    _check_model_options(name, model)
    pat_str = _read_pre_tokenizer(name, document.get("pre_tokenizer"), document.get("normalizer"))
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
    added = _added_tokens(name, document.get("added_tokens"), vocab)
    special_tokens = {t.content: t.id for t in added}
    origin = _origin(document, vocab, added, pat_str, merges, extras)
    try:  # the trained layout, where it fits
        found = _trained_layout(name, vocab, pairs, pat_str, special_tokens, bool(model.get("ignore_merges")))
    except ValueError:
        found = None
    if found is not None:
        return found._replace(added_tokens=added, origin=origin)
    tokens, ids_of = _ordinary_tokens(name, vocab, added)
    merge_ids = [pair[:2] for pair in _listed_merges(name, vocab, pairs, ids_of)]
    one_byte = {token for token in tokens.values() if len(token) == 1}
    if len(one_byte) < 256 and model.get("unk_token") is not None:
        raise ValueError(
            f"{name}: model.unk_token is {model['unk_token']!r} and {256 - len(one_byte)} bytes have no token; "
            "bpetrain reads byte-level BPE whose bytes without a token are dropped (unk_token null)"
        )
    return Model(merge_ids, pat_str, special_tokens, None, name, tokens=tokens,
                 ignore_merges=bool(model.get("ignore_merges")), added_tokens=added, origin=origin)


#: Files of a ``transformers`` folder that an export carries over from the folder a tokenizer came from.
_FOLDER_FILES = (CONFIG_NAME, "special_tokens_map.json", "chat_template.jinja", "chat_template.json")


def _read_document(path) -> tuple[str, dict, dict]:
    """The file's name, its JSON document and, for a folder, the text of its :data:`_FOLDER_FILES`."""
    name = os.fspath(path)
    extras: dict = {}
    if not os.path.isdir(name):
        return name, read_json(path), extras
    folder = name
    name = os.path.join(folder, TOKENIZER_NAME)
    manifest_path = os.path.join(folder, MANIFEST_NAME)
    records = read_manifest(manifest_path)["files"] if os.path.exists(manifest_path) else {}
    data = read_recorded(name, records.get(TOKENIZER_NAME), manifest_path, "a tokenizer.json file")
    document = loads_json(data, name, object_pairs_hook=no_duplicate_keys(name))
    for file_name in _FOLDER_FILES:
        file_path = os.path.join(folder, file_name)
        if os.path.exists(file_path):
            extras[file_name] = read_recorded(file_path, records.get(file_name), manifest_path, file_name).decode("utf-8")
    return name, document, extras


def _check_model_options(name: str, model: dict) -> None:
    """Refuse what changes the bytes a piece is made of (see :func:`load`), naming the field
    (the normalizer: :meth:`~bpetrain.splitting.normalizers.Normalizer.from_hf`)."""
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            raise ValueError(
                f"{name}: model.{key} is {model.get(key)!r}; bpetrain reads byte-level BPE without one (null or '')"
            )
    if model.get("byte_fallback"):
        raise ValueError(f"{name}: model.byte_fallback is true; bpetrain reads byte-level BPE, which needs no fallback")
    if model.get("dropout") not in (None, 0, 0.0):
        raise ValueError(f"{name}: model.dropout is {model.get('dropout')!r}; bpetrain encodes without dropout (null)")


def _added_tokens(name: str, entries, vocab: dict) -> tuple[AddedToken, ...]:
    """The added tokens with the ids ``tokenizers`` gives them (``AddedVocabulary::add_tokens``):
    the id of the same string in the model's vocab, else the next id after the vocab."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ValueError(f"{name}: added_tokens must be a list")  # noqa: TRY004 (a malformed file)
    found: dict[str, AddedToken] = {}
    next_id = len(vocab)
    for k, entry in enumerate(entries):
        if not (isinstance(entry, dict) and isinstance(entry.get("content"), str) and type(entry.get("id")) is int):
            raise ValueError(f"{name}: added_tokens[{k}] needs a string content and an integer id")
        flags = {key: entry.get(key, key in ("normalized",) and not entry.get("special")) for key in
                 ("special", "lstrip", "rstrip", "single_word", "normalized")}
        if not all(isinstance(v, bool) for v in flags.values()):
            raise ValueError(f"{name}: added_tokens[{k}]: special, lstrip, rstrip, single_word, normalized are booleans")
        content = entry["content"]
        if not content:
            continue  # tokenizers ignores an empty added token
        if content in found:
            token_id = found[content].id
        elif type(vocab.get(content)) is int:
            token_id = vocab[content]
        else:
            token_id = next_id
            next_id += 1
        found[content] = AddedToken(content, token_id, **flags)
    return tuple(found.values())


def _ordinary_tokens(name: str, vocab: dict, added) -> tuple[dict[int, bytes], dict[bytes, int]]:
    """The model vocab's byte-level tokens by id, and by bytes; an added token's own entry is left out."""
    added_ids = {t.content: t.id for t in added}
    tokens = {token_id: str_to_token(text, f"{name}: model.vocab") for token_id, text in vocab_by_id(vocab, name).items()
              if added_ids.get(text) != token_id}
    return tokens, {token: token_id for token_id, token in tokens.items()}


def _origin(document: dict, vocab: dict, added, pat_str, merges: list, extras: dict) -> dict:
    """What :func:`save` writes back: the document without the vocab, merges and added
    tokens, which added tokens the model vocab held, and the folder's other files."""
    rest = {key: value for key, value in document.items() if key != "added_tokens"}
    rest["model"] = {key: value for key, value in document["model"].items() if key not in ("vocab", "merges")}
    return {
        "tokenizer.json": rest,
        "pat_str": pat_str_to_json(pat_str),  # as JSON: the model file keeps the origin
        "merges_as_strings": bool(merges) and isinstance(merges[0], str),
        "in_model_vocab": sorted(t.id for t in added if vocab.get(t.content) == t.id),
        "files": extras,
    }


def _trained_layout(name, vocab, pairs, pat_str, special_tokens, ignore_merges) -> Model | None:
    """The trained layout of the file, or None where it does not fit (see :func:`load`)."""
    n_special_entries = sum(vocab.get(content) == token_id for content, token_id in special_tokens.items())
    if len(pairs) > len(vocab) - n_special_entries - 256:
        found = _from_all_splits(name, vocab, pairs, pat_str, special_tokens, ignore_merges)
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
        if ignore_merges and unreachable_tokens(found.merges):
            return None  # reached whole by tokenizers: the imported layout keeps that
    return found


def _listed_merges(name: str, vocab: dict, pairs, ids_of: dict[bytes, int]) -> list[tuple[int, int, int]]:
    """The ids of each merge's parts and of the token they make, looked up by their strings as
    ``tokenizers`` does; a merge that does not resolve gets :func:`~bpetrain.formats._vocab.listed_merge`'s
    message (``ids_of``: the decoded tokens, for it)."""
    found = []
    for k, (left_text, right_text) in enumerate(pairs):
        ids = (vocab.get(left_text), vocab.get(right_text), vocab.get(left_text + right_text))
        if None in ids:
            ids = listed_merge(left_text, right_text, ids_of, f"{name}: model.merges[{k}]")
        found.append(ids)
    return found


def _from_all_splits(name, vocab, pairs, pat_str, special_tokens, ignore_merges) -> Model:
    """The layout ``transformers``' ``TikTokenConverter`` writes: ids are tiktoken ranks and
    ``merges`` lists every split of each token into two earlier ones, in the order of the
    ids they make. Where Hugging Face's rule on these merges is tiktoken's rule on the ranks
    (:meth:`~bpetrain.encoding.pair_model.PairModel.compiled_ranks`), the merges are
    recovered from the ranks (:func:`~bpetrain.formats.tiktoken.merges_from_ranks`); each
    must be a listed one (else :func:`load` keeps the file's merges).
    """
    ranked, by_id = split_vocab(vocab, dict(special_tokens), None, name, False)
    listed: dict[int, set[tuple[int, int]]] = {}
    last = -1
    merge_ids = []
    for k, (left_id, right_id, made) in enumerate(_listed_merges(name, vocab, pairs, ranked)):
        if made < last:
            raise ValueError(f"{name}: model.merges[{k}]: merges that list several splits of a token come in the "
                             "order of the ids")
        last = made
        listed.setdefault(made, set()).add((left_id, right_id))
        merge_ids.append((left_id, right_id))
    tokens = {token_id: token for token, token_id in ranked.items()}
    PairModel(tokens, merge_ids, ignore_merges=ignore_merges).compiled_ranks()
    try:
        merges, byte_ids = merges_from_ranks(ranked)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    for i, pair in enumerate(merges):
        if pair not in listed.get(256 + i, ()):
            raise ValueError(f"{name}: token {256 + i} splits into the ids {pair}, which model.merges does not list")
    return Model(merges, pat_str, special_tokens, byte_ids, name)


def _read_pre_tokenizer(name: str, pre_tokenizer, normalizer):
    """The ``pat_str`` of a ``pre_tokenizer`` and ``normalizer``: a pattern, ``None`` (raw
    mode), or the :class:`~bpetrain.splitting.pipeline.PreTokenizer` of a pipeline that is
    not one pattern (one with a normalizer never is); a pattern :func:`hf_pattern` made
    from a named one reads as that name's.

    Raises
    ------
    ValueError
        If a step or the normalizer is not one bpetrain reads, or the last step is not a
        ``ByteLevel`` (the vocabulary is then not byte-level), naming the field.
    """
    try:
        pre = PreTokenizer.from_hf(pre_tokenizer, normalizer=normalizer)
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
