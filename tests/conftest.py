"""Fixtures shared by the tests."""
import pytest
from helpers import stdlib_text


@pytest.fixture(scope="session")
def prose() -> bytes:
    """3 MB of real text (the standard library's sources)."""
    return stdlib_text(3_000_000)
