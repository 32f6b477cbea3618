"""How the batch calls scale from one thread to two, by output: lists of ids
(``encode_ordinary_batch``, and ``encode_batch``, which also looks for disallowed special
tokens), one array (``encode_batch_to_numpy``), counts (``count_batch``).

The file is cut into documents of about 1000 bytes (as ``encode_peers.py`` does); each
call runs ``--repeat`` times (15) with the piece caches emptied first, one and two threads
alternating, and the medians are reported as MB/s with their ratio, and the median of
the ratios of each pair of neighbouring runs (steadier where other work on the machine
comes and goes). The result is freed after the clock stops (what a caller does with it is not
the call). bpetrain runs alone in the process (a peer's idle thread pool would
take a core from the second thread).

    python benchmarks/batch_threads.py mix-10M.txt --vocab cl100k_base [--max-bytes 3000000]
"""
from __future__ import annotations

import argparse
import statistics
import time

import bpetrain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--vocab", default="cl100k_base", help="an OpenAI encoding name (BPETRAIN_VOCABS)")
    parser.add_argument("--max-bytes", type=int, default=3_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    enc = bpetrain.get_encoding(args.vocab)
    with open(args.file, "rb") as f:
        text = f.read(args.max_bytes).decode("utf-8", "ignore")
    docs = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    megabytes = len(text.encode("utf-8")) / 1e6
    print(f"| {args.vocab} output | 1 thread MB/s | 2 threads MB/s | 2 / 1 | 2 / 1, paired runs |\n|---|---:|---:|---:|---:|")
    for name, call in (("lists", enc.encode_ordinary_batch), ("lists, special tokens checked", enc.encode_batch),
                       ("array (special tokens checked)", enc.encode_batch_to_numpy), ("counts", enc.count_batch)):
        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(args.repeat):
            for threads in (1, 2):
                enc.clear_cache()
                started = time.perf_counter()
                result = call(docs, num_threads=threads)
                times[threads].append(time.perf_counter() - started)
                del result  # freed after the clock stops: freeing 3 MB of lists takes ~1.8 ms, on one thread
        one, two = (statistics.median(times[t]) for t in (1, 2))
        paired = statistics.median(a / b for a, b in zip(times[1], times[2]))
        print(f"| {name} | {megabytes / one:.1f} | {megabytes / two:.1f} | {one / two:.2f}x | {paired:.2f}x |")


if __name__ == "__main__":
    main()
