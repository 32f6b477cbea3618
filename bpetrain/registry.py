"""OpenAI's encodings by name and by model, from files already on this machine, and
model references resolved (:func:`resolve_model`).

tiktoken's module-level functions (``tiktoken/registry.py`` and ``tiktoken/model.py``):
:func:`get_encoding`, :func:`list_encoding_names`, :func:`encoding_for_model` and
:func:`encoding_name_for_model`, for the encodings of ``tiktoken_ext/openai_public.py``
(the same names, split patterns, special tokens and files).

bpetrain downloads nothing. Each file is looked for, in this order, in

1. the directory ``$BPETRAIN_VOCABS``, under the name it has on OpenAI's server
   (``cl100k_base.tiktoken``, ``o200k_base.tiktoken``, ``p50k_base.tiktoken``,
   ``r50k_base.tiktoken``; ``encoder.json`` and ``vocab.bpe`` of the GPT-2 release for
   ``gpt2``);
2. tiktoken's cache, where ``tiktoken.get_encoding`` leaves what it downloads:
   ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else ``data-gym-cache`` in the
   temporary directory, each file named by the SHA-1 of its URL (``tiktoken/load.py``).

A file found is checked against the SHA-256 tiktoken expects. ``p50k_edit`` is built from
``p50k_base``'s file and ``o200k_harmony`` from ``o200k_base``'s, as in tiktoken.

Every command and function that takes a model (``bpetrain encode``, ``inspect``,
``export``, ``report``, ``train --base``; :meth:`bpetrain.Tokenizer.from_file`,
:meth:`~bpetrain.Tokenizer.load`, ``BpeTrainer``'s ``base=``) resolves it with
:func:`locate_model`: a model file of any format, a folder, or an encoding name; a rank
file that is one of OpenAI's (by its SHA-256) gets its encoding's pattern and special
tokens.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
from dataclasses import dataclass
from typing import NamedTuple

from bpetrain import formats
from bpetrain._util.read import sha256_file
from bpetrain.encoding.core import Encoding
from bpetrain.formats.tiktoken import read_tiktoken, sidecar_path
from bpetrain.splitting.pattern import PATTERNS

__all__ = [
    "MODEL_PREFIX_TO_ENCODING",
    "MODEL_TO_ENCODING",
    "ModelSource",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "locate_model",
    "openai_rank_file",
    "resolve_model",
]

#: The environment variable naming a directory of vocabulary files.
VOCABS_VARIABLE = "BPETRAIN_VOCABS"


@dataclass(frozen=True)
class VocabFile:
    """A file of OpenAI's server and the SHA-256 tiktoken checks it against."""

    url: str
    sha256: str

    @property
    def name(self) -> str:
        """The file's name on the server (``cl100k_base.tiktoken``)."""
        return self.url.rsplit("/", 1)[1]


