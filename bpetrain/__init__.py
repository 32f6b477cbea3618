"""bpetrain: fast, exact byte-level BPE tokenizer training."""
from .patterns import PATTERNS
from .pieces import PieceTable
from .tokenizer import Tokenizer
from .trainer import BpeTrainer, TrainingStats, VocabSizeNotReachedWarning

__all__ = ["PATTERNS", "BpeTrainer", "PieceTable", "Tokenizer", "TrainingStats", "VocabSizeNotReachedWarning"]
__version__ = "0.1.0"
