"""The report: what a vocabulary holds and how well it compresses text, as JSON or one HTML page.

:func:`build_report` measures a model (a :class:`~bpetrain.Tokenizer`), optionally beside a
second one, on sample texts: vocabulary size, split pattern, special tokens; compression
(UTF-8 bytes per token, tokens per word) and how it grows with the number of merges used;
the token length histogram; the longest and the rarest tokens. :func:`write_json` writes
that dictionary as it is; :func:`write_html` renders it as one self-contained HTML file
with matplotlib figures embedded as PNG (matplotlib is the ``report`` extra:
``pip install 'bpetrain[report]'``).

The compression curve of a model with training statistics comes from what training
recorded (:attr:`bpetrain.TrainingStats.merge_tokens_removed`: merge ``i`` removed that
many tokens from the training text); for texts it is measured by encoding them with the
compiled encoder restricted to the first ``k`` merges, for a set of ``k``.

The report's keys (``bpetrain report --json``)::

    bpetrain_version   str
    texts              list of {path, n_bytes, n_words}
    models             list of model entries: the model, then the --compare model

and a model entry::

    name, n_vocab, n_merges, pat_str, pattern_name, special_tokens ({str: id}); n_merges
                       counts the tokens of two bytes or more where a vocabulary keeps an
                       imported vocabulary's ids (Tokenizer.tokens)
    token_lengths      {n_bytes: [1, 2, ...], n_tokens: [...]}: byte and merge tokens by length
    longest_tokens     [{id, token, n_bytes}]: token is the escaped text (:func:`readable_token`)
    compression        null, or {n_bytes, n_words, n_tokens, bytes_per_token, tokens_per_word,
                       per_text: [{path, n_tokens, bytes_per_token}], parity}: on the texts;
                       parity: the most tokens of a text over the fewest (null for one text;
                       on parallel texts, one per language, 1 is parity)
    compression_curve  null, or {source: "texts", n_merges: [...], n_vocab: [...], bytes_per_token: [...]}
                       (null for an imported vocabulary's ids, whose merges need not follow them)
    rarest_tokens      null, or {source: "texts", tokens: [{id, token, n_bytes, count}],
                       n_unused, unused: [{id, token, n_bytes}]}: merge tokens, by count on the texts
    training           null, or the training statistics (:class:`bpetrain.TrainingStats`): seconds,
                       n_input_bytes, n_documents, n_pieces, n_piece_bytes, n_start_tokens, n_merges,
                       n_tokens, bytes_per_token, and two curves sampled on a log scale:
                       curve: {source: "training", n_merges: [...], n_vocab: [...],
                       bytes_per_token: [...]} on the training text after the first k merges of
                       the run (n_vocab counts a base's tokens too);
                       merge_counts: {k: [...], merge_count: [...]}: the count of the k-th merge
"""
from __future__ import annotations

import base64
import datetime
import html
import io
import json
import os
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bpetrain._util.atomic import atomic_write
from bpetrain.encoding._encoder import BATCH_ARRAYS
from bpetrain.encoding.batching import batch_output
from bpetrain.encoding.core import Encoding
from bpetrain.counting.inputs import expand_inputs, read_blocks
from bpetrain.splitting.names import pattern_name
from bpetrain.splitting.pipeline import pat_str_to_json
from bpetrain.tokenizer import Tokenizer
from bpetrain.training.trainer import TrainingStats

__all__ = [
    "Text",
    "build_report",
    "read_texts",
    "readable_text",
    "readable_token",
    "require_matplotlib",
    "write_html",
    "write_json",
]

N_CURVE_POINTS = 24  # merge counts k at which the compression curve of texts is measured
N_LISTED = 20  # longest, rarest and unused tokens listed
MAX_PLOTTED_LENGTH = 32  # the length histogram's last bar holds this length and longer
INSTALL_HINT = "pip install 'bpetrain[report]' (or pip install matplotlib)"


# ------------------------------------------------------------------ inputs


