"""Pre-tokenization and piece counting: documents in, a table of unique pieces out.

A *piece* is what the split pattern cuts a document into (or the whole document in
raw mode, ``pat_str=None``); BPE never merges across pieces, so training needs only
each unique piece and how often it occurs. :class:`PieceTable` holds them in memory as
three numpy arrays, the input of the compiled trainer (:mod:`bpetrain.training._merge`),
and saves them as *the counts file* (``.npz``; ``bpetrain count`` writes it,
``bpetrain train --counts`` and :meth:`BpeTrainer.train_from_counts` read it).
:class:`PieceCounter` fills the compiled hash table of :mod:`bpetrain.counting._counter`
from documents or from blocks of a long text.
"""
from __future__ import annotations

import json
import os
import stat
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import regex

from bpetrain.counting import _counter
from bpetrain.counting.inputs import join_documents
from bpetrain._util.atomic import atomic_write
from bpetrain._util.read import file_kind, loads_json, max_file_bytes, open_unblocked, too_large
from bpetrain.splitting.cuts import Cuts, check_documents
from bpetrain.splitting.pattern import encode_utf8, split_pattern
from bpetrain.splitting.pipeline import PipelineSplitter, pat_str_from_json, pat_str_to_json

__all__ = ["PieceCounter", "PieceTable"]

@dataclass(frozen=True)
class PieceTable:
    """A table of unique pieces and their counts, in memory (saved and loaded as the
    counts file: :meth:`save`, :meth:`load`).

    Attributes
    ----------
    data : numpy.ndarray of uint8, shape (n_unique_bytes,)
        The bytes of all pieces, concatenated.
    offsets : numpy.ndarray of int64, shape (n_pieces + 1,)
        Piece ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    counts : numpy.ndarray of int64, shape (n_pieces,)
        How often each piece occurs in the corpus.
    """

    data: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> PieceTable:
        """Build a table from a mapping ``piece bytes -> count``.

        Raises
        ------
        TypeError
            If a piece is not ``bytes`` or a count not an integer.
        ValueError
            If a count is negative or does not fit in int64.
        """
        pieces = list(counts)
        try:
            data = b"".join(pieces)
        except TypeError:
            bad = next(p for p in pieces if not isinstance(p, (bytes, bytearray, memoryview)))
            raise TypeError(f"pieces must be bytes, got {type(bad).__name__}: {bad!r:.60}") from None
        values = np.array(list(counts.values()))
        if values.size and values.dtype.kind not in "iu":
            for value in counts.values():
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise TypeError(f"each count must be an int, got {type(value).__name__}: {value!r}")
            raise ValueError("counts must be in [0, 2**63): a count does not fit in int64")
        if values.size and (values.min() < 0 or values.max() >= 2**63):
            raise ValueError(f"counts must be in [0, 2**63), got {values.min()}..{values.max()}")
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=offsets[1:])
        return cls(np.frombuffer(data, dtype=np.uint8), offsets, values.astype(np.int64).reshape(len(pieces)))

    @property
    def n_pieces(self) -> int:
        """Number of unique pieces."""
        return len(self.counts)

    @property
    def n_bytes(self) -> int:
        """Bytes of text the table stands for: sum of piece length times count (exact)."""
        lengths = np.diff(self.offsets)  # (np.dot would wake the BLAS threads: avoid it)
        if float(np.sum(lengths.astype(np.float64) * self.counts)) < 2.0**62:
            return int(np.sum(lengths * self.counts))
        return sum(int(n) * int(c) for n, c in zip(lengths, self.counts))  # beyond int64

    def piece(self, i: int) -> bytes:
        """The bytes of piece ``i``."""
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def save(self, path, *, pat_str: str | None, special_tokens: Iterable[str] = (),
             n_input_bytes: int = 0, n_documents: int = 0) -> None:
        """Save the table as a counts file (``.npz``, written atomically).

        The file holds the three arrays and a JSON header: format version, the split
        pattern and special tokens the text was counted with, and the input's size.
        """
        header = {
            "format": COUNTS_FORMAT,
            "pat_str": pat_str_to_json(pat_str),
            "special_tokens": list(special_tokens),
            "n_input_bytes": int(n_input_bytes),
            "n_documents": int(n_documents),
        }
        with atomic_write(path, "wb") as f:
            np.savez(f, data=self.data, offsets=self.offsets, counts=self.counts, header=np.array(json.dumps(header)))

    @classmethod
    def load(cls, path) -> tuple[PieceTable, dict]:
        """Read a counts file written by :meth:`save`: the table and the header.

        The file is checked before anything is built: that it is a regular file (a zip
        archive is read from offsets: a pipe or device is refused before it is read) no
        larger than :func:`bpetrain._util.read.max_file_bytes`, the zip members and their sizes
        (the arrays together at most :func:`bpetrain._util.read.max_file_bytes`, so a small
        compressed file cannot make a huge allocation), each ``.npy`` header (dtype,
        one dimension, data size against the member's size), the JSON header (depth
        limited) and the arrays' consistency.

        Raises
        ------
        ValueError
            If the file is not a bpetrain counts file, is damaged or truncated, is too
            large, or its arrays are inconsistent (the message names the file).
        OSError
            If the file cannot be read.
        """
        name = os.fspath(path)
        try:
            arrays = _read_npz(path, name)
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as exc:
            raise ValueError(f"{name}: not a bpetrain counts file (.npz from 'bpetrain count'), or damaged: {exc}") from None
        header = _parse_header(arrays.pop("header"), name)
        data, offsets, counts = arrays["data"], arrays["offsets"], arrays["counts"]
        if (offsets.shape != (counts.shape[0] + 1,) or offsets[0] != 0 or offsets[-1] != data.shape[0]
                or np.any(np.diff(offsets) < 0) or np.any(counts < 0)):
            raise ValueError(f"{name}: the counts file's arrays are inconsistent (damaged file?)")
        _check_header(header, name)
        return cls(data, offsets, counts), header


