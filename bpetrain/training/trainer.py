"""The training front end: options, input reading, progress, and the compiled kernel."""
from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bpetrain import formats
from bpetrain.training._merge import PairMerger
from bpetrain.encoding._encoder import BytePairEncoder
from bpetrain._util.byte_alphabet import BYTE_TO_CHAR
from bpetrain._util.progress import progress_bar
from bpetrain._util.threads import thread_map, usable_cores
from bpetrain.counting.parallel import count_sources
from bpetrain.encoding.core import Encoding
from bpetrain.formats.tiktoken import model_of_ranks
from bpetrain.counting.inputs import expand_inputs
from bpetrain.counting.counts import PieceCounter, PieceTable
from bpetrain.splitting.cuts import check_documents
from bpetrain.splitting.names import describe_pattern
from bpetrain.splitting.pattern import resolve_pattern
from bpetrain.tokenizer import Tokenizer
from bpetrain.training import superword
from bpetrain.training.extend import Extension, keeps_ids

__all__ = ["BasePatternWarning", "BpeTrainer", "TrainingStats", "VocabSizeNotReachedWarning"]

MAX_VOCAB_SIZE = 2**31 - 1  # token ids are int32
MERGES_PER_STEP = 256  # merges between progress updates
PROGRESS_EVERY = 1024  # documents between progress updates


class _DefaultPattern(str):
    """The default ``pat_str``: ``is DEFAULT_PATTERN`` tells that none was given."""


DEFAULT_PATTERN = _DefaultPattern("cl100k")
OPTIONS = ("pat_str", "special_tokens", "min_frequency", "show_progress", "max_token_length", "tie_break",
           "new_ids_from", "superword_transition", *superword.DEFAULTS)
TIE_BREAKS = ("rustbpe", "hf")
#: HF_BYTE_IDS[b]: the id Hugging Face's byte-level trainer gives byte ``b`` (its
#: ``ByteLevel`` characters sorted by code point; special tokens aside).
HF_BYTE_IDS = np.argsort([ord(BYTE_TO_CHAR[b]) for b in range(256)]).argsort().astype(np.uint8)


class VocabSizeNotReachedWarning(UserWarning):
    """Training stopped before ``vocab_size``: no pair occurs ``min_frequency`` times any more."""


@dataclass
class TrainingStats:
    """What a training run read and produced.

    Attributes
    ----------
    seconds : float
        Wall time of the whole run (reading, counting, merging).
    n_input_bytes : int
        Bytes of input text (UTF-8), special tokens included.
    n_documents : int
        Documents read (files for :meth:`BpeTrainer.train`).
    n_pieces : int
        Unique pieces after pre-tokenization.
    n_piece_bytes : int
        Bytes in all pieces (with repetition): the text that was trained on.
    n_start_tokens : int
        Tokens the training text has before the run's first merge: ``n_piece_bytes``, or
        when extending a base, the tokens of the pieces encoded with the base.
    n_merges : int
        Merges learned (in this run: a base's merges are not counted).
    n_tokens : int
        Tokens the training text has after all merges.
    merge_counts : numpy.ndarray of int64, shape (n_merges,)
        The weighted count of each merged pair when it was merged: how often the pair
        occurred in the training text (pieces times their counts), counting overlapping
        occurrences (``aaa`` holds ``(a, a)`` twice). Non-increasing except where a merge
        creates a pair more frequent than the ones before it.
    merge_tokens_removed : numpy.ndarray of int64, shape (n_merges,)
        How many tokens merge ``i`` removed from the training text: the occurrences it
        joined, left to right (``aaa`` joins once). ``merge_tokens_removed[i] <=
        merge_counts[i]``, and ``n_start_tokens - merge_tokens_removed[:k].sum()`` is the
        number of tokens of the training text after the first ``k`` merges, so
        ``n_piece_bytes / that`` is the compression curve (:mod:`bpetrain.report`);
        the whole sum is ``n_start_tokens - n_tokens``.

    Examples
    --------
    >>> trainer = BpeTrainer(257, pat_str=None, show_progress=False)
    >>> _ = trainer.train_from_iterator(["aaa"])
    >>> trainer.stats.merge_counts.tolist(), trainer.stats.merge_tokens_removed.tolist()
    ([2], [1])
    """

    seconds: float
    n_input_bytes: int
    n_documents: int
    n_pieces: int
    n_piece_bytes: int
    n_start_tokens: int
    n_merges: int
    n_tokens: int
    merge_counts: np.ndarray
    merge_tokens_removed: np.ndarray

    @property
    def bytes_per_token(self) -> float:
        """Compression on the training text: piece bytes per token after training."""
        return self.n_piece_bytes / self.n_tokens if self.n_tokens else 0.0


