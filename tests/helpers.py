"""Test inputs: real text every Python install carries, and seeded random corpora."""
from __future__ import annotations

import os
import pathlib
import random
import subprocess
import sys
import sysconfig

import pytest
from hypothesis import strategies as st

import bpetrain
from bpetrain import PATTERNS
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

#: Qwen2's split pattern (Qwen/Qwen2-7B tokenizer.json): Llama 3's with single digits.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def require(path: pathlib.Path, why: str) -> pathlib.Path:
    if not path.exists():
        pytest.skip(f"{path} is absent: {why}")
    return path


#: The special tokens of OpenAI's encodings (tiktoken_ext/openai_public.py).
OPENAI_SPECIALS = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


def openai_encodings(name: str):
    """bpetrain's and tiktoken's encodings of ``name`` (cl100k_base or o200k_base) from VOCABS."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from bpetrain import PATTERNS, load_tiktoken

    path = require(VOCABS / f"{name}.tiktoken", "the OpenAI vocabularies (set BPETRAIN_VOCABS)")
    pat_str = PATTERNS[name.split("_")[0]]
    ours = load_tiktoken(path, pat_str=pat_str, special_tokens=OPENAI_SPECIALS[name])
    theirs = tiktoken.Encoding(
        name, pat_str=pat_str, mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens=OPENAI_SPECIALS[name]
    )
    return ours, theirs


def rustbpe_merges(texts, vocab_size, pat_str):
    """rustbpe's merges as id pairs, recovered from its ranks."""
    import rustbpe

    peer = rustbpe.Tokenizer()
    peer.train_from_iterator(iter(texts), vocab_size, pattern=pat_str)
    return merges_from_ranks(peer.get_mergeable_ranks())


#: Split patterns the tests run: the named ones and others that published tokenizers use.
SPLIT_PATTERNS = {
    "gpt2": PATTERNS["gpt2"],
    "cl100k": PATTERNS["cl100k"],
    "o200k": PATTERNS["o200k"],
    # cl100k as minbpe and rustbpe write it (it splits text as cl100k, but at the text's end)
    "minbpe": PATTERNS["minbpe"],
    # nanochat's (karpathy/nanochat): numbers of at most two digits
    "nanochat": PATTERNS["nanochat"],
    # Llama 3's
    "llama3": PATTERNS["llama3"],
    # SuperBPE's second stage (superword tokens): lookaheads, pieces that span words
    "superbpe": PATTERNS["superbpe"],
    "superbpe-original": PATTERNS["superbpe-original"],
}


#: DeepSeek V3's (and R1's) pattern, the third of the three splits of its tokenizer.json, \r\n raw
#: as there.
DEEPSEEK_V3 = ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
               "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")
#: Kimi K2's pattern (moonshotai/Kimi-K2-Instruct tokenization_kimi.py): o200k's with [\r\n]* for
#: [\r\n/]* and Han apart from the letters, its class intersections [...&&[^\p{Han}]] written as
#: (?!\p{Han})[...] (the regex module reads && only in its version 1).
_KIMI_UPPER = r"(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])"
_KIMI_LOWER = r"(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])"
_KIMI_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
KIMI_K2 = "|".join([r"[\p{Han}]+", rf"[^\r\n\p{{L}}\p{{N}}]?{_KIMI_UPPER}*{_KIMI_LOWER}+{_KIMI_CONTRACTIONS}",
                    rf"[^\r\n\p{{L}}\p{{N}}]?{_KIMI_UPPER}+{_KIMI_LOWER}*{_KIMI_CONTRACTIONS}", r"\p{N}{1,3}",
                    r" ?[^\s\p{L}\p{N}]+[\r\n]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])


#: Characters Python's Unicode database (14.0 in Python 3.11) assigns. Pre-tokenization
#: classes come from the regex module's newer Unicode tables (the reference and the
#: compiled splitter agree), tiktoken's from its Rust regex: on characters assigned
#: since, they differ (U+18D80, Unicode 16, is a letter to regex only, so "\U00018d80:A"
#: splits as ["\U00018d80", ":A"] here and ["\U00018d80:", "A"] in tiktoken).
ASSIGNED = st.characters(exclude_categories=("Cn", "Cs"))


def run_bpetrain(args: list[str], **options) -> subprocess.CompletedProcess:
    """``python -m bpetrain ARGS`` in a child process that imports the bpetrain under test: from
    the folder that holds it (in CI the installed package, not the unbuilt checkout the tests
    start in). ``options`` go to :func:`subprocess.run` (text output captured by default)."""
    home = pathlib.Path(bpetrain.__file__).parents[1]
    return subprocess.run([sys.executable, "-m", "bpetrain", *args], cwd=home,
                          **{"capture_output": True, "text": True, **options})
