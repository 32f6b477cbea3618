"""Progress bars: tqdm, imported when the first bar is made (it costs ~25 ms of import,
which ``import bpetrain`` and ``bpetrain --help`` should not pay)."""
from __future__ import annotations


def progress_bar(**options):
    """``tqdm.auto.tqdm(**options)`` (a context manager; ``disable=True`` shows nothing)."""
    from tqdm.auto import tqdm

    return tqdm(**options)
