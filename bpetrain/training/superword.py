"""Superword training (SuperBPE): a second stage of merges that may span words.

SuperBPE (A. Liu, J. Hayase, V. Hofmann, S. Oh, N. A. Smith, Y. Choi, "SuperBPE: Space
Travel for Language Models", COLM 2025, arXiv:2503.13423; code: PythonNut/superbpe and the
authors' fork of Hugging Face ``tokenizers``) trains in two stages:

1. ordinary BPE with the trainer's split pattern, up to the *transition* vocabulary size T;
2. training goes on from stage 1's merges on the text split by a pattern that does not
   stop at spaces (:data:`bpetrain.PATTERNS` ``"superbpe"``, the authors' current rule,
   or ``"superbpe-original"``, the paper's): every stage-2 piece starts as stage 1's
   encoding of it (``base=``, rule 7 of :mod:`bpetrain._reference`), and merges go on to
   ``vocab_size`` under the same rules, except that a merge whose token would span more
   than ``max_words_per_token`` words or hold ``": "`` is refused (the merge kernel drops
   the pair when it pops it: :mod:`bpetrain.training._superword`).

The tokenizer that comes out splits with the stage-2 pattern (its ``pat_str``), which
matches all text, so its ranks with that pattern encode alike in bpetrain, tiktoken and a
``tokenizer.json`` (one ``Split`` and ``ByteLevel``). Each stage counts its pieces as any
run does: in parallel, or on a Dask cluster; documents from an iterator are read once and
counted for both stages together.
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass

from bpetrain._util.progress import progress_bar
from bpetrain.counting.counts import PieceCounter
from bpetrain.splitting.names import describe_pattern
from bpetrain.splitting.pattern import resolve_pattern
from bpetrain.training._superword import SuperwordRule

__all__ = ["DEFAULTS", "Superword", "count_all", "describe", "is_stage_1", "kernel_rule", "refuse_counts", "stages",
           "train", "train_iterator"]

#: Documents from an iterator handed to the two counters at a time.
CHUNK = 1024
#: The defaults of the options that apply only with ``superword_transition``.
DEFAULTS = {"superword_pat_str": "superbpe", "max_words_per_token": 4, "forbid_colon_space": True}


@dataclass(frozen=True)
class Superword:
    """The options of a superword run, checked.

    Attributes
    ----------
    transition : int
        The vocabulary size at which stage 2 starts (T), counted as ``vocab_size`` is.
    pat_str : str
        Stage 2's split pattern (resolved).
    max_words_per_token : int
        The most words (runs of bytes between spaces) a stage-2 token may span; 0: no limit.
    forbid_colon_space : bool
        Refuse stage-2 tokens that hold ``": "``.
    """

    transition: int
    pat_str: str
    max_words_per_token: int
    forbid_colon_space: bool

    @classmethod
    def of(cls, transition, vocab_size: int, floor: int, pat_str, max_words_per_token, forbid_colon_space):
        """The options (None without ``transition``), or ValueError/TypeError naming the one that is wrong."""
        given = {"superword_pat_str": pat_str, "max_words_per_token": max_words_per_token,
                 "forbid_colon_space": forbid_colon_space}
        if transition is None:
            changed = [name for name, value in given.items() if value != DEFAULTS[name]]
            if changed:
                raise ValueError(f"{', '.join(changed)} apply to superword training: set superword_transition too")
            return None
        for name, value in (("superword_transition", transition), ("max_words_per_token", max_words_per_token)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{name} must be an int or None, got {type(value).__name__}: {value!r}")
        if not isinstance(forbid_colon_space, bool):
            raise TypeError(f"forbid_colon_space must be a bool, got {type(forbid_colon_space).__name__}")
        if not floor <= transition <= vocab_size:
            raise ValueError(
                f"superword_transition={transition} must lie between {floor} (256 bytes + the special tokens) and "
                f"vocab_size={vocab_size}: stage 1 trains to that size, stage 2 from there to vocab_size"
            )
        if max_words_per_token is not None and max_words_per_token < 1:
            raise ValueError(f"max_words_per_token must be >= 1 or None for no limit, got {max_words_per_token}")
        pattern = resolve_pattern(pat_str)
        if pattern is None or not isinstance(pattern, str):
            raise ValueError(
                f"superword_pat_str={describe_pattern(pattern)}: stage 2 needs one split pattern (a regex or a name "
                "such as 'superbpe'), so that tiktoken and tokenizer.json can split as the tokenizer does"
            )
        return cls(transition, pattern, max_words_per_token or 0, forbid_colon_space)


def describe(options: Superword | None) -> str:
    """The options as a trainer's repr shows them after its others ("" for None)."""
    if options is None:
        return ""
    return (f", superword_transition={options.transition}, superword_pat_str={describe_pattern(options.pat_str)}, "
            f"max_words_per_token={options.max_words_per_token or None}, "
            f"forbid_colon_space={options.forbid_colon_space}")


def refuse_counts(trainer) -> None:
    """Counts are of one pattern: a superword ``trainer`` refuses to count or train from them.

    Raises
    ------
    ValueError
        If ``trainer`` trains superwords.
    """
    if trainer.superword is not None:
        raise ValueError("a superword trainer needs the pieces of two split patterns, which one set of counts does "
                         "not hold: train on the text (train or train_from_iterator), which counts it twice")


