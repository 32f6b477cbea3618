"""The ``bpetrain`` command line (argparse)."""
from __future__ import annotations

import argparse
import codecs
import os
import sys
import warnings
from typing import TYPE_CHECKING

from bpetrain._util.version import __version__, kernels_missing
from bpetrain.splitting.names import PATTERNS

if TYPE_CHECKING:
    import numpy as np

    from bpetrain.tokenizer import Tokenizer
    from bpetrain.training.trainer import BpeTrainer

# The choices the parser offers. The modules that implement them are imported when a
# command runs, not for --help (tests/test_startup.py checks these match the modules' own).
#: Corpus formats (:data:`bpetrain.counting.inputs.INPUT_FORMATS`).
INPUT_FORMATS = ("auto", "text", "jsonl", "parquet")
#: What a document is in a text file (:data:`bpetrain.splitting.cuts.DOCUMENTS`).
DOCUMENTS = ("file", "line")
#: Tie-breaking rules (:data:`bpetrain.training.trainer.TIE_BREAKS`).
TIE_BREAKS = ("rustbpe", "hf")
#: Formats ``export`` writes (:data:`bpetrain.formats.FORMATS`).
EXPORT_FORMATS = ("tiktoken", "hf", "gpt2", "minbpe")
#: What ``train`` writes.
TRAIN_OUTPUT_FORMATS = ("bpetrain", "tiktoken")
#: ``encode``: bytes read at a time, lines per batch call, and the input size from which a
#: progress bar shows.
ENCODE_BLOCK_BYTES = 1 << 22
LINE_BATCH = 1 << 14
PROGRESS_FROM_BYTES = 1 << 24


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> dict:
    """The options among ``names`` given on the command line (None: not given, so the
    library's default applies; it is not restated here)."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def _trainer(args: argparse.Namespace, vocab_size: int) -> BpeTrainer:
    from bpetrain.training.trainer import BpeTrainer

    return BpeTrainer(
        vocab_size,
        special_tokens=args.special_token,
        show_progress=not args.quiet,
        **_given(args, ("pat_str", "min_frequency", "max_token_length", "tie_break", "new_ids_from")),
        **_superword_options(args),
    )


#: The command-line flag of a superword option whose name differs from the keyword's.
SUPERWORD_FLAGS = {"forbid_colon_space": "--allow-colon-space"}


def _superword_options(args: argparse.Namespace) -> dict:
    """The superword options given on the command line (``--max-words-per-token 0``: no limit)."""
    options = _given(args, ("superword_transition", "superword_pat_str", "max_words_per_token"))
    if options.get("max_words_per_token") == 0:
        options["max_words_per_token"] = None
    if getattr(args, "allow_colon_space", False):
        options["forbid_colon_space"] = False
    return options


def _reading(args: argparse.Namespace) -> dict:
    return {"client": args.client,
            **_given(args, ("documents", "input_format", "text_field", "num_threads"))}


def _files(args: argparse.Namespace) -> list[str]:
    """The input files, expanded here so that --skip-unreadable applies to directories."""
    from bpetrain.counting.inputs import expand_inputs

    sources = expand_inputs(args.files, **_given(args, ("input_format",)), skip_unreadable=args.skip_unreadable)
    return [source.path for source in sources]


def check_output(path: str, *, folder: bool = False) -> None:
    """Fail before any input is read when ``path`` cannot be written: its folder is
    missing or not writable, or it names a folder where a file is wanted.

    Raises
    ------
    ValueError
        Naming ``path`` as the user gave it and what to change.
    """
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"cannot write {path}: {parent} is not an existing folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write {path}: no permission to write in {parent}")
    if not folder and os.path.isdir(path):
        raise ValueError(f"cannot write {path}: it is a folder; give a file name")
    if folder and os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"cannot write {path}: it is a file, and this format writes a folder")


def _train(args: argparse.Namespace) -> int:
    if args.language or args.language_field:
        return _train_parity(args)
    if bool(args.files) == bool(args.counts):
        raise ValueError("give either text FILEs or --counts COUNTS..., not both and not neither")
    check_output(args.output)
    if args.report:  # bpetrain report: fail before reading any input
        _check_report_outputs(args.report, None)
    if args.counts:
        _options_of_counts(args)
    trainer = _trainer(args, args.vocab_size)
    if args.counts:
        tokenizer = _warned(lambda: trainer.train_from_counts(args.counts, base=args.base))
    else:
        tokenizer = _warned(lambda: trainer.train(_files(args), **_reading(args), base=args.base))
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
    if args.report:
        from bpetrain import report

        report.write_html(report.build_report(tokenizer, name=os.path.basename(args.output), stats=s), args.report)
        print(f"wrote the report {args.report}", file=sys.stderr)
    if args.json:
        _print_json({"output": args.output, "vocab_size": tokenizer.n_vocab, "seconds": s.seconds,
                     "n_input_bytes": s.n_input_bytes, "n_documents": s.n_documents, "n_pieces": s.n_pieces,
                     "n_piece_bytes": s.n_piece_bytes, "n_start_tokens": s.n_start_tokens, "n_merges": s.n_merges, "n_tokens": s.n_tokens,
                     "bytes_per_token": s.bytes_per_token})
    return 0


def _warned(run):
    """``run()``, with each warning it gives printed as one line (not Python's two)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    for warning in caught:
        print(f"bpetrain: warning: {warning.message}", file=sys.stderr)
    return result


def _train_parity(args: argparse.Namespace) -> int:
    """``train --language NAME=FILE ...`` (or ``--language-field``): parity-aware BPE."""
    from bpetrain.training.parity import ParityBpeTrainer

    if args.language and args.language_field:
        raise ValueError("give the languages as --language NAME=FILE or as JSON Lines FILEs with --language-field, "
                         "not both")
    plain_only = [option for option, given in (
        ("--counts", args.counts), ("--base", args.base), ("--new-ids-from", args.new_ids_from is not None),
        ("--scheduler", args.client), ("--report", args.report), ("--skip-unreadable", args.skip_unreadable),
        *((SUPERWORD_FLAGS.get(name, f"--{name.replace('_', '-')}"), True) for name in _superword_options(args)))
        if given]
    if plain_only:
        raise ValueError(f"parity-aware training (--language, --language-field) takes no {', '.join(plain_only)}: "
                         "--counts, --base, --new-ids-from, --scheduler, --report, --skip-unreadable and the superword "
                         "options apply to plain training")
    if args.language and args.files:
        raise ValueError(f"with --language NAME=FILE every file belongs to a language; {args.files[0]} does not")
    check_output(args.output)
    ratio = _named_values(args.ratio, "--ratio", float) if args.ratio else None
    trainer = ParityBpeTrainer(
        args.vocab_size, ratio=ratio, special_tokens=args.special_token, show_progress=not args.quiet,
        **_given(args, ("pat_str", "min_frequency", "max_token_length", "tie_break", "global_merges",
                        "window_size", "alpha")),
        **({"variant": args.parity_variant} if args.parity_variant else {}),
    )
    if args.language_field:
        named = [item for item in args.dev if "=" in item and not os.path.exists(item)]
        if named:
            raise ValueError(f"--dev {named[0]}: with --language-field the dev set is JSON Lines FILEs whose records "
                             f"name their language in {args.language_field!r}, given as --dev FILE (no NAME=)")
        languages, dev = args.files, args.dev or None
    else:
        languages = _named_values(args.language, "--language", str)
        dev = _named_values(args.dev, "--dev", str) if args.dev else None
    reading = _given(args, ("documents", "input_format", "text_field", "num_threads"))
    tokenizer = _warned(lambda: trainer.train(languages, dev=dev, language_field=args.language_field, **reading))
    if args.format == "tiktoken":
        tokenizer.save_tiktoken(args.output)
    else:
        tokenizer.save(args.output)
    s = trainer.stats
    print(f"trained in {s.seconds:.2f} s: {len(s.languages)} languages, {len(s.chosen):,} merges, vocab size "
          f"{tokenizer.n_vocab:,}; wrote {args.output}", file=sys.stderr)
    dev_given = s.n_dev_bytes is not None
    print(f"{'language':<12} {'merges':>8} {'train bytes/token':>18}" + (f" {'dev tokens':>11} {'dev bytes/token':>16}"
          if dev_given else ""), file=sys.stderr)
    for row in s.table():
        print(f"{row['language']:<12} {row['merges_chosen']:>8,} {row['train_bytes_per_token']:>18.3f}"
              + (f" {row['dev_tokens']:>11,} {row['dev_bytes_per_token']:>16.3f}" if dev_given else ""),
              file=sys.stderr)
    if args.json:
        _print_json({"output": args.output, "vocab_size": tokenizer.n_vocab, "seconds": s.seconds,
                     "languages": s.table()})
    return 0


def _named_values(items: list[str], option: str, kind) -> dict:
    """``NAME=VALUE`` arguments by name (values of one name repeated: a list of them)."""
    named: dict = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ValueError(f"{option} takes NAME=VALUE (e.g. {option} sw=sw.txt), got {item!r}")
        try:
            value = kind(value)
        except ValueError:
            raise ValueError(f"{option} {item}: {value!r} is not a number") from None
        if kind is float:
            if name in named:
                raise ValueError(f"{option} names {name!r} twice")
            named[name] = value
        else:
            named.setdefault(name, []).append(value)
    return named


def _options_of_counts(args: argparse.Namespace) -> None:
    """Take the split pattern and the special tokens the first counts file was counted with
    where --pat-str and --special-token are not given (the trainer checks every file)."""
    from bpetrain.counting.counts import read_header

    header = read_header(args.counts[0])
    if args.pat_str is None:
        args.pat_str = "none" if header.get("pat_str") is None else header["pat_str"]
    if not args.special_token:
        args.special_token = header.get("special_tokens", [])


def _print_json(record: dict) -> None:
    """One JSON object on standard output (the human summary goes to standard error)."""
    import orjson

    sys.stdout.buffer.write(orjson.dumps(record) + b"\n")
    sys.stdout.flush()


def _count(args: argparse.Namespace) -> int:
    check_output(args.output)
    counter = _trainer(args, 256 + len(args.special_token)).count(_files(args), **_reading(args))
    n_pieces = counter.table().n_pieces
    counter.save(args.output)
    print(
        f"counted in {counter.seconds:.2f} s: {counter.n_input_bytes / 1e6:.2f} MB in {counter.n_documents:,} "
        f"document(s), {n_pieces:,} unique pieces; wrote {args.output}",
        file=sys.stderr,
    )
    if args.json:
        _print_json({"output": args.output, "seconds": counter.seconds, "n_input_bytes": counter.n_input_bytes,
                     "n_documents": counter.n_documents, "n_pieces": n_pieces})
    return 0


def _add_splitting(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pat-str", default=None, metavar="NAME|REGEX|none",
                        help=f"split pattern: {', '.join(PATTERNS)}, a regex, or none (default: cl100k, or "
                             "the --base model's, or what the --counts files were counted with)")
    parser.add_argument("--special-token", action="append", default=[], metavar="T",
                        help="a special token (repeat the option for more)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true",
                        help="also print the statistics as one JSON object on standard output")


def _add_reading(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "files", nargs="+" if required else "*", metavar="FILE",
        help="text, JSON Lines (.jsonl) or Parquet files, directories, globs, or - for stdin; "
        ".gz, .xz and .zst are decompressed (text need not be valid UTF-8)",
    )
    parser.add_argument("--documents", choices=DOCUMENTS, default=None,
                        help="what a document is in a text file: the whole file or each line (default: file)")
    parser.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                        help="input format; auto: from the file name (default: auto)")
    parser.add_argument("--text-field", default=None, metavar="NAME",
                        help="the JSON Lines field or Parquet column that holds the text (default: text)")
    parser.add_argument("--skip-unreadable", action="store_true",
                        help="leave out folders and files below an input directory that cannot be read, "
                             "with a warning naming each (default: an error)")
    parser.add_argument("--num-threads", type=int, default=None, metavar="N",
                        help="counting threads (default: one per CPU this process may use)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS|local:N",
                        help="count on a Dask cluster: a running scheduler (tcp://host:8786) or local:N worker "
                             "processes; the workers must reach the FILEs (needs bpetrain[dask])")


