"""Fixtures shared by the tests."""
import pytest
from helpers import stdlib_text


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
