"""Test inputs: real text every Python install carries, and seeded random corpora."""
from __future__ import annotations

import os
import pathlib
import random
import sysconfig

import pytest

from bpetrain._reference import merges_from_ranks

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared"
VOCABS = pathlib.Path(os.environ.get("BPETRAIN_VOCABS", SHARED / "vocabs"))
CORPORA = pathlib.Path(os.environ.get("BPETRAIN_CORPORA", pathlib.Path(__file__).resolve().parents[2] / "corpora"))


def stdlib_text(n_bytes: int) -> bytes:
    """About ``n_bytes`` of real text: the standard library's Python sources (English
    docstrings and comments, code), sorted by name so the text is the same on every run."""
    root = pathlib.Path(sysconfig.get_path("stdlib"))
    parts, size = [], 0
    for path in sorted(root.glob("*.py")):
        data = path.read_bytes()
        parts.append(data)
        size += len(data)
        if size >= n_bytes:
            break
    return b"".join(parts)[:n_bytes]


def random_corpus(seed: int, n_docs: int, alphabet: str, max_len: int) -> list[str]:
    """Documents drawn from a small alphabet: many equal counts, so many ties."""
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len))) for _ in range(n_docs)]


MULTILINGUAL = (
    "Grüße aus Köln! Ça va très bien, merci. ¿Dónde está la biblioteca? "
    "Привет, как дела? Всё хорошо, спасибо. 你好，世界！我们今天去公园散步吧。 "
    "こんにちは、元気ですか？ 안녕하세요, 반갑습니다. مرحبا بالعالم، كيف حالك؟ "
    "שלום עולם. नमस्ते दुनिया, आप कैसे हैं? Γειά σου Κόσμε! 🙂🚀🔥👍🏽 👨‍👩‍👧‍👦 "
    "can't won't I'm you're they've we'll HE'S 12345 3.14159 1,000,000\r\n\ttabs\n\n\n"
)


def require(path: pathlib.Path, why: str) -> pathlib.Path:
    if not path.exists():
        pytest.skip(f"{path} is absent: {why}")
    return path


def rustbpe_merges(texts, vocab_size, pat_str):
    """rustbpe's merges as id pairs, recovered from its ranks."""
    import rustbpe

    peer = rustbpe.Tokenizer()
    peer.train_from_iterator(iter(texts), vocab_size, pattern=pat_str)
    return merges_from_ranks(peer.get_mergeable_ranks())