EXPORT_NOTES = {
    "gpt2": "note: vocab.json and merges.txt do not carry the split pattern: bpetrain keeps it in .bpetrain.json "
            "beside them, but other libraries that read these files assume GPT-2's",
}
SAMPLE_TEXT = "Hello world! Tokenizers split text into pieces: 12345 can't\n\tdef f(x): return x ** 2"


def _pattern_option(pat_str: str | None) -> dict:
    """``{"pat_str": pat_str}``, or nothing when the option was not given."""
    return {} if pat_str is None else {"pat_str": pat_str}


def _load_model(args: argparse.Namespace) -> Tokenizer:
    """MODEL as a tokenizer, resolved as everywhere (:meth:`bpetrain.Tokenizer.from_file`)."""
    from bpetrain.tokenizer import Tokenizer

    return Tokenizer.from_file(args.model, format=args.model_format, **_pattern_option(args.pat_str))


def _export(args: argparse.Namespace) -> int:
    check_output(args.output, folder=args.format == "gpt2" or (args.format == "hf" and (
        os.path.isdir(args.output) or args.output.endswith(("/", os.sep)))))
    tokenizer = _load_model(args)
    if args.vocab_size is not None:
        tokenizer = tokenizer.truncate(args.vocab_size)
    tokenizer.export(args.output, format=args.format, **_given(args, EXPORT_CONFIG))
    if args.format in EXPORT_NOTES:
        print(f"bpetrain: {EXPORT_NOTES[args.format]}", file=sys.stderr)
    print(f"wrote {args.format} files for {tokenizer.n_vocab:,} tokens at {args.output}", file=sys.stderr)
    return 0


