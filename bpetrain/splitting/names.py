"""The named split patterns: OpenAI's, as tiktoken publishes them in
``tiktoken_ext/openai_public.py``.

Plain strings in a module of their own, so the command line can list the names without
loading the compiled matcher (:mod:`bpetrain.splitting.pattern` compiles and runs them).
"""
from __future__ import annotations

__all__ = ["CL100K_PATTERN", "GPT2_PATTERN", "LLAMA3_PATTERN", "MINBPE_PATTERN", "NANOCHAT_PATTERN", "O200K_PATTERN",
           "PATTERNS"]

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

#: Named split patterns: name -> ``pat_str``.
PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "gpt4": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
}
