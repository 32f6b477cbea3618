"""The split patterns the benchmarks compare, and the one place that calls bpetrain's splitter.

:data:`SPLIT_PATTERNS` names the patterns the pre-tokenization, training and encoding
benchmarks offer (``--pattern NAME``), by the names of :data:`bpetrain.PATTERNS`, and
:data:`PUBLISHED_PATTERNS` those of published tokenizers, with where each comes from, and
:data:`VARIANT_PATTERNS` edits of the named ones a user might make. The functions below are the only code in
``benchmarks/`` that reaches into bpetrain's splitter. bpetrain compiles every pattern
within its matcher's syntax (``bpetrain.splitting._compiler``), most of them to a DFA
(``bpetrain.splitting._dfa``); a pattern whose DFA splits as gpt2's, cl100k's or o200k's
does (however it is written) goes to hand-written matchers (``bpetrain.splitting._blocks``),
and their ASCII text, and that of patterns that split as minbpe's, nanochat's or Llama 3's
strings, is read 64 bytes at a time (``_ascii_blocks.h``). :func:`engine_n_pieces` times the
compiled program alone (the backtracking matcher, or the DFA). :func:`count_pieces` goes
through the public :class:`bpetrain.PieceCounter`, the trainer's own path.
"""
from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import regex

from bpetrain import PATTERNS, PieceCounter
from bpetrain.splitting._compiler import compile_program
from bpetrain.splitting._blocks import block_isas
from bpetrain.splitting._matcher import BacktrackLimitExceeded, Program, shuffle_variants, use_block_isa  # noqa: F401 (BacktrackLimitExceeded: for the scripts)
from bpetrain.splitting.pattern import split_pattern