class BpeTrainer:
    """Train a byte-level BPE tokenizer.

    The argument names follow Hugging Face ``tokenizers.trainers.BpeTrainer``;
    ``vocab_size`` counts everything (256 byte tokens + merges + special tokens). The
    training rules are written out in :mod:`bpetrain._reference`: highest pair count
    first, ties to the smallest ``(left, right)`` ids, as rustbpe does.

    Parameters
    ----------
    vocab_size : int
        Target vocabulary size, >= 256 + len(special_tokens).
    pat_str : str or None, default "cl100k" (the base's pattern when extending one)
        Split pattern (tiktoken's name for it, as in :class:`~bpetrain.Encoding` and
        :class:`~bpetrain.Tokenizer`): a name of :data:`bpetrain.PATTERNS` (``gpt2``,
        ``cl100k``/``gpt4``, ``o200k``, ``minbpe``, ``nanochat``, ``llama3``),
        any regex for the ``regex`` module, or ``None``/``"none"`` for raw mode (each
        document, or each file, is one piece; nothing is pre-tokenized). Any regex within
        the compiled matcher's syntax (:mod:`bpetrain.splitting._compiler`) splits at
        compiled speed, in parallel.
    special_tokens : sequence of str, default ()
        Strings that are cut out of the training text and get the ids after the merges,
        in this order.
    min_frequency : int, default 2
        A pair is merged only if it occurs at least this often (0 and 1: no threshold).
        When no pair does, training stops early with a :class:`VocabSizeNotReachedWarning`.
    show_progress : bool, default True
        Show tqdm progress bars (bytes read, merges done).
    max_token_length : int or None, default None
        No merge makes a token longer than this many bytes (Hugging Face's name; see the
        docs/training.md, "Options", for how its meaning differs). ``None``: no limit.
    tie_break : {"rustbpe", "hf"}, default "rustbpe"
        Which pair wins among pairs of equal count. ``"rustbpe"``: the smallest
        ``(left, right)`` ids, with the bytes as ids 0..255 (rustbpe's rule). ``"hf"``:
        the smallest ids in Hugging Face's numbering, where the 256 bytes are ordered by
        the code point of their ``ByteLevel`` character (``!`` first, the space as
        ``Ġ`` late): the merges are exactly those of ``tokenizers``' ``BpeTrainer`` with
        a ``ByteLevel`` pre-tokenizer and ``initial_alphabet=ByteLevel.alphabet()``, and
        the returned tokenizer numbers its bytes that way (:attr:`Tokenizer.byte_ids`).
    new_ids_from : int or None, default None
        When extending a base that keeps its ids (a ``tokenizer.json``, or a vocabulary
        only tiktoken's rule reads; :mod:`bpetrain.training.extend`): the first id of the
        new tokens, which must be free with the ids after it. ``None``: the id after the
        last one in use.
        Hugging Face's ``Tokenizer.train(files)`` makes each line a document: train on
        the same files with ``documents="line"`` (``--documents line``) to get its merges.
    superword_transition, superword_pat_str, max_words_per_token, forbid_colon_space : optional
        Superword tokens (SuperBPE, :mod:`bpetrain.training.superword`): with ``superword_transition=T``
        stage 1 trains with ``pat_str`` to T tokens, stage 2 on to ``vocab_size`` on the pieces of
        ``superword_pat_str`` (``"superbpe"``, default; ``"superbpe-original"``; a regex), which the
        tokenizer then splits with, making no token of more than ``max_words_per_token`` words (4;
        None: any) or, with ``forbid_colon_space`` (True), holding ``": "``.

    Raises
    ------
    TypeError
        If an argument has the wrong type (``special_tokens`` given as one string, say),
        or is not an option of this trainer (Hugging Face's ``BpeTrainer`` ignores
        those; the message names them).
    ValueError
        If ``vocab_size`` is below 256 + len(special_tokens) or above 2**31 - 1, the
        pattern is unknown or invalid, the special tokens are empty or repeated,
        ``max_token_length`` is below 1 or ``tie_break`` is unknown.
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        pat_str: str | None = DEFAULT_PATTERN,
        special_tokens: Sequence[str] = (),
        min_frequency: int = 2,
        show_progress: bool = True,
        max_token_length: int | None = None,
        tie_break: str = "rustbpe",
        new_ids_from: int | None = None,
        superword_transition: int | None = None,
        superword_pat_str: str = superword.DEFAULTS["superword_pat_str"],
        max_words_per_token: int | None = superword.DEFAULTS["max_words_per_token"],
        forbid_colon_space: bool = superword.DEFAULTS["forbid_colon_space"],
        **unknown,
    ):
        if unknown:
            raise TypeError(
                f"BpeTrainer got unknown option{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}; "
                f"the options are vocab_size, {', '.join(OPTIONS)}"
            )
        if isinstance(special_tokens, (str, bytes)):
            raise TypeError("special_tokens must be a sequence of strings, e.g. ['<|endoftext|>'], not one string")
        special_tokens = list(special_tokens)
        for token in special_tokens:
            if not isinstance(token, str):
                raise TypeError(f"special tokens must be str, got {type(token).__name__}: {token!r}")
            if not token:
                raise ValueError("special tokens must be non-empty strings")
        if len(set(special_tokens)) != len(special_tokens):
            repeated = sorted({t for t in special_tokens if special_tokens.count(t) > 1})
            raise ValueError(f"special tokens are repeated: {repeated}")
        _check_int("vocab_size", vocab_size)
        _check_int("min_frequency", min_frequency)
        floor = 256 + len(special_tokens)
        if vocab_size < floor:
            raise ValueError(
                f"vocab_size={vocab_size} is below 256 byte tokens + {len(special_tokens)} special "
                f"tokens = {floor}; byte-level BPE needs every byte as a token"
            )
        if vocab_size > MAX_VOCAB_SIZE:
            raise ValueError(f"vocab_size={vocab_size} exceeds {MAX_VOCAB_SIZE}: token ids are int32")
        if min_frequency < 0:
            raise ValueError(f"min_frequency must be >= 0, got {min_frequency}")
        if max_token_length is not None:
            _check_int("max_token_length", max_token_length)
            if max_token_length < 1:
                raise ValueError(f"max_token_length must be >= 1 (bytes) or None for no limit, got {max_token_length}")
        if new_ids_from is not None:
            _check_int("new_ids_from", new_ids_from)
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {', '.join(map(repr, TIE_BREAKS))}, got {tie_break!r}")
        self.vocab_size = vocab_size
        #: Whether ``pat_str`` was given (else training on a ``base`` takes the base's).
        self.pat_str_given = pat_str is not DEFAULT_PATTERN
        self.pat_str = resolve_pattern(pat_str)
        self.special_tokens = special_tokens
        self.min_frequency = max(min_frequency, 1)
        self.show_progress = show_progress
        self.max_token_length = max_token_length
        self.tie_break = tie_break
        self.new_ids_from = new_ids_from
        #: The superword options (:class:`~bpetrain.training.superword.Superword`), or None.
        self.superword = superword.Superword.of(superword_transition, vocab_size, floor, superword_pat_str,
                                                max_words_per_token, forbid_colon_space)
        #: Set on the stages of a superword run: the constraints on new merges, the progress bars' label,
        #: on the run's trainer, the stages' TrainingStats (stage 1's None when it was the base; stats: stage 2's).
        self.superword_rule, self.stage, self.stage_stats = None, "", None
        #: :class:`TrainingStats` of the last run, or None.
        self.stats: TrainingStats | None = None

    def __repr__(self) -> str:
        return (
            f"BpeTrainer(vocab_size={self.vocab_size}, pat_str={describe_pattern(self.pat_str)}, "
            f"special_tokens={self.special_tokens!r}, min_frequency={self.min_frequency}, "
            f"max_token_length={self.max_token_length}, tie_break={self.tie_break!r}{superword.describe(self.superword)})"
        )

    # ------------------------------------------------------------------ inputs

    def train(
        self,
        files: str | os.PathLike | Iterable[str | os.PathLike],
        *,
        documents: str = "file",
        input_format: str = "auto",
        text_field: str = "text",
        num_threads: int | None = None,
        client=None,
        max_pieces: int | None = None,
        base=None,
    ) -> Tokenizer:
        """Train on files: plain text, JSON Lines or Parquet, compressed or not.

        Reading and counting run in parallel (see :mod:`bpetrain.counting.parallel`); the pieces,
        and so the merges, are the same for any number of threads.

        Parameters
        ----------
        files : path or iterable of paths
            Files, directories (every file below, sorted; hidden ones skipped), glob
            patterns, fsspec URLs of any of these (``s3://bucket/dir``, ``hf://...``; the
            backend package is yours to install), or ``"-"`` for standard input. ``.gz``,
            ``.xz`` and ``.zst`` files are decompressed. Text need not be valid UTF-8 (see
            :class:`~bpetrain.counting.counts.PieceCounter` for how invalid bytes are split).
        documents : {"file", "line"}, default "file"
            What a document is in a plain-text file: the whole file, or each line (up to
            and including ``\\n``). In raw mode (``pat_str=None``) each document is one
            piece; with a pattern, the end of a document ends the text the pattern sees.
            JSON Lines records and Parquet rows are always one document each.
        input_format : {"auto", "text", "jsonl", "parquet"}, default "auto"
            ``auto``: ``.jsonl``/``.ndjson`` are JSON Lines, ``.parquet`` Parquet, the
            rest plain text (the name without its compression suffix decides).
        text_field : str, default "text"
            The field of each JSON Lines record, or the Parquet column (reading Parquet
            needs ``pyarrow``), that holds the text.
        num_threads : int, optional
            Counting threads (default: one per CPU this process may use, as for
            :class:`~bpetrain.Encoding`).
        client : dask.distributed.Client, optional
            Count on this Dask cluster instead (see :mod:`bpetrain.counting.cluster`; needs
            ``bpetrain[dask]``): tasks of whole files or ranges of big text files, merged
            on the workers; only the final table comes back. The workers must be able to
            read ``files`` (shared paths or URLs). The merges are the same.
        max_pieces : int, optional
            With ``client``: bound the table that comes back by dropping the rarest pieces
            (whole count levels) on a worker, with a
            :class:`~bpetrain.counting.cluster.PiecesDroppedWarning` saying what was dropped.
            Not exact (the merges may differ); default: keep every piece.
        base : Tokenizer, Encoding, str or os.PathLike, optional
            Extend this vocabulary instead of starting from the bytes (rule 7 of
            :mod:`bpetrain._reference`: each piece starts as its encoding with the base,
            new merges get the ids after the base's; the base's special tokens are not
            kept), or, for a base that keeps its ids (a ``tokenizer.json``), as
            :mod:`bpetrain.training.extend` says (every id kept, its special tokens too).
            A path or an encoding name is read with :meth:`Tokenizer.from_file`.

        Returns
        -------
        Tokenizer

        Raises
        ------
        FileNotFoundError
            If a file does not exist or a glob matches nothing (checked before reading).
        ValueError
            If the files hold no text to train on, an option is invalid (``documents="line"``
            with JSON Lines or Parquet files, whose records are the documents), a compressed
            file is corrupt, or a record is malformed (the message names the file and line).
        """
        if self.superword is not None:
            options = dict(documents=documents, input_format=input_format, text_field=text_field,
                           num_threads=num_threads, client=client, max_pieces=max_pieces)
            return superword.train(self, lambda stage, start: stage.train(files, base=start, **options), base,
                                   BasePatternWarning)
        base = self._base(base)
        self._pattern(base, stacklevel=3)  # warns here, at the caller's line, not in count
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BasePatternWarning)
            counter = self.count(
                files, documents=documents, input_format=input_format, text_field=text_field,
                num_threads=num_threads, client=client, max_pieces=max_pieces, base=base,
            )
        return self._train_counter(counter, base, stacklevel=3)

    def count(
        self,
        files: str | os.PathLike | Iterable[str | os.PathLike],
        *,
        documents: str = "file",
        input_format: str = "auto",
        text_field: str = "text",
        num_threads: int | None = None,
        client=None,
        max_pieces: int | None = None,
        base=None,
    ) -> PieceCounter:
        """Count the pieces of files without training (the first half of :meth:`train`).

        Takes the arguments of :meth:`train` (``base`` only chooses the split pattern). The result's
        :meth:`~bpetrain.counting.counts.PieceCounter.save` writes the counts file that
        :meth:`train_from_counts` trains on, alone or merged with others.

        Returns
        -------
        PieceCounter
        """
        superword.refuse_counts(self)
        check_documents(documents)
        sources = expand_inputs(files, input_format)
        counts_files = [source.path for source in sources if source.path.endswith(".npz")]
        if counts_files:
            raise ValueError(
                f"{counts_files[0]} is a counts file ('bpetrain count' writes them), not text: train on counts files "
                f"with train_from_counts (bpetrain train --counts {counts_files[0]} ...)"
            )
        records = [source for source in sources if source.format != "text"]
        if documents == "line" and records:
            kind = {"jsonl": "JSON Lines", "parquet": "Parquet"}[records[0].format]
            raise ValueError(
                f"documents='line' (--documents line) applies to plain text, but {records[0].path} is {kind}, "
                "whose records are the documents already; leave documents as 'file'"
            )
        pat_str = self._pattern(self._base(base), stacklevel=3)
        if client is not None:
            return self._count_on_cluster(client, sources, pat_str=pat_str, documents=documents,
                                          text_field=text_field, num_threads=num_threads, max_pieces=max_pieces)
        if max_pieces is not None:
            raise ValueError("max_pieces bounds the table a cluster sends back; it needs client=")
        started = time.perf_counter()
        counter = count_sources(
            sources,
            pat_str=pat_str,
            special_tokens=self.special_tokens,
            documents=documents,
            text_field=text_field,
            num_threads=num_threads,
            show_progress=self.show_progress,
        )
        counter.seconds = time.perf_counter() - started
        return counter

    def _count_on_cluster(self, client, sources, *, pat_str, documents, text_field, num_threads, max_pieces):
        from bpetrain.counting.cluster import count_on_dask, group_sources

        if num_threads is not None:
            raise ValueError("num_threads= sets local counting threads; with a client, the Dask workers count")
        if max_pieces is not None:
            _check_int("max_pieces", max_pieces)
            if max_pieces < 1:
                raise ValueError(f"max_pieces must be >= 1, got {max_pieces}")
        tasks = group_sources(sources, pat_str=pat_str, documents=documents)
        return count_on_dask(
            client, tasks, pat_str=pat_str, special_tokens=self.special_tokens, documents=documents,
            text_field=text_field, show_progress=self.show_progress, max_pieces=max_pieces,
        )

    def train_from_counts(
        self,
        counts: Mapping[str | bytes, int] | str | os.PathLike | Iterable[str | os.PathLike],
        *,
        base=None,
    ) -> Tokenizer:
        """Train on pieces already counted: counts files, merged, or a mapping of pieces.

        Parameters
        ----------
        counts : mapping of str or bytes to int, or path or iterable of paths
            Counts files (``.npz`` from :meth:`count` and
            :meth:`~bpetrain.counting.counts.PieceCounter.save`, or ``bpetrain count``),
            whose counts are added up; or a mapping piece -> how often it occurs (int64
            range; a word-frequency list, say), whose keys are pieces: they are neither
            split by the pattern nor searched for special tokens.
        base : Tokenizer, Encoding, str or os.PathLike, optional
            As in :meth:`train` (counts files must be counted with its pattern).

        Returns
        -------
        Tokenizer

        Raises
        ------
        TypeError
            If a key of the mapping is neither ``str`` nor ``bytes``, or a count not an int.
        ValueError
            If a file is not a counts file, or was counted with another split pattern or
            other special tokens than this trainer's.
        """
        superword.refuse_counts(self)
        started = time.perf_counter()
        base = self._base(base)
        pat_str = self._pattern(base, stacklevel=3)
        if isinstance(counts, Mapping):
            table = _table_of(counts)
            return self._train_table(
                table, started, base, pat_str, n_input_bytes=table.n_bytes, n_documents=0, stacklevel=3
            )
        counter = PieceCounter(pat_str, self.special_tokens)
        for path in [counts] if isinstance(counts, (str, os.PathLike)) else counts:
            self._add_counts_file(counter, path)
        counter.seconds = time.perf_counter() - started
        return self._train_counter(counter, base, stacklevel=3)

    def train_from_shards(self, shards, **options) -> Tokenizer:
        """Deprecated spelling of :meth:`train_from_counts` (what ``bpetrain count -o`` writes is a
        counts file); kept for one release.

        Warns
        -----
        DeprecationWarning
            Always.
        """
        warnings.warn("BpeTrainer.train_from_shards is deprecated: use train_from_counts (the same arguments)",
                      DeprecationWarning, stacklevel=2)
        return self.train_from_counts(shards, **options)

    def _add_counts_file(self, counter: PieceCounter, path: str | os.PathLike) -> None:
        """Add the pieces and totals of a counts file to ``counter``, whose options it must have."""
        table, header = PieceTable.load(path)
        for key, mine, shown in (("pat_str", counter.pat_str, describe_pattern),
                                 ("special_tokens", self.special_tokens, repr)):
            if header.get(key) != mine:
                raise ValueError(
                    f"{os.fspath(path)} was counted with {key}={shown(header.get(key))}, but this trainer has "
                    f"{key}={shown(mine)}; train with the options the counts file was counted with, or count again"
                )
        counter.add_table(table)
        counter.n_input_bytes += header.get("n_input_bytes", 0)
        counter.n_documents += header.get("n_documents", 0)

    def train_from_iterator(
        self, iterator: Iterable, length: int | None = None, *, text_field: str = "text", base=None
    ) -> Tokenizer:
        """Train on documents from an iterator (each item, ``str`` or ``bytes``, is one document).

        Parameters
        ----------
        iterator : iterable
            Documents (``str`` or ``bytes``), batches of them (lists), or mappings whose
            ``text_field`` holds either: a Hugging Face ``datasets.Dataset`` or
            ``IterableDataset`` (rows), its ``.iter(batch_size=...)`` (batches), or its
            text column can be passed as they are.
        length : int, optional
            Number of items, for the progress bar's ETA.
        text_field : str, default "text"
            The field of mapping items that holds the text.
        base : Tokenizer, Encoding, str or os.PathLike, optional
            As in :meth:`train`.

        Returns
        -------
        Tokenizer

        Raises
        ------
        TypeError
            If a document is neither ``str`` nor ``bytes``.
        ValueError
            If the documents hold no text to train on, or a mapping has no ``text_field``.
        """
        started = time.perf_counter()
        if self.superword is not None:
            return superword.train_iterator(self, iterator, length, text_field, base, started, BasePatternWarning)
        base = self._base(base)
        counter = PieceCounter(self._pattern(base, stacklevel=3), self.special_tokens)

        def progress(bar):
            n = 0
            for n, document in enumerate(iterator, 1):
                yield document
                if not n % PROGRESS_EVERY:
                    bar.update(PROGRESS_EVERY)
            bar.update(n % PROGRESS_EVERY)

        with progress_bar(total=length, unit="doc", desc="counting", disable=not self.show_progress) as bar:
            counter.update(progress(bar), text_field=text_field)
        counter.seconds = time.perf_counter() - started
        return self._train_counter(counter, base, stacklevel=3)

    # ---------------------------------------------------------------- training

    def _train_counter(self, counter: PieceCounter, base: Tokenizer | None, *, stacklevel: int) -> Tokenizer:
        """Train on a counter's pieces; the counter is emptied so its memory can go, and the
        table of its pieces once the kernel has copied them (no reference is kept here)."""
        return self._train_table(
            _take_table(counter),
            time.perf_counter() - counter.seconds,
            base,
            counter.pat_str,
            n_input_bytes=counter.n_input_bytes,
            n_documents=counter.n_documents,
            stacklevel=stacklevel + 1,
        )

    def _train_table(
        self,
        table: PieceTable,
        started: float,
        base: Tokenizer | None,
        pat_str: str | None,
        *,
        n_input_bytes: int,
        n_documents: int,
        stacklevel: int,
    ) -> Tokenizer:
        """Train on ``table``, from the bytes or from ``base``'s tokens; ``stacklevel``
        points warnings at the user's call."""
        # 1. the table's text, and the merges the vocabulary has room for
        n_piece_bytes = _check_table(table, n_input_bytes)
        n_wanted, extension = self._n_merges_wanted(base)
        # 2. the kernel, with every piece as its bytes (in the tie-break's numbering) or the base's tokens
        merger, byte_ids, n_start_tokens = self._merger(table, base, n_wanted, extension)
        n_pieces = table.n_pieces
        del table
        # 3. the merges
        merges = self._merge(merger, n_wanted, stacklevel=stacklevel + 1)
        # 4. the tokenizer: the base's merges, the new ones, then the special tokens
        if extension is not None:
            tokenizer = extension.tokenizer(merges, self.special_tokens, pat_str)
        else:
            tokenizer = self._tokenizer(merges, base, pat_str, byte_ids)
        # 5. what the run read and produced
        self.stats = TrainingStats(
            seconds=time.perf_counter() - started,
            n_input_bytes=n_input_bytes,
            n_documents=n_documents,
            n_pieces=n_pieces,
            n_piece_bytes=n_piece_bytes,
            n_start_tokens=n_start_tokens,
            n_merges=len(merges),  # learned in this run
            n_tokens=n_start_tokens - merger.n_tokens_removed,
            merge_counts=merger.merge_counts,
            merge_tokens_removed=merger.merge_tokens_removed,
        )
        return tokenizer

    def _n_merges_wanted(self, base: Tokenizer | None) -> tuple[int, Extension | None]:
        """The merges that take the vocabulary (the base's, if any) to ``vocab_size``, and the
        :class:`~bpetrain.training.extend.Extension` of a base that keeps its ids."""
        extension = None
        if base is not None and keeps_ids(base):
            n_new_specials = len(set(self.special_tokens).difference(base.special_tokens))
            n_base = len(set(base.vocab))
            extension = Extension(base, self.new_ids_from, max(self.vocab_size - n_base, 0))
            n_base += len(extension.new_bytes)
            n_wanted = self.vocab_size - n_base - n_new_specials
            what = f"the base's {n_base} ids + {n_new_specials} new special tokens"
        else:
            if self.new_ids_from is not None:
                raise ValueError(
                    "new_ids_from applies when extending a base that keeps its ids (a tokenizer.json, or a vocabulary "
                    "only tiktoken's rule reads); this run numbers new merges 256 + i"
                )
            n_base = 256 if base is None else 256 + len(base.merges)
            n_wanted = self.vocab_size - n_base - len(self.special_tokens)
            what = f"the base's {n_base} tokens + {len(self.special_tokens)} special tokens"
        if n_wanted < 0:
            raise ValueError(f"vocab_size={self.vocab_size} is below {what}: extending can only add tokens")
        return n_wanted, extension

    def _merger(
        self, table: PieceTable, base: Tokenizer | None, n_wanted: int, extension: Extension | None = None
    ) -> tuple[PairMerger, np.ndarray | None, int]:
        """The merge kernel on ``table``, the id of each byte (None: the byte itself), and
        the tokens of the text before the first merge (weighted by the pieces' counts).

        From the bytes, each byte is its own id, or (``tie_break="hf"``) Hugging Face's;
        from a base, each piece starts as its encoding with the base (:func:`base_tokens`,
        or the ``extension``'s :meth:`~bpetrain.training.extend.Extension.initial`)
        and the bytes keep the base's ids.
        """
        max_token_length = MAX_VOCAB_SIZE if self.max_token_length is None else min(self.max_token_length, MAX_VOCAB_SIZE)
        options = (n_wanted, self.min_frequency, max_token_length)
        if base is None:
            byte_ids = HF_BYTE_IDS if self.tie_break == "hf" else None
            data = table.data if byte_ids is None else byte_ids[table.data]  # the bytes as their ids
            return PairMerger(data, table.offsets, table.counts, *options), byte_ids, table.n_bytes
        lengths, initial = base_tokens(base, table) if extension is None else extension.initial(table)
        rule = superword.kernel_rule(self.superword_rule, base, extension, len(lengths), n_wanted)
        merger = PairMerger(table.data, table.offsets, table.counts, *options, lengths, initial, rule)
        tokens_per_piece = np.add.reduceat(initial >= 0, table.offsets[:-1], dtype=np.int64)  # no int64 copy
        n_start_tokens = int(tokens_per_piece @ table.counts)
        return merger, None if extension is not None else np.array(base.byte_ids), n_start_tokens

    def _merge(self, merger: PairMerger, n_wanted: int, *, stacklevel: int) -> list[tuple[int, int]]:
        """Run the kernel to the end (a progress bar of merges); warn if it stopped short."""
        with progress_bar(total=n_wanted, unit="merge", desc=f"{self.stage}merging", disable=not self.show_progress) as bar:
            while not merger.finished:
                bar.update(merger.merge(MERGES_PER_STEP))
        merges = [tuple(pair) for pair in merger.merges.tolist()]
        if len(merges) < n_wanted:
            warnings.warn(
                f"learned {len(merges)} of the {n_wanted} merges that vocab_size={self.vocab_size} asks for: "
                f"no pair of adjacent tokens occurs min_frequency={self.min_frequency} times or more any "
                "more; lower min_frequency or vocab_size, or train on more text",
                VocabSizeNotReachedWarning,
                stacklevel=stacklevel,
            )
        return merges

    def _tokenizer(
        self, merges: list[tuple[int, int]], base: Tokenizer | None, pat_str: str | None, byte_ids: np.ndarray | None
    ) -> Tokenizer:
        """The trained tokenizer: the special tokens get the ids after the merges, in order."""
        if base is not None:
            merges = base.merges + merges
        first_special = 256 + len(merges)
        return Tokenizer(
            merges,
            pat_str=pat_str,
            special_tokens={s: first_special + i for i, s in enumerate(self.special_tokens)},
            byte_ids=None if byte_ids is None else byte_ids.tolist(),
        )

    # ----------------------------------------------------------------- a base

    def _base(self, base) -> Tokenizer | None:
        """``base`` as a :class:`Tokenizer` (None stays None)."""
        if base is None or isinstance(base, Tokenizer):
            pass
        elif isinstance(base, Encoding):
            base = Tokenizer.from_model(model_of_ranks(base._mergeable_ranks, base._pat_str, {}, base.name))
        elif isinstance(base, (str, os.PathLike)):  # any model reference (Tokenizer.from_file)
            if self.pat_str_given and os.path.exists(base) and formats.detect_format(base) == "tiktoken":
                base = Tokenizer.from_file(base, format="tiktoken", pat_str=self.pat_str, special_tokens={})
            else:
                base = Tokenizer.from_file(base)
        else:
            raise TypeError(
                f"base must be a Tokenizer, an Encoding or the path of a model file, got {type(base).__name__}"
            )
        if base is not None and self.tie_break != "rustbpe":
            raise ValueError(
                f"tie_break={self.tie_break!r} does not apply when extending a base: ties go to the smallest ids "
                "in the base's numbering (an extended Hugging Face-order base keeps Hugging Face's order)"
            )
        return base

    def _pattern(self, base: Tokenizer | None, *, stacklevel: int) -> str | None:
        """The split pattern of a run: the trainer's, or the base's when none was given
        (a warning, ``stacklevel`` above the caller, when the two differ)."""
        if base is None or not self.pat_str_given:
            return self.pat_str if base is None else base.pat_str
        if base.pat_str != self.pat_str:
            warnings.warn(
                f"training on pat_str={describe_pattern(self.pat_str)} while the base was trained on "
                f"{describe_pattern(base.pat_str)}: the "
                "new merges learn from pieces the base never split that way; leave pat_str out to use the base's",
                BasePatternWarning,
                stacklevel=stacklevel + 1,
            )
        return self.pat_str


