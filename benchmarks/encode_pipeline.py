"""Encode 1 KB documents with a ``tokenizer.json`` whose pre-tokenizer is a ``Sequence`` of splits:
bpetrain against Hugging Face tokenizers, one thread.

The ``tokenizer.json`` is made here, so nothing is downloaded: Hugging Face's own
``BpeTrainer`` trains a byte-level BPE (``--vocab-size``, 32768) on the first
``--train-bytes`` (20 MB) of the corpus read line by line, with the pre-tokenizer

    Sequence[Split(\\p{N}{1,3}, Isolated), Split(Llama 3's pattern, Isolated),
             Split([\\r\\n]+, MergedWithPrevious), ByteLevel(add_prefix_space=false, use_regex=false)]

(``--pre-tokenizer qwen2`` uses Qwen2's ``Split`` + ``ByteLevel``; ``bytelevel`` GPT-2's
``ByteLevel`` with ``add_prefix_space``). bpetrain reads the saved file
(``Tokenizer.from_file``; its pipeline runs in the compiled kernel) and both encode the
corpus cut into documents of about ``--doc-bytes`` bytes (1000, on character boundaries),
one call each: ``Encoding.encode_ordinary`` and ``tokenizers.Tokenizer.encode(text,
add_special_tokens=False).ids``. The ids of every document are checked identical before
anything is timed. Each run encodes every document once per library, alternating; reported
are the median time per document of the runs, MB/s, and tokenizers' time as a multiple of
bpetrain's (the median over the runs of each run's ratio).

Run from the repository (after ``pip install '.[bench]'`` or an in-place build)::

    PYTHONPATH=. python benchmarks/encode_pipeline.py mix-10M.txt --repeat 5
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time

PATTERNS = {
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
              r"|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
             r"|\s+(?!\S)|\s+",
}


def hf_pre_tokenizer(name: str):
    from tokenizers import Regex, pre_tokenizers

    last = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if name == "sequence":
        return pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), "isolated"),
            pre_tokenizers.Split(Regex(PATTERNS["llama3"]), "isolated"),
            pre_tokenizers.Split(Regex(r"[\r\n]+"), "merged_with_previous"),
            last,
        ])
    if name == "qwen2":
        return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(PATTERNS["qwen2"]), "isolated"), last])
    return pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)


def train_hf(corpus: str, pre_tokenizer: str, vocab_size: int, train_bytes: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    with open(corpus, encoding="utf-8", errors="replace") as f:
        lines = f.read(train_bytes).splitlines()
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = hf_pre_tokenizer(pre_tokenizer)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(lines, trainer)
    return hf


def documents(corpus: str, doc_bytes: int, limit_bytes: int) -> list[str]:
    """The first ``limit_bytes`` of the corpus cut into pieces of about ``doc_bytes`` bytes,
    on character boundaries."""
    with open(corpus, "rb") as f:
        data = f.read(limit_bytes).decode("utf-8", "replace").encode("utf-8")
    docs, start = [], 0
    while start < len(data):
        end = min(start + doc_bytes, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # not inside a character
            end -= 1
        docs.append(data[start:end].decode("utf-8"))
        start = end
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--pre-tokenizer", choices=["sequence", "qwen2", "bytelevel"], default="sequence")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--train-bytes", type=int, default=20_000_000)
    parser.add_argument("--doc-bytes", type=int, default=1000)
    parser.add_argument("--encode-bytes", type=int, default=2_000_000, help="text to cut into documents")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import tokenizers

    import bpetrain
    from bpetrain import Tokenizer

    started = time.perf_counter()
    hf = train_hf(args.corpus, args.pre_tokenizer, args.vocab_size, args.train_bytes)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tokenizer.json")
        hf.save(path)
        pre_tokenizer = json.load(open(path, encoding="utf-8"))["pre_tokenizer"]
        enc = Tokenizer.from_file(path).encoding()
    print(f"trained {args.vocab_size} tokens with tokenizers' BpeTrainer in {time.perf_counter() - started:.1f} s; "
          f"pre_tokenizer: {json.dumps(pre_tokenizer)[:200]}")
    print(f"bpetrain pattern: {type(enc.pat_str).__name__} ({enc._split!r})")

    docs = documents(args.corpus, args.doc_bytes, args.encode_bytes)
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    for doc in docs:
        if enc.encode_ordinary(doc) != hf.encode(doc, add_special_tokens=False).ids:
            raise SystemExit(f"ids differ on {doc[:80]!r}")
    print(f"ids identical on {len(docs)} documents ({n_bytes / 1e6:.1f} MB)")

    encoders = {
        "bpetrain": enc.encode_ordinary,
        "tokenizers": lambda doc: hf.encode(doc, add_special_tokens=False).ids,
    }
    times: dict[str, list[float]] = {name: [] for name in encoders}
    for _ in range(args.repeat):
        for name, encode in encoders.items():
            t = time.perf_counter()
            for doc in docs:
                encode(doc)
            times[name].append(time.perf_counter() - t)
    ratios = [b / a for a, b in zip(times["bpetrain"], times["tokenizers"])]
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; bpetrain {bpetrain.__version__}, tokenizers {tokenizers.__version__}; "
          f"one thread, {args.repeat} runs, median")
    print(f"{'encoder':<12} {'us/doc':>8} {'MB/s':>7} {'x bpetrain':>11}")
    for name in encoders:
        seconds = statistics.median(times[name])
        ratio = 1.0 if name == "bpetrain" else statistics.median(ratios)
        print(f"{name:<12} {seconds / len(docs) * 1e6:8.1f} {n_bytes / seconds / 1e6:7.1f} {ratio:11.2f}")


if __name__ == "__main__":
    main()
