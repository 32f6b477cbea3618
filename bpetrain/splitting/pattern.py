"""Pre-tokenization: split patterns by name, and the splitter that runs any of them.

A *split pattern* (``pat_str``, tiktoken's name) is a regular expression for the
``regex`` module whose matches are the *pieces* of a text; BPE never merges across
pieces, and text the pattern does not match is dropped (``regex.finditer``). This module
is where a pattern is named, checked and compiled:

- :data:`PATTERNS` names the patterns of OpenAI's tokenizers, as tiktoken publishes them
  in ``tiktoken_ext/openai_public.py``: ``gpt2`` (r50k/p50k), ``cl100k`` (alias
  ``gpt4``) and ``o200k``; and the strings of ``minbpe`` (rustbpe's default too),
  ``nanochat`` and ``llama3``. :func:`resolve_pattern` turns a name into its string; every
  constructor that takes a ``pat_str`` resolves names the same way.
- :class:`SplitPattern` compiles a ``pat_str`` once into a program for the compiled
  matcher (:mod:`bpetrain.splitting._compiler`, :mod:`bpetrain.splitting._matcher`), which the
  counting and encoding kernels run on UTF-8 bytes without the GIL. Syntax the matcher
  does not run (lookbehind, ``\\b``, backreferences, some flags; see
  :mod:`bpetrain.splitting._compiler`) is split by the ``regex`` module instead
  (``fallback_reason`` says why), with the GIL released (``concurrent=True``).

Both give the pieces of ``regex.finditer(pat_str, text)`` on the text decoded with
``errors="surrogateescape"``, re-encoded the same way: each byte that is not valid
UTF-8 is one character, a lone surrogate (category Cs: not a letter, number or space).

Most compiled patterns also become a DFA over character classes
(:mod:`bpetrain.splitting._dfa`), which reads each character once and never backtracks;
``dfa_reason`` says why a pattern has none (then the backtracking program runs). A pattern
whose DFA splits every text as gpt2's, cl100k's or o200k's does, however it is written, hands
over to hand-written matchers (:mod:`bpetrain.splitting._blocks`); their ASCII text, and that
of patterns that split by cl100k's or o200k's rules with variants
(:func:`bpetrain.splitting._blocks.cl100k_rules`, :func:`~bpetrain.splitting._blocks.o200k_rules`:
any number of digits a piece (up to 63, found from the pattern, or a run of any length), with or
without ``\\s++$``, newlines after punctuation its own or the whitespace's, their contractions
in either case, in lower case alone, or none, letters after any prefix or a space alone, and
for o200k's with or without ``\\s+(?!\\S)``; minbpe's, nanochat's, Llama 3's,
Qwen2's and Mistral's tekken strings among them), or by gpt2's rules with a lone whitespace
character before a non-space in no piece (:func:`~bpetrain.splitting._blocks.gpt2_rules`:
Hugging Face's ByteLevel regex as llama.cpp writes it), is split 64 bytes at a time
(``_ascii_blocks.h``): about twice the DFA (docs/split-patterns.md). The program still gives
them their safe cuts.
"""
from __future__ import annotations

import functools
import itertools
import time
import warnings

import regex

from bpetrain.splitting import _blocks
from bpetrain.splitting._dfa import first_difference
from bpetrain.splitting._compiler import (
    PROBE,
    Unsupported,
    compile_and_keep,
    compile_program,
    cuts_agreeing,
    cuts_of_probe,
    kept_program,
    reference_cuts,
    ship_probe_cuts,
    ship_program,
    stored_program,
)
from bpetrain.splitting._matcher import BacktrackLimitExceeded, Program
from bpetrain.splitting.unicode import (
    UNICODE_VERSIONS,
    UnicodeVersionWarning,
    classes_that_differ,
    resolve_unicode,
    ship_table,
)
from bpetrain.splitting.names import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    O200K_PATTERN,
    PATTERNS,
    SHIPPED,
    describe_pattern,
)

__all__ = ["PATTERNS", "SplitPattern", "compile_regex", "encode_utf8", "resolve_pattern", "ship_patterns",
           "split_pattern"]