def base_tokens(base: Tokenizer, table: PieceTable) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's start from ``base``: token lengths and each piece encoded by the base.

    Each piece is encoded with the base's ``mergeable_ranks`` by the compiled encoder
    (tiktoken's rule, :func:`bpetrain._reference.encode_piece_ranks`), which gives the
    segmentation training produced for every piece the base was trained on; one thread
    per CPU (the caller and kept pool threads: :func:`bpetrain._util.threads.thread_map`)
    encodes a share of the pieces (the encoder drops the GIL).

    Returns
    -------
    token_lengths : numpy.ndarray of int32, shape (256 + len(base.merges),)
        Bytes of each base id.
    initial : numpy.ndarray of int32, shape (len(table.data),)
        The id of the token that starts at each byte of ``table.data``, -1 inside one.
    """
    vocab = base.vocab
    lengths = np.array([len(vocab[i]) for i in range(256 + len(base.merges))], dtype=np.int32)
    encoder = BytePairEncoder(base.mergeable_ranks)
    cuts = np.linspace(0, table.n_pieces, usable_cores() + 1).astype(np.int64)

    def encode(start: int, stop: int) -> np.ndarray:
        offsets = table.offsets[start : stop + 1]
        return encoder.encode_table(table.data[offsets[0] : offsets[-1]], offsets - offsets[0])

    ids = np.concatenate(thread_map(encode, cuts[:-1], cuts[1:], num_threads=len(cuts) - 1)).astype(np.int32)
    ends = np.cumsum(lengths[ids], dtype=np.int64)
    initial = np.full(len(table.data), -1, dtype=np.int32)
    initial[ends - lengths[ids]] = ids
    return lengths, initial


class BasePatternWarning(UserWarning):
    """Extending a base with another split pattern than the one it was trained on."""


def _take_table(counter: PieceCounter) -> PieceTable:
    """The counter's pieces as a table; the counter is emptied."""
    table = counter.table()
    counter.clear()
    return table


def _check_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}: {value!r}")