def stages(trainer):
    """The two trainers (of ``trainer``'s class) of a superword ``trainer``: stage 1 (its
    pattern, to the transition size) and stage 2 (the superword pattern, to ``vocab_size``,
    with the kernel rule)."""
    BpeTrainer = type(trainer)
    options = trainer.superword
    common = dict(special_tokens=trainer.special_tokens, min_frequency=trainer.min_frequency,
                  show_progress=trainer.show_progress, max_token_length=trainer.max_token_length)
    first = BpeTrainer(options.transition, pat_str=trainer.pat_str, tie_break=trainer.tie_break,
                       new_ids_from=trainer.new_ids_from, **common)
    first.pat_str_given = trainer.pat_str_given
    first.stage = "stage 1: "
    # Stage 2 extends stage 1, whose ids keep its tie-break's numbering.
    second = BpeTrainer(trainer.vocab_size, pat_str=options.pat_str, **common)
    second.stage = "stage 2: "
    second.superword_rule = options
    return first, second


def train(trainer, run, base, pattern_warning: type[Warning], both=None, *, stacklevel: int = 3,
          started: float | None = None):
    """Train ``trainer`` in two stages (``both``, default :func:`stages`): ``run(stage, base)``
    trains one stage (reads the text its way); stage 2 takes stage 1's tokenizer as its base,
    with another pattern (``pattern_warning``, which says so, is dropped). The stages' other
    warnings are raised again ``stacklevel`` frames up (at the user's call), their messages
    naming the stage. Sets ``trainer.stats`` to stage 2's, with the seconds of the whole run (since
    ``started``, a :func:`time.perf_counter` time, default now), and ``trainer.stage_stats`` to both."""
    started = time.perf_counter() if started is None else started
    base = trainer._base(base)
    first, second = both or stages(trainer)
    tokenizer = base  # a base of T tokens is stage 1 (SuperBPE's extend_existing_tokenizer.sh): nothing to count
    for stage, label in ((first, "stage 1"), (second, "stage 2")):
        if stage is first and is_stage_1(first, base):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tokenizer = run(stage, tokenizer)
        for found in caught:
            if not (stage is second and issubclass(found.category, pattern_warning)):  # the point of stage 2
                warnings.warn(f"{label} of superword training: {found.message}", found.category,
                              stacklevel=stacklevel)
    trainer.stats = dataclasses.replace(second.stats, seconds=time.perf_counter() - started)
    trainer.stage_stats = (first.stats, second.stats)  # stage 1's is None when the base was stage 1
    return tokenizer


def is_stage_1(first, base) -> bool:
    """Whether ``base`` has the transition's size already (stage 1, the trainer ``first``, has nothing to learn)."""
    return base is not None and first._n_merges_wanted(base)[0] == 0


def train_iterator(trainer, iterator, length: int | None, text_field: str, base, started: float, pattern_warning):
    """:meth:`BpeTrainer.train_from_iterator` of a superword ``trainer``: the documents are
    read once, both stages' pieces counted together."""
    first, second = stages(trainer)

    def documents(bar):
        for document in iterator:
            yield document
            bar.update()

    base = trainer._base(base)
    counted = [second] if is_stage_1(first, base) else [first, second]
    patterns = [stage._pattern(base, stacklevel=4) if stage is first else stage.pat_str for stage in counted]
    with progress_bar(total=length, unit="doc", desc="counting", disable=not trainer.show_progress) as bar:
        counters = dict(zip(counted, count_all(patterns, trainer.special_tokens, documents(bar), text_field)))

    def run(stage, start):
        counter = counters[stage]
        counter.seconds = time.perf_counter() - started
        return stage._train_counter(counter, start, stacklevel=3)

    return train(trainer, run, base, pattern_warning, (first, second), stacklevel=4, started=started)


def count_all(patterns, special_tokens, documents, text_field: str) -> list[PieceCounter]:
    """Count ``documents`` (read once) with each of ``patterns``: a :class:`PieceCounter` each."""
    counters = [PieceCounter(pattern, special_tokens) for pattern in patterns]
    chunk = []
    for item in documents:
        chunk.append(item)
        if len(chunk) == CHUNK:
            for counter in counters:
                counter.update(chunk, text_field=text_field)
            chunk = []
    for counter in counters:
        counter.update(chunk, text_field=text_field)
    return counters


def kernel_rule(options: Superword | None, base, extension, n_base: int, n_merges: int):
    """The merge kernel's :class:`~bpetrain.training._superword.SuperwordRule` for a stage
    that extends ``base`` (a :class:`~bpetrain.Tokenizer`; through ``extension``, an
    :class:`~bpetrain.training.extend.Extension`, when it keeps its ids), whose ids are
    ``0..n_base-1`` (ids that are no token count as empty), or None when ``options`` is None
    or sets no constraint."""
    if options is None or not (options.max_words_per_token or options.forbid_colon_space):
        return None
    vocab = base.vocab if extension is None else extension.tokens
    tokens = [vocab.get(i, b"") for i in range(n_base)]
    return SuperwordRule(tokens, n_merges, options.max_words_per_token, options.forbid_colon_space)
