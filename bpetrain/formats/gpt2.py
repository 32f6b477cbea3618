"""GPT-2's ``vocab.json`` + ``merges.txt``, written and read.

The files of OpenAI's GPT-2 release (``encoder.json`` and ``vocab.bpe`` there), under the
names Hugging Face's ``GPT2Tokenizer`` loads:

- ``vocab.json``: one JSON object, token -> id, tokens in GPT-2's byte-level alphabet
  (:func:`~bpetrain.formats._vocab.token_to_str`); special tokens are plain entries
  after the merges, as GPT-2's ``<|endoftext|>`` (id 50256).
- ``merges.txt``: the line ``#version: 0.2``, then one ``left right`` merge per line in
  priority order (merge ``k`` makes id ``256 + k``), ending with a newline.

The files carry neither the split pattern nor raw mode: they mean GPT-2's pattern to
the libraries that read them, so :func:`load` assumes it unless told otherwise.
"""
from __future__ import annotations

import json
import os

from .._atomic import atomic_write
from ..pretokenize import PATTERNS, resolve_pattern
from ..tokenizer import Tokenizer
from ._vocab import check_exportable, read_json, token_to_str, tokenizer_from_vocab

__all__ = ["load", "load_files", "save"]

VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"
HEADER = "#version: 0.2"


def save(tokenizer: Tokenizer, directory) -> None:
    """Write ``directory/vocab.json`` and ``directory/merges.txt`` (the directory is made
    if needed), each atomically.

    Raises
    ------
    ValueError
        If two merges spell the same bytes, a token does not encode to itself, or a
        special token spells the same text as a byte-level token.
    """
    check_exportable(tokenizer, "GPT-2 vocab.json")
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
    os.makedirs(directory, exist_ok=True)
    with atomic_write(os.path.join(directory, VOCAB_NAME), "w", encoding="utf-8", newline="\n") as f:
        json.dump(entries, f, ensure_ascii=False)
        f.write("\n")
        with atomic_write(os.path.join(directory, MERGES_NAME), "w", encoding="utf-8", newline="\n") as m:
            m.write(HEADER + "\n")
            m.writelines(f"{token_to_str(vocab[a])} {token_to_str(vocab[b])}\n" for a, b in tokenizer.merges)


def load(path, *, pat_str: str | None = PATTERNS["gpt2"]) -> Tokenizer:
    """Read ``vocab.json`` and ``merges.txt`` from a directory (or beside ``path``, the
    vocab file).

    Parameters
    ----------
    path : str or os.PathLike
        The directory holding both files, or the ``vocab.json`` file.
    pat_str : str or None
        The split pattern (a name from :data:`bpetrain.PATTERNS` works): the files do not
        say, and GPT-2's is the one they mean. ``None`` or ``"none"``: raw mode.

    Raises
    ------
    ValueError
        If a file is malformed (naming the file and line), or the vocab and merges do not
        fit together (:func:`~bpetrain.formats._vocab.tokenizer_from_vocab`).
    """
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    vocab_path = os.path.join(directory, VOCAB_NAME) if os.path.isdir(path) else os.fspath(path)
    return load_files(vocab_path, os.path.join(directory, MERGES_NAME), pat_str=pat_str)


def load_files(vocab_path, merges_path, *, pat_str: str | None = PATTERNS["gpt2"]) -> Tokenizer:
    """Read a vocab file and a merges file of any names, such as ``encoder.json`` and
    ``vocab.bpe`` of OpenAI's GPT-2 release (:func:`load` reads them from a directory).

    Raises
    ------
    ValueError
        As :func:`load`.
    """
    vocab_path, merges_path = os.fspath(vocab_path), os.fspath(merges_path)
    vocab = read_json(vocab_path)
    if not isinstance(vocab, dict):
        raise ValueError(f"{vocab_path}: expected one JSON object of token -> id")  # noqa: TRY004 (a malformed file)
    pairs, linenos = [], []
    with open(merges_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if lineno == 1 and line.startswith("#version"):
                continue
            parts = line.rstrip("\n").split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"{merges_path}:{lineno}: expected 'left right', got {line[:60]!r}")
            pairs.append((parts[0], parts[1]))
            linenos.append(lineno)
    return tokenizer_from_vocab(
        vocab,
        pairs,
        pat_str=resolve_pattern(pat_str),
        special_tokens={},
        name=vocab_path,
        merges_at=lambda k: f"{merges_path}:{linenos[k]}",
        extra_tokens_are_special=True,
    )
