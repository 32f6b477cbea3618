"""Progress bars: tqdm, imported when the first bar is made (it costs ~25 ms of import,
which ``import bpetrain`` and ``bpetrain --help`` should not pay).

In a terminal or a notebook a bar is redrawn in place. Where standard error is neither (a
log file, a pipe, a batch job's output), redrawing would fill it with carriage returns;
there a bar writes a plain line every :data:`LOG_INTERVAL` seconds and one when it ends.
"""
from __future__ import annotations

import sys

#: Seconds between the lines a bar writes where standard error is not a terminal.
LOG_INTERVAL = 30.0


def progress_bar(**options):
    """``tqdm.auto.tqdm(**options)`` (a context manager; ``disable=True`` shows nothing),
    writing lines (:class:`LogLines`) where standard error is not a terminal."""
    from tqdm.auto import tqdm

    in_notebook = any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)
    if "file" not in options and not in_notebook and not _is_terminal(sys.stderr):
        options = {"mininterval": LOG_INTERVAL, "ascii": True, **options, "file": LogLines(sys.stderr)}
    return tqdm(**options)


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


class LogLines:
    """A file for tqdm that writes each redraw of a bar as a line of its own: the carriage
    return tqdm starts it with and the padding after it are dropped, empty writes skipped."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()
        if line and self.stream is not None:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        if self.stream is not None:
            self.stream.flush()