@dataclass(frozen=True)
class Text:
    """A sample text the report encodes: one file, decoded as UTF-8 (invalid bytes as U+FFFD).

    Attributes
    ----------
    path : str
    text : str
    n_bytes : int
        UTF-8 bytes of ``text`` (what the encoder sees; a file with invalid UTF-8 has
        more, 3 for each U+FFFD).
    n_words : int
        Whitespace-separated words (``len(text.split())``), for tokens per word.
    """

    path: str
    text: str
    n_bytes: int
    n_words: int


def read_texts(paths: Sequence[str | os.PathLike]) -> list[Text]:
    """Read plain-text files (directories, globs and ``.gz``/``.xz``/``.zst`` as for training).

    Raises
    ------
    FileNotFoundError
        If a path does not exist or a glob matches nothing.
    ValueError
        If a file is JSON Lines or Parquet (the report reads plain text), or empty.
    """
    texts = []
    for source in expand_inputs(paths):
        if source.format != "text":
            raise ValueError(
                f"{source.path} is a {source.format} file; the report reads plain text files "
                "(extract the text to a .txt file first)"
            )
        text = b"".join(read_blocks(source)).decode("utf-8", "replace")
        if not text:
            raise ValueError(f"{source.path} is empty: give texts to measure compression on")
        texts.append(Text(source.path, text, len(text.encode("utf-8")), len(text.split())))
    return texts


def require_matplotlib() -> None:
    """Check that matplotlib can be imported (call before reading input).

    Raises
    ------
    ImportError
        If it cannot, saying how to install it.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"the HTML report draws its figures with matplotlib, which is not installed: "
                          f"{INSTALL_HINT}") from exc


# ----------------------------------------------------------------- measuring


def readable_token(token: bytes) -> str:
    """Token bytes as readable text: UTF-8 where valid, escapes for the rest.

    Bytes that are not valid UTF-8 become ``\\xNN``; characters are shown as
    :func:`readable_text` shows them, so ``\\xa0`` is the byte 0xA0 and ``\\u00a0`` the
    character.

    Examples
    --------
    >>> readable_token(b" the\\n")
    ' the\\\\n'
    >>> readable_token(b"\\xe2\\x80")  # a character cut in the middle
    '\\\\xe2\\\\x80'
    """
    return readable_text(token.decode("utf-8", "surrogateescape"), invalid_bytes=True)


def readable_text(text: str, *, invalid_bytes: bool = False, regex: bool = False) -> str:
    """Text from a model or the user (a token, special token, model name, path, pattern)
    as readable text that cannot reorder or hide what follows it.

    Control, format and space characters other than the space itself (other C0 and C1
    controls, NUL and ESC among them, bidirectional overrides such as U+202E, zero-width
    and no-break spaces, line separators, private use, unassigned, lone surrogates) become
    ``\\n``, ``\\t``, ``\\r``, ``\\xNN`` (ASCII), ``\\uNNNN`` or ``\\UNNNNNNNN`` (above
    U+FFFF); a backslash is doubled, so the escapes are unambiguous. Spaces stay spaces.

    Parameters
    ----------
    text : str
    invalid_bytes : bool, default False
        ``text`` was decoded with ``errors="surrogateescape"``: U+DC80..U+DCFF are the
        invalid bytes 0x80..0xFF, shown as ``\\xNN`` (:func:`readable_token`).
    regex : bool, default False
        ``text`` is a regular expression: its backslashes are its own escapes and stay
        single (an escape such as ``\\x1b`` matches what the raw character matches).

    Examples
    --------
    >>> readable_text("\\u202egnp.exe")
    '\\\\u202egnp.exe'
    """
    out = []
    for c in text:
        code = ord(c)
        if invalid_bytes and 0xDC80 <= code <= 0xDCFF:  # an invalid byte, from surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c == "\\":
            out.append("\\" if regex else "\\\\")
        elif c in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[c])
        elif c != " " and unicodedata.category(c) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn"):
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(c)
    return "".join(out)


def _token_entry(tokenizer: Tokenizer, token_id: int, **extra) -> dict:
    token = tokenizer.vocab[token_id]
    return {"id": token_id, "token": readable_token(token), "n_bytes": len(token), **extra}


def _curve_points(n_merges: int, n_points: int) -> list[int]:
    """Merge counts ``k`` from 0 to ``n_merges``, evenly spaced in vocabulary size on a log scale."""
    sizes = np.geomspace(256, 256 + n_merges, n_points) if n_merges else np.array([256.0])
    return sorted({0, n_merges, *(round(s) - 256 for s in sizes)})


def _truncated(encoding: Encoding, n_merges: int) -> Encoding:
    """The compiled encoder with the 256 byte tokens and the first ``n_merges`` merges only."""
    ranks = {token: rank for token, rank in encoding.mergeable_ranks.items() if rank < 256 + n_merges}
    return Encoding(f"{encoding.name}[:{n_merges}]", pat_str=encoding.pat_str, mergeable_ranks=ranks)


def _compression(ids: np.ndarray, offsets: np.ndarray, texts: Sequence[Text]) -> tuple[dict, np.ndarray]:
    """Compression on ``texts`` from their ids (one array, ``offsets`` between texts), and
    each id's count."""
    counts = np.bincount(ids.astype(np.int64), minlength=1)
    n_bytes = sum(t.n_bytes for t in texts)
    n_words = sum(t.n_words for t in texts)
    n_tokens = len(ids)
    per_text = [
        {"path": t.path, "n_tokens": int(offsets[i + 1] - offsets[i]),
         "bytes_per_token": t.n_bytes / max(int(offsets[i + 1] - offsets[i]), 1)}
        for i, t in enumerate(texts)
    ]
    compression = {
        "n_bytes": n_bytes, "n_words": n_words, "n_tokens": n_tokens,
        "bytes_per_token": n_bytes / n_tokens, "tokens_per_word": n_tokens / n_words if n_words else None,
        "per_text": per_text,
        "parity": _parity(per_text),
    }
    return compression, counts