def read_header(path) -> dict:
    """The header of a counts file (what :meth:`PieceTable.save` records: the split pattern,
    the special tokens, the input's size) without reading its arrays.

    Raises
    ------
    ValueError
        If the file is not a bpetrain counts file or its header is damaged.
    OSError
        If the file cannot be read.
    """
    name = os.fspath(path)
    try:
        with open(path, "rb") as raw, zipfile.ZipFile(raw) as z, z.open("header.npy") as f:
            text = _read_npy(f, z.getinfo("header.npy").file_size, None, f"{name}[header]")
    except (zipfile.BadZipFile, KeyError, EOFError, zlib.error, NotImplementedError) as exc:
        raise ValueError(f"{name}: not a bpetrain counts file (.npz from 'bpetrain count'), or damaged: {exc}") from None
    header = _parse_header(text, name)
    _check_header(header, name)
    return header


def _parse_header(text, name: str) -> dict:
    """The JSON header of a counts file, of this format (its fields: :func:`_check_header`)."""
    header = loads_json(str(text), name)
    if not isinstance(header, dict) or header.get("format") != COUNTS_FORMAT:
        found = header.get("format") if isinstance(header, dict) else header
        raise ValueError(f"{name}: counts file format {found!r:.60} is not {COUNTS_FORMAT!r}")
    return header


#: The members of a counts file and their dtypes (the header is a 0-d unicode array).
COUNTS_MEMBERS = {"data": np.dtype(np.uint8), "offsets": np.dtype(np.int64), "counts": np.dtype(np.int64), "header": None}


def _read_npz(path, name: str) -> dict[str, np.ndarray]:
    """The arrays of a counts file, each ``.npy`` header checked before its data is read.

    Raises
    ------
    ValueError
        If the file is not a regular file (a pipe or device: refused before it is read)
        or larger than the cap, a member is missing or extra, the declared sizes pass the
        cap, or a member's dtype, shape or size is not what a counts file holds.
    zipfile.BadZipFile, EOFError, zlib.error
        If the zip structure or compressed data is damaged (the caller names the file).
    """
    limit = max_file_bytes()
    raw, status = open_unblocked(path)
    with raw:  # OSErrors past this point come from a damaged zip structure
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(
                f"{name} is {file_kind(status.st_mode)}, not a regular file: a counts file is read from offsets "
                "(a zip archive); copy it to a file first"
            )
        if status.st_size > limit:
            raise too_large(name, limit, "a counts file")
        try:
            return _read_zip(raw, name, limit)
        except OSError as exc:
            raise ValueError(f"{name}: a damaged counts file (seeking or reading its zip data: {exc})") from None


