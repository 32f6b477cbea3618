"""Parity-aware BPE: each merge is chosen for the language whose text is compressed worst.

Foroutan, Meister, Paul, Niklaus, Ahmadi, Bosselut and Sennrich, "Parity-Aware
Byte-Pair Encoding: Improving Cross-lingual Fairness in Tokenization" (arXiv 2508.04796).
Plain BPE merges the most frequent pair of the whole corpus, so the languages with the
most text get the long tokens and the others are cut into many short ones. Here the
pieces are counted per language; each step picks the language that is worst off (the
most tokens on a parallel dev set, or the lowest compression on its training text
relative to a target ratio), merges that language's most frequent pair, and applies
the merge to every language. The rules are written out as rule 8 of
:mod:`bpetrain._reference` (:func:`~bpetrain._reference.train_parity`), which the
tests compare this module with, merge for merge.

The compiled path keeps one :class:`~bpetrain.training._merge.PairMerger` per language,
one per dev set (only their token counts matter) and, for ``global_merges``, one on the
union of the languages; each merge is fed to all of them
(:meth:`~bpetrain.training._merge.PairMerger.merge_pair`), and the chosen language's
merger names its best pair (:meth:`~bpetrain.training._merge.PairMerger.best_pair`).

Against Hugging Face ``tokenizers``' ``ParityBpeTrainer`` (same argument names where
they mean the same: ``variant``, ``ratio``, ``global_merges``, ``window_size``,
``alpha``, ``min_frequency``, ``max_token_length``): ``vocab_size`` counts everything
as in :class:`~bpetrain.BpeTrainer` (its ``num_merges`` is ``vocab_size - 256 -
len(special_tokens)``); ties between pairs of equal count go to the smallest ids (its
own: the largest pair of ``ByteLevel`` strings); a dev set or ratios are required (it
falls back to the training text, which the largest language dominates) and not both
(it takes the ratios); a language that runs out of pairs is dropped before the window
records the choice (it records it). Where no tie and no exhausted language is met the
merges are the same (``tests/test_parity.py``).
"""
from __future__ import annotations

import os
import time
import warnings
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import orjson

from bpetrain._util.progress import progress_bar
from bpetrain.counting.counts import PieceCounter, PieceTable
from bpetrain.counting.inputs import expand_inputs, read_blocks
from bpetrain.splitting.pattern import encode_utf8
from bpetrain.tokenizer import Tokenizer
from bpetrain.training._merge import PairMerger
from bpetrain.training.trainer import (
    HF_BYTE_IDS, MAX_VOCAB_SIZE, MERGES_PER_STEP, BpeTrainer, VocabSizeNotReachedWarning, _check_int, _check_table,
)

__all__ = ["ParityBpeTrainer", "ParityStats", "VARIANTS"]

VARIANTS = ("base", "window")
#: BpeTrainer's options that mean the same here (not new_ids_from: parity training starts from the bytes).
SHARED_OPTIONS = ("pat_str", "special_tokens", "min_frequency", "show_progress", "max_token_length", "tie_break")
RECORD_BATCH_BYTES = 1 << 22  # text gathered per language before it is counted


@dataclass
class ParityStats:
    """What a parity-aware run read and produced, per language.

    Attributes
    ----------
    languages : list of str
        The language names, in the order of every array below.
    seconds : float
        Wall time of the whole run.
    n_train_bytes : numpy.ndarray of int64, shape (n_languages,)
        Bytes of each language's training pieces (the tokens before any merge).
    n_train_tokens : numpy.ndarray of int64, shape (n_languages,)
        Tokens of each language's training pieces after all merges.
    n_dev_bytes, n_dev_tokens : numpy.ndarray of int64, shape (n_languages,), or None
        The same for the dev sets (None without one).
    chosen : numpy.ndarray of int32, shape (n_merges,)
        The language each merge was chosen for (an index of ``languages``; -1 for the
        ``global_merges`` chosen on all languages together).
    """

    languages: list[str]
    seconds: float
    n_train_bytes: np.ndarray
    n_train_tokens: np.ndarray
    n_dev_bytes: np.ndarray | None
    n_dev_tokens: np.ndarray | None
    chosen: np.ndarray

    def table(self) -> list[dict]:
        """One row per language: bytes, tokens and bytes per token of the training text
        (and the dev set), and how many merges were chosen for it."""
        rows = []
        for i, name in enumerate(self.languages):
            row = {"language": name, "merges_chosen": int((self.chosen == i).sum()),
                   "train_bytes": int(self.n_train_bytes[i]), "train_tokens": int(self.n_train_tokens[i]),
                   "train_bytes_per_token": _ratio(self.n_train_bytes[i], self.n_train_tokens[i])}
            if self.n_dev_bytes is not None:
                row.update(dev_bytes=int(self.n_dev_bytes[i]), dev_tokens=int(self.n_dev_tokens[i]),
                           dev_bytes_per_token=_ratio(self.n_dev_bytes[i], self.n_dev_tokens[i]))
            rows.append(row)
        return rows


