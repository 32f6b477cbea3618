"""Real corpora from ../shared/corpora/build.sh: identical merges to rustbpe at full size.

Marked slow and skipped by default: run ``pytest -m slow`` with ``BPETRAIN_CORPORA`` set to
the folder build.sh wrote (default: ../corpora beside the repository).
"""
from __future__ import annotations

import pytest
from helpers import CORPORA, SPLIT_PATTERNS, require, rustbpe_merges

from bpetrain import PATTERNS, BpeTrainer

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
    ours = BpeTrainer(32768, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(lines)
    assert ours.merges == rustbpe_merges(lines, 32768, r"[\s\S]+")


@pytest.mark.parametrize("name", ["kernel-docs.txt", "python-docs.txt"])
@pytest.mark.parametrize("pattern", list(SPLIT_PATTERNS))
def test_compiled_splitter_same_as_regex_on_real_corpora(name, pattern):
    import regex

    from bpetrain.splitting._compiler import compile_program
    from bpetrain.splitting._matcher import Program
    from bpetrain.splitting.pattern import split_pattern

    data = require(CORPORA / name, "build it with ../shared/corpora/build.sh").read_bytes()[:20_000_000]
    text = data.decode("utf-8", "surrogateescape")
    pat_str = SPLIT_PATTERNS[pattern]
    want = [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text)]
    assert Program(pat_str, compile_program(pat_str), dfa=False).split(data) == want
    assert Program(pat_str, compile_program(pat_str)).split(data) == want  # the DFA
    assert split_pattern(pat_str).split(data) == want


def test_thread_counts_count_kernel_c_identically():
    from bpetrain.counting.parallel import count_sources
    from bpetrain.counting.inputs import expand_inputs

    path = require(CORPORA / "kernel-c.txt", "build it with ../shared/corpora/build.sh")
    tables = []
    for num_threads in (1, 2):
        table = count_sources(expand_inputs([path]), pat_str=PATTERNS["cl100k"], num_threads=num_threads,
                              show_progress=False).table()
        tables.append({table.piece(i): int(c) for i, c in enumerate(table.counts)})
    assert tables[0] == tables[1]
