"""The ``bpetrain`` command line (argparse)."""
from __future__ import annotations

import argparse
import sys
import warnings

from .formats import FORMATS as EXPORT_FORMATS
from .inputs import FORMATS as FORMATS_IN
from .pretokenize import PATTERNS
from .tokenizer import Tokenizer
from .trainer import BpeTrainer

FORMATS = ("bpetrain", "tiktoken")



def _trainer(args: argparse.Namespace, vocab_size: int) -> BpeTrainer:
    options = {} if args.pat_str is None else {"pat_str": args.pat_str}  # None: cl100k, or the base's
    return BpeTrainer(
        vocab_size,
        special_tokens=args.special_token,
        min_frequency=getattr(args, "min_frequency", 2),
        show_progress=not args.quiet,
        max_token_length=getattr(args, "max_token_length", None),
        tie_break=getattr(args, "tie_break", "rustbpe"),
        **options,
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
            tokenizer = trainer.train_from_shards(args.counts, base=args.base)
        else:
            tokenizer = trainer.train(args.files, **_reading(args), base=args.base)
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
    parser.add_argument("--pat-str", "--pattern", dest="pat_str", default=None, metavar="NAME|REGEX|none",
                        help=f"split pattern: {', '.join(PATTERNS)}, a regex, or none (default: cl100k, or "
                             "the --base model's); --pattern is the same option")
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


EXPORT_NOTES = {
    "gpt2": "note: vocab.json and merges.txt do not carry the split pattern; pass it when loading "
            "(libraries that read these files assume GPT-2's)",
}
SAMPLE_TEXT = "Hello world! Tokenizers split text into pieces: 12345 can't\n\tdef f(x): return x ** 2"


def _load_model(args: argparse.Namespace) -> Tokenizer:
    options = {} if args.pat_str is None else {"pat_str": args.pat_str}
    return Tokenizer.from_file(args.model, format=args.input_format, **options)


def _export(args: argparse.Namespace) -> int:
    tokenizer = _load_model(args)
    tokenizer.export(args.output, format=args.format)
    if args.format in EXPORT_NOTES:
        print(f"bpetrain: {EXPORT_NOTES[args.format]}", file=sys.stderr)
    print(f"wrote {args.format} files for {tokenizer.n_vocab:,} tokens at {args.output}", file=sys.stderr)
    return 0


def _inspect(args: argparse.Namespace) -> int:
    tokenizer = _load_model(args)
    vocab = tokenizer.vocab
    print(f"vocab size: {tokenizer.n_vocab:,} (256 bytes, {len(tokenizer.merges):,} merges, "
          f"{len(tokenizer.special_tokens)} special tokens)")
    print(f"pattern: {'none (raw mode)' if tokenizer.pat_str is None else tokenizer.pat_str}")
    print(f"special tokens: {tokenizer.special_tokens or 'none'}")
    longest = sorted(range(256, 256 + len(tokenizer.merges)), key=lambda i: (-len(vocab[i]), i))[: args.longest]
    print(f"longest tokens ({len(longest)}):")
    for token_id in longest:
        print(f"  {token_id:>8}  {len(vocab[token_id]):>4} bytes  {vocab[token_id]!r}")
    text = SAMPLE_TEXT if args.text is None else args.text
    ids = tokenizer.encode(text, allowed_special="all")
    print(f"sample ({len(text.encode('utf-8'))} bytes -> {len(ids)} tokens):")
    print(_show_tokens([vocab[i] for i in ids], color=sys.stdout.isatty()))
    print(f"ids: {ids}")
    return 0


def _show_tokens(tokens: list[bytes], *, color: bool) -> str:
    """The tokens side by side: on alternating background colors in a terminal, else
    between ``|`` marks (invalid UTF-8 shown as U+FFFD, line breaks and tabs escaped)."""
    shown = [t.decode("utf-8", "replace").replace("\n", "\\n").replace("\t", "\\t") for t in tokens]
    if not color:
        return "|" + "|".join(shown) + "|"
    backgrounds = ("\x1b[48;5;24m", "\x1b[48;5;94m")
    return "".join(f"{backgrounds[i % 2]}{s}" for i, s in enumerate(shown)) + "\x1b[0m"


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help="a bpetrain model file, or a tiktoken, hf, gpt2 or minbpe file (see --from)")
    parser.add_argument("--from", dest="input_format", choices=("bpetrain", *EXPORT_FORMATS), default=None,
                        help="the format of MODEL (default: from its name and content)")
    parser.add_argument("--pat-str", "--pattern", dest="pat_str", default=None, metavar="NAME|REGEX|none",
                        help="split pattern for files that do not carry one (a tiktoken file without "
                             "sidecar, GPT-2 files); --pattern is the same option")


def _add_export_command(commands) -> None:
    export = commands.add_parser(
        "export",
        help="write a model in a format other libraries load",
        description="Write a model as tiktoken (rank file + PATH.json sidecar), hf (tokenizer.json), "
                    "gpt2 (PATH/vocab.json + PATH/merges.txt) or minbpe (PATH.model + PATH.vocab).",
    )
    _add_model_arguments(export)
    export.add_argument("--format", choices=tuple(EXPORT_FORMATS), required=True, help="the format to write")
    export.add_argument("-o", "--output", required=True, metavar="PATH", help="where to write (see above)")
    export.set_defaults(run=_export)


def _add_inspect_command(commands) -> None:
    inspect = commands.add_parser(
        "inspect",
        help="show a model: vocab size, pattern, special tokens, longest tokens, a sample",
        description="Show a model's vocab size, pattern, special tokens and longest tokens, and a sample "
                    "text encoded with token borders (colors in a terminal, | marks otherwise).",
    )
    _add_model_arguments(inspect)
    inspect.add_argument("--text", default=None, help="the sample text to encode (default: a short mixed sample)")
    inspect.add_argument("--longest", type=int, default=10, metavar="N", help="how many longest tokens to list")
    inspect.set_defaults(run=_inspect)


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
    train.add_argument("--max-token-length", type=int, default=None, metavar="N",
                       help="make no token longer than N bytes (default: no limit)")
    train.add_argument("--tie-break", choices=("rustbpe", "hf"), default="rustbpe",
                       help="among pairs of equal count: smallest ids (rustbpe, default) or smallest "
                            "Hugging Face ids (hf: the merges Hugging Face tokenizers learns)")
    train.add_argument("--base", default=None, metavar="MODEL",
                       help="extend this model (bpetrain, tiktoken, tokenizer.json or GPT-2 files) "
                            "up to --vocab-size; its pattern unless --pattern is given")
    train.add_argument("-o", "--output", required=True, metavar="OUT", help="model file to write")
    train.add_argument("--format", choices=FORMATS, default="bpetrain",
                       help="bpetrain model file (default) or a tiktoken rank file (+ OUT.json sidecar)")
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
    _add_export_command(commands)
    _add_inspect_command(commands)
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
