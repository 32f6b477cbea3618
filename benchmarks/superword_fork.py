"""Superword training against the SuperBPE authors' fork of Hugging Face ``tokenizers``: whole
merge lists, stage 1 and stage 2, on one corpus.

The fork's merges come from its own run (its ``merges.txt`` files), made as the authors'
``scripts/train_tokenizer.sh`` and ``scripts/extend_tokenizer.sh`` (PythonNut/superbpe) make
them: stage 1 is ``BpeTrainer(vocab_size=V1)`` over ``Tokenizer.train(files)`` with
``Split(STAGE_1_PATTERN, "isolated")`` + ``ByteLevel(use_regex=False)``; stage 2 runs in a
folder holding the first ``--inherit`` lines of stage 1's ``merges.txt`` (``head -n``, so the
version line counts as one) with ``Split(<the stage-2 regex>, "isolated")``, which the fork's
``BpeTrainer::do_train_extend`` extends to ``--vocab-size``. Give the fork
``initial_alphabet=ByteLevel.alphabet()`` (the scripts do not: their alphabet is the bytes the
corpus holds, which changes the number of merges, not their order).

bpetrain trains the same: stage 1 ``BpeTrainer(V1, pat_str=STAGE_1_PATTERN, tie_break="hf")``,
stage 2 ``BpeTrainer(V, superword_transition=256 + inherit - 1, pat_str=STAGE_1_PATTERN,
tie_break="hf")`` (stage-2 pattern ``"superbpe"``, 4 words, no ``": "``), both on the corpus
with ``documents="line"`` (as ``Tokenizer.train(files)`` reads it). Stage 1's lists are compared
whole. In stage 2 the fork drops every inherited merge whose pair never occurs in the stage-2
pieces (its tokens are then not in the vocabulary, and their places go to more new merges),
where bpetrain keeps all of stage 1; so the script lists the stage-1 merges missing from the
fork's list, trains bpetrain again to ``--vocab-size`` plus their number, removes them, and
compares the lists whole. Any other difference is printed (index, both pairs).

Usage (skips, saying why, when the fork's files are absent)::

    python benchmarks/superword_fork.py corpus.txt --fork-stage1 s1/merges.txt --fork-stage2 s2/merges.txt \\
        --inherit 6001 --vocab-size 8192
"""
from __future__ import annotations

import argparse
import os
import sys

from bpetrain import BpeTrainer
from bpetrain.formats._vocab import str_to_token

#: The stage-1 split of the authors' ``scripts/train_tokenizer.sh``.
STAGE_1_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                   r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
                   r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

Pair = tuple[bytes, bytes]


def read_merges(path: str) -> list[Pair]:
    """A ``merges.txt`` (version line, then ``left right`` in the ``ByteLevel`` alphabet) as byte pairs."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")[1:]
    return [tuple(str_to_token(part, f"{path}:{i + 2}") for part in line.split(" "))
            for i, line in enumerate(lines) if line]


def pairs(tokenizer) -> list[Pair]:
    vocab = tokenizer.vocab
    return [(vocab[left], vocab[right]) for left, right in tokenizer.merges]


def first_difference(ours: list[Pair], theirs: list[Pair]) -> str:
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return f"first difference at merge {i}: bpetrain {a}, the fork {b}"
    return f"one list is a prefix of the other ({len(ours)} and {len(theirs)} merges)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--fork-stage1", required=True, metavar="MERGES.TXT")
    parser.add_argument("--fork-stage2", required=True, metavar="MERGES.TXT")
    parser.add_argument("--inherit", type=int, required=True, metavar="LINES",
                        help="the lines of stage 1's merges.txt stage 2 started from (head -n LINES)")
    parser.add_argument("--vocab-size", type=int, required=True, help="stage 2's vocab_size")
    parser.add_argument("--pat-str", default=STAGE_1_PATTERN, help="stage 1's split (default: the authors')")
    args = parser.parse_args()
    missing = [path for path in (args.corpus, args.fork_stage1, args.fork_stage2) if not os.path.exists(path)]
    if missing:
        print(f"skipped: {', '.join(missing)} not found (the fork's merges come from its own build and run)")
        return 0
    fork1, fork2 = read_merges(args.fork_stage1), read_merges(args.fork_stage2)
    common = {"pat_str": args.pat_str, "tie_break": "hf", "show_progress": False}
    ours1 = pairs(BpeTrainer(256 + len(fork1), **common).train(args.corpus, documents="line"))
    print(f"stage 1, {len(fork1)} merges: {'identical' if ours1 == fork1 else first_difference(ours1, fork1)}")
    transition = 256 + args.inherit - 1
    inherited = set(fork2)
    ours2 = pairs(BpeTrainer(args.vocab_size, superword_transition=transition, **common).train(
        args.corpus, documents="line"))
    dropped = [pair for pair in ours2[:transition - 256] if pair not in inherited]
    print(f"stage 2, T = {transition}, {len(fork2)} merges: {'identical' if ours2 == fork2 else 'different'}; "
          f"the fork dropped {len(dropped)} of stage 1's {transition - 256} merges (never formed in the stage-2 "
          f"pieces): {dropped[:8]}{' ...' if len(dropped) > 8 else ''}")
    if dropped:
        longer = pairs(BpeTrainer(args.vocab_size + len(dropped), superword_transition=transition, **common).train(
            args.corpus, documents="line"))
        kept = [pair for pair in longer if pair not in set(dropped)]
        verdict = "identical" if kept == fork2 else first_difference(kept, fork2)
        print(f"  bpetrain to {args.vocab_size + len(dropped)} tokens less those {len(dropped)}: {verdict}")
        return 0 if kept == fork2 else 1
    return 0 if ours2 == fork2 else 1


if __name__ == "__main__":
    sys.exit(main())
