"""File formats the LLM ecosystem loads, one module each: export and import.

========  ========================================================  =================================
format    files                                                     module
========  ========================================================  =================================
tiktoken  ``PATH`` rank file + ``PATH.json`` sidecar                :mod:`bpetrain.formats.tiktoken`
hf        ``tokenizer.json``, or ``DIR/`` with it and               :mod:`bpetrain.formats.hf`
          ``tokenizer_config.json`` (``transformers``' layout)
gpt2      ``DIR/vocab.json`` + ``DIR/merges.txt``                   :mod:`bpetrain.formats.gpt2`
minbpe    ``PREFIX.model`` + ``PREFIX.vocab``                       :mod:`bpetrain.formats.minbpe`
========  ========================================================  =================================

What each carries: all four hold the merges and the special tokens (GPT-2's as plain
``vocab.json`` entries). The pattern, raw mode (``pat_str=None``) included, is in the
tiktoken sidecar, the ``tokenizer.json`` pre-tokenizer and the minbpe model (an empty
pattern line); GPT-2 files carry none (loading assumes GPT-2's pattern unless told).
minbpe cannot hold bytes ordered other than 0..255 (imported cl100k_base, GPT-2).

Readers return a :class:`Model` (the tokenizer's arguments and the file they came from)
and writers take a :class:`~bpetrain.Tokenizer`: this package does not import the
tokenizer, whose :meth:`~bpetrain.Tokenizer.from_file` and
:meth:`~bpetrain.Tokenizer.export` call it.
"""
from __future__ import annotations

import errno
import importlib
import os
import re
import stat
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from bpetrain._util.read import file_kind, open_unblocked
from bpetrain.formats._vocab import Model

if TYPE_CHECKING:
    from bpetrain.tokenizer import Tokenizer

__all__ = ["FORMATS", "Model", "detect_format", "export", "load"]


class _FormatModules(Mapping):
    """Format name -> its module, imported when first looked up: loading a rank file
    (:func:`bpetrain.load_tiktoken`) does not pay for the Hugging Face, GPT-2 and minbpe
    readers."""

    _NAMES = ("tiktoken", "hf", "gpt2", "minbpe")

    def __getitem__(self, name: str) -> ModuleType:
        if name not in self._NAMES:
            raise KeyError(name)
        return importlib.import_module(f"{__name__}.{name}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)


#: Format name -> module with ``save(tokenizer, path)`` and ``load(path, ...)``.
FORMATS: Mapping[str, ModuleType] = _FormatModules()


def export(tokenizer: Tokenizer, path, format: str, **options) -> None:
    """Write ``tokenizer`` as ``format`` (a key of :data:`FORMATS`) at ``path``.

    Every export first checks that the token bytes are unique and that every token
    encodes to itself; files are written atomically. ``options`` go to the format's
    ``save`` (``hf``: the ``tokenizer_config.json`` fields of a folder, :func:`bpetrain.formats.hf.save`).

    Raises
    ------
    ValueError
        If ``format`` is unknown, the format cannot carry this tokenizer, or takes no
        ``options``.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: the formats are {', '.join(FORMATS)}")
    if options and format != "hf":
        raise ValueError(f"{', '.join(options)} apply to hf folders only, not to {format} files")
    FORMATS[format].save(tokenizer, path, **options)


def load(path, format: str | None = None, **options) -> Model:
    """Read the model at ``path`` in ``format``, or the format its name and content show
    (:meth:`bpetrain.Tokenizer.from_file` makes it a tokenizer).

    Without ``format``: a directory or ``vocab.json`` is gpt2; a file starting
    ``bpetrain model`` is bpetrain's model file, one starting ``minbpe v1`` a minbpe
    model, a JSON object or ``*.json`` hf, another ``*.model`` minbpe (so a damaged one
    gets minbpe's error), ``*.tiktoken`` or ``base64 rank`` lines a tiktoken rank file
    (:func:`detect_format`). ``options`` go to the format's ``load``
    (``pat_str`` for tiktoken and gpt2, ``special_tokens`` for tiktoken).

    Raises
    ------
    ValueError
        If the format is unknown or the file is malformed (naming the file and line).
    """
    if format is None:
        format = detect_format(path)
    if options and format not in ("tiktoken", "gpt2"):
        raise ValueError(
            f"{os.fspath(path)} is a {format} file, which carries its own pattern and special tokens; "
            f"{', '.join(options)} apply to tiktoken and gpt2 files only"
        )
    if format == "bpetrain":
        from bpetrain.formats.model_file import read_model

        return read_model(path)
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: the formats are bpetrain, {', '.join(FORMATS)}")
    return FORMATS[format].load(path, **options)


def detect_format(path) -> str:
    """The format of the model at ``path`` from its name and first bytes (see :func:`load`).

    Raises
    ------
    ValueError
        If the file looks like none of the formats (naming it and its first line), or is
        not a regular file (a pipe or device: name its format).
    IsADirectoryError
        If ``path`` is a folder that holds neither ``tokenizer.json`` nor ``vocab.json``.
    OSError
        If it cannot be opened (it is opened without waiting for a pipe's writer).
    """
    from bpetrain.formats import gpt2, hf, minbpe
    from bpetrain.formats.model_file import MAGIC

    name = os.fspath(path)
    if os.path.isdir(name):  # a folder export: Hugging Face's (tokenizer.json) or GPT-2's
        if os.path.exists(os.path.join(name, hf.TOKENIZER_NAME)):
            return "hf"
        if os.path.exists(os.path.join(name, gpt2.VOCAB_NAME)):
            return "gpt2"
        raise IsADirectoryError(
            errno.EISDIR, f"a folder, holding neither {hf.TOKENIZER_NAME} (Hugging Face) nor {gpt2.VOCAB_NAME} and "
            f"{gpt2.MERGES_NAME} (GPT-2); a model is a file, one of those folders, or an encoding name", name)
    f, status = open_unblocked(name)
    with f:
        if not stat.S_ISREG(status.st_mode):  # its first bytes, once read, are gone
            raise ValueError(
                f"{name} is {file_kind(status.st_mode)}: bpetrain tells a model's format from its first bytes "
                "and then reads it again, which only a regular file allows; name the format with --model-format "
                "(format= in Python)"
            )
        head = f.read(64)
    if head.startswith(MAGIC[:-2].encode()):
        return "bpetrain"
    if head.startswith(minbpe.MAGIC.encode() + b"\n"):
        return "minbpe"
    if os.path.basename(name) == gpt2.VOCAB_NAME:
        return "gpt2"
    if head.lstrip().startswith(b"{") or name.endswith(".json"):
        return "hf"
    if name.endswith(".model"):
        return "minbpe"
    if name.endswith(".tiktoken") or _RANK_LINE.match(head) or not head:
        return "tiktoken"  # an empty file gets the rank-file reader's error
    first = head.split(b"\n")[0][:40]
    raise ValueError(
        f"{name}: not a model file bpetrain can tell: not a bpetrain or minbpe model (their first line), "
        f"tokenizer.json (a JSON object), GPT-2 files (a folder or vocab.json) or a tiktoken rank file "
        f"('base64-token rank' lines); it starts {first!r}. Name the format with --model-format "
        f"(format= in Python) if it is one of them"
    )


#: The start of a tiktoken rank file: a base64 token, a space, a rank, a line break.
_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?\n")