class ParityBpeTrainer:
    """Train a byte-level BPE tokenizer that is fair across languages (parity-aware BPE).

    Parameters
    ----------
    vocab_size : int
        Target vocabulary size, >= 256 + len(special_tokens), as for :class:`~bpetrain.BpeTrainer`.
    variant : {"base", "window"}, default "base"
        ``base``: each merge goes to the language compressed worst. ``window`` (the
        paper's moving-window balancing): the worst language that made at most
        ``alpha / n_languages`` of the last ``window_size`` choices.
    ratio : sequence or mapping of float, optional
        Target compression per language (its order, or by name): the language with the
        lowest ``(initial tokens / tokens) / ratio`` on its training text is chosen, so a
        larger ratio gives a language more merges. Instead of a dev set.
    global_merges : int, default 0
        The first merges are chosen on all languages together, as plain BPE would
        (the paper's hybrid variant).
    window_size : int, default 100
    alpha : float, default 2.0
        The window variant's parameters (``alpha > 0``).
    pat_str, special_tokens, min_frequency, show_progress, max_token_length, tie_break
        As for :class:`~bpetrain.BpeTrainer`. A language whose best pair occurs fewer
        than ``min_frequency`` times gets no more merges.

    Raises
    ------
    TypeError
        If an option is unknown or of the wrong type.
    ValueError
        As :class:`~bpetrain.BpeTrainer`, or if ``variant`` is unknown, ``window_size``
        is below 1, ``alpha`` is not a positive number, ``global_merges`` is negative or
        a ratio is not a positive number.
    """

    def __init__(self, vocab_size: int, *, variant: str = "base", ratio=None, global_merges: int = 0,
                 window_size: int = 100, alpha: float = 2.0, **options):
        unknown = sorted(set(options).difference(SHARED_OPTIONS))
        if unknown:
            raise TypeError(
                f"ParityBpeTrainer got unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; the "
                f"options are vocab_size, variant, ratio, global_merges, window_size, alpha, {', '.join(SHARED_OPTIONS)}"
            )
        #: The plain trainer with the shared options: it checks them and counts the text.
        self.plain = BpeTrainer(vocab_size, **options)
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(map(repr, VARIANTS))}, got {variant!r}")
        _check_int("global_merges", global_merges)
        _check_int("window_size", window_size)
        if global_merges < 0:
            raise ValueError(f"global_merges must be >= 0, got {global_merges}")
        if window_size < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size}")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < float("inf"):
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        if ratio is not None:
            values = ratio.values() if isinstance(ratio, Mapping) else ratio
            for value in values:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                    raise ValueError(f"each ratio must be a positive number, got {value!r}")
        self.vocab_size = vocab_size
        self.variant = variant
        self.ratio = ratio
        self.global_merges = global_merges
        self.window_size = window_size
        self.alpha = float(alpha)
        #: :class:`ParityStats` of the last run, or None.
        self.stats: ParityStats | None = None

    def __repr__(self) -> str:
        return (f"ParityBpeTrainer(vocab_size={self.vocab_size}, variant={self.variant!r}, ratio={self.ratio!r}, "
                f"global_merges={self.global_merges}, window_size={self.window_size}, alpha={self.alpha}, "
                f"min_frequency={self.plain.min_frequency}, tie_break={self.plain.tie_break!r})")

    # ------------------------------------------------------------------ inputs

    def train(self, languages, *, dev=None, language_field: str | None = None, documents: str = "file",
              input_format: str = "auto", text_field: str = "text", num_threads: int | None = None) -> Tokenizer:
        """Train on files, one group per language.

        Parameters
        ----------
        languages : mapping of str to paths, sequence of paths, or paths
            Each language's files (anything :meth:`BpeTrainer.train` reads), by name
            (``{"en": "en.txt", "sw": ["sw/", "more-sw.txt"]}``) or in order (named
            ``"0"``, ``"1"``, ...). With ``language_field``: JSON Lines files whose
            records name their language in that field.
        dev : same form as ``languages``, optional
            The dev set: parallel text (the same content in every language), one per
            language, with the same names. Required unless the trainer has ``ratio``.
        language_field : str, optional
            The JSON Lines field that names each record's language (``languages`` and
            ``dev`` are then files of records, each record a document; ``text_field``
            holds the text).
        documents, input_format, text_field, num_threads
            As for :meth:`BpeTrainer.train`.

        Returns
        -------
        Tokenizer

        Raises
        ------
        ValueError
            If a language has no text, the dev set names other languages, the
            ratios do not name one per language, or ``documents`` or ``input_format`` is
            given with ``language_field``; as :meth:`BpeTrainer.train` for bad files.
        """
        started = time.perf_counter()
        reading = {"documents": documents, "input_format": input_format, "text_field": text_field,
                   "num_threads": num_threads}
        if language_field is not None:
            if documents != "file" or input_format not in ("auto", "jsonl"):
                raise ValueError(f"with language_field every record is a document of JSON Lines: documents="
                                 f"{documents!r} and input_format={input_format!r} do not apply (leave them out)")
            counters = self._count_records(languages, language_field, text_field)
            dev_counters = None if dev is None else self._count_records(dev, language_field, text_field)
        else:
            counters = {name: self.plain.count(files, **reading) for name, files in _named(languages).items()}
            dev_counters = None if dev is None else {
                name: self.plain.count(files, **reading) for name, files in _named(dev).items()}
        return self._train_counters(counters, dev_counters, started)

    def train_from_iterator(self, languages, *, dev=None, text_field: str = "text") -> Tokenizer:
        """Train on documents from iterators, one per language (Hugging Face's
        ``ParityBpeTrainer.train_from_iterator(train_iterators, dev_iterators)``).

        Parameters
        ----------
        languages : mapping of str to iterable, or sequence of iterables
            Each language's documents, as :meth:`BpeTrainer.train_from_iterator` takes them.
        dev : same form, optional
            The parallel dev set (see :meth:`train`).
        text_field : str, default "text"
            The field of mapping items that holds the text.
        """
        started = time.perf_counter()
        counters = {name: self._count_iterator(docs, text_field) for name, docs in _named(languages).items()}
        dev_counters = None if dev is None else {
            name: self._count_iterator(docs, text_field) for name, docs in _named(dev).items()}
        return self._train_counters(counters, dev_counters, started)

    def _count_iterator(self, documents: Iterable, text_field: str) -> PieceCounter:
        counter = PieceCounter(self.plain.pat_str, self.plain.special_tokens)
        counter.update(documents, text_field=text_field)
        return counter

    def _count_records(self, files, language_field: str, text_field: str) -> dict[str, PieceCounter]:
        """Count JSON Lines records into one counter per value of ``language_field``, in
        the order the languages first appear."""
        counters: dict[str, PieceCounter] = {}
        pending: dict[str, list[bytes]] = {}
        sizes: dict[str, int] = {}
        for source in expand_inputs(files, "jsonl"):
            lineno, rest = 0, b""
            for block in [*read_blocks(source), b"\n"]:
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    lineno += 1
                    if not line.strip():
                        continue
                    name, text = _language_record(line, language_field, text_field, f"{source.path}:{lineno}")
                    if name not in counters:
                        counters[name] = PieceCounter(self.plain.pat_str, self.plain.special_tokens)
                        pending[name], sizes[name] = [], 0
                    pending[name].append(text)
                    sizes[name] += len(text)
                    if sizes[name] >= RECORD_BATCH_BYTES:
                        counters[name].update(pending[name])
                        pending[name], sizes[name] = [], 0
        for name, batch in pending.items():
            counters[name].update(batch)
        return counters

    # ---------------------------------------------------------------- training

    def _train_counters(self, counters: dict[str, PieceCounter], dev_counters: dict[str, PieceCounter] | None,
                        started: float) -> Tokenizer:
        # 1. the languages, their tables, the dev set or the ratios
        names = list(counters)
        if not names:
            raise ValueError("give at least one language")
        tables = [counters[name].table() for name in names]
        for name, table in zip(names, tables):
            try:
                _check_table(table, counters[name].n_input_bytes)
            except ValueError as exc:
                raise ValueError(f"language {name!r}: {exc}") from None
        dev_tables = None if dev_counters is None else self._dev_tables(names, dev_counters)
        ratios = self._ratios(names, dev_tables)
        plain = self.plain
        n_wanted = self.vocab_size - 256 - len(plain.special_tokens)
        # 2. the kernels: one per language, one per dev set, one on the union for the global merges
        mergers = [self._merger(table, n_wanted) for table in tables]
        dev_mergers = [] if dev_tables is None else [self._merger(table, n_wanted) for table in dev_tables]
        union = None
        if self.global_merges:
            counter = PieceCounter(plain.pat_str, plain.special_tokens)
            for table in tables:
                counter.add_table(table)
            union = self._merger(counter.table(), n_wanted)
        # 3. the merges
        merges, chosen = self._merge(mergers, dev_mergers, union, ratios, n_wanted, [t.n_bytes for t in tables],
                                     [] if dev_tables is None else [t.n_bytes for t in dev_tables])
        # 4. the tokenizer, as BpeTrainer makes it, and what the run did per language
        byte_ids = HF_BYTE_IDS if plain.tie_break == "hf" else None
        tokenizer = plain._tokenizer(merges, None, plain.pat_str, byte_ids)
        n_bytes = np.array([t.n_bytes for t in tables], dtype=np.int64)
        dev_bytes = None if dev_tables is None else np.array([t.n_bytes for t in dev_tables], dtype=np.int64)
        self.stats = ParityStats(
            languages=names,
            seconds=time.perf_counter() - started,
            n_train_bytes=n_bytes,
            n_train_tokens=n_bytes - np.array([m.n_tokens_removed for m in mergers], dtype=np.int64),
            n_dev_bytes=dev_bytes,
            n_dev_tokens=None if dev_bytes is None else
            dev_bytes - np.array([m.n_tokens_removed for m in dev_mergers], dtype=np.int64),
            chosen=np.array(chosen, dtype=np.int32),
        )
        return tokenizer

    def _dev_tables(self, names: list[str], dev_counters: dict[str, PieceCounter]) -> list[PieceTable]:
        if sorted(dev_counters) != sorted(names):
            raise ValueError(
                f"the dev set must have one part per language, with the same names: the languages are {names}, "
                f"the dev set has {list(dev_counters)}"
            )
        if self.ratio is not None:
            raise ValueError("give a dev set or ratios, not both: the dev set measures what the ratios set by hand")
        return [dev_counters[name].table() for name in names]

    def _ratios(self, names: list[str], dev_tables) -> list[float] | None:
        if dev_tables is not None:
            return None
        if self.ratio is None:
            raise ValueError(
                "parity-aware training needs a dev set (dev=..., parallel text per language) or target ratios "
                "(ratio=...): without either, the language with the most text decides, as in plain BPE"
            )
        if isinstance(self.ratio, Mapping):
            if sorted(self.ratio) != sorted(names):
                raise ValueError(f"ratio names {sorted(self.ratio)}, the languages are {names}")
            return [float(self.ratio[name]) for name in names]
        ratios = [float(r) for r in self.ratio]
        if len(ratios) != len(names):
            raise ValueError(f"ratio has {len(ratios)} values for {len(names)} languages; give one per language")
        return ratios

    def _merger(self, table: PieceTable, n_wanted: int) -> PairMerger:
        """A kernel on ``table`` that tracks every pair (``merge_pair`` needs them all)."""
        plain = self.plain
        limit = MAX_VOCAB_SIZE if plain.max_token_length is None else min(plain.max_token_length, MAX_VOCAB_SIZE)
        data = table.data if plain.tie_break == "rustbpe" else HF_BYTE_IDS[table.data]
        return PairMerger(data, table.offsets, table.counts, n_wanted, 1, limit)

    def _merge(self, mergers, dev_mergers, union, ratios, n_wanted, train_left: list[int], dev_left: list[int]
               ) -> tuple[list[tuple[int, int]], list[int]]:
        """Rule 8 of :mod:`bpetrain._reference` on the kernels: choose, merge everywhere
        (``train_left``, ``dev_left``: the tokens of each language's text, kept current)."""
        min_frequency = self.plain.min_frequency
        initial = list(train_left)  # tokens of each language's training text, then after each merge
        window: deque = deque(maxlen=self.window_size)
        share = self.alpha / len(mergers)
        dropped: set[int] = set()
        merges: list[tuple[int, int]] = []
        chosen: list[int] = []
        with progress_bar(total=n_wanted, unit="merge", desc="merging", disable=not self.plain.show_progress) as bar:
            while len(merges) < n_wanted:
                if len(merges) < self.global_merges:
                    language, best = -1, union.best_pair()
                    if best is None or best[0] < min_frequency:
                        break
                else:
                    union = None  # its memory can go
                    live = [i for i in range(len(mergers)) if i not in dropped]
                    if not live:
                        break
                    if ratios is None:
                        order = sorted(live, key=lambda i: (-dev_left[i], i))
                    else:
                        order = sorted(live, key=lambda i: (initial[i] / train_left[i] / ratios[i], i))
                    language = order[0]
                    if self.variant == "window":
                        language = next((i for i in order if window.count(i) / self.window_size <= share), order[0])
                    best = mergers[language].best_pair()
                    if best is None or best[0] < min_frequency:
                        dropped.add(language)
                        continue
                    if self.variant == "window":
                        window.append(language)
                _, left, right = best
                for i, merger in enumerate(mergers):
                    train_left[i] -= merger.merge_pair(left, right)
                for i, merger in enumerate(dev_mergers):
                    dev_left[i] -= merger.merge_pair(left, right)
                if union is not None:
                    union.merge_pair(left, right)
                merges.append((left, right))
                chosen.append(language)
                if not len(merges) % MERGES_PER_STEP:
                    bar.update(MERGES_PER_STEP)
            bar.update(len(merges) % MERGES_PER_STEP)
        if len(merges) < n_wanted:
            warnings.warn(
                f"learned {len(merges)} of the {n_wanted} merges that vocab_size={self.vocab_size} asks for: no "
                f"pair occurs min_frequency={min_frequency} times or more in any language any more; lower "
                "min_frequency or vocab_size, or train on more text",
                VocabSizeNotReachedWarning,
                stacklevel=4,
            )
        return merges, chosen


