"""What the file formats share: the model a reader returns (:class:`Model`), GPT-2's
byte-level strings, reading JSON, and recovering the merges from a vocab and a merge list
(with the import checks)."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from bpetrain._util.byte_alphabet import BYTE_TO_CHAR, CHAR_TO_BYTE
from bpetrain._util.read import loads_json, read_bytes
from bpetrain.encoding.added_tokens import AddedToken


class Model(NamedTuple):
    """What a model file holds: the arguments of :class:`bpetrain.Tokenizer`, and the file.

    Every reader returns one; :meth:`bpetrain.Tokenizer.from_model` builds the tokenizer
    (and names ``source`` in front of the errors its checks raise).
    """

    merges: list[tuple[int, int]]
    pat_str: str | None
    special_tokens: dict[str, int]
    byte_ids: list[int] | None
    #: The file, for error messages.
    source: str
    #: The imported layout's tokens (id -> bytes), None in the trained layout.
    tokens: dict[int, bytes] | None = None
    #: Hugging Face's ``ignore_merges`` (imported layout only).
    ignore_merges: bool = False
    #: The special tokens with Hugging Face's flags, in the file's order (None: default flags).
    added_tokens: tuple[AddedToken, ...] | None = None
    #: What the file holds beyond the model, for exports (:attr:`bpetrain.Tokenizer.origin`).
    origin: dict | None = None
    #: Whose character classes the pattern splits with (``"tiktoken"``, ``"regex"`` or a
    #: :class:`bpetrain.splitting.unicode.UnicodeTable`; None: the format does not say,
    #: and the tokenizer takes the installed ``regex`` module's).
    unicode_version: object = None


def token_to_str(token: bytes) -> str:
    """Token bytes as GPT-2's byte-level string (``b" the"`` -> ``"Ġthe"``)."""
    return "".join(BYTE_TO_CHAR[b] for b in token)


def str_to_token(text: str, where: str) -> bytes:
    """Inverse of :func:`token_to_str`; ``where`` names the file and place for the error.

    Raises
    ------
    ValueError
        If ``text`` holds a character outside the 256-character byte alphabet.
    """
    try:
        return bytes(CHAR_TO_BYTE[c] for c in text)
    except KeyError as exc:
        raise ValueError(
            f"{where}: token {text!r} holds {exc.args[0]!r}, which is not one of the 256 characters of "
            "GPT-2's byte-level alphabet (is this a byte-level BPE vocabulary?)"
        ) from None


def model_from_vocab(
    vocab: Mapping[str, int],
    merges: Sequence[tuple[str, str]],
    *,
    pat_str: str | None,
    special_tokens: Mapping[str, int],
    name: str,
    merges_at: Callable[[int], str],
    extra_tokens_are_special: bool,
) -> Model:
    """The model of a byte-level vocab and merge list (Hugging Face, GPT-2).

    Parameters
    ----------
    vocab : mapping of str to int
        Token (in GPT-2's byte-level alphabet, :func:`token_to_str`) -> id. Entries
        with ids after the merges are special tokens, written as plain text.
    merges : sequence of (str, str)
        The merged pairs in priority order, in the same alphabet. Merge ``k`` must make
        the token with id ``256 + k``, and ids 0..255 must be the 256 one-byte tokens
        (in any order), as in GPT-2's and tiktoken-converted vocabularies.
    pat_str, special_tokens
        As in :class:`~bpetrain.Tokenizer`.
    name : str
        The file, for error messages.
    merges_at : callable
        ``merges_at(k)`` names merge ``k`` in an error (file and line, or JSON path).
    extra_tokens_are_special : bool
        Whether vocab entries after the merges that are not in ``special_tokens`` become
        special tokens (GPT-2's ``<|endoftext|>`` in ``vocab.json``) or are errors.

    Raises
    ------
    ValueError
        For ids shared by two tokens, ids 0..255 that are not the bytes, a merge whose
        parts are not in the vocab (or not made yet), a merge whose result is not in the
        vocab or not at id ``256 + k``, and a token no merge makes.
    """
    specials = dict(special_tokens)
    ranked, by_id = split_vocab(vocab, specials, 256 + len(merges), name, extra_tokens_are_special)
    byte_ids = byte_ids_of(by_id, name)
    merge_ids = []
    for k, (left_text, right_text) in enumerate(merges):
        where = merges_at(k)
        left_id, right_id, made = listed_merge(left_text, right_text, ranked, where)
        if max(left_id, right_id) >= 256 + k:
            raise ValueError(f"{where}: a part of ({left_text!r}, {right_text!r}) is made by a later merge")
        if made != 256 + k:
            raise ValueError(
                f"{where}: the merged token {left_text + right_text!r} has id {made}, not {256 + k}: merge k "
                "must make id 256 + k (a duplicate merge, or ids not in merge order)"
            )
        merge_ids.append((left_id, right_id))
    return Model(merge_ids, pat_str, specials, byte_ids, name)


