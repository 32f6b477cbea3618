"""minbpe's ``.model`` (read and written) and ``.vocab`` (written, for people to read).

The format of Andrej Karpathy's minbpe (``minbpe/base.py``, ``Tokenizer.save`` and
``load``)::

    minbpe v1
    <the split pattern; an empty line for BasicTokenizer, i.e. raw mode>
    <number of special tokens>
    <special token> <id>        (one line each)
    <left id> <right id>        (one line per merge, in order; merge k makes id 256 + k)

The ``.vocab`` file prints every token (``[left][right] -> [token] id`` for merges),
with invalid UTF-8 replaced and control characters escaped, so it cannot be read back:
minbpe does not read it either.

minbpe's ids 0..255 are the bytes in byte order, so vocabularies whose bytes come in
another order (cl100k_base, GPT-2) cannot be written. minbpe splits the special-token
lines on white space and strips the pattern line, so special tokens with white space
and patterns with a line break or leading or trailing white space are refused.
"""
from __future__ import annotations

import os
import unicodedata
from typing import TYPE_CHECKING

from bpetrain._util.atomic import atomic_write
from bpetrain._util.read import read_lines
from bpetrain.formats._vocab import Model

if TYPE_CHECKING:
    from bpetrain.tokenizer import Tokenizer

__all__ = ["load", "save"]

MAGIC = "minbpe v1"


def save(tokenizer: Tokenizer, file_prefix) -> None:
    """Write ``file_prefix.model`` and ``file_prefix.vocab``, each atomically.

    Raises
    ------
    ValueError
        If the bytes are not ids 0..255 in byte order, a special token holds white space,
        the pattern holds a line break or starts or ends with white space, two merges
        spell the same bytes, or a token does not encode to itself.
    """
    if tokenizer.byte_ids != list(range(256)):
        raise ValueError(
            "minbpe's ids 0..255 are the bytes in byte order; this vocabulary orders them differently "
            "(it was imported, e.g. from cl100k_base or GPT-2): export it as tiktoken, hf or gpt2 instead"
        )
    if not (tokenizer.pat_str is None or isinstance(tokenizer.pat_str, str)):
        raise ValueError("minbpe splits by one regex and this tokenizer splits by a pipeline of pre-tokenizers; "
                         "export it as hf (or as a bpetrain model file) instead")
    pattern = tokenizer.pat_str or ""
    if pattern != pattern.strip() or "\n" in pattern or "\r" in pattern:
        raise ValueError("minbpe keeps the pattern on one stripped line; this pattern has a line break or "
                         "white space at an end")
    for content in tokenizer.special_tokens:
        if content != "".join(content.split()):
            raise ValueError(f"minbpe splits special-token lines on white space; {content!r} holds some")
    tokenizer.check_exportable("minbpe")
    prefix = os.fspath(file_prefix)
    vocab = tokenizer.vocab
    with atomic_write(prefix + ".vocab", "w", encoding="utf-8", newline="\n") as v:
        for token_id in sorted(vocab):
            if 256 <= token_id < 256 + len(tokenizer.merges):
                a, b = tokenizer.merges[token_id - 256]
                v.write(f"[{_render(vocab[a])}][{_render(vocab[b])}] -> [{_render(vocab[token_id])}] {token_id}\n")
            else:
                v.write(f"[{_render(vocab[token_id])}] {token_id}\n")
        with atomic_write(prefix + ".model", "w", encoding="utf-8", newline="\n") as f:
            f.write(f"{MAGIC}\n{pattern}\n{len(tokenizer.special_tokens)}\n")
            f.writelines(f"{content} {token_id}\n" for content, token_id in tokenizer.special_tokens.items())
            f.writelines(f"{a} {b}\n" for a, b in tokenizer.merges)


def _render(token: bytes) -> str:
    """A token for people: invalid UTF-8 replaced, control characters as ``\\uXXXX`` (minbpe's ``render_token``)."""
    return "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c).startswith("C") else c
        for c in token.decode("utf-8", errors="replace")
    )


def load(path) -> Model:
    """Read a minbpe ``.model`` file (an empty pattern line is raw mode).

    Raises
    ------
    ValueError
        If a line is malformed or the file ends early (naming the file and line).
    """
    name = os.fspath(path)
    lines = read_lines(path, "a minbpe model")
    if lines[-1] == "":
        lines.pop()
    if not lines or lines[0] != MAGIC:
        raise ValueError(f"{name}:1: not a minbpe model (expected {MAGIC!r}, got {(lines or [''])[0][:40]!r})")
    if len(lines) < 3 or not lines[2].isdecimal():
        raise ValueError(f"{name}:3: expected the number of special tokens")
    n_special = int(lines[2])
    special_tokens = {}
    for lineno in range(4, 4 + n_special):
        parts = lines[lineno - 1].split() if lineno <= len(lines) else []
        if len(parts) != 2 or not parts[1].isdecimal():
            raise ValueError(f"{name}:{lineno}: expected a special token line 'token id'")
        if parts[0] in special_tokens:
            raise ValueError(f"{name}:{lineno}: the special token {parts[0]!r} is listed twice")
        special_tokens[parts[0]] = int(parts[1])
    merges = []
    for lineno in range(4 + n_special, len(lines) + 1):
        parts = lines[lineno - 1].split()
        if len(parts) != 2 or not all(p.isdecimal() for p in parts):
            raise ValueError(f"{name}:{lineno}: expected a merge line 'left right', got {lines[lineno - 1][:40]!r}")
        merges.append((int(parts[0]), int(parts[1])))
    return Model(merges, lines[1].strip() or None, special_tokens, None, name)