_SERVER = "https://openaipublic.blob.core.windows.net/"
_R50K = VocabFile(_SERVER + "encodings/r50k_base.tiktoken",
                  "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
_P50K = VocabFile(_SERVER + "encodings/p50k_base.tiktoken",
                  "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
_CL100K = VocabFile(_SERVER + "encodings/cl100k_base.tiktoken",
                    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7")
_O200K = VocabFile(_SERVER + "encodings/o200k_base.tiktoken",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")
_GPT2_VOCAB = VocabFile(_SERVER + "gpt-2/encodings/main/encoder.json",
                        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783")
_GPT2_MERGES = VocabFile(_SERVER + "gpt-2/encodings/main/vocab.bpe",
                         "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5")


@dataclass(frozen=True)
class EncodingSpec:
    """What an encoding is made of: a pattern name (:data:`bpetrain.PATTERNS`), its files
    (one rank file, or GPT-2's ``encoder.json`` and ``vocab.bpe``), its special tokens,
    and tiktoken's ``explicit_n_vocab`` check."""

    pattern: str
    files: tuple[VocabFile, ...]
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None = None


def _harmony_special_tokens() -> dict[str, int]:
    """o200k_harmony's special tokens: o200k_base's two, ``<|startoftext|>``, and the ids
    200000..201087, named for the chat format or reserved. ``<|reserved_200018|>`` shares
    200018 with ``<|endofprompt|>``, which comes first and so is what 200018 decodes to
    (as in tiktoken)."""
    named = {200002: "<|return|>", 200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>",
             200007: "<|end|>", 200008: "<|message|>", 200012: "<|call|>"}
    special_tokens = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018, "<|startoftext|>": 199998}
    special_tokens.update((named.get(i, f"<|reserved_{i}|>"), i) for i in range(200000, 201088))
    return special_tokens


#: The encodings :func:`get_encoding` knows, in tiktoken's order (``tiktoken_ext/openai_public.py``).
ENCODINGS: dict[str, EncodingSpec] = {
    "gpt2": EncodingSpec("gpt2", (_GPT2_VOCAB, _GPT2_MERGES), {"<|endoftext|>": 50256}, 50257),
    "r50k_base": EncodingSpec("gpt2", (_R50K,), {"<|endoftext|>": 50256}, 50257),
    "p50k_base": EncodingSpec("gpt2", (_P50K,), {"<|endoftext|>": 50256}, 50281),
    "p50k_edit": EncodingSpec(
        "gpt2",
        (_P50K,),
        {"<|endoftext|>": 50256, "<|fim_prefix|>": 50281, "<|fim_middle|>": 50282, "<|fim_suffix|>": 50283},
    ),
    "cl100k_base": EncodingSpec(
        "cl100k",
        (_CL100K,),
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
         "<|endofprompt|>": 100276},
    ),
    "o200k_base": EncodingSpec("o200k", (_O200K,), {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "o200k_harmony": EncodingSpec("o200k", (_O200K,), _harmony_special_tokens()),
}

#: Model name -> encoding name (tiktoken's ``MODEL_TO_ENCODING``, ``tiktoken/model.py``).
MODEL_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(["o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"], "o200k_base"),
    **dict.fromkeys(
        ["gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
         "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"],
        "cl100k_base",
    ),
    **dict.fromkeys(
        ["text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001", "code-cushman-002",
         "code-cushman-001", "davinci-codex", "cushman-codex"],
        "p50k_base",
    ),
    **dict.fromkeys(
        ["text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001", "davinci", "curie", "babbage",
         "ada", "text-similarity-davinci-001", "text-similarity-curie-001", "text-similarity-babbage-001",
         "text-similarity-ada-001", "text-search-davinci-doc-001", "text-search-curie-doc-001",
         "text-search-babbage-doc-001", "text-search-ada-doc-001", "code-search-babbage-code-001",
         "code-search-ada-code-001"],
        "r50k_base",
    ),
    **dict.fromkeys(["text-davinci-edit-001", "code-davinci-edit-001"], "p50k_edit"),
    **dict.fromkeys(["gpt2", "gpt-2"], "gpt2"),
}

#: Model name prefix -> encoding name, tried in this order (more specific prefixes first)
#: when the name is not in :data:`MODEL_TO_ENCODING` (tiktoken's ``MODEL_PREFIX_TO_ENCODING``).
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(
        ["o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-"], "o200k_base"
    ),
    **dict.fromkeys(["gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-"], "cl100k_base"),
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base",
    **dict.fromkeys(["ft:gpt-4", "ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002"], "cl100k_base"),
}

_lock = threading.RLock()
_loaded: dict[str, Encoding] = {}


class RegisteredEncoding(Encoding):
    """An encoding made by :func:`get_encoding`: pickled by its name, and unpickled by
    :func:`get_encoding` in the process that loads it (as tiktoken pickles the encodings
    of its registry), so a process pool is not sent the whole vocabulary."""

    def __reduce__(self):
        return get_encoding, (self.name,)


def get_encoding(encoding_name: str) -> Encoding:
    """The encoding called ``encoding_name``, built once per process from local files.

    Parameters
    ----------
    encoding_name : str
        One of :func:`list_encoding_names`.

    Raises
    ------
    ValueError
        If ``encoding_name`` is not a string or not a known encoding (tiktoken's
        exception), or a file found does not have the SHA-256 tiktoken expects.
    FileNotFoundError
        If a file is in none of the places this module's docstring lists; the message
        names the places and how to get the file.
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"encoding_name must be a str, got {type(encoding_name).__name__}")  # noqa: TRY004 (tiktoken's)
    with _lock:
        if encoding_name not in _loaded:
            spec = ENCODINGS.get(encoding_name)
            if spec is None:
                raise ValueError(
                    f"unknown encoding {encoding_name!r}: the encodings are {', '.join(ENCODINGS)}; "
                    "for other vocabularies build a bpetrain.Encoding or use bpetrain.load_tiktoken"
                )
            paths = [find_file(file, encoding_name) for file in spec.files]
            if len(paths) == 1:
                ranks = read_tiktoken(paths[0])
            else:
                from bpetrain.formats.gpt2 import load_files  # GPT-2's two files: its reader imports numpy

                ranks = _ranks(load_files(*paths))
            _loaded[encoding_name] = RegisteredEncoding(
                encoding_name,
                pat_str=PATTERNS[spec.pattern],
                mergeable_ranks=ranks,
                special_tokens=spec.special_tokens,
                explicit_n_vocab=spec.explicit_n_vocab,
            )
        return _loaded[encoding_name]


def list_encoding_names() -> list[str]:
    """The names :func:`get_encoding` knows."""
    return list(ENCODINGS)


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding a model uses (exact names first, then prefixes).

    Raises
    ------
    KeyError
        If the model is not known (tiktoken's exception).
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise KeyError(
        f"no encoding is known for the model {model_name!r}; pass an encoding name to get_encoding "
        f"(one of {', '.join(ENCODINGS)})"
    )


def encoding_for_model(model_name: str) -> Encoding:
    """:func:`get_encoding` of :func:`encoding_name_for_model`.

    Raises
    ------
    KeyError, ValueError, FileNotFoundError
        As those two functions.
    """
    return get_encoding(encoding_name_for_model(model_name))


def tiktoken_cache_dir() -> str | None:
    """The directory tiktoken caches downloads in, or None if its caching is off
    (``TIKTOKEN_CACHE_DIR=""``), as ``read_file_cached`` in ``tiktoken/load.py`` picks it."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def find_file(file: VocabFile, encoding_name: str) -> str:
    """The path of ``file`` on this machine, checked against its SHA-256.

    The file is hashed 1 MB at a time; one larger than the readers' cap
    (:func:`bpetrain._util.read.max_file_bytes`, 1 GiB) is refused before it is read.

    Raises
    ------
    ValueError
        If the file found has another SHA-256, or is larger than the cap.
    FileNotFoundError
        If it is in none of the places; the message lists them and how to get the file.
    """
    candidates, looked = [], []  # paths to try; lines for the error
    vocabs = os.environ.get(VOCABS_VARIABLE)
    if vocabs:
        candidates.append(os.path.join(vocabs, file.name))
    else:
        looked.append(f"${VOCABS_VARIABLE}/{file.name} (${VOCABS_VARIABLE} is not set)")
    cache = tiktoken_cache_dir()
    if cache:
        candidates.append(os.path.join(cache, hashlib.sha1(file.url.encode()).hexdigest()))
    else:
        looked.append("tiktoken's cache (off: TIKTOKEN_CACHE_DIR is empty)")
    for path in candidates:
        if not os.path.isfile(path):
            looked.append(f"{path} ({'not a regular file' if os.path.exists(path) else 'absent'})")
            continue
        sha256 = sha256_file(path, f"OpenAI's {file.name}")
        if sha256 != file.sha256:
            raise ValueError(
                f"{path} should be {file.url} but its SHA-256 is {sha256}, not {file.sha256} (tiktoken's); "
                "it is damaged or another file: replace it"
            )
        return path
    listing = "".join(f"\n  {line}" for line in looked)
    raise FileNotFoundError(
        f"{encoding_name} needs {file.name} ({file.url}), and bpetrain downloads nothing. Looked for:{listing}\n"
        f"To get it, download it into a directory and set {VOCABS_VARIABLE} to that directory:\n"
        f"  curl -o {file.name} {file.url}\n"
        "or let tiktoken download it into its cache on a machine with network access (and copy the cache "
        f"here, pointing TIKTOKEN_CACHE_DIR at it):\n"
        f"  python -c \"import tiktoken; tiktoken.get_encoding('{encoding_name}')\""
    )


def _ranks(model: formats.Model) -> dict[bytes, int]:
    """Token bytes -> id for the bytes and merges of ``model`` (GPT-2's files)."""
    tokens = [bytes([b]) for b in sorted(range(256), key=(model.byte_ids or range(256)).__getitem__)]
    for a, b in model.merges:
        tokens.append(tokens[a] + tokens[b])
    return {token: rank for rank, token in enumerate(tokens)}


# ------------------------------------------------------------- model references


class ModelSource(NamedTuple):
    """Where a model reference leads (:func:`locate_model`)."""

    #: The model's file or folder; for the ``gpt2`` encoding, GPT-2's ``encoder.json`` and ``vocab.bpe``.
    paths: tuple[str, ...]
    #: ``"bpetrain"``, ``"tiktoken"``, ``"hf"``, ``"gpt2"`` or ``"minbpe"``.
    format: str
    #: What the format's reader is given (``pat_str``, ``special_tokens``).
    options: dict
    #: The encoding :func:`get_encoding` makes of it: a name given, with nothing overridden.
    encoding_name: str | None


def locate_model(ref, *, format: str | None = None, **options) -> ModelSource:
    """Resolve a model reference: what to read, in which format, with which options.

    Parameters
    ----------
    ref : str or os.PathLike
        A model file of any format bpetrain reads (bpetrain, tiktoken, ``tokenizer.json``,
        minbpe), a folder (Hugging Face's or GPT-2's files), or an encoding name of
        :func:`list_encoding_names` that is not also a path (its files are found as
        :func:`get_encoding` finds them).
    format : str, optional
        The file's format; default: :func:`bpetrain.formats.detect_format`.
    **options
        ``pat_str`` and ``special_tokens`` for a format that does not carry them (tiktoken
        without sidecar, GPT-2 files); they override what the reference implies. A
        tiktoken rank file without sidecar and without ``pat_str`` that is one of OpenAI's
        (:func:`openai_rank_file`) gets its encoding's pattern and special tokens.

    Returns
    -------
    ModelSource

    Raises
    ------
    FileNotFoundError
        If ``ref`` is neither a path nor an encoding name, or an encoding's files are not
        on this machine (:func:`find_file`).
    ValueError
        If the format cannot be told (:func:`bpetrain.formats.detect_format`), or an
        encoding name is given another ``format`` than its files'.
    TypeError
        If ``ref`` is not a string or path.
    """
    if not isinstance(ref, (str, os.PathLike)):
        raise TypeError(f"a model is a path or an encoding name, got {type(ref).__name__}")
    name = os.fspath(ref)
    if os.path.exists(name):
        found_format = format or formats.detect_format(name)
        if found_format == "tiktoken" and "pat_str" not in options and not os.path.exists(sidecar_path(name)):
            encoding_name = openai_rank_file(name)
            if encoding_name is not None:
                options = {"pat_str": ENCODINGS[encoding_name].pattern,
                           "special_tokens": ENCODINGS[encoding_name].special_tokens, **options}
        return ModelSource((name,), found_format, options, None)
    spec = ENCODINGS.get(name)
    if spec is None:
        raise FileNotFoundError(
            f"{name}: no such file or folder, and not an encoding name ({', '.join(ENCODINGS)}); a model is a "
            "bpetrain, tiktoken, tokenizer.json or minbpe file, a folder of Hugging Face or GPT-2 files, or one of "
            "those names"
        )
    found_format = "tiktoken" if len(spec.files) == 1 else "gpt2"
    if format not in (None, found_format):
        raise ValueError(f"{name} is an encoding of {found_format} files, not {format}; leave the format out")
    paths = tuple(find_file(file, name) for file in spec.files)
    defaults = {"pat_str": spec.pattern, "special_tokens": spec.special_tokens}
    return ModelSource(paths, found_format, {**defaults, **options}, None if options else name)


def resolve_model(ref, *, format: str | None = None, **options) -> formats.Model:
    """Read the model a reference leads to (:func:`locate_model`, which takes the same
    arguments); :meth:`bpetrain.Tokenizer.from_file` makes it a tokenizer.

    Raises
    ------
    FileNotFoundError, TypeError
        As :func:`locate_model`.
    ValueError
        As :func:`locate_model`, or the file is malformed (:func:`bpetrain.formats.load`).
    """
    source = locate_model(ref, format=format, **options)
    if len(source.paths) == 2:
        from bpetrain.formats.gpt2 import load_files

        return load_files(*source.paths, **source.options)
    return formats.load(source.paths[0], source.format, **source.options)


def openai_rank_file(path) -> str | None:
    """The encoding whose rank file ``path`` is, by its SHA-256 (the first of
    :data:`ENCODINGS` with that one file: ``r50k_base``, ``p50k_base``, ``cl100k_base``,
    ``o200k_base``), or None."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_RANK_FILE_BYTES:
        return None  # (a pipe's bytes, once hashed, would be gone for the reader)
    sha256 = sha256_file(path, "a tiktoken rank file")
    return next((name for name, spec in ENCODINGS.items() if len(spec.files) == 1 and spec.files[0].sha256 == sha256),
                None)


#: No OpenAI rank file is larger (o200k_base.tiktoken has 3.6 MB): larger files are not hashed.
_MAX_RANK_FILE_BYTES = 16 << 20
