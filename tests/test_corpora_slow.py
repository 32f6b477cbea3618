"""Real corpora from ../shared/corpora/build.sh: identical merges to rustbpe at full size.

Marked slow and skipped by default: run ``pytest -m slow`` with ``BPETRAIN_CORPORA`` set to
the folder build.sh wrote (default: ../corpora beside the repository).
"""
from __future__ import annotations

import pytest
from helpers import CORPORA, require, rustbpe_merges

from bpetrain import BpeTrainer
from bpetrain.patterns import PATTERNS

pytestmark = pytest.mark.slow
pytest.importorskip("rustbpe", reason="rustbpe is a test dependency: pip install '.[test]'")


@pytest.fixture(scope="module")
def mix10m() -> bytes:
    return require(CORPORA / "mix-10M.txt", "build it with ../shared/corpora/build.sh").read_bytes()


def test_pattern_mode_same_as_rustbpe(mix10m):
    text = mix10m.decode("utf-8")
    ours = BpeTrainer(32768, min_frequency=1, show_progress=False).train_from_iterator([text])
    assert ours.merges == rustbpe_merges([text], 32768, PATTERNS["cl100k"])


def test_raw_lines_same_as_rustbpe(mix10m):
    lines = mix10m.decode("utf-8").splitlines(keepends=True)
    ours = BpeTrainer(32768, pattern=None, min_frequency=1, show_progress=False).train_from_iterator(lines)
    assert ours.merges == rustbpe_merges(lines, 32768, r"[\s\S]+")