def split_vocab(
    vocab: Mapping[str, int], specials: dict[str, int], n_ranked: int | None, name: str, extra_tokens_are_special: bool
) -> tuple[dict[bytes, int], dict[int, str]]:
    """Decode the byte-level tokens of ``vocab`` (ids below ``n_ranked``, or every entry
    that is not a special token when it is None) and check the rest are special tokens.

    Entries at or above ``n_ranked`` are added to ``specials`` when
    ``extra_tokens_are_special``, and are errors otherwise.

    Returns
    -------
    ranked : dict of bytes to int
        Token bytes -> id.
    by_id : dict of int to str
        Every entry of ``vocab`` by id.
    """
    specials_by_id = {token_id: content for content, token_id in specials.items()}
    ranked: dict[bytes, int] = {}
    by_id = vocab_by_id(vocab, name)
    for token_id, text in by_id.items():
        if token_id in specials_by_id and (n_ranked is None or token_id >= n_ranked):
            if specials_by_id[token_id] != text:
                raise ValueError(
                    f"{name}: the vocab has {text!r} at id {token_id}, the special token {specials_by_id[token_id]!r}"
                )
        elif n_ranked is None or token_id < n_ranked:
            ranked[str_to_token(text, name)] = token_id
        elif extra_tokens_are_special:
            specials[text] = token_id
        else:
            raise ValueError(
                f"{name}: token {text!r} (id {token_id}) is in the vocab but no merge makes it and it is not "
                "a special token"
            )
    return ranked, by_id


def vocab_by_id(vocab: Mapping[str, int], name: str) -> dict[int, str]:
    """``vocab`` (token -> id) by id, in its order.

    Raises
    ------
    ValueError
        If an id is not an integer >= 0, or two tokens share one (naming the file ``name``).
    """
    by_id: dict[int, str] = {}
    for text, token_id in vocab.items():
        if type(token_id) is not int or token_id < 0:
            raise ValueError(f"{name}: token {text!r} has id {token_id!r}; ids must be integers >= 0")
        if token_id in by_id:
            raise ValueError(f"{name}: tokens {by_id[token_id]!r} and {text!r} share id {token_id} (duplicate ids)")
        by_id[token_id] = text
    return by_id


def byte_ids_of(by_id: Mapping[int, str], name: str) -> list[int]:
    """``byte_ids[b]``: the id of the one-byte token ``b``, which must be one of ids 0..255.

    Raises
    ------
    ValueError
        If an id in 0..255 is missing or is not a one-byte token.
    """
    byte_ids = [-1] * 256
    for token_id in range(256):
        text = by_id.get(token_id)
        if text is None or len(text) != 1:
            raise ValueError(
                f"{name}: id {token_id} is {'missing' if text is None else repr(text)}; bpetrain reads byte-level "
                "BPE vocabularies whose ids 0..255 are the 256 one-byte tokens (in any order)"
            )
        byte_ids[str_to_token(text, name)[0]] = token_id
    return byte_ids


def listed_merge(left_text: str, right_text: str, ranked: Mapping[bytes, int], where: str) -> tuple[int, int, int]:
    """The ids of a listed merge's two parts and of the token they make.

    Raises
    ------
    ValueError
        If a part or the merged token is not in the vocab (``where`` names the merge).
    """
    left, right = str_to_token(left_text, where), str_to_token(right_text, where)
    for part, text in ((left, left_text), (right, right_text)):
        if part not in ranked:
            raise ValueError(f"{where}: the part {text!r} is not in the vocab")
    made = ranked.get(left + right)
    if made is None:
        raise ValueError(f"{where}: the merged token {left_text + right_text!r} is not in the vocab")
    return ranked[left], ranked[right], made


def no_duplicate_keys(name: str):
    """A ``json`` ``object_pairs_hook`` that refuses a key given twice in one object (``json``
    keeps the last one silently); ``name`` names the file in the error."""

    def hook(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"{name}: the key {key!r} appears twice in one object (duplicate token?)")
            seen[key] = value
        return seen

    return hook


def read_json(path):
    """Parse a JSON file, refusing duplicate keys (:func:`no_duplicate_keys`), files over the
    size cap and nesting deeper than :data:`bpetrain._util.read.MAX_JSON_DEPTH`.

    Raises
    ------
    ValueError
        If the file is not UTF-8 JSON (naming the line), an object repeats a key, or the
        file is too large or too deeply nested.
    """
    name = os.fspath(path)
    return loads_json(read_bytes(path, "a JSON file"), name, object_pairs_hook=no_duplicate_keys(name))


#: The record a folder export writes beside its files (:func:`bpetrain._util.atomic.write_folder`).
MANIFEST_NAME = ".bpetrain.json"


def read_manifest(path, *keys: str) -> dict:
    """Read a folder export's record: ``{"files": {name: record}, ...}`` with an object under
    each of ``keys`` too.

    Raises
    ------
    ValueError
        If the file is not such a JSON object (naming it).
    """
    manifest = read_json(path)
    if not (isinstance(manifest, dict) and all(isinstance(manifest.get(k), dict) for k in ("files", *keys))):
        fields = ", ".join(f'"{k}": {{...}}' for k in keys)
        raise ValueError(f"{os.fspath(path)}: expected {{\"files\": {{name: record}}{', ' + fields if keys else ''}}}")
    return manifest