def _check_table(table: PieceTable, n_input_bytes: int) -> int:
    """The bytes of text ``table`` stands for, if there are some and int64 pair counts hold them."""
    n_piece_bytes = table.n_bytes
    if n_piece_bytes == 0:
        raise ValueError(
            "the corpus is empty: there is no text to train on"
            + (" (the pattern matched nothing, or there are only special tokens)" if n_input_bytes else "")
        )
    if n_piece_bytes >= 2**63:
        raise ValueError(
            f"the piece counts stand for {n_piece_bytes} bytes of text, more than int64 pair counts "
            "can hold (2**63 - 1); scale the counts down"
        )
    return n_piece_bytes


def _table_of(counts: Mapping[str | bytes, int]) -> PieceTable:
    """A mapping piece -> count as a table (``str`` pieces as UTF-8, their counts added to
    those of the same ``bytes``)."""
    merged: dict[bytes, int] = {}
    for piece, count in counts.items():
        if not isinstance(piece, (str, bytes)):
            raise TypeError(f"pieces must be str or bytes, got {type(piece).__name__}: {piece!r:.60}")
        _check_int("each count", count)  # before str and bytes keys are summed
        key = piece.encode("utf-8", "surrogateescape") if isinstance(piece, str) else piece
        merged[key] = merged.get(key, 0) + count
    return PieceTable.from_counts(merged)