def _inspect(args: argparse.Namespace) -> int:
    tokenizer = _load_model(args)
    vocab = tokenizer.vocab
    n_bytes = sum(b >= 0 for b in tokenizer.byte_ids)
    print(f"vocab size: {tokenizer.n_vocab:,} ({n_bytes} bytes, {len(tokenizer.merges):,} merges, "
          f"{len(tokenizer.special_tokens)} special tokens)")
    print(f"pattern: {'none (raw mode)' if tokenizer.pat_str is None else tokenizer.pat_str}")
    if isinstance(tokenizer.pat_str, str):
        from bpetrain.splitting.pattern import split_pattern

        split = split_pattern(tokenizer.pat_str, tokenizer.unicode_version)
        print(f"splitter: {split.splitter}")
        if split.blocks_reason is not None:
            print(f"  not by the 64-byte blocks: {split.blocks_reason}")
        without = split.program.blocks_without if split.program is not None else ()
        if without:
            shown = ", ".join(f"U+{a:04X}" if a == b else f"U+{a:04X}-U+{b:04X}" for a, b in without[:4])
            print(f"  the blocks leave {sum(b - a + 1 for a, b in without):,} characters to the DFA (the pattern "
                  f"cuts otherwise than their rules there): {shown}{', ...' if len(without) > 4 else ''}")
    print(f"special tokens: {tokenizer.special_tokens or 'none'}")
    ordinary = range(256, 256 + len(tokenizer.merges)) if tokenizer.tokens is None else tokenizer.tokens
    longest = sorted(ordinary, key=lambda i: (-len(vocab[i]), i))[: args.longest]
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