def _contractions(case: str) -> str:
    """The contractions 's 't 're 've 'm 'll 'd: ``"folded"`` in either case by ``(?i)``, which
    folds the letters' other case variants too (U+017F for s), ``"ascii"`` in ASCII's two cases
    alone, ``"lower"`` in lower case alone (gpt2's). The blocks read the first two alike: they
    leave a case variant to the program."""
    if case == "folded":
        return r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    words = ("s", "t", "re", "ve", "m", "ll", "d")
    if case == "lower":
        return "(?:" + "|".join("'" + word for word in words) + ")"
    return "(?:" + "|".join("'" + "".join(f"[{c}{c.upper()}]" for c in word) for word in words) + ")"


def _digits(digits: int | None, possessive: bool) -> str:
    """A piece of at most ``digits`` digits (None: a run of any length), as a pattern."""
    if digits == 1:
        return r"\p{N}"
    plus = "+" if possessive else ""
    return r"\p{N}+" + plus if digits is None else rf"\p{{N}}{{1,{digits}}}" + plus


def _cl100k_rules_pattern(digits: int | None, end_of_text: bool, newlines_after_o: bool,
                          contractions: str | None, space_prefix: bool, marks: str | None = None) -> str:
    """A pattern that splits by :func:`bpetrain.splitting._blocks.cl100k_rules` with these
    arguments: cl100k's, with ``\\p{N}{1,digits}`` (:func:`_digits`), with ``\\s++$`` or not, with
    ``[\\r\\n]*+`` after a run of punctuation or not, with its contractions in the case
    ``contractions`` names (:func:`_contractions`) or (None) without, with a space alone before
    letters (``space_prefix``, gpt2's `` ?``) or cl100k's ``[^\\r\\n\\p{L}\\p{N}]?+``, with
    combining marks as cl100k's classes have them (``marks`` None), as letters (``"letters"``:
    ``\\p{L}\\p{M}`` for ``\\p{L}`` in every class) or in runs of letters (``"runs"``: in the
    letters' run alone), as :func:`bpetrain.splitting._blocks.cl100k_rules` takes them."""
    letter = r"\p{L}\p{M}" if marks == "letters" else r"\p{L}"
    punctuation = rf" ?[^\s{letter}\p{{N}}]++" + (r"[\r\n]*+" if newlines_after_o else "")
    letters = (" ?" if space_prefix else rf"[^\r\n{letter}\p{{N}}]?+") + (r"[\p{L}\p{M}]++" if marks else r"\p{L}++")
    return "|".join([*([_contractions(contractions)] if contractions else []), letters,
                     _digits(digits, True), punctuation, *([r"\s++$"] if end_of_text else []), r"\s*[\r\n]",
                     r"\s+(?!\S)", r"\s"])


def _o200k_rules_pattern(digits: int | None, contractions: str | None, space_prefix: bool, whole_runs: bool,
                         slash: bool = True) -> str:
    """A pattern that splits by :func:`bpetrain.splitting._blocks.o200k_rules` with these
    arguments: o200k's, with ``\\p{N}{1,digits}`` (:func:`_digits`), with its contractions in the
    case ``contractions`` names (:func:`_contractions`) or (None) without, with a space alone
    before letters (``space_prefix``) or o200k's ``[^\\r\\n\\p{L}\\p{N}]?``, with its ``\\s+(?!\\S)`` or
    (``whole_runs``) without, with its ``[\\r\\n/]*`` or (not ``slash``) ``[\\r\\n]*``."""
    upper, lower = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
    contraction = _contractions(contractions) + "?" if contractions else ""
    prefix = " ?" if space_prefix else r"[^\r\n\p{L}\p{N}]?"
    return "|".join([f"{prefix}{upper}*{lower}+{contraction}", f"{prefix}{upper}+{lower}*{contraction}",
                     _digits(digits, False),
                     r" ?[^\s\p{L}\p{N}]+" + (r"[\r\n/]*" if slash else r"[\r\n]*"), r"\s*[\r\n]+",
                     *([] if whole_runs else [r"\s+(?!\S)"]), r"\s+"])