def _parity(per_text: list[dict]) -> float | None:
    """Tokens of the text that takes the most over those of the one that takes the fewest:
    1 when the texts cost the same (the measure of parity-aware BPE on parallel texts,
    one per language); None for fewer than two texts."""
    n_tokens = [row["n_tokens"] for row in per_text]
    if len(n_tokens) < 2 or min(n_tokens) == 0:
        return None
    return max(n_tokens) / min(n_tokens)


def _encoded(tokenizer: Tokenizer, encoding: Encoding | None, texts: Sequence[Text]) -> tuple[np.ndarray, np.ndarray]:
    """The ids of ``texts`` in one array and the offsets between texts: by the compiled
    ``encoding``, or (None: an imported vocabulary's ids) by :meth:`Tokenizer.encode`."""
    if encoding is not None:
        return encoding.encode_batch_to_numpy([t.text for t in texts], disallowed_special=())
    arrays = [np.array(tokenizer.encode(t.text, disallowed_special=()), dtype=np.uint32) for t in texts]
    return batch_output(arrays, BATCH_ARRAYS)


def _compression_curve(encoding: Encoding, n_merges: int, texts: Sequence[Text], n_points: int, progress) -> dict:
    """Bytes per token on ``texts`` with the first ``k`` merges, for :func:`_curve_points` ``k``."""
    n_bytes = sum(t.n_bytes for t in texts)
    points = _curve_points(n_merges, n_points)
    values = []
    for k in points:
        encoder = encoding if k == n_merges else _truncated(encoding, k)
        values.append(n_bytes / sum(encoder.count_batch([t.text for t in texts])))
        progress(f"{encoding.name}: the texts with {k:,} merges")
    return {"source": "texts", "n_merges": points, "n_vocab": [256 + k for k in points], "bytes_per_token": values}