def _language_record(line: bytes, language_field: str, text_field: str, where: str) -> tuple[str, bytes]:
    """The language and the UTF-8 text of one JSON Lines record."""
    try:
        record = orjson.loads(line)
    except ValueError as exc:
        raise ValueError(f"{where}: not a JSON line ({exc})") from None
    name, text = (record.get(language_field), record.get(text_field)) if isinstance(record, dict) else (None, None)
    if not isinstance(name, str) or not isinstance(text, str):
        raise ValueError(
            f"{where}: a record needs a string {language_field!r} (its language) and a string {text_field!r} "
            "(its text); set language_field and text_field"
        )
    try:
        return name, encode_utf8(text)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _named(groups) -> dict:
    """``groups`` by language name: a mapping as it is, a sequence named "0", "1", ..."""
    if isinstance(groups, Mapping):
        return {str(name): value for name, value in groups.items()}
    if isinstance(groups, (str, bytes, os.PathLike)) or not isinstance(groups, Sequence):
        raise TypeError(
            "give the languages as a mapping of name to files or documents ({'en': 'en.txt', 'sw': 'sw.txt'}) or "
            f"a list with one entry per language, not {type(groups).__name__}"
        )
    return {str(i): value for i, value in enumerate(groups)}


def _ratio(n_bytes, n_tokens) -> float:
    return float(n_bytes) / float(n_tokens) if n_tokens else 0.0