#: The digits a piece of the block rules' references may take at most (None: any number); a
#: pattern that cuts a run of digits after another number of them has references of its own
#: as well (:func:`_references_beside`).
_DIGITS = (3, 2, 1, 4, 5, 6, None)
#: Their contractions, as (the case a pattern writes them in, :func:`_contractions`; the blocks'
#: name of it, :func:`bpetrain.splitting._blocks.cl100k_rules`): (?i), ASCII's two cases, lower
#: case alone, none.
_CONTRACTIONS = (("folded", "either"), ("ascii", "either"), ("lower", "lower"), (None, None))


def _rules_references(digits_choices: tuple[int | None, ...], marks: str | None = None
                      ) -> tuple[tuple[str, int, int], ...]:
    """The references of the block rules of cl100k's and o200k's kinds, with these numbers of
    digits a piece, as :data:`_HAND_WRITTEN` holds them (their own patterns left out); with
    ``marks`` (``"letters"`` or ``"runs"``, :func:`_cl100k_rules_pattern`), those of cl100k's
    kind with combining marks so alone (o200k's classes of letters hold the marks already)."""
    cl100k = tuple((_cl100k_rules_pattern(digits, end, after, case, space, marks), 0,
                    _blocks.cl100k_rules(digits, end, after, rules, space, marks))
                   for space in (False, True) for case, rules in _CONTRACTIONS for digits in digits_choices
                   for end in (False, True) for after in (True, False)
                   if marks or (digits, end, after, case, space) != (3, True, True, "folded", False))  # (cl100k's own)
    if marks:
        return cl100k
    return (
        *cl100k,
        *((_o200k_rules_pattern(digits, case, space, whole, slash), 0,
           _blocks.o200k_rules(digits, rules, space, whole, slash))
          for slash in (True, False) for whole in (False, True) for space in (False, True) for digits in digits_choices
          for case, rules in _CONTRACTIONS if (digits, case, space, whole, slash) != (3, "folded", False, False, True)),  # (o200k's own)
    )


