"""Start-up time: ``import bpetrain``, ``bpetrain --help`` and the first encode, in fresh
processes, beside ``import tiktoken``; and, with ``--vocabs DIR``, loading a rank file and
encoding one string, bpetrain beside tiktoken (``load_tiktoken_bpe`` + ``tiktoken.Encoding``),
for each of ``cl100k_base.tiktoken`` and ``o200k_base.tiktoken`` found in ``DIR``.

Each case runs ``--repeat`` times (11) in a new interpreter, round-robin; reported are the
median wall time of the whole process, that time minus an empty interpreter's
(``python -c pass``), and the median CPU time (user + system) of the process, in
milliseconds: on a shared machine the CPU time is the steadier of the two. Both packages'
bytecode is compiled first (as ``pip install`` leaves an installed package; without it,
and with ``PYTHONDONTWRITEBYTECODE`` set, every process would compile bpetrain's sources).
"first encode" builds the named pattern's character tables from the on-disk cache
(``bpetrain.splitting._charsets``), which the first case fills; ``--cold-cache`` points
``BPETRAIN_CACHE_DIR`` at an empty folder for every run instead.

The load cases run bpetrain twice: with a warm cache (a folder of this run's own, filled
by one untimed run first: the compiled pattern, character tables, Unicode table and the
vocabulary's pair table are read back) and with a cold one (an empty folder each run, as
on a machine's first process: the named patterns' programs and tables come from the folder
the build ships, ``bpetrain/splitting/_shipped/``; the pair table is built; all are
written). tiktoken has no such cache for a local rank file.
They also report each process's peak resident memory (median, MB) and the ratio of
bpetrain's time and memory to tiktoken's (below 1.00: bpetrain costs less).

``--documents`` adds, for the same rank files, a fresh process that loads one and encodes
200 KB of text as 1 KB documents, one ``encode`` call each (the first 200,000 characters of
the standard library's sources, :func:`texts.stdlib_text`, cut every 1,000 characters): past
its first 64 KiB an encoder builds the linear encoder's tables and seeds its piece tables, which
a warm cache reads back (``linear-*.bin``) and a cold one builds and writes.

``--published`` adds, for each pattern of ``benchmarks/splitting.py``'s
``PUBLISHED_PATTERNS``, a fresh process that compiles it (``SplitPattern(pat_str)``, the
installed ``regex`` module's classes) with an empty cache: a first process's compile of a
pattern that is not one of the named ones.

    python benchmarks/import_time.py [--repeat 11] [--cold-cache] [--vocabs DIR [--documents]] [--published]
"""
from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import bpetrain": [sys.executable, "-c", "import bpetrain"],
    "bpetrain --help": [sys.executable, "-m", "bpetrain", "--help"],
    "from bpetrain import Encoding": [sys.executable, "-c", "from bpetrain import Encoding"],
    "first encode (cl100k pattern)": [
        sys.executable, "-c",
        (
            "import bpetrain\n"
            "e = bpetrain.Encoding('b', pat_str=bpetrain.PATTERNS['cl100k'],"
            " mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})\n"
            "e.encode('hello world')"
        ),
    ],
    "import tiktoken": [sys.executable, "-c", "import tiktoken"],
}

#: Load a rank file (argv[1]) with the pattern argv[2] and encode one string.
LOAD_BPETRAIN = (
    "import sys, bpetrain\n"
    "enc = bpetrain.load_tiktoken(sys.argv[1], pat_str=sys.argv[2])\n"
    "enc.encode('hello world')"
)
LOAD_TIKTOKEN = (
    "import sys, tiktoken, tiktoken.load\n"
    "ranks = tiktoken.load.load_tiktoken_bpe(sys.argv[1])\n"
    "enc = tiktoken.Encoding('x', pat_str=sys.argv[2], mergeable_ranks=ranks, special_tokens={})\n"
    "enc.encode('hello world')"
)

#: The same, then encode the text of the file argv[3] as documents of 1,000 characters, one call each.
DOCUMENTS = (
    "\ntext = open(sys.argv[3], encoding='utf-8').read()\n"
    "for start in range(0, len(text), 1000):\n"
    "    enc.encode(text[start:start + 1000])"
)
#: Characters of text the documents cases encode.
DOCUMENT_CHARS = 200_000

#: The cache each bpetrain load case runs with (see the module docstring).
WARM, COLD = "warm cache", "cold cache"

#: Compile the pattern argv[1] (the installed regex module's classes).
COMPILE = "import sys\nfrom bpetrain.splitting.pattern import SplitPattern\nSplitPattern(sys.argv[1])"