def _encoding(args: argparse.Namespace):
    """The ``Encoding`` of MODEL, resolved as everywhere (:func:`bpetrain.registry.locate_model`):
    an encoding name or a rank file straight from its ranks, other models from their merges."""
    from bpetrain import registry
    from bpetrain.formats.tiktoken import load_tiktoken

    source = registry.locate_model(args.model, format=args.model_format, **_pattern_option(args.pat_str))
    if source.encoding_name is not None:
        return registry.get_encoding(source.encoding_name)
    if source.format == "tiktoken":
        return load_tiktoken(source.paths[0], **source.options)
    tokenizer = _load_model(args)
    return tokenizer.encoding() if tokenizer.tokens is None else _ImportedEncoder(tokenizer)


class _ImportedEncoder:
    """The calls ``encode`` makes, by :meth:`bpetrain.Tokenizer.encode` of a tokenizer that
    keeps an imported vocabulary's ids (Hugging Face's rule, its added tokens' flags),
    which has no :class:`~bpetrain.Encoding` of its own: a file is encoded whole."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer

    def encode_to_numpy(self, text: str, **special) -> np.ndarray:
        import numpy as np

        return np.array(self.tokenizer.encode(text, **special), dtype=np.uint32)

    def encode_stream(self, texts, **special):
        yield self.encode_to_numpy("".join(texts), **special)

    def encode_batch_to_numpy(self, batch, **special) -> tuple[np.ndarray, np.ndarray]:
        from bpetrain.encoding._encoder import BATCH_ARRAYS
        from bpetrain.encoding.batching import batch_output

        return batch_output([self.encode_to_numpy(text, **special) for text in batch], BATCH_ARRAYS)


def _texts(path: str, block_bytes: int, bar):
    """The text of ``path`` (``-``: standard input) in parts of about ``block_bytes`` bytes,
    UTF-8 decoded; invalid bytes become U+FFFD, as ``bytes.decode(errors="replace")`` does."""
    from bpetrain.counting.inputs import standard_input

    stream = standard_input() if path == "-" else open(path, "rb")  # noqa: SIM115 (closed below)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while block := stream.read(block_bytes):
            bar.update(len(block))
            yield decoder.decode(block)
        yield decoder.decode(b"", final=True)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _encode(args: argparse.Namespace) -> int:
    from bpetrain.encoding.errors import DisallowedSpecialTokenError

    if "-" in (args.files or ["-"]):
        from bpetrain.counting.inputs import standard_input

        standard_input()  # closed (<&-): say so before the model is read
    encoding = _encoding(args)
    special = {"allowed_special": "all" if "all" in args.allowed_special else set(args.allowed_special),
               "disallowed_special": () if args.ordinary else "all"}
    out = sys.stdout.buffer
    total = 0
    for path in args.files or ["-"]:
        try:
            total += _encode_file(encoding, path, args, special, out)
        except DisallowedSpecialTokenError as exc:
            raise ValueError(f"{path} holds the special token {exc.token!r}: pass --allowed-special {exc.token} "
                             "(or all) to encode it as such, or --ordinary to encode it as text") from None
    if args.output == "count":
        out.write(b"%d\n" % total)
    return 0


def _encode_file(encoding, path: str, args: argparse.Namespace, special: dict, out) -> int:
    """Write the ids of one input as ``args.output`` says; return its token count."""
    import orjson

    from bpetrain._util.progress import progress_bar

    total = 0
    size = None if path == "-" else os.path.getsize(path)
    with progress_bar(total=size, unit="B", unit_scale=True, desc=f"encoding {os.path.basename(path)}",
                      disable=args.quiet or size is None or size < PROGRESS_FROM_BYTES) as bar:
        texts = _texts(path, ENCODE_BLOCK_BYTES, bar)
        if args.documents == "line":
            for line, ids in enumerate(_encode_lines(encoding, texts, special), 1):
                total += len(ids)
                if args.output == "ids":
                    out.write(_ids_text(ids, b" ") + b"\n")
                elif args.output == "json":
                    out.write(orjson.dumps({"file": path, "line": line, "ids": ids},
                                           option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
            return total
        if args.output == "json":
            out.write(orjson.dumps({"file": path})[:-1] + b',"ids":[')
        separator = b"," if args.output == "json" else b" "
        for ids in encoding.encode_stream(texts, **special):
            if args.output != "count" and len(ids):
                out.write((separator if total else b"") + _ids_text(ids, separator))
            total += len(ids)
        if args.output == "json":
            out.write(b'],"n_tokens":%d}\n' % total)
        elif args.output == "ids":
            out.write(b"\n")
    return total


def _ids_text(ids, separator: bytes) -> bytes:
    """Decimal ids joined by ``separator``."""
    return separator.join(b"%d" % i for i in ids.tolist())


def _encode_lines(encoding, texts, special):
    """Ids of each line without its line end (``\n`` or ``\r\n``; a lone ``\r`` is text, as
    for ``documents="line"`` in training), batch by batch on threads."""
    carry = ""
    for text in texts:
        lines = (carry + text).split("\n")
        carry = lines.pop()
        for start in range(0, len(lines), LINE_BATCH):
            batch = [line[:-1] if line.endswith("\r") else line for line in lines[start : start + LINE_BATCH]]
            ids, offsets = encoding.encode_batch_to_numpy(batch, **special)
            yield from (ids[a:b] for a, b in zip(offsets.tolist(), offsets[1:].tolist()))
    if carry:
        yield encoding.encode_to_numpy(carry, **special)


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help="a bpetrain model file, a tiktoken, hf (tokenizer.json) or minbpe file, a folder of hf "
                             "or gpt2 files (see --model-format), or an OpenAI encoding name (cl100k_base, "
                             "o200k_base, ...: files from $BPETRAIN_VOCABS or tiktoken's cache)")
    parser.add_argument("--model-format", choices=("bpetrain", *EXPORT_FORMATS), default=None,
                        help="the format of MODEL (default: from its name and content)")
    parser.add_argument("--pat-str", default=None, metavar="NAME|REGEX|none",
                        help="split pattern for files that do not carry one (a tiktoken file without "
                             "sidecar that is not one of OpenAI's, GPT-2 files without bpetrain's record)")


#: ``tokenizer_config.json`` fields ``export --format hf`` sets in a folder (:func:`bpetrain.formats.hf.save`).
EXPORT_CONFIG = ("bos_token", "eos_token", "pad_token", "unk_token", "chat_template")


def _add_parity_arguments(train: argparse.ArgumentParser) -> None:
    parity = train.add_argument_group(
        "parity-aware BPE", "each merge goes to the language whose text is compressed worst (Foroutan et al., "
        "arXiv 2508.04796); give the languages and a parallel --dev set or --ratio targets")
    parity.add_argument("--language", action="append", default=[], metavar="NAME=FILE",
                        help="the files of one language (repeat for more files and more languages)")
    parity.add_argument("--language-field", default=None, metavar="FIELD",
                        help="instead: FILEs are JSON Lines records whose FIELD names their language")
    parity.add_argument("--dev", action="append", default=[], metavar="NAME=FILE",
                        help="the dev set: the same text in every language, one NAME=FILE per language (with "
                             "--language-field: JSON Lines FILEs)")
    parity.add_argument("--ratio", action="append", default=[], metavar="NAME=X",
                        help="instead of --dev: target compression per language (larger: more merges)")
    parity.add_argument("--parity-variant", choices=("base", "window"), default=None,
                        help="base: always the worst language; window: the worst that had at most ALPHA / "
                             "languages of the last WINDOW_SIZE merges (default: base)")
    parity.add_argument("--window-size", type=int, default=None, metavar="N", help="window variant (default: 100)")
    parity.add_argument("--alpha", type=float, default=None, metavar="A", help="window variant (default: 2)")
    parity.add_argument("--global-merges", type=int, default=None, metavar="N",
                        help="the first N merges on all languages together, as plain BPE (default: 0)")


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
    export.add_argument("--vocab-size", type=int, default=None, metavar="N",
                        help="write the first merges only: the model training to N tokens (bytes + merges + "
                             "special tokens) would have given, special tokens renumbered after the merges")
    for name in EXPORT_CONFIG:
        export.add_argument(f"--{name.replace('_', '-')}", default=None, metavar="TEXT",
                            help=f"hf folders: {name} in tokenizer_config.json (a special token)"
                            if name.endswith("_token") else f"hf folders: {name} in tokenizer_config.json")
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
    inspect.add_argument("--longest", type=_count_arg, default=10, metavar="N", help="how many longest tokens to list")
    inspect.set_defaults(run=_inspect)


def _add_encode_command(commands) -> None:
    encode = commands.add_parser(
        "encode",
        help="encode text files with a model: token ids, a token count, or JSON",
        description="Encode text files (or standard input) with a model (a file of any format, a folder, "
                    "or an OpenAI encoding name: see MODEL). The text is read and encoded in blocks (cut where the split pattern "
                    "allows, so the ids are those of the whole file) on all cores. Invalid UTF-8 becomes "
                    "U+FFFD. Special token strings are an error unless --allowed-special or --ordinary.",
    )
    _add_model_arguments(encode)
    encode.add_argument("files", nargs="*", metavar="FILE", help="text files (default, or -: standard input)")
    shown = encode.add_mutually_exclusive_group()
    shown.add_argument("--ids", dest="output", action="store_const", const="ids",
                       help="the token ids, space-separated, one line per file (default)")
    shown.add_argument("--count", dest="output", action="store_const", const="count",
                       help="the token count of all FILEs together, alone")
    shown.add_argument("--json", dest="output", action="store_const", const="json",
                       help='one JSON object per file, {"file", "ids", "n_tokens"} (per line with --documents line: '
                            '{"file", "line", "ids"})')
    encode.set_defaults(output="ids")
    encode.add_argument("--documents", choices=DOCUMENTS, default=None,
                        help="encode each file whole or each line on its own (one output line each) "
                             "(default: file)")
    encode.add_argument("--allowed-special", action="append", default=[], metavar="TOKEN|all",
                        help="a special token to encode as such (repeat; 'all' for every one)")
    encode.add_argument("--ordinary", action="store_true",
                        help="encode special token strings as ordinary text instead of failing")
    encode.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    encode.set_defaults(run=_encode)


# ------------------------------------------------ bpetrain report (bpetrain/report.py)


def _check_report_outputs(html_path: str | None, json_path: str | None) -> None:
    from bpetrain import report

    for path in (html_path, json_path):
        if path not in (None, "-"):
            check_output(path)
    if html_path is not None:
        report.require_matplotlib()


def _report(args: argparse.Namespace) -> int:
    from bpetrain import report

    if args.output is None and args.json is None:
        raise ValueError("say where to write: -o REPORT.html, --json REPORT.json (--json - for standard output), "
                         "or both")
    from bpetrain._util.progress import progress_bar
    from bpetrain.tokenizer import Tokenizer

    _check_report_outputs(args.output, args.json)
    with progress_bar(desc="report", unit="step", disable=args.quiet) as bar:

        def step(done: str) -> None:
            bar.set_postfix_str(done, refresh=False)
            bar.update()

        tokenizer = _load_model(args)
        step(f"read {args.model}")
        compare = None
        if args.compare is not None:
            compare = Tokenizer.from_file(args.compare, **_pattern_option(args.compare_pat_str))
            step(f"read {args.compare}")
        texts = report.read_texts(args.text)
        data = report.build_report(tokenizer, name=os.path.basename(args.model), texts=texts, compare=compare,
                                   compare_name=None if compare is None else os.path.basename(args.compare),
                                   progress=step)
    if args.json is not None:
        report.write_json(data, args.json)
    if args.output is not None:
        report.write_html(data, args.output)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _add_report_command(commands) -> None:
    parser = commands.add_parser(
        "report",
        help="an HTML (or JSON) report: vocabulary, compression on texts, token lengths, beside another model",
        description="Measure a model on sample texts (bytes per token, tokens per word, and how they grow with "
                    "the merges used), show its token lengths and its longest and rarest tokens, optionally beside "
                    "a second model, in one self-contained HTML file (needs matplotlib: pip install "
                    "'bpetrain[report]') or as JSON.",
    )
    _add_model_arguments(parser)
    parser.add_argument("--text", nargs="+", default=[], metavar="FILE",
                        help="plain text files, directories or globs to measure compression on")
    parser.add_argument("--compare", default=None, metavar="MODEL",
                        help="a second model to show beside the first, given as MODEL is; OpenAI's rank files are "
                             "recognised, other rank files without sidecar need --compare-pat-str")
    parser.add_argument("--compare-pat-str", default=None, metavar="NAME|REGEX|none",
                        help="split pattern of --compare if its file does not carry one")
    parser.add_argument("-o", "--output", default=None, metavar="REPORT.html", help="the HTML report to write")
    parser.add_argument("--json", default=None, metavar="PATH|-", help="write the report as JSON (- for stdout)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=_report)


# ------------------------------------------------ bpetrain cache (bpetrain/_util/cache.py)


def _size_text(n_bytes: int) -> str:
    """``n_bytes`` for a person: 812 B, 3.4 MiB, 1.2 GiB (powers of 1024)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes} B"


