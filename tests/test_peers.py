"""External checks: rustbpe learns the same merges; tiktoken encodes with our exported ranks."""
from __future__ import annotations

import pytest
from helpers import MULTILINGUAL, rustbpe_merges, stdlib_text

from bpetrain import PATTERNS, BpeTrainer

pytest.importorskip("rustbpe", reason="rustbpe is a test dependency: pip install '.[test]'")
tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
load_tiktoken_bpe = pytest.importorskip("tiktoken.load").load_tiktoken_bpe


@pytest.mark.parametrize("pattern", ["cl100k", "gpt2"])
def test_same_merges_as_rustbpe_on_real_text(pattern):
    text = stdlib_text(3_000_000).decode("utf-8")
    ours = BpeTrainer(256 + 2000, pat_str=pattern, min_frequency=1, show_progress=False).train_from_iterator([text])
    assert ours.merges == rustbpe_merges([text], 256 + 2000, PATTERNS[pattern])


def test_same_merges_as_rustbpe_raw_documents():
    lines = stdlib_text(1_000_000).decode("utf-8").splitlines(keepends=True)
    ours = BpeTrainer(256 + 1000, pat_str=None, min_frequency=1, show_progress=False).train_from_iterator(lines)
    assert ours.merges == rustbpe_merges(lines, 256 + 1000, r"[\s\S]+")


@pytest.mark.parametrize("pattern", ["cl100k", "o200k"])
def test_tiktoken_loads_export_and_encodes_like_reference(tmp_path, pattern):
    text = stdlib_text(1_000_000).decode("utf-8") + MULTILINGUAL * 20
    special = ["<|endoftext|>", "<|fim|>"]
    tok = BpeTrainer(256 + 3000 + 2, pat_str=pattern, special_tokens=special, show_progress=False).train_from_iterator([text])
    tok.save_tiktoken(tmp_path / "ranks.tiktoken")
    enc = tiktoken.Encoding(
        "trained",
        pat_str=tok.pat_str,
        mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "ranks.tiktoken")),
        special_tokens=tok.special_tokens,
    )
    assert enc.n_vocab == tok.n_vocab
    sample = text[:200_000] + "<|endoftext|>" + MULTILINGUAL + "<|fim|>"
    assert enc.encode(sample, allowed_special="all") == tok.encode(sample, allowed_special="all")
    assert enc.decode(tok.encode(sample, allowed_special="all")) == sample
