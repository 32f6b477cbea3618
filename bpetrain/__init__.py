"""bpetrain: fast, exact byte-level BPE tokenizer training."""
from ._incremental import AppendableEncoder, IntervalCounter
from .encoding import Encoding, load_tiktoken
from .pieces import PieceCounter, PieceTable
from .pretokenize import PATTERNS
from .registry import (
    encoding_for_model,
    encoding_name_for_model,
    get_encoding,
    list_encoding_names,
)
from .tokenizer import Tokenizer
from .trainer import (
    BasePatternWarning,
    BpeTrainer,
    TrainingStats,
    VocabSizeNotReachedWarning,
)

__all__ = [
    "PATTERNS",
    "AppendableEncoder",
    "BasePatternWarning",
    "BpeTrainer",
    "Encoding",
    "IntervalCounter",
    "PieceCounter",
    "PieceTable",
    "Tokenizer",
    "TrainingStats",
    "VocabSizeNotReachedWarning",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "load_tiktoken",
]
__version__ = "0.1.0"