# The patterns _blocks has hand-written code for, as (pattern, hand-written matcher, rules
# for _ascii_blocks.h): a pattern gets them when its DFA cuts every text as the pattern's
# does (_dfa.same_pieces), however it is written; the DFA finds the pieces the block rules
# leave. The block rules' variants are each given by a pattern that splits by them.
_HAND_WRITTEN = (
    (GPT2_PATTERN, _blocks.GPT2, 0),
    (CL100K_PATTERN, _blocks.CL100K, 0),
    (O200K_PATTERN, _blocks.O200K, 0),
    # gpt2's without \s++$ and \s: a whitespace character \s+(?!\S) cannot take is in no piece
    (r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s+(?!\S)""", 0, _blocks.gpt2_rules(True)),
    *_rules_references(_DIGITS),
)
_REFERENCES = tuple(pattern for pattern, _, _ in _HAND_WRITTEN)
#: What :func:`_references_beside` splits: a run of ASCII digits longer than the block rules count.
_DIGIT_RUN = "0123456789" * 10
#: ... and a letter, a combining mark (U+0301) and an upper-case letter, which a pattern that
#: takes marks as letters, as Qwen3.5's does, and does not cut at a change of case, keeps in one piece;
_MARKED_WORD = "a\u0301B"
#: ... and two full stops and a mark, which one of those that takes a mark in a run of
#: punctuation too (cl100k's with ``[\p{L}\p{M}]++`` for ``\p{L}++``) keeps in one piece.
_MARKED_RUN = "..\u0301"


@functools.lru_cache(maxsize=64)
def _references_beside(pat_str: str) -> tuple[tuple[str, int, int], ...]:
    """References of the block rules (as :data:`_HAND_WRITTEN` holds them) beside the fixed
    ones, derived from how the ``regex`` module splits two probes with ``pat_str``:

    - with the number of digits a piece it cuts a run of digits after, where :data:`_DIGITS`
      lacks it: its first match in :data:`_DIGIT_RUN`, if that starts the run and ends in it
      after 7 to 63 digits (``\\p{N}{1,8}`` finds its references as ``\\p{N}{1,3}`` does);
    - with combining marks as letters (cl100k's kind), with every number of digits of
      :data:`_DIGITS` and that one, if its first match in :data:`_MARKED_WORD` is all of it;
      with marks in runs of letters and of punctuation (``marks="runs"``) instead, if its first
      match in :data:`_MARKED_RUN` is all of it too.

    The pattern's DFA must still cut every text as one of them does
    (:func:`bpetrain.splitting._dfa.same_pieces`)."""
    found = compile_regex(pat_str)
    match = found.search(_DIGIT_RUN)
    digits = ()
    if match is not None and not match.start() and 0 < match.end() < _blocks.DIGITS_ANY and match.end() not in _DIGITS:
        digits = (match.end(),)
    marks = ()
    if _first_is_all(found, _MARKED_WORD):
        marks = _rules_references(_DIGITS + digits, marks="runs" if _first_is_all(found, _MARKED_RUN) else "letters")
    return (*(_rules_references(digits) if digits else ()), *marks)


def _first_is_all(found: regex.Pattern, probe: str) -> bool:
    """Whether the pattern ``found`` matches all of ``probe`` from its start."""
    match = found.match(probe)
    return match is not None and match.end() == len(probe)


def _patterns_beside(pat_str: str) -> tuple[str, ...]:
    """The patterns of :func:`_references_beside`."""
    return tuple(reference for reference, _, _ in _references_beside(pat_str))


def _hand_written(pat_str: str, like: int) -> tuple[str | None, int, int]:
    """The reference ``like`` (a program's, :func:`bpetrain.splitting._compiler.stored_program`)
    of ``pat_str``: :data:`_HAND_WRITTEN`'s, then :func:`_references_beside`'s; -1: none."""
    if like < 0:
        return None, 0, 0
    return _HAND_WRITTEN[like] if like < len(_HAND_WRITTEN) else _references_beside(pat_str)[like - len(_HAND_WRITTEN)]


def _nearest_rules(pat_str: str, unicode) -> tuple[str, tuple[str, list[str], list[str]] | None]:
    """The reference of the block rules (:data:`_HAND_WRITTEN`'s, then
    :func:`_references_beside`'s) whose cuts of the probe text
    (:func:`bpetrain.splitting._compiler.cuts_of_probe`) agree with ``pat_str``'s the
    longest (the first of those), and a short text the ``regex`` module cuts apart with the
    two, with their pieces (:func:`_text_cut_apart`), or None if none is found. ``pat_str``
    must have a DFA."""
    beside = _patterns_beside(pat_str)
    references = (*_REFERENCES, *beside)
    cuts = reference_cuts(_REFERENCES, beside)
    own = cuts_of_probe(pat_str) or ()
    reference = references[max(range(len(references)), key=lambda k: cuts_agreeing(own, cuts[k]))]
    arrays = kept_program(pat_str, unicode, _REFERENCES) or compile_program(pat_str, unicode)
    return reference, _text_cut_apart(pat_str, reference, first_difference(arrays, stored_program(reference, unicode)))


def _text_cut_apart(a: str, b: str, parting: str | None) -> tuple[str, list[str], list[str]] | None:
    """A text the ``regex`` module cuts into other pieces with the pattern ``a`` than with
    ``b``, with the two's pieces, from ``parting``, a text on which their DFAs part
    (:func:`first_difference`): it, or it with a character of it or of the probe text before
    it, after it or both (the pieces may part only once more text follows, or after another
    piece); None if none is, or none within :data:`_CUT_APART_SECONDS` (a pattern the
    ``regex`` module backtracks on)."""
    if parting is None:
        return None
    chars = list(dict.fromkeys(parting + PROBE))
    deadline = time.monotonic() + _CUT_APART_SECONDS
    for text in itertools.chain([parting], (parting + c for c in chars), (c + parting for c in chars),
                                (c + parting + d for c in chars for d in chars)):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            pieces_a, pieces_b = _regex_pieces(a, text, left), _regex_pieces(b, text, left)
        except TimeoutError:
            continue
        if pieces_a != pieces_b:
            return text, pieces_a, pieces_b
    return None


#: The longest :func:`_text_cut_apart` looks for a text, in seconds.
_CUT_APART_SECONDS = 2.0


def _regex_pieces(pat_str: str, text: str, seconds: float = 1.0) -> list[str]:
    """The ``regex`` module's pieces of a short ``text`` (``seconds`` at most: TimeoutError)."""
    return [m.group() for m in compile_regex(pat_str).finditer(text, timeout=seconds)]


def resolve_pattern(pat_str):
    """Return the ``pat_str`` for a pattern name, a regex, a pipeline, or ``None``.

    Parameters
    ----------
    pat_str : str, PreTokenizer or None
        A name from :data:`PATTERNS` (``"gpt2"``, ``"cl100k"``, ``"gpt4"``, ``"o200k"``,
        ``"minbpe"``, ``"nanochat"``, ``"llama3"``),
        ``"none"`` or ``None`` for no pre-tokenization (raw mode), any regular
        expression the ``regex`` module accepts, or a pipeline of Hugging Face
        pre-tokenizers (:class:`bpetrain.splitting.pipeline.PreTokenizer`).

    Returns
    -------
    str, PreTokenizer or None
        The regex source; a pipeline that is one pattern as that pattern
        (:meth:`~bpetrain.splitting.pipeline.PreTokenizer.as_pat_str`), another as itself;
        or ``None`` for raw mode.

    Raises
    ------
    TypeError
        If ``pat_str`` is not a string, a pipeline or ``None``.
    ValueError
        If ``pat_str`` looks like a name (lower-case letters, digits, ``_``) but is not
        one, does not compile, or matches the empty string.
    """
    if pat_str is None or pat_str == "none":
        return None
    if _is_pipeline(pat_str):
        return pat_str.as_pat_str()
    if not isinstance(pat_str, str):
        raise TypeError(f"pat_str must be a str, a PreTokenizer or None, got {type(pat_str).__name__}")
    if pat_str in PATTERNS:
        return PATTERNS[pat_str]
    if regex.fullmatch(r"[a-z][a-z0-9_]*", pat_str):
        raise ValueError(
            f"unknown pattern name {pat_str!r}: the names are {', '.join(PATTERNS)} and none; to split on "
            f"the literal text, pass the regex as (?:{pat_str})"
        )
    compile_regex(pat_str)  # checked as SplitPattern checks it, without compiling a program
    return pat_str


@functools.lru_cache(maxsize=64)
def compile_regex(pat_str: str) -> regex.Pattern:
    """``pat_str`` compiled by the ``regex`` module, once per process: the reference, the
    splitter when the compiled matcher cannot run a pattern, and the check of every pattern
    (:func:`resolve_pattern`, :attr:`SplitPattern.regex`).

    Raises
    ------
    ValueError
        If the ``regex`` module refuses the pattern, fails on it, or it matches the
        empty string.
    """
    try:
        compiled = regex.compile(pat_str)
    except regex.error as exc:
        names = ", ".join(sorted(PATTERNS))
        raise ValueError(
            f"pattern {pat_str!r} is neither a known name ({names}, none) nor a valid "
            f"regular expression: {exc}"
        ) from None
    except (AttributeError, IndexError, KeyError, TypeError) as exc:  # the regex module failing inside
        # Releases of regex from 2025 and early 2026 (2026.1.15 is the newest for Python
        # 3.9) raise AttributeError on some negated classes of every character, such as
        # (?i:[^\s\S]).
        raise ValueError(
            f"the regex module {regex.__version__} fails to compile pattern {pat_str!r} "
            f"({type(exc).__name__}: {exc}); that is a bug in this version of regex: "
            f"another version may compile it, or write the pattern another way"
        ) from exc
    if compiled.fullmatch(""):
        raise ValueError(f"pattern {pat_str!r} matches the empty string; it must match at least one character")
    return compiled


#: The ``regex`` module's time limit for one call on ``n`` characters is
#: ``PATTERN_SECONDS + PATTERN_SECONDS_PER_CHAR * n``: generous for any usable pattern (the
#: module splits about 10 MB/s), and a bound for catastrophic backtracking such as ``(a|aa)+$``,
#: which a pattern read from a model file may hold.
PATTERN_SECONDS = 10.0
PATTERN_SECONDS_PER_CHAR = 1e-5


class PatternTimeoutError(ValueError):
    """A split pattern ran past its time limit (:data:`PATTERN_SECONDS`): catastrophic backtracking."""


def pattern_timeout(n_chars: int) -> float:
    """The time limit in seconds for the ``regex`` module to split ``n_chars`` characters."""
    return PATTERN_SECONDS + PATTERN_SECONDS_PER_CHAR * n_chars


def timed_out(pat_str: str, n_chars: int) -> PatternTimeoutError:
    """The error for ``pat_str`` running past :func:`pattern_timeout` on ``n_chars`` characters."""
    return PatternTimeoutError(
        f"the split pattern {describe_pattern(pat_str)} ran past its time limit of {pattern_timeout(n_chars):.0f} s on "
        f"{n_chars} characters (catastrophic backtracking): it cannot split text; use another pattern"
    )


class SplitPattern:
    """A split pattern, compiled to split text.

    Parameters
    ----------
    pat_str : str
        The regex (not a name: see :func:`resolve_pattern`).
    unicode_version : {"regex", "tiktoken"} or bpetrain.splitting.unicode.UnicodeTable, default "regex"
        Whose character classes ``\\p{L}``, ``\\s``, ... hold: the installed ``regex``
        module's, tiktoken's engine's, or a table's (:mod:`bpetrain.splitting.unicode`). The
        compiled matcher follows it; the ``regex`` module (the fallback, :meth:`pieces`)
        cannot, and a :class:`~bpetrain.splitting.unicode.UnicodeVersionWarning` says so
        when it splits a pattern whose classes were asked of another version.

    Attributes
    ----------
    pat_str : str
    unicode_version : str or UnicodeTable
    unicode : UnicodeTable or None
        The table the compiled matcher's classes come from (None: the ``regex`` module's).
    regex : regex.Pattern
        The pattern compiled by the ``regex`` module (the reference, and the splitter
        when the compiled matcher cannot run the pattern), compiled when first used if
        the program is read back from the disk cache.
    program : bpetrain.splitting._matcher.Program or None
        The compiled program, or None if the ``regex`` module splits.
    splitter : str
        What splits it: ``"hand-written + 64-byte blocks"`` (a pattern whose DFA splits as
        gpt2's, cl100k's or o200k's does), ``"64-byte blocks + DFA"`` (one that splits by
        the block rules of their kinds with variants: the DFA reads what the blocks leave),
        ``"64-byte blocks + backtracking program"``, ``"DFA"``, ``"backtracking program"``
        or ``"regex module"``.
    fallback_reason : str or None
        Why the ``regex`` module splits (None when the program does).
    dfa_reason : str or None
        Why the program's DFA (:mod:`bpetrain.splitting._dfa`) does not split, so the
        backtracking matcher does (None when it does; ``fallback_reason`` when neither runs).
    blocks_reason : str or None
        Why the 64-byte blocks (``_ascii_blocks.h``) do not read the pattern's text, worked
        out when first asked (None when they do: a hand-written matcher's pattern, one
        whose DFA cuts every text as a block rules' reference does, or one that cuts as a
        reference but where some characters the blocks could read are, which they then leave
        to the DFA: ``program.blocks_without``, as Kimi K2's Han). The rules are those of
        gpt2's, cl100k's and o200k's kinds of pattern, with variants; for a pattern with a
        DFA, the reason names the nearest reference (by where the two cut a probe text) and,
        where one is found, a short text the two cut apart, with both's pieces
        (:func:`bpetrain.splitting._dfa.first_difference`).
    shuffle_reason : str or None
        Why the DFA does not read ASCII text by vector shuffles
        (:func:`bpetrain.splitting._dfa.shuffle_table`): more states than a vector has lanes,
        a CPU with neither AVX-512 VBMI nor AVX2, no DFA (None when it does; which code does:
        ``program.shuffle_variant``).

    Raises
    ------
    ValueError
        If the regex does not compile (the ``regex`` module refuses it, or fails on it)
        or can match the empty string, or ``unicode_version`` is unknown.
    """

    def __init__(self, pat_str: str, *, unicode_version="regex"):
        if not isinstance(pat_str, str):
            raise TypeError(f"pat_str must be a str, got {type(pat_str).__name__}")
        self.pat_str = pat_str
        self.unicode_version = unicode_version
        try:
            self.unicode = resolve_unicode(unicode_version)
        except (TypeError, ValueError):
            self.regex  # noqa: B018 (a pattern that does not compile is reported first)
            raise
        arrays = kept_program(pat_str, self.unicode, _REFERENCES)
        if arrays is None:
            self.regex  # noqa: B018 (checks the pattern before it is compiled)
        try:
            if arrays is None:
                arrays = compile_and_keep(pat_str, self.unicode, _REFERENCES, _patterns_beside(pat_str))
            _, native, blocks = _hand_written(pat_str, int(arrays["like"][0]))
            self.program = Program(pat_str, arrays, native, blocks, self.unicode)
            self.fallback_reason = None
            self.dfa_reason = self.program.dfa_reason or None
            self.shuffle_reason = self.program.shuffle_reason or None
        except Unsupported as exc:
            self.program = None
            self.fallback_reason = self.dfa_reason = self.shuffle_reason = str(exc)
            differ = [] if self.unicode is None else classes_that_differ(pat_str, self.unicode)
            if differ:
                warnings.warn(
                    f"the regex module splits the pattern {pat_str!r:.60} ({exc}), with its own Unicode classes "
                    f"(regex {regex.__version__}): {', '.join(differ)} hold other characters than in "
                    f"{self.unicode.source}, so text with them may split differently", UnicodeVersionWarning,
                    stacklevel=3)

    @functools.cached_property
    def regex(self) -> regex.Pattern:
        """The pattern compiled by the ``regex`` module (:func:`compile_regex`), when first
        used: a program read back from the disk cache
        (:func:`bpetrain.splitting._compiler.kept_program`) was compiled from a pattern the
        module compiled, and needs it only to fall back.

        Raises
        ------
        ValueError
            If the ``regex`` module refuses the pattern, fails on it, or it matches the
            empty string.
        """
        return compile_regex(self.pat_str)

    @property
    def splitter(self) -> str:
        """See the class's attributes."""
        program = self.program
        if program is None:
            return "regex module"
        if program.native:
            return "hand-written + 64-byte blocks"
        kind = "DFA" if program.has_dfa else "backtracking program"
        return f"64-byte blocks + {kind}" if program.blocks else kind

    @functools.cached_property
    def blocks_reason(self) -> str | None:
        """See the class's attributes (worked out when first asked: comparing DFAs takes
        some milliseconds, and may compile a reference)."""
        if self.program is None:
            return self.fallback_reason
        if self.program.native or self.program.blocks:
            return None
        if self.dfa_reason:
            return (f"it has no DFA ({self.dfa_reason}), and a pattern takes the block rules of the reference "
                    "whose DFA cuts every text as its own does")
        reference, apart = _nearest_rules(self.pat_str, self.unicode)
        shown = "" if apart is None else f": {apart[0]!r} is cut into {apart[2]} by it and into {apart[1]} by this pattern"
        return ("its DFA cuts some text otherwise than every reference of the block rules (gpt2's, cl100k's "
                f"and o200k's kinds of pattern with their variants); the nearest is {reference!r}{shown}")

    def __repr__(self) -> str:
        how = "compiled" if self.program is not None else f"regex module: {self.fallback_reason}"
        return f"<SplitPattern {describe_pattern(self.pat_str)} ({how})>"

    def split(self, data: bytes | str) -> list[bytes]:
        """The pieces of ``data`` (UTF-8 bytes, or a ``str``) as ``bytes``.

        Raises
        ------
        ValueError
            If a ``str`` holds a lone surrogate that is not an escaped byte.
        """
        if isinstance(data, str):
            data = encode_utf8(data)
        if self.program is not None:
            try:
                return self.program.split(data)
            except BacktrackLimitExceeded:
                pass  # catastrophic backtracking: the regex module's guards may cope
        text = data.decode("utf-8", "surrogateescape")
        return [encode_utf8(piece) for piece in self.pieces(text)]


    def pieces(self, text: str) -> list[str]:
        """The pieces of ``text`` by the ``regex`` module: whole matches (groups do not
        matter, as in tiktoken), matching with the GIL released (``concurrent=True``).

        Raises
        ------
        PatternTimeoutError
            If matching runs past :func:`pattern_timeout` (catastrophic backtracking).
        """
        return [m.group() for m in self.finditer(text)]

    def finditer(self, text: str):
        """The ``regex`` module's matches in ``text``, within :func:`pattern_timeout`.

        Raises
        ------
        PatternTimeoutError
            If matching runs past the time limit.
        """
        try:
            yield from self.regex.finditer(text, concurrent=True, timeout=pattern_timeout(len(text)))
        except TimeoutError:
            raise timed_out(self.pat_str, len(text)) from None


@functools.lru_cache(maxsize=64)
def split_pattern(pat_str, unicode_version="regex"):
    """The :class:`SplitPattern` of ``pat_str`` and ``unicode_version``, compiled once per
    process; for a pipeline (:class:`bpetrain.splitting.pipeline.PreTokenizer`), its
    :class:`~bpetrain.splitting.pipeline.PipelineSplitter`, which splits as a
    ``SplitPattern`` does (``split``, ``pieces``; ``program`` None) with the classes of the
    ``regex`` module, whatever ``unicode_version`` says (Hugging Face's Oniguruma has its own)."""
    if _is_pipeline(pat_str):
        return pat_str.splitter()
    return SplitPattern(pat_str, unicode_version=unicode_version)


def ship_patterns(folder: str, names: tuple[str, ...] = SHIPPED) -> None:
    """Fill ``folder`` (the build's :data:`~bpetrain.splitting._charsets.SHIPPED_DIR`) with
    the compiled programs of the patterns ``names`` (:data:`PATTERNS`) under each of
    :data:`~bpetrain.splitting.unicode.UNICODE_VERSIONS`, and what resolving those reads
    from the cache (:func:`~bpetrain.splitting.unicode.ship_table`), and the hand-written
    matchers' tables (:func:`bpetrain.splitting._blocks.ship_tables`), and where the
    references cut a probe text (:func:`bpetrain.splitting._compiler.probe_cuts`), so that a first
    process that splits with them reads them instead of compiling
    (:func:`bpetrain.splitting._compiler.kept_program`). ``setup.py`` calls this at build
    time.

    Raises
    ------
    Unsupported, ValueError
        If a pattern does not compile without warnings.
    """
    for version in UNICODE_VERSIONS:
        table = resolve_unicode(version)
        if table is not None:
            ship_table(table, folder)
        _blocks.ship_tables(table, folder)  # the hand-written matchers' tables
        for name in names:
            ship_program(PATTERNS[name], table, _REFERENCES, folder, _patterns_beside(PATTERNS[name]))
    ship_probe_cuts(_REFERENCES, folder)


def _is_pipeline(pat_str) -> bool:
    """Whether ``pat_str`` is a :class:`bpetrain.splitting.pipeline.PreTokenizer` (which
    imports this module, so it is known by its methods here)."""
    return not isinstance(pat_str, str) and hasattr(pat_str, "as_pat_str") and hasattr(pat_str, "splitter")


def encode_utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes; escaped bytes (``surrogateescape``) become those bytes again.

    Raises
    ------
    ValueError
        If ``text`` holds a lone surrogate that is not an escaped byte.
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValueError(
            f"text holds the lone surrogate U+{ord(bad):04X} at character {exc.start}, which is not "
            "valid Unicode and has no UTF-8 bytes; pass such text as bytes, or decode it with "
            "errors='surrogateescape'"
        ) from None


def replace_surrogates(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (tiktoken's fix-up before encoding)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