def _read_zip(raw, name: str, limit: int) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(raw) as z:
        infos = {info.filename: info for info in z.infolist()}
        expected = {f"{member}.npy" for member in COUNTS_MEMBERS}
        if set(infos) != expected:
            raise ValueError(f"{name}: a counts file holds {sorted(expected)}, this file {sorted(infos)[:8]}")
        declared = sum(info.file_size for info in infos.values())
        if declared > limit:
            raise ValueError(
                f"{name}: the counts file's arrays declare {declared} bytes, more than {limit} "
                "(set BPETRAIN_MAX_FILE_BYTES to a higher number of bytes to read it anyway)"
            )
        arrays = {}
        for member, dtype in COUNTS_MEMBERS.items():
            info = infos[f"{member}.npy"]
            with z.open(info) as f:
                arrays[member] = _read_npy(f, info.file_size, dtype, f"{name}[{member}]")
    return arrays


def _read_npy(f, n_bytes: int, dtype: np.dtype | None, where: str) -> np.ndarray:
    """One ``.npy`` member of ``n_bytes`` bytes: a 1-d array of ``dtype``, or (``dtype`` None)
    a 0-d unicode string."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, found = np.lib.format.read_array_header_1_0(f, max_header_size=10000)
        else:
            shape, fortran, found = np.lib.format.read_array_header_2_0(f, max_header_size=10000)
    except (ValueError, SyntaxError, TypeError) as exc:
        raise ValueError(f"{where}: not a valid .npy header ({exc})") from None
    wanted_shape = 1 if dtype is not None else 0
    if (len(shape) != wanted_shape or found.hasobject or fortran
            or (found != dtype if dtype is not None else found.kind != "U")):
        raise ValueError(f"{where}: holds {found} of shape {shape}, not what a counts file holds")
    size = found.itemsize * (shape[0] if shape else 1)
    if size > n_bytes:
        raise ValueError(f"{where}: declares {size} bytes of data in a member of {n_bytes} bytes")
    data = f.read(size)
    if len(data) != size:
        raise ValueError(f"{where}: truncated ({len(data)} of {size} bytes)")
    array = np.frombuffer(data, dtype=found)
    return array[0] if dtype is None else array


def _check_header(header: dict, name: str) -> None:
    """Refuse a counts file header whose fields have the wrong types or ranges; read its
    ``pat_str`` (a pipeline of pre-tokenizers is stored as JSON: :func:`pat_str_from_json`)."""
    header["pat_str"] = pat_str_from_json(header.get("pat_str"), f"{name}: the counts file header's pat_str")
    specials = header.get("special_tokens")
    if not (isinstance(specials, list) and all(isinstance(s, str) for s in specials)):
        raise ValueError(f"{name}: the counts file header's special_tokens must be a list of strings")
    for key in ("n_input_bytes", "n_documents"):
        if not (type(header.get(key)) is int and 0 <= header[key] < 2**63):
            raise ValueError(f"{name}: the counts file header's {key} must be an integer in [0, 2**63)")


#: The counts file's format, the header's first field.
COUNTS_FORMAT = "bpetrain counts v1"


class PieceCounter:
    """Split documents into pieces and count them in a compiled hash table.

    Parameters
    ----------
    pat_str : str, PreTokenizer or None
        The split pattern (a regex; see :func:`bpetrain.splitting.pattern.resolve_pattern` for
        names), or ``None`` for raw mode, where every document (between special tokens)
        is one piece. The compiled splitter runs it, or the ``regex`` module for syntax
        the splitter does not run (:class:`bpetrain.splitting.pattern.SplitPattern`), with the
        same pieces. A pipeline of Hugging Face pre-tokenizers
        (:class:`bpetrain.splitting.pipeline.PreTokenizer`) splits each document whole (no
        cut points) in its kernel.
    special_tokens : iterable of str
        Strings cut out of every document before splitting; they split the text (like
        document ends) and are not counted.
    documents : {"file", "line"}, default "file"
        What a document is in a text given whole or in blocks (:meth:`count_text`) and in
        each item of :meth:`update`: all of it, or each line (up to and including ``\\n``).

    Notes
    -----
    Text given as ``bytes`` need not be valid UTF-8: each invalid byte is one character
    that is not a letter, number or space (what ``errors="surrogateescape"`` decodes it
    to), and every piece keeps the original bytes.
    """

    def __init__(self, pat_str: str | None, special_tokens: Iterable[str] = (), *, documents: str = "file"):
        check_documents(documents)
        self.pat_str = pat_str
        self.documents = documents
        self.special_tokens = list(special_tokens)
        self._split = None if pat_str is None else split_pattern(pat_str)
        #: The compiled split pattern (None: raw mode, or the regex module splits).
        self._program = None if self._split is None else self._split.program
        #: Where a long text may be cut into blocks (:meth:`cut`, :meth:`count_text`).
        self.cuts = Cuts(pat_str, self.special_tokens, documents=documents)
        self._special = self.cuts.special
        self._special_text = None
        if self._special is not None:
            self._special_text = regex.compile("|".join(regex.escape(s) for s in self.cuts.special_tokens))
        self._table = _counter.PieceCounts()
        #: Bytes of text seen so far (UTF-8 bytes, special tokens included).
        self.n_input_bytes = 0
        #: Documents seen so far.
        self.n_documents = 0
        #: Seconds spent reading and counting (set by whoever drives the counter).
        self.seconds = 0.0

    @property
    def lookahead(self) -> int:
        """Bytes after a cut that :meth:`cut` needs to see (the longest special token - 1)."""
        return self.cuts.lookahead

    def cut(self, data: bytes, searched: int = 0) -> int:
        """Where to end a block of ``data`` so that counting the blocks one by one gives
        the pieces of the whole text (:meth:`bpetrain.splitting.cuts.Cuts.cut`); -1 if
        there is no cut."""
        return self.cuts.cut(data, searched)

    def starts_string(self, data: bytes, cut: int) -> bool:
        """Whether the text after ``cut`` is a string of its own for the split pattern
        (:meth:`bpetrain.splitting.cuts.Cuts.starts_string`)."""
        return self.cuts.starts_string(data, cut)

    def count_text(self, data: bytes, stop: int, *, final: bool, continued: bool = False) -> None:
        """Count the pieces in ``data[:stop]``, a block of a long text cut by :meth:`cut`.

        ``final``: the text ends at ``stop``; otherwise ``data[stop:]`` is what follows
        (the splitter may look at it). ``continued``: the text started in an earlier
        block (``data`` does not start it, for ``^``).
        """
        end = stop if final else len(data)
        self.n_input_bytes += stop
        if self.documents == "line":
            self.n_documents += data.count(b"\n", 0, stop) + (final and stop > 0 and data[stop - 1] != 10)
        if self._split is not None and self._program is None:
            self._count_with_regex(data[:stop])
            return
        self._table.count(data, self._segments(data, 0, stop, end), self._program, self.documents == "line", continued)

    def count_documents(self, data: bytes, bounds: np.ndarray) -> None:
        """Count documents given as one buffer: document ``i`` is ``data[bounds[i]:bounds[i + 1]]``."""
        self.n_input_bytes += int(bounds[-1] - bounds[0])
        self.n_documents += len(bounds) - 1
        if self._split is not None and self._program is None:
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                self._count_with_regex(data[a:b])
            return
        if self._special is None:
            segments = np.stack([bounds[:-1], bounds[1:], bounds[1:]], axis=1).astype(np.int64)
        else:
            segments = np.concatenate(
                [self._segments(data, a, b, b) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
                or [np.zeros((0, 3), dtype=np.int64)]
            )
        self._table.count(data, np.ascontiguousarray(segments), self._program, self.documents == "line")

    def _segments(self, data: bytes, start: int, stop: int, end: int) -> np.ndarray:
        """Rows (start, stop, end) for the text between special tokens in ``data[start:stop]``.

        The text ends at a special token: one that starts at ``stop`` (a cut of
        :meth:`cut` may fall right before one) ends the last row's text there too.
        """
        if self._special is None:
            return np.array([[start, stop, end]], dtype=np.int64)
        rows = []
        for m in self._special.finditer(data, start, stop):
            rows.append((start, m.start(), m.start()))
            start = m.end()
        if stop < end and self._special.match(data, stop):
            end = stop
        rows.append((start, stop, end))
        return np.array(rows, dtype=np.int64)

    def _count_with_regex(self, text: bytes) -> None:
        """A pattern the compiled splitter does not run: split with the regex module (the
        GIL released while it matches), count in the compiled table. A pipeline of
        pre-tokenizers splits each part in its kernel, whose pieces are counted in one call."""
        decoded = text.decode("utf-8", "surrogateescape")
        parts = [decoded] if self._special_text is None else self._special_text.split(decoded)
        if self.documents == "line":
            parts = [line for part in parts for line in regex.split("(?<=\n)", part) if line]
        if isinstance(self._split, PipelineSplitter):
            for part in parts:
                pieces, offsets = self._split.table(encode_utf8(part))
                self._table.count(pieces, np.stack([offsets[:-1], offsets[1:], offsets[1:]], axis=1), None)
            return
        counts = Counter(piece for part in parts for piece in self._split.pieces(part))
        for piece, count in counts.items():
            self._table.add(encode_utf8(piece), count)

    def update(self, documents: Iterable, *, text_field: str = "text", batch_bytes: int = 1 << 22) -> None:
        """Count the pieces of every document in ``documents``.

        Items may be ``str`` or ``bytes`` (one document each), lists of them (a batch),
        or mappings whose ``text_field`` holds either (the rows and batches a Hugging Face
        ``datasets.Dataset`` or ``IterableDataset`` yields).

        Raises
        ------
        TypeError
            If a document is neither ``str`` nor ``bytes``.
        ValueError
            If a ``str`` holds a lone surrogate that is not an escaped byte, or a mapping
            has no ``text_field``.
        """
        batch: list[bytes] = []
        size = 0
        for item in documents:
            kind = type(item)
            if kind is bytes or kind is str:  # the common case first: no isinstance chain
                data = item if kind is bytes else encode_utf8(item)
                batch.append(data)
                size += len(data)
            else:
                found = _documents_of(item, text_field)
                batch.extend(found)
                size += sum(map(len, found))
            if size >= batch_bytes:
                self._count_batch(batch)
                batch, size = [], 0
        if batch:
            self._count_batch(batch)

    def _count_batch(self, batch: list[bytes]) -> None:
        if self.documents == "line":  # each line of each document is a document of its own
            for data in batch:
                self.count_text(data, len(data), final=True)
            return
        self.count_documents(*join_documents(batch))

    def save(self, path) -> None:
        """Save the counted pieces as the counts file (see :meth:`PieceTable.save`)."""
        self.table().save(
            path, pat_str=self.pat_str, special_tokens=self.special_tokens,
            n_input_bytes=self.n_input_bytes, n_documents=self.n_documents,
        )

    def merge(self, other: PieceCounter) -> None:
        """Add the pieces and totals of ``other`` (counted with the same options)."""
        self._table.update(other._table)
        self.n_input_bytes += other.n_input_bytes
        self.n_documents += other.n_documents

    def __reduce__(self):
        """Pickle as the options, the counted pieces and the totals, so counters can be
        sent between processes (Dask, Ray, Spark)."""
        totals = (self.n_input_bytes, self.n_documents, self.seconds)
        return _restore_counter, (self.pat_str, self.special_tokens, self.documents, self.table(), totals)

    @property
    def nbytes(self) -> int:
        """Bytes of memory the counted pieces take (hash table and piece bytes)."""
        return self._table.nbytes

    def add_table(self, table: PieceTable) -> None:
        """Add already counted pieces (a loaded counts file, say)."""
        self._table.update_arrays(table.data, table.offsets, table.counts)

    def clear(self) -> None:
        """Forget the counted pieces (the totals stay)."""
        self._table = _counter.PieceCounts()

    def table(self) -> PieceTable:
        """The counted pieces as a :class:`PieceTable`."""
        return PieceTable(*self._table.arrays())


def _restore_counter(pat_str, special_tokens, documents, table, totals) -> PieceCounter:
    """Unpickle a :class:`PieceCounter` (see ``PieceCounter.__reduce__``)."""
    counter = PieceCounter(pat_str, special_tokens, documents=documents)
    counter.add_table(table)
    counter.n_input_bytes, counter.n_documents, counter.seconds = totals
    return counter


def _documents_of(item, text_field: str) -> list[bytes]:
    """The documents of one item that is not ``str`` or ``bytes``: a batch (list or tuple),
    a mapping (a dataset row or batch) holding them in ``text_field``, or a bytes-like."""
    if isinstance(item, Mapping):
        if text_field not in item:
            raise ValueError(
                f"a row has no field {text_field!r} (it has {', '.join(map(repr, item))}); "
                "name the text field with text_field="
            )
        item = item[text_field]
    return [_as_bytes(document) for document in (item if isinstance(item, (list, tuple)) else (item,))]


def _as_bytes(document) -> bytes:
    if isinstance(document, str):
        return encode_utf8(document)
    if isinstance(document, (bytes, bytearray, memoryview)):
        return bytes(document)
    raise TypeError(
        f"documents must be str or bytes, got {type(document).__name__}: {document!r:.60}; "
        "iterate over the text field of your records"
    )
