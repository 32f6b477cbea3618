"""The package's version, and the error for compiled kernels that were never built.

Both are needed below the package's ``__init__`` (the CLI's ``--version`` and error
handling, the report's header), so they live here rather than in ``bpetrain/__init__.py``,
which re-exports them.
"""
from __future__ import annotations

import os

__all__ = ["__version__", "kernels_missing"]

#: The release (the same as ``version`` in ``pyproject.toml``).
__version__ = "0.1.0"

#: The folder of the ``bpetrain`` package.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kernels_missing(exc: ModuleNotFoundError) -> Exception:
    """``exc`` itself, or, when it is one of bpetrain's compiled kernels that is missing
    (Python started in a source checkout that was never built, so ``import bpetrain``
    found the folder instead of the installed package), an ImportError that says so and
    how to fix it."""
    name = exc.name or ""
    if not (name.startswith("bpetrain.") and name.rsplit(".", 1)[-1].startswith("_")):
        return exc
    return ImportError(
        f"bpetrain's compiled kernels ({exc.name}) are not built in {PACKAGE_DIR}: Python imported this source "
        "folder instead of an installed bpetrain (it happens when you run Python from the repository root). "
        "Run from another directory after `pip install .`, or build the kernels in place with "
        "`python setup.py build_ext --inplace`"
    )
