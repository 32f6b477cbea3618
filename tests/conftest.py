"""Fixtures shared by the tests, and a cache folder of the run's own."""
import os
import shutil
import tempfile

import pytest
from helpers import stdlib_text

_OWN_CACHE = []


def pytest_configure(config):
    """Compiled patterns and pair tables go to a folder of this run's own, removed at its end,
    not to the user's cache (``~/.cache/bpetrain``), where the thousands of patterns the
    tests draw would stay; a run with ``BPETRAIN_CACHE_DIR`` set uses that folder."""
    if not os.environ.get("BPETRAIN_CACHE_DIR"):
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="bpetrain-tests-cache-"))
        os.environ["BPETRAIN_CACHE_DIR"] = _OWN_CACHE[0]


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        os.environ.pop("BPETRAIN_CACHE_DIR", None)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def prose() -> bytes:
    """3 MB of real text (the standard library's sources)."""
    return stdlib_text(3_000_000)


@pytest.fixture
def threads_beyond_cores(monkeypatch):
    """Threaded calls run as many threads as asked even where the machine has fewer cores
    (they use no more than :func:`bpetrain._util.threads.usable_cores`), so that the tests of
    threads run threads on a one-core machine too."""
    import bpetrain.encoding.batching
    from bpetrain._util import threads as _threads

    monkeypatch.setattr(_threads, "usable_cores", lambda: 64)
    monkeypatch.setattr(bpetrain.encoding.batching, "usable_cores", lambda: 64)