_CONTRACTIONS = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)"""
_CASED = (r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"""
          r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""")
# Kimi's classes intersect with [^\p{Han}] (``&&``, which the regex module reads as characters
# outside its version 1): the same sets as a negative lookahead and a class.
_KIMI_LETTERS = r"""(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])"""
_KIMI_LOWER = r"""(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])"""

#: Split patterns of published tokenizers, name -> (``pat_str``, where it is published). A
#: tokenizer that applies several Hugging Face ``Split`` steps is named by its main one.
PUBLISHED_PATTERNS: dict[str, tuple[str, str]] = {
    "qwen2": (_CONTRACTIONS + r"""|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
              "huggingface/transformers src/transformers/models/qwen2/tokenization_qwen2.py, PRETOKENIZE_REGEX "
              "(Qwen2, Qwen2.5, Qwen3; llama.cpp's src/llama-vocab.cpp gives it to StableLM 2, Grok-2 and Hunyuan too)"),
    "qwen35": (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""",
               "Qwen/Qwen3.5-0.8B tokenizer.json (Qwen3.5: Qwen2's with combining marks as letters), as in "
               "ggml-org/llama.cpp src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_QWEN35"),
    "tekken": (_CASED + r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
               "Mistral's tekken tokenizer.json (Mistral Nemo, Pixtral), as quoted in ggml-org/llama.cpp "
               "src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_TEKKEN"),
    "deepseek_v3": ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
                    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
                    "deepseek-ai/DeepSeek-V3 tokenizer.json, the third of its three Split steps (\\r\\n raw), as in "
                    "ggml-org/llama.cpp src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM"),
    "gpt2_bytelevel": (r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)""",
                       "ggml-org/llama.cpp src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_GPT2/OLMO and the second split "
                       "of STARCODER/SMOLLM/COMMAND_R (Hugging Face's ByteLevel regex as llama.cpp writes it)"),
    "falcon_punct": (r"""[\p{P}\$\+<=>\^~\|`]+""",
                     "ggml-org/llama.cpp src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_FALCON, its first split"),
    "bloom": (" ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+",
              "ggml-org/llama.cpp src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_BLOOM (BLOOM's own tokenizer.json "
              "nests a class, which the regex module does not compile)"),
    "glm4": (r"""(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
             r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
             "ggml-org/llama.cpp src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_CHATGLM4 (also its LLAMA3, DBRX, SMAUG)"),
    "bailingmoe": (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]"""
                   r"""|\s+(?!\S)|\s+""",
                   "inclusionAI's Ling (BailingMoE) tokenizer.json, as quoted in ggml-org/llama.cpp "
                   "src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_BAILINGMOE"),
    "seed_coder": (_CONTRACTIONS + r"""|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+"""
                   r"""|\s+(?!\S)|\s+""",
                   "ByteDance-Seed Seed-Coder tokenizer.json, as quoted in ggml-org/llama.cpp src/llama-vocab.cpp, "
                   "LLAMA_VOCAB_PRE_TYPE_SEED_CODER"),
    "kimi_k2": ("|".join([r"""[\p{Han}]+""",
                          "[^\\r\\n\\p{L}\\p{N}]?" + _KIMI_LETTERS + "*" + _KIMI_LOWER + "+" + _CONTRACTIONS + "?",
                          "[^\\r\\n\\p{L}\\p{N}]?" + _KIMI_LETTERS + "+" + _KIMI_LOWER + "*" + _CONTRACTIONS + "?",
                          r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""",
                          r"""\s+"""]),
                "moonshotai/Kimi-K2-Instruct tokenization_kimi.py, pat_str, with its class intersections "
                "[...&&[^\\p{Han}]] written as (?!\\p{Han})[...]"),
    "llama4": (PATTERNS["o200k"],
               "meta-llama/llama-models models/llama4/tokenizer.py, O200K_PATTERN: o200k's string"),
}

#: name -> ``pat_str``, by the names of :data:`bpetrain.PATTERNS`. The first three are
#: tiktoken's; the others are the strings their projects pass to their regex engines
#: (``minbpe``: cl100k as minbpe writes it, rustbpe's default pattern; ``nanochat``: that
#: with at most two digits a piece; ``llama3``).
SPLIT_PATTERNS: dict[str, str] = {
    name: PATTERNS[name] for name in ("gpt2", "cl100k", "o200k", "minbpe", "nanochat", "llama3")
}


def _edit(name: str, old: str, new: str) -> str:
    """The named pattern ``name`` with its one ``old`` replaced by ``new``."""
    pat_str = PATTERNS[name]
    if pat_str.count(old) != 1:
        raise ValueError(f"{old!r} is not in {name}'s pattern once")
    return pat_str.replace(old, new)


#: Edits of the named patterns that a user might make, none of them published, name ->
#: (``pat_str``, the edit): how many digits a piece, contractions in one case or none,
#: marks in the runs of letters, a space before letters as gpt2 has it, no ``/`` after
#: punctuation, no lone space before a word.
VARIANT_PATTERNS: dict[str, tuple[str, str]] = {
    "cl100k_digits4": (_edit("cl100k", r"\p{N}{1,3}+", r"\p{N}{1,4}+"), "cl100k's, four digits a piece"),
    "cl100k_digits8": (_edit("cl100k", r"\p{N}{1,3}+", r"\p{N}{1,8}+"), "cl100k's, eight digits a piece"),
    "cl100k_numbers": (_edit("cl100k", r"\p{N}{1,3}+", r"\p{N}++"), "cl100k's, a run of digits a piece"),
    "cl100k_no_contractions": (_edit("cl100k", r"'(?i:[sdmt]|ll|ve|re)|", ""), "cl100k's without contractions"),
    "cl100k_lower_contractions": (_edit("cl100k", "(?i:[sdmt]|ll|ve|re)", "(?:[sdmt]|ll|ve|re)"),
                                  "cl100k's, contractions in lower case alone"),
    "cl100k_marks": (_edit("cl100k", r"\p{L}++", r"[\p{L}\p{M}]++"), "cl100k's, marks in runs of letters"),
    "cl100k_space_letters": (_edit("cl100k", r"[^\r\n\p{L}\p{N}]?+\p{L}++", r" ?\p{L}++"),
                             "cl100k's, letters after a space alone (gpt2's)"),
    "o200k_digits1": (_edit("o200k", r"\p{N}{1,3}", r"\p{N}"), "o200k's, one digit a piece"),
    "o200k_digits4": (_edit("o200k", r"\p{N}{1,3}", r"\p{N}{1,4}"), "o200k's, four digits a piece"),
    "o200k_no_slash": (_edit("o200k", r"[\r\n/]*", r"[\r\n]*"), "o200k's, no / after punctuation"),
    "o200k_no_lone_space": (_edit("o200k", r"\s+(?!\S)|", ""), "o200k's without \\s+(?!\\S)"),
    "gpt2_digits3": (_edit("gpt2", r" ?\p{N}++", r" ?\p{N}{1,3}+"), "gpt2's, three digits a piece"),
    "gpt2_digits1": (_edit("gpt2", r" ?\p{N}++", r"\p{N}"), "gpt2's, one digit a piece, no space before"),
}

#: Every name ``--pattern`` takes: :data:`SPLIT_PATTERNS`, :data:`PUBLISHED_PATTERNS` and
#: :data:`VARIANT_PATTERNS`.
NAMED_PATTERNS: dict[str, str] = {
    **SPLIT_PATTERNS, **{name: pat_str for name, (pat_str, _) in PUBLISHED_PATTERNS.items()},
    **{name: pat_str for name, (pat_str, _) in VARIANT_PATTERNS.items()},
}


def resolve(pattern: str) -> tuple[str, str]:
    """``(name, pat_str)`` for a name of :data:`NAMED_PATTERNS` or a regex.

    A regex that is not one of the named strings is called ``custom``; one that is gets
    its name, so a table says which pattern ran whichever way it was given.

    Raises
    ------
    ValueError
        If ``pattern`` looks like a name (lower-case letters, digits, ``-``, ``_``) but
        is not one, or does not compile.
    """
    if pattern in NAMED_PATTERNS:
        return pattern, NAMED_PATTERNS[pattern]
    if regex.fullmatch(r"[a-z][a-z0-9_-]*", pattern):
        raise ValueError(f"unknown pattern name {pattern!r}; the names are {', '.join(NAMED_PATTERNS)}")
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"pattern {pattern!r} does not compile: {exc}") from None
    name = next((name for name, pat_str in NAMED_PATTERNS.items() if pat_str == pattern), "custom")
    return name, pattern


def resolve_all(patterns: list[str] | None, default: str) -> list[tuple[str, str]]:
    """The ``--pattern`` options of a script: ``all`` means every name of :data:`SPLIT_PATTERNS`,
    ``published`` every name of :data:`PUBLISHED_PATTERNS`, ``variants`` every name of
    :data:`VARIANT_PATTERNS`, ``generated:N:SEED`` the
    :func:`generated_patterns` ``N``, ``SEED`` (named ``gen-SEED-i``); none, ``default``.

    Raises
    ------
    ValueError
        As :func:`resolve`, or if ``generated:`` is not followed by two integers ``N >= 1``
        and ``SEED >= 0``.
    """
    if not patterns:
        patterns = [default]
    for word, names in (("all", SPLIT_PATTERNS), ("published", PUBLISHED_PATTERNS), ("variants", VARIANT_PATTERNS)):
        if word in patterns:
            patterns = [p for p in patterns if p != word] + [n for n in names if n not in patterns]
    out = []
    for pattern in patterns:
        if not pattern.startswith("generated:"):
            out.append(resolve(pattern))
            continue
        found = regex.fullmatch(r"generated:(\d+):(\d+)", pattern)
        if not found or int(found[1]) < 1:
            raise ValueError(f"{pattern!r}: write generated:N:SEED, N >= 1 patterns drawn with the integer SEED")
        seed = int(found[2])
        out += [(f"gen-{seed}-{i}", pat_str) for i, pat_str in enumerate(generated_patterns(int(found[1]), seed))]
    return out


#: The script that draws :func:`generated_patterns`' patterns (arguments ``n`` and ``seed``; run
#: in ``tests/``), printing them as a JSON list in the order drawn.
_DRAW = """
import json, sys
sys.path.insert(0, ".")
from hypothesis import HealthCheck, Phase, given, settings, seed
from pattern_strategies import split_patterns
n, chosen = int(sys.argv[1]), int(sys.argv[2])
drawn = {}

@seed(chosen)
@settings(max_examples=20 * n, database=None, phases=[Phase.generate], deadline=None,
          suppress_health_check=list(HealthCheck))
@given(split_patterns)
def draw(example):
    drawn[example.pat_str] = None

draw()
print(json.dumps(list(drawn)))
"""


@functools.cache
def generated_patterns(n: int, seed: int) -> tuple[str, ...]:
    """``n`` distinct split patterns drawn from the grammar the tests draw theirs from
    (``split_patterns`` in ``tests/pattern_strategies.py``), the same ones for the same
    ``seed`` and Hypothesis version, none of which bpetrain sends to the ``regex`` module.

    Hypothesis draws ``20 * n`` patterns from ``seed`` (generation only: no shrinking, no
    example database), in a process of its own that imports Hypothesis and the grammar alone:
    what else a process has imported changes what Hypothesis draws (importing
    ``bpetrain._util`` first turned 452 distinct patterns of seed 0 into 453 others), so
    drawn here the set would move with bpetrain's modules. It draws many in a row by changing
    one a little, so the ``n`` kept are spread over them: the distinct patterns are taken in
    the order of a hash of the seed and the pattern, skipping those bpetrain does not compile
    (fewer than ``n`` if that many were not drawn).

    Raises
    ------
    ValueError
        If Hypothesis is not installed (a test dependency: ``pip install -e '.[test]'``).
    """
    try:
        import hypothesis  # noqa: F401 (checked here: the drawing process needs it)
    except ImportError:
        raise ValueError("generated patterns need Hypothesis: pip install -e '.[test]'") from None
    run = subprocess.run([sys.executable, "-c", _DRAW, str(n), str(seed)], capture_output=True, text=True, check=False,
                         cwd=Path(__file__).resolve().parents[1] / "tests")
    if run.returncode:
        raise RuntimeError(f"drawing the generated patterns failed:\n{run.stderr[-2000:]}")
    drawn = json.loads(run.stdout)
    kept = []
    def spread(pat_str: str) -> bytes:
        return hashlib.blake2b(f"{seed}:{pat_str}".encode("utf-8", "surrogatepass")).digest()

    for pat_str in sorted(drawn, key=spread):
        try:
            compiled = has_compiled_splitter(pat_str)
        except ValueError:  # the regex module cannot compile it either (pattern_strategies.regex_fails_on)
            continue
        if compiled:
            kept.append(pat_str)
            if len(kept) == n:
                break
    return tuple(kept)


# ------------------------------------------------------- bpetrain's splitter


def has_compiled_splitter(pat_str: str) -> bool:
    """Whether bpetrain splits ``pat_str`` with compiled code (not the ``regex`` module)."""
    return split_pattern(pat_str).program is not None


def splitter_kind(pat_str: str) -> str:
    """How bpetrain splits ``pat_str`` (``SplitPattern.splitter``): "hand-written + 64-byte
    blocks", "64-byte blocks + DFA", "DFA", "backtracking program", "regex module", ..."""
    return split_pattern(pat_str).splitter


def pieces(pat_str: str, data: bytes) -> list[bytes]:
    """The pieces bpetrain's splitter cuts the UTF-8 bytes ``data`` into."""
    return split_pattern(pat_str).split(data)


def n_pieces(pat_str: str, data: bytes) -> int:
    """How many pieces bpetrain's splitter cuts ``data`` into: the splitter alone, one thread
    (a pattern the compiled splitter does not run is decoded and split by the ``regex`` module)."""
    program = split_pattern(pat_str).program
    if program is not None:
        return program.n_pieces(data)
    return regex_n_pieces(pat_str, data.decode("utf-8", "surrogateescape"))


def sse2_blocks_n_pieces(pat_str: str, data: bytes) -> int:
    """:func:`n_pieces` with the hand-written 64-byte blocks (``_ascii_blocks.h``) classing bytes
    by SSE2, as on a CPU without AVX2, whatever this one has."""
    use_block_isa("sse2")
    try:
        return n_pieces(pat_str, data)
    finally:
        use_block_isa(block_isas()[-1])


@functools.cache
def _engine(pat_str: str, dfa: bool, shuffle: bool | str) -> Program:
    return Program(pat_str, compile_program(pat_str), dfa=dfa, shuffle=shuffle)


def engine_n_pieces(pat_str: str, data: bytes, *, dfa: bool = False, shuffle: bool | str = True) -> int:
    """:func:`n_pieces` with the compiled program alone, never hand-written code: the
    backtracking matcher, or with ``dfa`` the DFA (where the pattern has one), reading ASCII
    text by vector shuffles where it can (by the widest code this CPU runs, or by the code
    ``shuffle`` names, one of :func:`shuffle_variants`), or (``shuffle`` False) by its own
    tables alone."""
    return _engine(pat_str, dfa, shuffle).n_pieces(data)


def reads_by_shuffles(pat_str: str) -> str:
    """The code by which bpetrain's DFA reads ``pat_str``'s ASCII text by vector shuffles
    (``shuffle_variant``, one of :func:`shuffle_variants`), "" if none does."""
    found = split_pattern(pat_str)
    return found.program.shuffle_variant if found.program is not None and found.program.has_dfa else ""


def has_dfa(pat_str: str) -> bool:
    """Whether ``pat_str`` compiles to a DFA."""
    program = split_pattern(pat_str).program
    return program is not None and program.has_dfa


# ------------------------------------------------------- through bpetrain's public API


def count_pieces(pat_str: str, data: bytes) -> PieceCounter:
    """Split ``data`` (one text) and count its pieces in bpetrain's table, as training
    does (one thread); the counter."""
    counter = PieceCounter(pat_str)
    counter.count_text(data, len(data), final=True)
    return counter


# ------------------------------------------------------- the reference: the regex module


def regex_pieces(pat_str: str, data: bytes, timeout: float | None = None) -> list[bytes]:
    """``regex.finditer``'s pieces of ``data`` decoded with ``surrogateescape`` (each
    invalid byte one character), re-encoded the same way: what every splitter must give.

    Raises ``TimeoutError`` if the regex module takes more than ``timeout`` seconds over all
    of them (its own ``timeout`` argument; None: no limit)."""
    text = data.decode("utf-8", "surrogateescape")
    return [m.group().encode("utf-8", "surrogateescape") for m in regex.finditer(pat_str, text, timeout=timeout)]


def regex_n_pieces(pat_str: str, text: str, timeout: float | None = None) -> int:
    """How many matches ``regex.finditer`` finds in ``text`` (a ``str``: decoding is not timed).
    Raises ``TimeoutError`` after ``timeout`` seconds, as :func:`regex_pieces` does."""
    return sum(1 for _ in regex.compile(pat_str).finditer(text, timeout=timeout))
