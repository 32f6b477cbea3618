"""bpetrain: fast, exact byte-level BPE tokenizer training.

The public names load their module on first use (PEP 562 module ``__getattr__``), so
``import bpetrain`` and ``bpetrain --help`` do not pay for numpy, the compiled kernels
or tqdm until something needs them.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from bpetrain._util.version import __version__ as __version__  # re-exported
from bpetrain._util.version import kernels_missing

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ loads these
    from bpetrain._util.cache import CacheInfo, clear_cache_dir, scan_cache
    from bpetrain.encoding._incremental import AppendableEncoder, IntervalCounter
    from bpetrain.encoding.core import Encoding
    from bpetrain.formats.tiktoken import load_tiktoken
    from bpetrain.splitting.names import PATTERNS
    from bpetrain.counting.counts import PieceCounter, PieceTable
    from bpetrain.registry import (
        encoding_for_model,
        encoding_name_for_model,
        get_encoding,
        list_encoding_names,
    )
    from bpetrain.tokenizer import Tokenizer
    from bpetrain.training.parity import ParityBpeTrainer
    from bpetrain.training.trainer import (
        BasePatternWarning,
        BpeTrainer,
        TrainingStats,
        VocabSizeNotReachedWarning,
    )

#: Public name -> the module that defines it.
_HOMES = {
    "AppendableEncoder": ".encoding._incremental",
    "CacheInfo": "._util.cache",
    "clear_cache_dir": "._util.cache",
    "scan_cache": "._util.cache",
    "IntervalCounter": ".encoding._incremental",
    "Encoding": ".encoding.core",
    "load_tiktoken": ".formats.tiktoken",
    "PieceCounter": ".counting.counts",
    "PieceTable": ".counting.counts",
    "PATTERNS": ".splitting.names",
    "encoding_for_model": ".registry",
    "encoding_name_for_model": ".registry",
    "get_encoding": ".registry",
    "list_encoding_names": ".registry",
    "Tokenizer": ".tokenizer",
    "BasePatternWarning": ".training.trainer",
    "BpeTrainer": ".training.trainer",
    "ParityBpeTrainer": ".training.parity",
    "TrainingStats": ".training.trainer",
    "VocabSizeNotReachedWarning": ".training.trainer",
}

__all__ = [
    "PATTERNS",
    "AppendableEncoder",
    "BasePatternWarning",
    "BpeTrainer",
    "CacheInfo",
    "Encoding",
    "IntervalCounter",
    "ParityBpeTrainer",
    "PieceCounter",
    "PieceTable",
    "Tokenizer",
    "TrainingStats",
    "VocabSizeNotReachedWarning",
    "clear_cache_dir",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "load_tiktoken",
    "scan_cache",
]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'bpetrain' has no attribute {name!r}")
    try:
        module = importlib.import_module(home, __name__)
    except ModuleNotFoundError as exc:
        raise kernels_missing(exc) from exc
    value = getattr(module, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    """The public names and the module's own dunder attributes, not the helpers this file imports."""
    return sorted([*__all__, *(name for name in globals() if name.startswith("__"))])
