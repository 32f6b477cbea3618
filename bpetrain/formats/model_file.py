"""bpetrain's model file (tiktoken's rank file is in :mod:`bpetrain.formats.tiktoken`).

Model file, version 1 (UTF-8 text; the first line is the version, as in minbpe)::

    bpetrain model v1
    pat_str: "<the split pattern as a JSON string, or null for raw mode>"
    special_tokens: {"<|endoftext|>": 1000}
    merges: 744
    101 32
    116 104
    ...

One merge per line, ``left right`` as decimal token ids, in rank order (line ``i``
of the merges makes id ``256 + i``). A pipeline of Hugging Face pre-tokenizers
(:class:`bpetrain.splitting.pipeline.PreTokenizer`) is written where the pattern goes, as
``pat_str: {"pre_tokenizer": <the tokenizer.json pre_tokenizer object>}``.

Version 2 adds one line after ``special_tokens``, ``byte_ids: [33, 34, ...]`` (the id
of each one-byte token, a permutation of 0..255; see :class:`bpetrain.Tokenizer`). It
is written only for models whose bytes are not ids 0..255 in byte order (imported
cl100k_base, GPT-2); every other model stays a version 1 file.

Version 3 (what :meth:`bpetrain.Tokenizer.save` writes) has, after ``special_tokens``, one
JSON value a line:

- ``byte_ids``: as in v2, or null for byte order;
- ``unicode``: whose character classes the pattern splits with
  (:mod:`bpetrain.splitting.unicode`): ``"tiktoken"``, or the classes themselves as
  ``{"source": "regex 2026.11.19", "classes": {"Lu": "41-5a c0-d6 ...", ...}}`` (about
  40 KB), recorded when the model is saved, so that the model splits the same way after
  the ``regex`` module moves to another Unicode version (null: the installed ``regex``
  module's; version 1 and 2 files say nothing and mean the same);
- what an imported vocabulary adds (:class:`bpetrain.Tokenizer`'s imported layout, or a
  tokenizer that remembers its ``tokenizer.json``): ``ignore_merges``, ``added_tokens`` (a
  list of ``[content, id, special, lstrip, rstrip, single_word, normalized]``, or null for
  default flags) and ``origin`` (an object, or null);
- ``tokens: N`` (null in the trained layout) followed by ``N`` lines ``id base64(bytes)``;

then the merges as in v1 (``left right`` ids; in the imported layout each makes the token
its parts spell).
"""
from __future__ import annotations

import base64
import binascii
import json
import os

from bpetrain._util.atomic import atomic_write
from bpetrain._util.read import loads_json, read_lines
from bpetrain.encoding.added_tokens import AddedToken
from bpetrain.formats._vocab import Model
from bpetrain.splitting.pipeline import pat_str_from_json, pat_str_to_json
from bpetrain.splitting.unicode import UnicodeTable, regex_table

__all__ = ["read_model", "write_model"]

MAGIC = "bpetrain model v1"
MAGIC_V2 = "bpetrain model v2"
MAGIC_V3 = "bpetrain model v3"


def write_model(path, *, merges, pat_str, special_tokens, byte_ids=None, unicode_version=None, tokens=None,
                ignore_merges=False, added_tokens=None, origin=None) -> None:
    """Write a model file atomically (see the module docstring for the format).

    ``unicode_version`` (``"tiktoken"``, ``"regex"``: the installed ``regex`` module's
    classes, recorded as a table, or a :class:`~bpetrain.splitting.unicode.UnicodeTable`),
    ``tokens``, ``ignore_merges``, ``added_tokens`` or ``origin`` make it a version 3 file;
    without them, ``byte_ids`` (None or a permutation of 0..255) makes it a version 2 file.
    """
    if unicode_version == "regex":
        unicode_version = regex_table()
    v3 = (unicode_version is not None or tokens is not None or ignore_merges or added_tokens is not None
          or origin is not None)
    with atomic_write(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"{MAGIC_V3 if v3 else MAGIC if byte_ids is None else MAGIC_V2}\n")
        f.write(f"pat_str: {json.dumps(pat_str_to_json(pat_str), ensure_ascii=False)}\n")
        f.write(f"special_tokens: {json.dumps(special_tokens, ensure_ascii=False)}\n")
        if v3:
            f.write(f"byte_ids: {json.dumps(None if byte_ids is None else list(byte_ids))}\n")
            unicode = unicode_version.to_json() if isinstance(unicode_version, UnicodeTable) else unicode_version
            f.write(f"unicode: {json.dumps(unicode)}\n")
            f.write(f"ignore_merges: {json.dumps(bool(ignore_merges))}\n")
            added = None if added_tokens is None else [list(t) for t in added_tokens]
            f.write(f"added_tokens: {json.dumps(added, ensure_ascii=False)}\n")
            f.write(f"origin: {json.dumps(origin, ensure_ascii=False)}\n")
            f.write(f"tokens: {json.dumps(None if tokens is None else len(tokens))}\n")
            f.writelines(f"{i} {base64.b64encode(t).decode()}\n" for i, t in sorted((tokens or {}).items()))
        elif byte_ids is not None:
            f.write(f"byte_ids: {json.dumps(list(byte_ids))}\n")
        f.write(f"merges: {len(merges)}\n")
        f.writelines(f"{a} {b}\n" for a, b in merges)


