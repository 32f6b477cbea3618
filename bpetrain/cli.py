"""The ``bpetrain`` command line (argparse)."""
from __future__ import annotations

import argparse
import sys
import warnings

from .patterns import PATTERNS
from .trainer import BpeTrainer

FORMATS = ("bpetrain", "tiktoken")


def _train(args: argparse.Namespace) -> int:
    trainer = BpeTrainer(
        args.vocab_size,
        pattern=args.pattern,
        special_tokens=args.special_token,
        min_frequency=args.min_frequency,
        show_progress=not args.quiet,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tokenizer = trainer.train(args.files)
    for warning in caught:
        print(f"bpetrain: warning: {warning.message}", file=sys.stderr)
    if args.format == "tiktoken":
        tokenizer.save_tiktoken(args.output)
    else:
        tokenizer.save(args.output)
    s = trainer.stats
    print(
        f"trained in {s.seconds:.2f} s: {s.n_input_bytes / 1e6:.2f} MB in {s.n_documents} file(s), "
        f"{s.n_pieces:,} unique pieces, {s.n_merges:,} merges, vocab size {tokenizer.n_vocab:,}; "
        f"compression {s.bytes_per_token:.3f} bytes/token on the training text; wrote {args.output}",
        file=sys.stderr,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpetrain", description="Train byte-level BPE tokenizers.")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser(
        "train",
        help="train a tokenizer on text files",
        description="Train a byte-level BPE tokenizer on text files (each file is one document).",
    )
    train.add_argument("files", nargs="+", metavar="FILE", help="text files (UTF-8; invalid bytes are kept)")
    train.add_argument("--vocab-size", type=int, required=True, metavar="N",
                       help="256 byte tokens + merges + special tokens")
    train.add_argument("--pattern", default="cl100k", metavar="NAME|REGEX|none",
                       help=f"split pattern: {', '.join(PATTERNS)}, a regex, or none (default: cl100k)")
    train.add_argument("--special-token", action="append", default=[], metavar="T",
                       help="a special token (repeat the option for more)")
    train.add_argument("--min-frequency", type=int, default=2, metavar="K",
                       help="merge only pairs seen at least K times (default: 2)")
    train.add_argument("-o", "--output", required=True, metavar="OUT", help="model file to write")
    train.add_argument("--format", choices=FORMATS, default="bpetrain",
                       help="bpetrain model file (default) or a tiktoken rank file")
    train.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    train.set_defaults(run=_train)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, TypeError, OSError) as exc:
        parser.exit(2, f"bpetrain {args.command}: error: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