def _rarest(tokenizer: Tokenizer, counts: np.ndarray, merge_ids: np.ndarray, n_listed: int) -> dict:
    """The merge tokens least used on the texts (``counts[k]``: uses of id ``merge_ids[k]``)."""
    order = np.lexsort((merge_ids, counts))  # by count, then id
    used = order[counts[order] > 0][:n_listed]
    unused = np.flatnonzero(counts == 0)
    return {
        "source": "texts",
        "tokens": [_token_entry(tokenizer, int(merge_ids[i]), count=int(counts[i])) for i in used],
        "n_unused": len(unused),
        "unused": [_token_entry(tokenizer, int(merge_ids[i])) for i in unused[:n_listed]],
    }


def _training(stats: TrainingStats, n_points: int, n_first_vocab: int) -> dict:
    """The training statistics, with the compression curve on the training text from the merge counts.

    After the first ``k`` merges of the run the training text has
    ``n_start_tokens - merge_tokens_removed[:k].sum()`` tokens and the vocabulary
    ``n_first_vocab + k`` tokens (special tokens aside): 256, or 256 and a base's merges.
    """
    counts = np.asarray(stats.merge_counts, dtype=np.int64)
    n_tokens = stats.n_start_tokens - np.concatenate([[0], np.cumsum(stats.merge_tokens_removed)])
    points = _curve_points(len(counts), max(n_points, 200))
    ranks = sorted({round(k) for k in np.geomspace(1, len(counts), 200)}) if len(counts) else []
    return {
        "seconds": stats.seconds, "n_input_bytes": stats.n_input_bytes, "n_documents": stats.n_documents,
        "n_pieces": stats.n_pieces, "n_piece_bytes": stats.n_piece_bytes, "n_start_tokens": stats.n_start_tokens,
        "n_merges": stats.n_merges,
        "n_tokens": stats.n_tokens, "bytes_per_token": stats.bytes_per_token,
        "curve": {
            "source": "training",
            "n_merges": points,
            "n_vocab": [n_first_vocab + k for k in points],
            "bytes_per_token": [stats.n_piece_bytes / int(n_tokens[k]) for k in points],
        },
        "merge_counts": {"k": ranks, "merge_count": [int(counts[k - 1]) for k in ranks]},
    }


def _model_entry(tokenizer: Tokenizer, name: str, texts: Sequence[Text], stats: TrainingStats | None,
                 n_points: int, n_listed: int, progress) -> dict:
    vocab = tokenizer.vocab
    if tokenizer.tokens is None:
        n_merges = len(tokenizer.merges)
        token_ids = list(range(256 + n_merges))
        merge_ids = np.arange(256, 256 + n_merges)
    else:  # an imported vocabulary keeps its ids: its tokens of two bytes or more are the merge tokens
        token_ids = sorted(tokenizer.tokens)
        merge_ids = np.array([i for i in token_ids if len(vocab[i]) > 1], dtype=np.int64)
        n_merges = len(merge_ids)
    lengths = np.bincount([len(vocab[i]) for i in token_ids])
    longest = sorted(merge_ids.tolist(), key=lambda i: (-len(vocab[i]), i))[:n_listed]
    entry = {
        "name": name,
        "n_vocab": tokenizer.n_vocab,
        "n_merges": n_merges,
        "pat_str": pat_str_to_json(tokenizer.pat_str),  # a pipeline of pre-tokenizers as its JSON
        "pattern_name": None if not isinstance(tokenizer.pat_str, str) else pattern_name(tokenizer.pat_str),
        "special_tokens": dict(sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])),
        "token_lengths": {"n_bytes": np.flatnonzero(lengths).tolist(), "n_tokens": lengths[lengths > 0].tolist()},
        "longest_tokens": [_token_entry(tokenizer, i) for i in longest],
        "compression": None,
        "compression_curve": None,
        "rarest_tokens": None,
        "training": None if stats is None else _training(stats, n_points, len(token_ids) - stats.n_merges),
    }
    progress(f"{name}: tokens")
    if texts:
        encoding = tokenizer.encoding(name) if tokenizer.tokens is None else None
        progress(f"{name}: the encoder")
        entry["compression"], counts = _compression(*_encoded(tokenizer, encoding, texts), texts)
        progress(f"{name}: the texts")
        if encoding is not None:  # an imported vocabulary's merges need not come in the order of its ids
            entry["compression_curve"] = _compression_curve(encoding, n_merges, texts, n_points, progress)
        merge_counts = np.zeros(len(merge_ids), dtype=np.int64)
        seen = merge_ids < len(counts)
        merge_counts[seen] = counts[merge_ids[seen]]
        entry["rarest_tokens"] = _rarest(tokenizer, merge_counts, merge_ids, n_listed)
    return entry


