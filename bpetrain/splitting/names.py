"""The named split patterns: OpenAI's, as tiktoken publishes them in
``tiktoken_ext/openai_public.py``, and the strings minbpe, nanochat and Llama 3 use.

Plain strings in a module of their own, so the command line can list the names without
loading the compiled matcher (:mod:`bpetrain.splitting.pattern` compiles and runs them).
:func:`pattern_name` and :func:`describe_pattern` name a pattern for messages and reprs.
"""
from __future__ import annotations

__all__ = ["CL100K_PATTERN", "GPT2_PATTERN", "LLAMA3_PATTERN", "MINBPE_PATTERN", "NANOCHAT_PATTERN", "O200K_PATTERN",
           "PATTERNS", "SHIPPED", "SUPERBPE_ORIGINAL_PATTERN", "SUPERBPE_PATTERN", "describe_pattern", "pattern_name"]

GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(  # noqa: FLY002 (one alternative a line)
    [
        (
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
        ),
        (
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
        ),
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# Strings that other projects pass to their regex engines, which bpetrain's splitter
# recognises (bpetrain.splitting.pattern: their ASCII text is read 64 bytes at a time).
#: cl100k as minbpe and rustbpe write it (karpathy/minbpe ``GPT4_SPLIT_PATTERN``, rustbpe's
#: default): no ``\s++$``, so a run of whitespace at the end of the text is cut after its
#: last newline; otherwise it splits as cl100k.
MINBPE_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)
#: nanochat's (karpathy/nanochat ``SPLIT_PATTERN``): minbpe's with numbers of at most two digits.
NANOCHAT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)
#: Llama 3's (meta-llama/llama3 ``tokenizer.py``, cl100k before tiktoken made it
#: possessive): splits as minbpe's.
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# The second stage of SuperBPE (arXiv:2503.13423; bpetrain.training.superword): pieces may
# span words. The authors split each line (Hugging Face's ``Tokenizer.train(files)`` reads
# lines) with an ``Isolated`` ``Split``, which keeps the text between matches as pieces of
# its own; these are the same pieces as one pattern that matches all text (tiktoken's reading).
_PUNCT = r"[^\s\p{L}\p{N}]"
#: The authors' current rule (PythonNut/superbpe ``scripts/extend_tokenizer.sh``):
#: ``\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)`` and the text between its
#: matches, no piece crossing a newline. The first alternative is that text (it starts only
#: where none of the others can): letters, whitespace but newlines and spaces, a mark not
#: followed by another, a space followed by a letter, a number or a lone mark; it takes the
#: newline that ends its line. Then the three alternatives, ``[\r\n/]*`` stopping at the
#: first newline, and a newline alone: ``[\s\S]``, which no other character reaches, so that
#: the pattern visibly matches everywhere (:func:`bpetrain.splitting.pipeline.matches_everywhere`).
#: (Put first, the text between matches splits twice as fast as put last. Its loop is greedy:
#: what follows it, ``\n?``, always matches, so a possessive loop cuts the same pieces, but the
#: DFA splitter takes only possessive runs of one set.)
SUPERBPE_PATTERN = (
    rf"""(?:\p{{L}}++| \p{{L}}++|[^\S\n ]++| ?{_PUNCT}(?!{_PUNCT})| (?=\p{{N}}))+\n?"""
    rf"""|\p{{N}}{{1,3}}| ?{_PUNCT}{{2,}}[\r/]*\n?| +(?!\S)|[\s\S]"""
)
#: The rule of the paper's experiments (PythonNut/superbpe before November 2025:
#: ``Digits(individual_digits=False)``, then ``(?=(\d{3})+(?!\d))`` isolated): runs of
#: numbers cut in threes from the right, everything else one piece a line.
SUPERBPE_ORIGINAL_PATTERN = r"""\p{N}(?:(?!(?:\d{3})+(?!\d))\p{N})*|[^\p{N}\n]+\n?|\n"""

#: The names of the patterns of the encodings :func:`bpetrain.get_encoding` knows, whose
#: compiled programs the build ships (:func:`bpetrain.splitting.pattern.ship_patterns`).
SHIPPED = ("gpt2", "cl100k", "o200k")

#: Named split patterns: name -> ``pat_str`` (``gpt4`` is another name for ``cl100k``).
#: Every argument that takes a pattern takes these names.
PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "gpt4": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "minbpe": MINBPE_PATTERN,
    "nanochat": NANOCHAT_PATTERN,
    "llama3": LLAMA3_PATTERN,
    "superbpe": SUPERBPE_PATTERN,
    "superbpe-original": SUPERBPE_ORIGINAL_PATTERN,
}

#: How long a pattern that has no name may be in :func:`describe_pattern` before it is shortened.
SHOWN_CHARS = 40


def pattern_name(pat_str: str | None) -> str | None:
    """The first name of :data:`PATTERNS` whose string is ``pat_str`` (``"none"`` for raw
    mode), or None if it has none.

    >>> pattern_name(CL100K_PATTERN)
    'cl100k'
    """
    if pat_str is None:
        return "none"
    return next((name for name, value in PATTERNS.items() if value == pat_str), None)


def describe_pattern(pat_str) -> str:
    """``pat_str`` as a message or repr shows it: its name in quotes, or the regex as a
    Python string literal, shortened to :data:`SHOWN_CHARS` characters before it is
    escaped (so no escape is cut in two) with ``...`` and its length after it; a
    pipeline of pre-tokenizers as the names of its normalizers and steps.

    >>> describe_pattern(GPT2_PATTERN)
    "'gpt2'"
    >>> describe_pattern(None)
    "'none'"
    >>> describe_pattern("[a-z]+")
    "'[a-z]+'"
    """
    if pat_str is not None and not isinstance(pat_str, str):  # a pipeline of pre-tokenizers, by its steps
        normalizer = f"{'+'.join(pat_str.normalizer.forms)}; " if getattr(pat_str, "normalizer", None) else ""
        return f"PreTokenizer({normalizer}{', '.join(type(step).__name__ for step in pat_str.steps)})"
    name = pattern_name(pat_str)
    if name is not None:
        return repr(name)
    if len(pat_str) <= SHOWN_CHARS:
        return repr(pat_str)
    return f"{pat_str[:SHOWN_CHARS]!r}... ({len(pat_str)} characters)"
