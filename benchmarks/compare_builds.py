"""Before and after in one run: two builds of bpetrain, alternating in fresh processes.

Each tree is a source checkout with its kernels built in place (``python setup.py
build_ext --inplace``); each run imports one of them (``PYTHONPATH=TREE``) in a new
process, the order swapped every round, so that both builds see the same machine. Two
tasks, the ones a change to the house must leave as fast as they were:

- ``train``: ``BpeTrainer(32768, pat_str="cl100k")`` on ``mix-100M.txt``, end to end
  (the merges of both builds must be identical);
- ``encode``: cl100k_base's ``encode_ordinary``, ``encode``, ``encode_to_numpy`` on 3,000
  documents of 1,000 characters of ``kernel-docs.txt`` (the encoder warmed on 1,000 other
  documents; best of 5), and one ``encode_ordinary_batch`` call on 12,000 of them.

Prints each run, then the medians and the ratio ``NEW/OLD`` per task (below 1: faster)::

    python benchmarks/compare_builds.py OLD_TREE NEW_TREE --corpora .corpora \\
        --ranks ../shared/vocabs/cl100k_base.tiktoken --rounds 11
"""
from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys

TRAIN = """
import time, bpetrain
t = time.perf_counter()
tok = bpetrain.BpeTrainer(32768, pat_str="cl100k", show_progress=False).train([{corpus!r}])
print(time.perf_counter() - t, hash(tuple(tok.merges)))
"""
ENCODE = """
import time, bpetrain
enc = bpetrain.load_tiktoken({ranks!r}, pat_str="cl100k")
text = open({corpus!r}, encoding="utf-8", errors="replace").read(6_000_000)
docs = [text[i:i + 1000] for i in range(0, len(text), 1000)]
warm, docs = docs[:1000], docs[1000:4000]
for d in warm:
    enc.encode_ordinary(d)
out = {{}}
for name, call in [("encode_ordinary", enc.encode_ordinary), ("encode", enc.encode),
                   ("encode_to_numpy", enc.encode_to_numpy)]:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        for d in docs:
            call(d)
        times.append(time.perf_counter() - t)
    out[name] = min(times)
t = time.perf_counter()
enc.encode_ordinary_batch(docs * 4)
out["encode_ordinary_batch"] = time.perf_counter() - t
print(out)
"""


def run(tree: str, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{tree}: the run failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the source tree before the change (kernels built in place)")
    parser.add_argument("new", help="the source tree after the change (kernels built in place)")
    parser.add_argument("--corpora", default=".corpora", help="the folder of ../shared/corpora/build.sh")
    parser.add_argument("--ranks", required=True, help="cl100k_base.tiktoken")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tasks", default="train,encode", help="train, encode or both (comma-separated)")
    args = parser.parse_args()
    code = {
        "train": TRAIN.format(corpus=os.path.join(args.corpora, "mix-100M.txt")),
        "encode": ENCODE.format(corpus=os.path.join(args.corpora, "kernel-docs.txt"), ranks=args.ranks),
    }
    tasks = args.tasks.split(",")
    trees = {"old": args.old, "new": args.new}
    results = {(label, task): [] for label in trees for task in tasks}
    for r in range(args.rounds):
        for task in tasks:
            for label in (("old", "new") if r % 2 == 0 else ("new", "old")):
                line = run(trees[label], code[task])
                print(r, label, task, line, flush=True)
                results[label, task].append(line)
    if "train" in tasks:
        old = [float(line.split()[0]) for line in results["old", "train"]]
        new = [float(line.split()[0]) for line in results["new", "train"]]
        merges = {line.split()[1] for line in results["old", "train"] + results["new", "train"]}
        print(f"train mix-100M.txt: old {statistics.median(old):.2f} s, new {statistics.median(new):.2f} s, "
              f"new/old {statistics.median(new) / statistics.median(old):.3f}; identical merges: {len(merges) == 1}")
    if "encode" in tasks:
        old = [ast.literal_eval(line) for line in results["old", "encode"]]
        new = [ast.literal_eval(line) for line in results["new", "encode"]]
        for key in old[0]:
            a = statistics.median(d[key] for d in old)
            b = statistics.median(d[key] for d in new)
            print(f"{key}: old {a * 1e3:.1f} ms, new {b * 1e3:.1f} ms, new/old {b / a:.3f}")


if __name__ == "__main__":
    main()