def build_report(
    tokenizer: Tokenizer,
    *,
    name: str = "model",
    texts: Sequence[Text] = (),
    stats: TrainingStats | None = None,
    compare: Tokenizer | None = None,
    compare_name: str = "compare",
    n_points: int = N_CURVE_POINTS,
    n_listed: int = N_LISTED,
    progress=None,
) -> dict:
    """Measure ``tokenizer`` (and ``compare``) on ``texts``: the dictionary this module's docstring lists.

    Parameters
    ----------
    tokenizer : Tokenizer
    name : str, default "model"
        What the report calls the model (its file name, say).
    texts : sequence of Text, optional
        Sample texts (:func:`read_texts`); without them there is no compression, curve or
        rarest tokens on texts.
    stats : TrainingStats, optional
        The model's training statistics (:attr:`bpetrain.BpeTrainer.stats`): adds the
        compression curve and merge counts on the training text.
    compare : Tokenizer, optional
        A second model, measured on the same texts.
    compare_name : str, default "compare"
    n_points : int, default 24
        Merge counts at which the compression curve on the texts is measured (each is one
        encode of all texts).
    n_listed : int, default 20
        Longest, rarest and unused tokens listed.
    progress : callable, optional
        Called with a short description after each step (each encode of the texts, say),
        for a progress bar.

    Returns
    -------
    dict
        JSON-ready (str, int, float, None, lists and dicts).

    Raises
    ------
    ValueError
        If a model cannot be encoded with tiktoken's rule (:meth:`Tokenizer.encoding`).
    """
    from bpetrain._util.version import __version__

    progress = progress or (lambda step: None)
    models = [_model_entry(tokenizer, name, texts, stats, n_points, n_listed, progress)]
    if compare is not None:
        models.append(_model_entry(compare, compare_name, texts, None, n_points, n_listed, progress))
    return {
        "bpetrain_version": __version__,
        "texts": [{"path": t.path, "n_bytes": t.n_bytes, "n_words": t.n_words} for t in texts],
        "models": models,
    }


# ------------------------------------------------------------------ writing


def write_json(report: dict, path) -> None:
    """Write the report as JSON to ``path`` (atomically), or to standard output for ``"-"``."""
    if os.fspath(path) == "-":
        json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    with atomic_write(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
        f.write("\n")


def write_html(report: dict, path) -> None:
    """Write the report as one self-contained HTML file (figures as embedded PNG), atomically.

    Every token, special token, model name, pattern and path is shown with its control
    and invisible characters escaped (:func:`readable_text`), then HTML-escaped.

    Raises
    ------
    ImportError
        If matplotlib is not installed (:func:`require_matplotlib`).
    """
    require_matplotlib()
    page = _page(report)
    with atomic_write(path, "w", encoding="utf-8") as f:
        f.write(page)


COLORS = ("#1f77b4", "#d62728", "#2ca02c")
STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .7em; text-align: left;
  vertical-align: top; border-bottom: 1px solid #eee; } th { background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 13px/1.3 ui-monospace, monospace; } code.tok { background: #eef2f7; white-space: pre-wrap; word-break: break-all; overflow-wrap: anywhere;
  padding: 0 .15em; }