def published_cases() -> dict[str, list[str]]:
    """A cold compile of each pattern of ``benchmarks/splitting.py``'s ``PUBLISHED_PATTERNS``."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from splitting import PUBLISHED_PATTERNS

    return {f"compile {name} ({COLD})": [sys.executable, "-c", COMPILE, pat_str]
            for name, (pat_str, _) in PUBLISHED_PATTERNS.items()}


def load_cases(vocabs: str, documents: str | None = None) -> dict[str, list[str]]:
    """The load-and-encode cases for the rank files in ``vocabs``: bpetrain with a warm and
    a cold cache, then tiktoken; with ``documents`` (a text file), each also loads and
    encodes that text as documents of 1,000 characters."""
    from bpetrain.splitting.names import PATTERNS

    kinds = [("encode", "", [])] + ([("200 KB as 1 KB documents", DOCUMENTS, [documents])] if documents else [])
    cases = {}
    for name in ("cl100k", "o200k"):
        path = os.path.join(vocabs, f"{name}_base.tiktoken")
        if not os.path.exists(path):
            continue
        for what, tail, extra in kinds:
            for cache in (WARM, COLD):
                cases[f"load + {what} {name} (bpetrain, {cache})"] = [
                    sys.executable, "-c", LOAD_BPETRAIN + tail, path, name, *extra]
            cases[f"load + {what} {name} (tiktoken)"] = [
                sys.executable, "-c", LOAD_TIKTOKEN + tail, path, PATTERNS[name], *extra]
    return cases


def compile_bytecode() -> None:
    """Compile bpetrain's and tiktoken's modules to bytecode, as installing them does."""
    for package in ("bpetrain", "tiktoken"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                compileall.compile_dir(folder, quiet=1)


def run(command: list[str], env: dict) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak resident MB of one process running ``command``."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command)
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--cold-cache", action="store_true", help="an empty character-set cache for every run")
    parser.add_argument("--vocabs", help="a folder with cl100k_base.tiktoken and/or o200k_base.tiktoken")
    parser.add_argument("--documents", action="store_true",
                        help="with --vocabs, also load and encode 200 KB as 1 KB documents, one call each")
    parser.add_argument("--published", action="store_true", help="a cold compile of each published pattern")
    args = parser.parse_args()
    compile_bytecode()
    documents = None
    if args.documents:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from texts import stdlib_text

        fd, documents = tempfile.mkstemp(suffix=".txt", prefix="bpetrain-documents-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(stdlib_text(DOCUMENT_CHARS))
    cases = {**CASES, **(load_cases(args.vocabs, documents) if args.vocabs else {}),
             **(published_cases() if args.published else {})}
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    memory: dict[str, list[float]] = {name: [] for name in cases}
    warm = tempfile.mkdtemp(prefix="bpetrain-warm-cache-")
    try:
        for name, command in cases.items():  # fills the warm cache; untimed
            if WARM in name:
                run(command, {**os.environ, "BPETRAIN_CACHE_DIR": warm})
        for _ in range(args.repeat):
            for name, command in cases.items():
                env = dict(os.environ)
                cache = tempfile.mkdtemp() if args.cold_cache and WARM not in name or COLD in name else None
                if cache:
                    env["BPETRAIN_CACHE_DIR"] = cache
                elif WARM in name:
                    env["BPETRAIN_CACHE_DIR"] = warm
                elapsed, seconds, peak = run(command, env)
                times[name].append(elapsed)
                cpu[name].append(seconds)
                memory[name].append(peak)
                if cache:
                    shutil.rmtree(cache)
    finally:
        shutil.rmtree(warm)
        if documents:
            os.unlink(documents)
    empty = statistics.median(times["python -c pass"])
    print("| case | median ms | minus empty interpreter | CPU ms | peak MB |\n|---|---:|---:|---:|---:|")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"| {name} | {median * 1e3:.0f} | {(median - empty) * 1e3:.0f} | {statistics.median(cpu[name]) * 1e3:.0f} "
              f"| {statistics.median(memory[name]):.0f} |")
    pairs = [name for name in cases if "(bpetrain, " in name]
    if pairs:
        print("\n| case | cache | time bpetrain / tiktoken | CPU bpetrain / tiktoken | memory bpetrain / tiktoken |"
              "\n|---|---|---:|---:|---:|")
    for name in pairs:
        case, cache = name[:-1].split(" (bpetrain, ")
        ratios = [statistics.median(table[name]) / statistics.median(table[f"{case} (tiktoken)"])
                  for table in (times, cpu, memory)]
        print(f"| {case.removeprefix('load + ')} | {cache.split()[0]} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")


if __name__ == "__main__":
    main()