def _cache(args: argparse.Namespace) -> int:
    from bpetrain._util import cache

    if args.clear:
        n_files, n_bytes = cache.clear_cache_dir()
        if args.json:
            _print_json({"folder": cache.cache_dir(), "n_files_removed": n_files, "n_bytes_removed": n_bytes})
        else:
            print(f"removed {n_files:,} files ({_size_text(n_bytes)}) from {cache.cache_dir()}")
        return 0
    info = cache.scan_cache()
    if args.json:
        _print_json({"folder": info.folder, "n_bytes": info.n_bytes, "max_bytes": info.max_bytes,
                     "n_temporary": info.n_temporary,
                     "kinds": {name: vars(kind) for name, kind in info.kinds.items()}})
        return 0
    bound = "no bound" if info.max_bytes is None else f"bound {_size_text(info.max_bytes)}"
    print(f"folder: {info.folder}")
    print(f"size: {_size_text(info.n_bytes)} in {info.n_files:,} files ({bound}; BPETRAIN_CACHE_MAX_BYTES sets it)")
    for name, kind in info.kinds.items():
        stale = f", {kind.n_stale:,} stale" if kind.n_stale else ""
        print(f"  {name:<8} {kind.n_files:>8,} files {_size_text(kind.n_bytes):>10}{stale}  {cache.KINDS[name]}")
    if info.n_temporary:
        print(f"  {info.n_temporary:,} temporary files of writes in progress or interrupted")
    return 0