code.pat { white-space: pre-wrap; word-break: break-all; }
.side { display: flex; gap: 2em; flex-wrap: wrap; } .side > div { flex: 1 1 0; min-width: 360px; } .side table { width: 100%; table-layout: fixed; } td.num, th { white-space: nowrap; }
.sp { color: #aaa; }
img { max-width: 100%; } .note { color: #666; font-size: .9em; }
"""


def _e(value) -> str:
    """HTML-escaped ``str(value)``: for numbers and text already made readable (tokens)."""
    return html.escape(str(value), quote=True)


def _shown(text: str, *, regex: bool = False) -> str:
    """A string from the model or the user (name, path, special token, pattern) for the
    page: control and invisible characters escaped as tokens are (:func:`readable_text`),
    then HTML-escaped."""
    return _e(readable_text(text, regex=regex))


def _num(value, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def _figure_png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="" src="data:image/png;base64,{data}">'


def _finished(figure, axes, xlabel: str, ylabel: str, title: str, **grid) -> str:
    """Label ``axes``, give it a light grid (``grid``: matplotlib's ``which``/``axis``) and
    the legend, and return ``figure`` as an ``<img>`` tag (:func:`_figure_png`)."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, alpha=0.3, **grid)
    axes.legend()
    return _figure_png(figure)


def _compression_figure(models: list[dict]) -> str | None:
    """Bytes per token against vocabulary size (first k merges), each model on texts and training."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    curves = []
    for color, model in zip(COLORS, models):
        if model["compression_curve"]:
            curves.append((model["compression_curve"], f"{readable_text(model['name'])} on the texts", color, "-", "o"))
        if model["training"]:
            curves.append((model["training"]["curve"], f"{readable_text(model['name'])} on its training text", color, "--", None))
    if not curves:
        return None
    figure = Figure(figsize=(8, 4.2))
    axes = figure.subplots()
    for curve, label, color, style, marker in curves:
        axes.plot(curve["n_vocab"], curve["bytes_per_token"], style, color=color, marker=marker, markersize=3,
                  label=label)
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    return _finished(figure, axes, "vocabulary size: 256 bytes + the first k merges (log scale)",
                     "UTF-8 bytes per token", "Compression as merges are added", which="both")


def _lengths_figure(models: list[dict]) -> str:
    """Share of each model's byte and merge tokens by token length in bytes."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 3.6))
    axes = figure.subplots()
    width = 0.8 / len(models)
    positions = np.arange(1, MAX_PLOTTED_LENGTH + 1)
    for j, (color, model) in enumerate(zip(COLORS, models)):
        share = np.zeros(MAX_PLOTTED_LENGTH)
        lengths = model["token_lengths"]
        for n_bytes, n_tokens in zip(lengths["n_bytes"], lengths["n_tokens"]):
            share[min(n_bytes, MAX_PLOTTED_LENGTH) - 1] += n_tokens
        share *= 100 / share.sum()
        axes.bar(positions + (j - (len(models) - 1) / 2) * width, share, width, color=color,
                 label=f"{readable_text(model['name'])} ({model['n_vocab']:,} tokens)")
    labels = [str(p) if p == 1 or p % 4 == 0 else "" for p in positions[:-1]]
    axes.set_xticks(positions, [*labels, f"{MAX_PLOTTED_LENGTH}+"])
    return _finished(figure, axes, f"token length in bytes (the last bar: {MAX_PLOTTED_LENGTH} or more)",
                     "% of the tokens", "Token lengths", axis="y")


def _merge_count_figure(models: list[dict]) -> str | None:
    """Each merge's count on the training text against its rank (log-log)."""
    from matplotlib.figure import Figure

    trained = [(color, m) for color, m in zip(COLORS, models) if m["training"]]
    if not trained:
        return None
    figure = Figure(figsize=(8, 3.6))
    axes = figure.subplots()
    for color, model in trained:
        curve = model["training"]["merge_counts"]
        axes.plot(curve["k"], curve["merge_count"], color=color, label=readable_text(model["name"]))
    axes.set_xscale("log")
    axes.set_yscale("log")
    return _finished(figure, axes, "the k-th merge (log scale)", "count of the pair merged",
                     "Merge counts during training", which="both")


def _token_html(text: str) -> str:
    """An escaped token (:func:`readable_token`) for the page: HTML-escaped, spaces as a grey ``␣``."""
    return '<code class="tok">' + _e(text).replace(" ", '<span class="sp">␣</span>') + "</code>"


def _token_table(rows: list[dict], count: bool = False) -> str:
    widths = ["5em", "4em", *(["6em"] if count else []), "auto"]  # fixed layout: long tokens wrap
    head = "<colgroup>" + "".join(f'<col style="width:{w}">' for w in widths) + "</colgroup>" + (
        "<tr><th>id</th><th>bytes</th>" + ("<th>count</th>" if count else "") + "<th>token</th></tr>")
    body = "".join(
        f'<tr><td class="num">{r["id"]}</td><td class="num">{r["n_bytes"]}</td>'
        + (f'<td class="num">{_num(r["count"])}</td>' if count else "")
        + f"<td>{_token_html(r['token'])}</td></tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


def _summary_table(report: dict) -> str:
    models = report["models"]

    def row(label: str, cells: list[str]) -> str:
        if all(c == "—" for c in cells):
            return ""  # nothing measured (no texts, or no training statistics)
        return f"<tr><th>{label}</th>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"

    def compression(model: dict, key: str) -> str:
        return _num(model["compression"][key]) if model["compression"] else "—"

    def pattern(model: dict) -> str:
        if model["pat_str"] is None:
            return "none (raw mode)"
        name = f"{_shown(model['pattern_name'])}: " if model["pattern_name"] else ""
        pat_str = model["pat_str"] if isinstance(model["pat_str"], str) else json.dumps(model["pat_str"])
        return f'{name}<code class="pat">{_shown(pat_str, regex=True)}</code>'

    def specials(model: dict) -> str:
        return ", ".join(f"{_token_html(readable_text(t))}&nbsp;{i}" for t, i in model["special_tokens"].items()) \
            or "none"

    rows = [
        "<tr><th></th>" + "".join(f"<th>{_shown(m['name'])}</th>" for m in models) + "</tr>",
        row("vocabulary size", [_num(m["n_vocab"]) for m in models]),
        row("merges", [_num(m["n_merges"]) for m in models]),
        row("special tokens", [specials(m) for m in models]),
        row("split pattern", [pattern(m) for m in models]),
        row("bytes per token on the texts", [compression(m, "bytes_per_token") for m in models]),
        row("tokens per word on the texts", [compression(m, "tokens_per_word") for m in models]),
        row("tokens for the texts", [compression(m, "n_tokens") for m in models]),
        row("merge tokens unused on the texts",
            [_num(m["rarest_tokens"]["n_unused"]) if m["rarest_tokens"] else "—" for m in models]),
        row("bytes per token on the training text",
            [_num(m["training"]["bytes_per_token"]) if m["training"] else "—" for m in models]),
    ]
    return "<table>" + "".join(rows) + "</table>"


def _texts_table(report: dict) -> str:
    models = [m for m in report["models"] if m["compression"]]
    if not models:
        return '<p class="note">No texts given (<code>--text FILE...</code>): no compression on texts.</p>'
    head = "<tr><th>text</th><th>bytes</th><th>words</th>" + "".join(
        f"<th>{_shown(m['name'])}: tokens</th><th>bytes/token</th>" for m in models) + "</tr>"
    body = ""
    for i, text in enumerate(report["texts"]):
        cells = "".join(
            f'<td class="num">{_num(m["compression"]["per_text"][i]["n_tokens"])}</td>'
            f'<td class="num">{_num(m["compression"]["per_text"][i]["bytes_per_token"])}</td>' for m in models)
        body += (f'<tr><td><code>{_shown(text["path"])}</code></td><td class="num">{_num(text["n_bytes"])}</td>'
                 f'<td class="num">{_num(text["n_words"])}</td>{cells}</tr>')
    if len(report["texts"]) > 1:  # on parallel texts (one per language): how far from parity
        cells = "".join(f'<td class="num">{_num(m["compression"]["parity"])}</td><td></td>' for m in models)
        body += f'<tr><td colspan="3">most / fewest tokens of a text (1: parity)</td>{cells}</tr>'
    return f"<table>{head}{body}</table>"


def _side_by_side(models: list[dict], title, content) -> str:
    """One column per model: ``title(model)`` over ``content(model)``, skipping models without content."""
    columns = [f"<div><h3>{_shown(title(m))}</h3>{content(m)}</div>" for m in models if content(m)]
    return f'<div class="side">{"".join(columns)}</div>' if columns else ""


def _rarest_html(model: dict) -> str:
    rarest = model["rarest_tokens"]
    if not rarest:
        return ""
    unused = ", ".join(_token_html(r["token"]) for r in rarest["unused"])
    note = (f'<p>{_num(rarest["n_unused"])} merge tokens never occur in the texts'
            + (f"; the first: {unused}" if unused else "") + ".</p>")
    return note + "<p>The least used tokens that occur:</p>" + _token_table(rarest["tokens"], count=True)


def _training_html(model: dict) -> str:
    t = model["training"]
    rows = [("seconds", t["seconds"]), ("input bytes", t["n_input_bytes"]), ("documents", t["n_documents"]),
            ("unique pieces", t["n_pieces"]), ("piece bytes", t["n_piece_bytes"]),
            ("tokens before the merges", t["n_start_tokens"]), ("merges", t["n_merges"]),
            ("tokens after training", t["n_tokens"]), ("bytes per token", t["bytes_per_token"])]
    return "<table>" + "".join(f'<tr><th>{k}</th><td class="num">{_num(v)}</td></tr>' for k, v in rows) + "</table>"


def _curve_note(models: list[dict]) -> str:
    notes = []
    if any(m["compression_curve"] for m in models):
        notes.append("On the texts: each point encodes all texts with the 256 byte tokens and the first k merges only.")
    if any(m["training"] for m in models):
        notes.append("On the training text: from the tokens each merge removed, as training recorded them.")
    return f'<p class="note">{" ".join(notes)}</p>' if notes else ""


def _page(report: dict) -> str:
    models = report["models"]
    figures = [_compression_figure(models), _merge_count_figure(models)]
    names = " vs ".join(m["name"] for m in models)
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>bpetrain report: {_shown(names)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Tokenizer report: {_shown(names)}</h1>",
        (f'<p class="note">bpetrain {_e(report["bpetrain_version"])}, '
         f'{_e(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))}. '
         "Bytes are UTF-8 bytes; words are whitespace-separated; special token strings in the texts count as "
         "ordinary text. Tokens are shown with invalid UTF-8 and control characters escaped "
         "(<code>\\xNN</code>, <code>\\n</code>, a backslash as <code>\\\\</code>), a space as a grey "
         '<span class="sp">␣</span>.</p>'),
        "<h2>Summary</h2>", _summary_table(report),
        "<h2>Texts</h2>", _texts_table(report),
        "<h2>Compression</h2>",
        *(f for f in figures if f),
        _curve_note(models),
        "<h2>Token lengths</h2>", _lengths_figure(models),
        "<h2>Longest tokens</h2>",
        _side_by_side(models, lambda m: m["name"], lambda m: _token_table(m["longest_tokens"])),
        "<h2>Rarest tokens on the texts</h2>",
        _side_by_side(models, lambda m: m["name"], _rarest_html)
        or '<p class="note">No texts given: no token counts.</p>',
    ]
    if any(m["training"] for m in models):
        parts += ["<h2>Training</h2>",
                  _side_by_side(models, lambda m: m["name"], lambda m: _training_html(m) if m["training"] else "")]
    parts.append("</body></html>\n")
    return "\n".join(parts)
