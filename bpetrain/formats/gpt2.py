"""GPT-2's ``vocab.json`` + ``merges.txt``, written and read.

The files of OpenAI's GPT-2 release (``encoder.json`` and ``vocab.bpe`` there), under the
names Hugging Face's ``GPT2Tokenizer`` loads:

- ``vocab.json``: one JSON object, token -> id, tokens in GPT-2's byte-level alphabet
  (:func:`~bpetrain.formats._vocab.token_to_str`); special tokens are plain entries
  after the merges, as GPT-2's ``<|endoftext|>`` (id 50256).
- ``merges.txt``: the line ``#version: 0.2``, then one ``left right`` merge per line in
  priority order (merge ``k`` makes id ``256 + k``), ending with a newline.

The files carry neither the split pattern nor raw mode: they mean GPT-2's pattern to
the libraries that read them. bpetrain's export records the pattern in the folder's
``.bpetrain.json`` (see :func:`save`), which :func:`load` reads back; without that record
:func:`load` assumes GPT-2's pattern unless told otherwise.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bpetrain._util.atomic import file_record, read_recorded, write_folder
from bpetrain._util.read import decode_utf8, loads_json, read_bytes
from bpetrain.splitting.pattern import PATTERNS, resolve_pattern
from bpetrain.splitting.pipeline import pat_str_from_json, pat_str_to_json
from bpetrain.formats._vocab import (
    MANIFEST_NAME,
    Model,
    model_from_vocab,
    no_duplicate_keys,
    read_manifest,
    token_to_str,
)

if TYPE_CHECKING:
    from bpetrain.tokenizer import Tokenizer

__all__ = ["load", "load_files", "parse", "save"]

VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"
HEADER = "#version: 0.2"


def save(tokenizer: Tokenizer, directory) -> None:
    """Write ``directory/vocab.json`` and ``directory/merges.txt`` (the directory is made
    if needed) as one artifact.

    A third file, ``directory/.bpetrain.json``, records both files' lengths and SHA-256,
    which vocab entries are the special tokens and the split pattern (``"pat_str"``: a
    string, or null for raw mode), and the three are replaced together
    (:func:`bpetrain._util.atomic.replace_together`), so
    an interrupted export leaves the old pair or the new one, and :func:`load` refuses a
    ``vocab.json`` from one export beside a ``merges.txt`` from another. Libraries that
    read the two files ignore it.

    Raises
    ------
    ValueError
        If two merges spell the same bytes, a token does not encode to itself, or a
        special token spells the same text as a byte-level token.
    OSError
        If the files cannot be written (a folder this call made is removed again).
    """
    tokenizer.check_exportable("GPT-2 vocab.json")
    vocab = tokenizer.vocab
    n_ranked = 256 + len(tokenizer.merges)
    entries = {token_to_str(vocab[i]): i for i in range(n_ranked)}
    for content, token_id in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1]):
        if content in entries:
            raise ValueError(
                f"the special token {content!r} reads like the byte-level token with id {entries[content]}; "
                "vocab.json cannot hold both"
            )
        entries[content] = token_id
    files = {
        VOCAB_NAME: (json.dumps(entries, ensure_ascii=False) + "\n").encode("utf-8"),
        MERGES_NAME: "".join(
            [HEADER + "\n", *(f"{token_to_str(vocab[a])} {token_to_str(vocab[b])}\n" for a, b in tokenizer.merges)]
        ).encode("utf-8"),
    }
    manifest = {
        "format": "gpt2",
        "files": {name: file_record(data) for name, data in files.items()},
        "special_tokens": tokenizer.special_tokens,
        "pat_str": pat_str_to_json(tokenizer.pat_str),  # a pipeline as its tokenizer.json objects
    }
    write_folder(directory, files, manifest, MANIFEST_NAME)


class _Recorded(str):
    """The type of :data:`RECORDED`: ``is RECORDED`` tells that no ``pat_str`` was given."""


#: ``pat_str`` not given to :func:`load`: the folder's record says it, else GPT-2's.
RECORDED = _Recorded("recorded")


def load(path, *, pat_str: str | None = RECORDED, special_tokens: Mapping[str, int] | None = None) -> Model:
    """Read ``vocab.json`` and ``merges.txt`` from a directory (or beside ``path``, the
    vocab file).

    When the directory holds the ``.bpetrain.json`` that :func:`save` writes, the two
    files must be the ones it records, and its special tokens and pattern are the defaults.

    Parameters
    ----------
    path : str or os.PathLike
        The directory holding both files, or the ``vocab.json`` file.
    pat_str : str or None
        The split pattern (a name from :data:`bpetrain.PATTERNS` works). Default: the one
        ``.bpetrain.json`` records, else GPT-2's (the files do not say, and GPT-2's is the
        one they mean). ``None`` or ``"none"``: raw mode.
    special_tokens : mapping of str to int, optional
        The special tokens, which must be exactly the vocab entries after the merges.
        Default: those entries, provided none of them looks like a merge result (see
        :func:`load_files`).

    Raises
    ------
    ValueError
        If a file is malformed (naming the file and line), the vocab and merges do not
        fit together (:func:`~bpetrain.formats._vocab.model_from_vocab`), or they
        come from different exports.
    """
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    vocab_path = os.path.join(directory, VOCAB_NAME) if os.path.isdir(path) else os.fspath(path)
    merges_path = os.path.join(directory, MERGES_NAME)
    manifest_path = os.path.join(directory, MANIFEST_NAME)
    records = {}
    if os.path.basename(vocab_path) == VOCAB_NAME and os.path.exists(manifest_path):
        manifest = read_manifest(manifest_path, "special_tokens")
        records = manifest["files"]
        if special_tokens is None:
            special_tokens = manifest["special_tokens"]
        if pat_str is RECORDED and "pat_str" in manifest:
            pat_str = pat_str_from_json(manifest["pat_str"], f"{manifest_path}: pat_str")
    if pat_str is RECORDED:
        pat_str = PATTERNS["gpt2"]
    what = "a GPT-2 vocab.json", "a GPT-2 merges.txt"
    return parse(
        (vocab_path, read_recorded(vocab_path, records.get(VOCAB_NAME), manifest_path, what[0])),
        (merges_path, read_recorded(merges_path, records.get(MERGES_NAME), manifest_path, what[1])),
        pat_str=pat_str,
        special_tokens=special_tokens,
    )


def load_files(
    vocab_path, merges_path, *, pat_str: str | None = PATTERNS["gpt2"], special_tokens: Mapping[str, int] | None = None
) -> Model:
    """Read a vocab file and a merges file of any names, such as ``encoder.json`` and
    ``vocab.bpe`` of OpenAI's GPT-2 release (:func:`load` reads them from a directory).

    Vocab entries after the merges are the special tokens (GPT-2's ``<|endoftext|>``).
    Without ``special_tokens``, an entry there that two other entries join to make (a
    token some merge should have made) is an error: the merges file is truncated or
    does not belong to the vocab, and reading on would turn ordinary tokens into
    special ones.

    Raises
    ------
    ValueError
        As :func:`load`.
    """
    vocab_path, merges_path = os.fspath(vocab_path), os.fspath(merges_path)
    return parse(
        (vocab_path, read_bytes(vocab_path, "a GPT-2 vocab.json")),
        (merges_path, read_bytes(merges_path, "a GPT-2 merges.txt")),
        pat_str=pat_str,
        special_tokens=special_tokens,
    )


def parse(vocab_file, merges_file, *, pat_str, special_tokens) -> Model:
    """The model in the contents of a vocab and a merges file, each a ``(name, bytes)`` pair."""
    (vocab_path, vocab_data), (merges_path, merges_data) = vocab_file, merges_file
    vocab = loads_json(vocab_data, vocab_path, object_pairs_hook=no_duplicate_keys(vocab_path))
    if not isinstance(vocab, dict):
        raise ValueError(f"{vocab_path}: expected one JSON object of token -> id")  # noqa: TRY004 (a malformed file)
    pairs, linenos = [], []
    lines = decode_utf8(merges_data, merges_path, "a GPT-2 merges.txt").split("\n")
    if lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        if lineno == 1 and line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{merges_path}:{lineno}: expected 'left right', got {line[:60]!r}")
        pairs.append((parts[0], parts[1]))
        linenos.append(lineno)
    if special_tokens is None:
        _check_no_missing_merges(vocab, 256 + len(pairs), vocab_path, merges_path)
    return model_from_vocab(
        vocab,
        pairs,
        pat_str=resolve_pattern(pat_str),
        special_tokens=special_tokens or {},
        name=vocab_path,
        merges_at=lambda k: f"{merges_path}:{linenos[k]}",
        extra_tokens_are_special=special_tokens is None,
    )


def _check_no_missing_merges(vocab: dict, n_ranked: int, vocab_path: str, merges_path: str) -> None:
    """Refuse vocab entries after the merges that two earlier entries join to make.

    Such an entry is what a merge makes: the merges file lacks it (truncated, emptied, or
    from another vocabulary), and taking the entry as a special token would make
    ordinary text such as ``the`` a disallowed special token.
    """
    found = []
    for text, token_id in vocab.items():
        if type(token_id) is int and token_id >= n_ranked and len(text) > 1:
            for cut in range(1, len(text)):
                left, right = vocab.get(text[:cut]), vocab.get(text[cut:])
                if type(left) is int and type(right) is int and max(left, right) < token_id:
                    found.append((token_id, text, text[:cut], text[cut:]))
                    break
    if found:
        token_id, text, left, right = min(found)
        raise ValueError(
            f"{merges_path}: holds {n_ranked - 256} merges, but {len(found)} entries of {vocab_path} after them "
            f"are joins of two earlier entries (first: {text!r}, id {token_id} = {left!r} + {right!r}), "
            "so merges are missing: the merges file is truncated or belongs to another vocab. "
            "If these entries are special tokens, pass them as special_tokens"
        )