def _add_cache_command(commands) -> None:
    parser = commands.add_parser(
        "cache",
        help="show or clear the on-disk cache (compiled patterns, pair and linear tables)",
        description="Show the on-disk cache: its folder ($BPETRAIN_CACHE_DIR, else $XDG_CACHE_HOME/bpetrain, else "
                    "~/.cache/bpetrain), its size and bound ($BPETRAIN_CACHE_MAX_BYTES: 500M, 1Gi, ...; 0 or none: no "
                    "bound), and its entries by kind; stale entries belong to a build that is no longer installed. "
                    "With --clear, remove every entry (the cache fills again as it is used).",
    )
    parser.add_argument("--clear", action="store_true", help="remove every entry of the cache")
    parser.add_argument("--json", action="store_true", help="print the summary (or what --clear removed) as one "
                                                            "JSON object")
    parser.set_defaults(run=_cache)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpetrain", description="Train byte-level BPE tokenizers.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser(
        "train",
        help="train a tokenizer on text files or counts files",
        description="Train a byte-level BPE tokenizer on text files, or on counts files from 'bpetrain count'.",
    )
    _add_reading(train, required=False)
    train.add_argument("--counts", nargs="+", default=[], metavar="COUNTS",
                       help="train on counts files (.npz from 'bpetrain count') instead of FILEs, their counts "
                            "added up, with the split pattern and special tokens they were counted with unless "
                            "--pat-str or --special-token say otherwise")
    train.add_argument("--vocab-size", type=int, required=True, metavar="N",
                       help="256 byte tokens + merges + special tokens")
    _add_splitting(train)
    train.add_argument("--min-frequency", type=int, default=None, metavar="K",
                       help="merge only pairs seen at least K times (default: 2)")
    train.add_argument("--max-token-length", type=int, default=None, metavar="N",
                       help="make no token longer than N bytes (default: no limit)")
    train.add_argument("--tie-break", choices=TIE_BREAKS, default=None,
                       help="among pairs of equal count: smallest ids (rustbpe) or smallest Hugging Face ids "
                            "(hf: the merges Hugging Face tokenizers learns; its train(files) makes each line a "
                            "document, so add --documents line for its merges on text files) (default: rustbpe)")
    train.add_argument("--base", default=None, metavar="MODEL",
                       help="extend this model (a file of any format, a folder, or an OpenAI encoding name, as "
                            "for 'bpetrain encode') up to --vocab-size; its pattern unless --pat-str is given")
    train.add_argument("--new-ids-from", type=int, default=None, metavar="ID",
                       help="with a --base that keeps its ids (tokenizer.json): the first id of the new tokens "
                            "(default: after the last id in use)")
    _add_parity_arguments(train)
    superword = train.add_argument_group(
        "superword tokens (SuperBPE)",
        "train to --superword-transition with the split pattern, then on to --vocab-size on pieces that may span "
        "words; the model splits with the superword pattern")
    superword.add_argument("--superword-transition", type=int, default=None, metavar="T",
                           help="the vocabulary size where stage 2 starts (default: one stage)")
    superword.add_argument("--superword-pat-str", default=None, metavar="NAME|REGEX",
                           help="stage 2's split pattern: superbpe (the SuperBPE authors' current rule, default), "
                                "superbpe-original (the paper's) or a regex")
    superword.add_argument("--max-words-per-token", type=int, default=None, metavar="N",
                           help="no stage-2 token spans more than N words (default: 4; 0: no limit)")
    superword.add_argument("--allow-colon-space", action="store_true",
                           help="let stage 2 make tokens holding ': ' (refused by default, as the authors do)")
    train.add_argument("-o", "--output", required=True, metavar="OUT", help="model file to write")
    train.add_argument("--format", choices=TRAIN_OUTPUT_FORMATS, default="bpetrain",
                       help="bpetrain model file (default) or a tiktoken rank file (+ OUT.json sidecar)")
    train.add_argument("--report", default=None, metavar="REPORT.html",
                       help="also write an HTML report with the training statistics (see 'bpetrain report')")
    train.set_defaults(run=_train)
    count = commands.add_parser(
        "count",
        help="count the pieces of text files into a counts file",
        description="Split and count the pieces of text files and save them as a counts file (.npz) "
        "for 'bpetrain train --counts'. Counts files of parts of a corpus (counted elsewhere, or in parts) "
        "add up exactly.",
    )
    _add_reading(count, required=True)
    _add_splitting(count)
    count.add_argument("-o", "--output", required=True, metavar="OUT.npz", help="the counts file to write")
    count.set_defaults(run=_count)
    _add_encode_command(commands)
    _add_export_command(commands)
    _add_inspect_command(commands)
    _add_report_command(commands)
    _add_cache_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; a bad file or option, a closed standard input or output, or
    running out of memory is one line on stderr and exit status 2 (no output file is
    written), Ctrl-C one line and status 130 (128 + SIGINT, as shells report it)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and getattr(args, "files", None) is not None and not any(e.startswith("-") and e != "-" for e in extra):
        args.files += extra  # FILEs after options (argparse takes positionals only in one run)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if sys.stderr is None:  # closed (2>&-): the messages go nowhere, not to standard output (print's default)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the life of the process)
    try:
        _check_stdout(args)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            if getattr(args, "scheduler", None):
                from bpetrain.counting.cluster import connect

                with connect(args.scheduler) as args.client:
                    return args.run(args)
            args.client = None
            return args.run(args)
    except BrokenPipeError:  # the reader of our output went away (| head): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE
    except ModuleNotFoundError as exc:
        parser.exit(2, f"bpetrain {args.command}: error: {kernels_missing(exc)}\n")
    except (ValueError, TypeError, OSError, ImportError) as exc:  # ImportError: an optional package missing
        if type(exc).__name__ == "PatternTimeoutError" and getattr(args, "model", None):
            exc = f"{args.model}: {exc}"  # a hostile or broken pattern from the model file
        parser.exit(2, f"bpetrain {args.command}: error: {exc}\n")
    except MemoryError:
        parser.exit(2, f"bpetrain {args.command}: error: out of memory (the process may use no more: see "
                       "ulimit -v, or the machine's memory); no output file was written. Give it more memory, or "
                       "less input at a time (to train: bpetrain count in parts, then train --counts)\n")
    except KeyboardInterrupt:
        parser.exit(130, f"bpetrain {args.command}: interrupted\n")


def _check_stdout(args: argparse.Namespace) -> None:
    """Fail before any input is read if the command writes to standard output and it is closed (``>&-``)."""
    writes = args.command in ("encode", "inspect", "cache") or (
        args.command in ("train", "count") and args.json) or (args.command == "report" and args.json == "-")
    if writes and sys.stdout is None:
        raise ValueError("standard output is closed (>&-), and this command writes to it; redirect it to a file "
                         "(> FILE) or to /dev/null")


def _count_arg(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {value}")
    return value


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"bpetrain: warning: {message}", file=sys.stderr if file is None else file)


if __name__ == "__main__":
    sys.exit(main())