def read_model(path) -> Model:
    """Read a model file: its ``merges``, ``pat_str``, ``special_tokens`` and ``byte_ids``
    (None in a v1 file), ``unicode_version`` (None before v3) and, for an imported
    vocabulary, its tokens, flags and origin.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a bpetrain model file of a version this release reads, or a
        line is malformed; the message names the file and the line.
    """
    name = os.fspath(path)
    lines = read_lines(path, "a bpetrain model file")
    if not lines[0].startswith("bpetrain model "):
        raise ValueError(f"{name}:1: not a bpetrain model file (expected {MAGIC!r}, got {lines[0][:40]!r})")
    if lines[0] not in (MAGIC, MAGIC_V2, MAGIC_V3):
        raise ValueError(
            f"{name}:1: model file version {lines[0][15:]!r} is not supported (this release reads v1 to v3)"
        )

    def field(lineno: int, key: str):
        line = lines[lineno - 1] if lineno <= len(lines) else ""
        if not line.startswith(f"{key}: "):
            raise ValueError(f"{name}:{lineno}: expected '{key}: ...', got {line[:40]!r}")
        return loads_json(line[len(key) + 2 :], f"{name}:{lineno}: {key}")

    pat_str = pat_str_from_json(field(2, "pat_str"), f"{name}:2: pat_str")
    special_tokens = field(3, "special_tokens")
    if not isinstance(special_tokens, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in special_tokens.values()
    ):
        raise ValueError(f"{name}:3: special_tokens must be an object of token -> integer id")
    byte_ids = None
    n_header = 4
    extra: dict = {}
    if lines[0] in (MAGIC_V2, MAGIC_V3):
        byte_ids = field(4, "byte_ids")
        if not (byte_ids is None and lines[0] == MAGIC_V3) and not (
            isinstance(byte_ids, list)
            and all(type(b) is int for b in byte_ids)
            and sorted(byte_ids) == list(range(256))
        ):
            raise ValueError(f"{name}:4: byte_ids must be a permutation of the integers 0..255")
        n_header = 5
    if lines[0] == MAGIC_V3:
        extra, n_header = _read_v3(name, lines, field)
    n_merges = field(n_header, "merges")
    if not isinstance(n_merges, int) or n_merges < 0:
        raise ValueError(f"{name}:{n_header}: merges must be a count >= 0")
    body = lines[n_header : n_header + n_merges]
    rest = lines[n_header + n_merges :]
    if len(body) < n_merges or rest != [""]:
        raise ValueError(
            f"{name}: the header announces {n_merges} merges but the file holds "
            f"{len(lines) - n_header - 1} merge lines (truncated or edited file)"
        )
    merges = []
    for i, line in enumerate(body):
        parts = line.split(" ")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(
                f"{name}:{i + n_header + 1}: expected two token ids 'left right', got {line[:40]!r}"
            )
        merges.append((int(parts[0]), int(parts[1])))
    return Model(merges, pat_str, special_tokens, byte_ids, name, **extra)


def _read_v3(name: str, lines: list[str], field) -> tuple[dict, int]:
    """The fields a v3 file adds (lines 5 to 9, then the tokens), and the merges header's line."""
    unicode_version = field(5, "unicode")
    if isinstance(unicode_version, dict):
        unicode_version = UnicodeTable.from_json(unicode_version, f"{name}:5: unicode")
    elif unicode_version not in ("tiktoken", None):
        raise ValueError(
            f"{name}:5: unicode must be \"tiktoken\", null or a table {{\"source\": ..., \"classes\": ...}}"
        )
    ignore_merges = field(6, "ignore_merges")
    if not isinstance(ignore_merges, bool):
        raise ValueError(f"{name}:6: ignore_merges must be true or false")
    added = field(7, "added_tokens")
    if added is not None:
        if not (isinstance(added, list) and all(
            isinstance(t, list) and len(t) == 7 and isinstance(t[0], str) and type(t[1]) is int
            and all(isinstance(f, bool) for f in t[2:]) for t in added
        )):
            raise ValueError(
                f"{name}:7: added_tokens must be null or a list of [content, id, special, lstrip, rstrip, "
                "single_word, normalized]"
            )
        added = tuple(AddedToken(*t) for t in added)
    origin = field(8, "origin")
    if origin is not None and not isinstance(origin, dict):
        raise ValueError(f"{name}:8: origin must be an object or null")
    n_tokens = field(9, "tokens")
    if n_tokens is not None and (type(n_tokens) is not int or n_tokens < 0):
        raise ValueError(f"{name}:9: tokens must be a count >= 0 or null")
    tokens = None
    if n_tokens is not None:
        tokens = {}
        for lineno in range(10, 10 + n_tokens):
            line = lines[lineno - 1] if lineno <= len(lines) else ""
            parts = line.split(" ")
            try:
                if len(parts) != 2 or not parts[0].isdigit():
                    raise ValueError
                tokens[int(parts[0])] = base64.b64decode(parts[1], validate=True)
            except (ValueError, binascii.Error):
                raise ValueError(f"{name}:{lineno}: expected 'id base64-token', got {line[:40]!r}") from None
    extra = {"unicode_version": unicode_version, "tokens": tokens, "ignore_merges": ignore_merges,
             "added_tokens": added, "origin": origin}
    return extra, 10 + (n_tokens or 0)
