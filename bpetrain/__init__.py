"""bpetrain: fast, exact byte-level BPE tokenizer training."""
from ._incremental import AppendableEncoder, IntervalCounter
from .encoding import Encoding, load_tiktoken
from .pieces import PieceCounter, PieceTable
from .pretokenize import PATTERNS
from .tokenizer import Tokenizer
from .trainer import BpeTrainer, TrainingStats, VocabSizeNotReachedWarning

__all__ = [
    "PATTERNS",
    "AppendableEncoder",
    "BpeTrainer",
    "Encoding",
    "IntervalCounter",
    "PieceCounter",
    "PieceTable",
    "Tokenizer",
    "TrainingStats",
    "VocabSizeNotReachedWarning",
    "load_tiktoken",
]
__version__ = "0.1.0"
