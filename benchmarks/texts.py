"""Benchmark inputs every Python install carries: the standard library's sources."""
from __future__ import annotations

import pathlib
import sysconfig


def stdlib_text(n_bytes: int) -> str:
    """The first ``n_bytes`` characters of the standard library's ``*.py`` files, sorted by name."""
    root = pathlib.Path(sysconfig.get_path("stdlib"))
    parts, size = [], 0
    for path in sorted(root.glob("*.py")):
        parts.append(path.read_text(encoding="utf-8"))
        size += len(parts[-1])
        if size >= n_bytes:
            break
    return "".join(parts)[:n_bytes]
