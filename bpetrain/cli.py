"""The ``bpetrain`` command line (argparse)."""
from __future__ import annotations

import argparse
import sys
import warnings

from .inputs import FORMATS as FORMATS_IN
from .patterns import PATTERNS
from .trainer import BpeTrainer

FORMATS = ("bpetrain", "tiktoken")



def _trainer(args: argparse.Namespace, vocab_size: int) -> BpeTrainer:
    return BpeTrainer(
        vocab_size,
        pattern=args.pattern,
        special_tokens=args.special_token,
        min_frequency=getattr(args, "min_frequency", 2),
        show_progress=not args.quiet,
    )


def _reading(args: argparse.Namespace) -> dict:
    return {
        "documents": args.documents,
        "input_format": args.input_format,
        "text_field": args.text_field,
        "text_column": args.text_column,
        "workers": args.workers,
    }


def _train(args: argparse.Namespace) -> int:
    if bool(args.files) == bool(args.counts):
        raise ValueError("give either text FILEs or --counts SHARD..., not both and not neither")
    trainer = _trainer(args, args.vocab_size)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.counts:
            tokenizer = trainer.train_from_shards(args.counts)
        else:
            tokenizer = trainer.train(args.files, **_reading(args))
    for warning in caught:
        print(f"bpetrain: warning: {warning.message}", file=sys.stderr)
    if args.format == "tiktoken":
        tokenizer.save_tiktoken(args.output)
    else:
        tokenizer.save(args.output)
    s = trainer.stats
    print(
        f"trained in {s.seconds:.2f} s: {s.n_input_bytes / 1e6:.2f} MB in {s.n_documents:,} document(s), "
        f"{s.n_pieces:,} unique pieces, {s.n_merges:,} merges, vocab size {tokenizer.n_vocab:,}; "
        f"compression {s.bytes_per_token:.3f} bytes/token on the training text; wrote {args.output}",
        file=sys.stderr,
    )
    return 0


def _count(args: argparse.Namespace) -> int:
    counter = _trainer(args, 256 + len(args.special_token)).count(args.files, **_reading(args))
    n_pieces = counter.table().n_pieces
    counter.save(args.output)
    print(
        f"counted in {counter.seconds:.2f} s: {counter.n_input_bytes / 1e6:.2f} MB in {counter.n_documents:,} "
        f"document(s), {n_pieces:,} unique pieces; wrote {args.output}",
        file=sys.stderr,
    )
    return 0


def _add_splitting(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pattern", default="cl100k", metavar="NAME|REGEX|none",
                        help=f"split pattern: {', '.join(PATTERNS)}, a regex, or none (default: cl100k)")
    parser.add_argument("--special-token", action="append", default=[], metavar="T",
                        help="a special token (repeat the option for more)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def _add_reading(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "files", nargs="+" if required else "*", metavar="FILE",
        help="text, JSON Lines (.jsonl) or Parquet files, directories, globs, or - for stdin; "
        ".gz, .xz and .zst are decompressed (text need not be valid UTF-8)",
    )
    parser.add_argument("--documents", choices=("file", "line"), default="file",
                        help="what a document is in a text file: the whole file (default) or each line")
    parser.add_argument("--input-format", choices=FORMATS_IN, default="auto",
                        help="input format (default: from the file name)")
    parser.add_argument("--text-field", default="text", metavar="NAME",
                        help="the JSON Lines field that holds the text (default: text)")
    parser.add_argument("--text-column", default="text", metavar="NAME",
                        help="the Parquet column that holds the text (default: text)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="counting threads (default: the CPUs available)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpetrain", description="Train byte-level BPE tokenizers.")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser(
        "train",
        help="train a tokenizer on text files or counts shards",
        description="Train a byte-level BPE tokenizer on text files, or on counts shards from 'bpetrain count'.",
    )
    _add_reading(train, required=False)
    train.add_argument("--counts", nargs="+", default=[], metavar="SHARD",
                       help="train on counts shards (.npz from 'bpetrain count') instead of FILEs, merged")
    train.add_argument("--vocab-size", type=int, required=True, metavar="N",
                       help="256 byte tokens + merges + special tokens")
    _add_splitting(train)
    train.add_argument("--min-frequency", type=int, default=2, metavar="K",
                       help="merge only pairs seen at least K times (default: 2)")
    train.add_argument("-o", "--output", required=True, metavar="OUT", help="model file to write")
    train.add_argument("--format", choices=FORMATS, default="bpetrain",
                       help="bpetrain model file (default) or a tiktoken rank file")
    train.set_defaults(run=_train)
    count = commands.add_parser(
        "count",
        help="count the pieces of text files into a shard",
        description="Split and count the pieces of text files and save them as a counts shard (.npz) "
        "for 'bpetrain train --counts'. Shards counted separately (elsewhere, or in parts) merge exactly.",
    )
    _add_reading(count, required=True)
    _add_splitting(count)
    count.add_argument("-o", "--output", required=True, metavar="OUT.npz", help="counts shard to write")
    count.set_defaults(run=_count)
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
