"""The obviously correct, slow reference of bpetrain's training and encoding.

Tests and benchmarks compare the compiled kernels, the library's plain-Python merge
rule (:mod:`bpetrain.encoding.merge_rule`) and the peers against these functions; the
library itself never imports this module.

The style follows Andrej Karpathy's minbpe (``minbpe/base.py``, ``regex.py``): count
pairs, pick the best, assign ``256 + i``, replace, repeat.

Encoding rules
--------------
:func:`encode_piece` applies the merges in training order (minbpe). tiktoken, and
:class:`~bpetrain.Encoding`, need no merges, only ``mergeable_ranks``: inside a piece
they merge the adjacent pair whose joined bytes have the lowest rank, the leftmost on
ties (:func:`encode_piece_ranks`). Both give the training segmentation of a piece seen
in training.

Training semantics (followed everywhere in bpetrain)
----------------------------------------------------
1. Byte tokens: ids 0..255 are the byte values. Merge ``i`` creates id ``256 + i``.
2. Pre-tokenization: special tokens are cut out of every document first (they split
   it and never take part in training; they get the ids after the merges). With a
   split pattern each remaining part is split into pieces by the regex (unmatched
   text is dropped, as in tiktoken); with ``pat_str=None`` (raw mode) each part is
   one piece. Pieces never merge across each other. Text given as bytes is decoded
   as UTF-8 with ``errors="surrogateescape"`` before splitting and every piece is
   encoded back the same way, so invalid bytes are kept as they are; the ``regex``
   module sees each invalid byte as a lone surrogate (category Cs: not a letter,
   number or space), so the named patterns put it with punctuation.
3. Pair counts: every adjacent pair in every piece, overlapping (``aaa`` holds the
   pair ``(a, a)`` twice), weighted by how often the piece occurs.
4. Each step merges the pair with the highest count; ties go to the smallest
   ``(left id, right id)``, the rule rustbpe uses. With ``tie_break="hf"`` a byte's
   id in this comparison is its place among the 256 ``ByteLevel`` characters sorted
   by code point (Hugging Face's ids; merges keep ``256 + i``).
   With ``max_token_length`` a pair whose joined token would be longer than that
   many bytes is never merged (it does not take part in the choice).
5. Replacement is left to right and non-overlapping inside each piece
   (``aaa`` -> ``X a``).
6. Training stops after the requested number of merges, or earlier when no pair
   occurs ``min_frequency`` times or more.
7. Extending a base (``base``, its ``mergeable_ranks``, ids ``0..n_base-1``): every
   piece starts as its encoding with the base (:func:`encode_piece_ranks`) instead of
   its bytes, and merge ``i`` creates id ``n_base + i``; the rest is as above. A merge
   whose bytes already are a token gets a new id all the same (a duplicate, as
   training from the bytes makes when two merges spell the same bytes).
8. Parity-aware training (:func:`train_parity`; Foroutan et al., "Parity-Aware Byte-Pair
   Encoding", arXiv 2508.04796): the pieces are counted per language, and each step
   first chooses a language, then merges that language's best pair (rule 4) in every
   language. The chosen language is the one whose text is compressed worst: with a
   dev set (parallel text, one per language), the one whose dev text has the most
   tokens; with target ratios, the one with the lowest ``(initial tokens / tokens) /
   ratio`` on its training text; ties go to the first language. The window variant
   goes down that order and takes the first language that made at most ``alpha /
   n_languages`` of the last ``window_size`` choices (the first of the order if none
   did). A language whose best pair occurs fewer than ``min_frequency`` times is
   dropped from the choice for good (pair counts never grow back); training stops when
   every language is dropped. The first ``global_merges`` merges are chosen on the
   counts of all languages together (plain BPE on their union); training stops if that
   runs out.
9. Superword training (SuperBPE, :func:`train_superword`): stage 1 trains with the
   split pattern to the transition; stage 2 extends stage 1 (rule 7) on the pieces of
   the superword pattern, where a pair whose joined token spans more than
   ``max_words`` words (runs of bytes between spaces) or holds ``": "`` is never
   merged (it does not take part in the choice: :func:`superword_allows`).
"""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence

import regex

from bpetrain.splitting.pattern import pattern_timeout, timed_out


def get_stats(ids: list[int], counts: dict | None = None, weight: int = 1) -> dict:
    """Add the adjacent pairs of ``ids`` to ``counts``, each weighted by ``weight``.

    >>> get_stats([1, 2, 3, 1, 2])
    {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    >>> get_stats([7, 7, 7])
    {(7, 7): 2}
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + weight
    return counts


def merge(ids: list[int], pair: tuple[int, int], idx: int) -> list[int]:
    """Replace every occurrence of ``pair`` in ``ids`` by ``idx``, left to right.

    >>> merge([1, 2, 3, 1, 2], (1, 2), 4)
    [4, 3, 4]
    >>> merge([7, 7, 7], (7, 7), 9)
    [9, 7]
    """
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def split_special(text: str, special_tokens: Iterable[str]) -> list[str]:
    """Cut ``text`` at every special token (longest first); the tokens themselves are dropped."""
    specials = sorted(special_tokens, key=len, reverse=True)
    if not specials:
        return [text]
    return regex.split("|".join(regex.escape(s) for s in specials), text)


def count_pieces(
    texts: Iterable[str | bytes], pat_str: str | None, special_tokens: Iterable[str] = ()
) -> Counter:
    """Pre-tokenize ``texts`` (rule 2 above) and count the pieces, as bytes."""
    pieces: Counter = Counter()
    specials = list(special_tokens)
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogateescape")
        for part in split_special(text, specials):
            found = [part] if pat_str is None else [m.group() for m in regex.finditer(pat_str, part)]
            for piece in found:
                if piece:
                    pieces[piece.encode("utf-8", "surrogateescape")] += 1
    return pieces


def hf_id(token: int) -> int:
    """The id Hugging Face's byte-level trainer gives ``token`` (a bpetrain id, bytes
    as 0..255): merges keep theirs, a byte is ranked by the code point of its
    ``ByteLevel`` character (``tokenizers``' ``compute_alphabet`` sorts them so). The
    printable Latin-1 bytes stand for themselves, the other 68 take U+0100 on in byte
    order (GPT-2's ``bytes_to_unicode``), so the printable ones come first.

    >>> hf_id(ord("!")), hf_id(ord(" ")), hf_id(300)
    (0, 220, 300)
    """
    if token >= 256:
        return token
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    return (printable + [b for b in range(256) if b not in printable]).index(token)


def train_pieces(
    pieces: Mapping[bytes, int],
    n_merges: int,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    tie_break: str = "rustbpe",
    base: Mapping[bytes, int] | None = None,
    n_base: int | None = None,
    accept=None,
) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` merges from piece counts (rules 3-6 above).

    ``stats`` always equals ``get_stats`` summed over every piece (weighted); after a
    merge only the pieces that held the pair are recounted: their old pairs are taken
    out of ``stats`` and their new pairs put in. ``holders[t]`` is a superset of the
    pieces that contain token ``t``, so ``holders[a] & holders[b]`` finds every piece
    that can hold the pair ``(a, b)``. The merges are in bpetrain's ids (bytes 0..255)
    whatever ``tie_break`` is. ``n_base``: the ids of ``base`` (default ``len(base)``; more
    when two of its ids spell the same bytes). ``accept(token)``: whether a pair whose
    joined bytes are ``token`` may be merged (default: every pair). For tests only.

    >>> train_pieces({b"BCDEDEDE": 1}, 2)
    [(68, 69), (256, 256)]
    """
    if base is None:
        words = [list(piece) for piece, count in pieces.items() if count > 0]
    else:
        words = [encode_piece_ranks(piece, base) for piece, count in pieces.items() if count > 0]
    weights = [count for count in pieces.values() if count > 0]
    stats: dict = {}
    holders: dict = {}
    for i, ids in enumerate(words):
        get_stats(ids, stats, weights[i])
        for token in ids:
            holders.setdefault(token, set()).add(i)
    merges = []
    spelled = {token: bytes([token]) for token in range(256)} if base is None else {i: t for t, i in base.items()}
    length = {token: len(t) for token, t in spelled.items()}
    first_id = 256 if base is None else n_base or len(base)
    limit = float("inf") if max_token_length is None else max_token_length
    rank = {token: hf_id(token) for token in range(256)} if tie_break == "hf" else {}
    for step in range(n_merges):
        live = {
            pair: count for pair, count in stats.items() if count > 0 and length[pair[0]] + length[pair[1]] <= limit
            and (accept is None or accept(spelled[pair[0]] + spelled[pair[1]]))
        }
        if not live:
            break
        pair = max(live, key=lambda p: (live[p], -rank.get(p[0], p[0]), -rank.get(p[1], p[1])))
        if live[pair] < min_frequency:
            break
        idx = first_id + step
        length[idx] = length[pair[0]] + length[pair[1]]
        spelled[idx] = spelled[pair[0]] + spelled[pair[1]]
        holders[idx] = set()
        for i in holders[pair[0]] & holders[pair[1]]:
            new = merge(words[i], pair, idx)
            if len(new) == len(words[i]):
                continue
            get_stats(words[i], stats, -weights[i])
            get_stats(new, stats, weights[i])
            words[i] = new
            holders[idx].add(i)
        merges.append(pair)
    return merges


def train(
    texts: Iterable[str | bytes],
    n_merges: int,
    pat_str: str | None,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 1,
    **options,
) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` merges from documents: :func:`count_pieces` then
    :func:`train_pieces` (``options``: its ``max_token_length``, ``tie_break``, ``base``)."""
    return train_pieces(count_pieces(texts, pat_str, special_tokens), n_merges, min_frequency, **options)


def superword_allows(token: bytes, max_words: int | None = 4, forbid_colon_space: bool = True) -> bool:
    """Whether stage 2 of superword training may make ``token``: it spans at most
    ``max_words`` words (the non-empty parts between spaces) and, with
    ``forbid_colon_space``, holds no ``": "`` (the SuperBPE authors' ``do_train_extend``).

    >>> superword_allows(b", and the"), superword_allows(b" a b c d e"), superword_allows(b"Note: ")
    (True, False, False)
    """
    words = len([part for part in token.split(b" ") if part])
    return (max_words is None or words <= max_words) and not (forbid_colon_space and b": " in token)


def train_superword(
    texts: Iterable[str | bytes],
    n_merges: int,
    n_total: int,
    pat_str: str | None,
    superword_pat_str: str,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 1,
    max_words: int | None = 4,
    forbid_colon_space: bool = True,
) -> list[tuple[int, int]]:
    """Rule 8: up to ``n_merges`` merges with ``pat_str``, then more on the pieces of
    ``superword_pat_str``, each starting as stage 1 encodes it, up to ``n_total`` in all."""
    texts = list(texts)
    first = train(texts, n_merges, pat_str, special_tokens, min_frequency)
    vocab = {token: bytes([token]) for token in range(256)}
    for i, (a, b) in enumerate(first):
        vocab[256 + i] = vocab[a] + vocab[b]
    ranks: dict[bytes, int] = {}
    for token_id in sorted(vocab):  # the lowest id of bytes two merges spell
        ranks.setdefault(vocab[token_id], token_id)
    second = train(texts, n_total - len(first), superword_pat_str, special_tokens, min_frequency, base=ranks,
                   n_base=len(vocab), accept=lambda token: superword_allows(token, max_words, forbid_colon_space))
    return first + second


def encode_piece(piece: bytes, merges: Mapping[tuple[int, int], int]) -> list[int]:
    """Encode one piece by applying the merges in rank order (minbpe's ``encode``).

    This reproduces the segmentation training produced for any piece it saw.
    """
    ids = list(piece)
    while len(ids) >= 2:
        pair = min(zip(ids, ids[1:]), key=lambda p: merges.get(p, float("inf")))
        if pair not in merges:
            break
        ids = merge(ids, pair, merges[pair])
    return ids


def encode_piece_ranks(piece: bytes, mergeable_ranks: Mapping[bytes, int]) -> list[int]:
    """Encode one piece with tiktoken's rule (``byte_pair_merge`` in tiktoken's ``src/lib.rs``).

    Start from single bytes; repeatedly join the adjacent pair whose joined bytes have
    the lowest rank, the leftmost of equal ones, until no joined pair is a token.

    >>> encode_piece_ranks(b"abcd", {b"a": 0, b"b": 1, b"c": 2, b"d": 3, b"cd": 4, b"bcd": 5, b"ab": 6})
    [0, 5]
    """
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) >= 2:
        joined = [mergeable_ranks.get(a + b, float("inf")) for a, b in zip(parts, parts[1:])]
        best = joined.index(min(joined))  # the first of the lowest: leftmost on ties
        if joined[best] == float("inf"):
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return [mergeable_ranks[part] for part in parts]


def encode(
    text: str,
    merges: Mapping[tuple[int, int], int],
    pat_str: str | None,
    special_tokens: Mapping[str, int] | None = None,
    byte_table: bytes | None = None,
) -> list[int]:
    """Encode ``text``; every special token in it is encoded as its id.

    ``byte_table`` (256 bytes) gives the id of each byte when the byte tokens are not
    ids 0..255 in byte order (:attr:`bpetrain.Tokenizer.byte_ids`).
    """
    special_tokens = special_tokens or {}
    if special_tokens:
        alternatives = "|".join(regex.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
        parts = regex.split(f"({alternatives})", text)
    else:
        parts = [text]
    ids: list[int] = []
    for i, part in enumerate(parts):
        if i % 2:
            ids.append(special_tokens[part])
            continue
        try:
            found = [part] if pat_str is None else [
                m.group() for m in regex.finditer(pat_str, part, timeout=pattern_timeout(len(part)))
            ]
        except TimeoutError:
            raise timed_out(pat_str, len(part)) from None
        for piece in found:
            if piece:
                piece_bytes = piece.encode("utf-8", "surrogateescape")
                if byte_table is not None:
                    piece_bytes = piece_bytes.translate(byte_table)
                ids.extend(encode_piece(piece_bytes, merges))
    return ids


def merges_from_ranks(ranked_tokens: Iterable[tuple[bytes, int]]) -> list[tuple[int, int]]:
    """Recover the merges, as id pairs in rank order, from ``(token bytes, rank)`` items.

    Token ``r`` was made by merging two earlier tokens, but its bytes alone do not say
    where. Encoding them with merges ``0..r-1`` (:func:`encode_piece`) replays what
    training did and ends at the two tokens that were merged.

    Raises
    ------
    ValueError
        If the ranks are not 0..n-1 starting with the 256 bytes, or a token does not
        encode to exactly two earlier tokens.
    """
    tokens = sorted(ranked_tokens, key=lambda item: item[1])
    if [rank for _, rank in tokens] != list(range(len(tokens))) or any(
        token != bytes([rank]) for token, rank in tokens[:256]
    ):
        raise ValueError("the ranks must be 0..n-1, starting with the 256 single bytes in byte order")
    merge_ids: dict[tuple[int, int], int] = {}
    for token, rank in tokens[256:]:
        ids = encode_piece(token, merge_ids)
        if len(ids) != 2:
            raise ValueError(f"token {rank} ({token!r}) encodes to {len(ids)} ids with the earlier merges, not 2")
        merge_ids[(ids[0], ids[1])] = rank
    return list(merge_ids)


def train_parity(
    languages: Sequence[Mapping[bytes, int]],
    n_merges: int,
    *,
    dev: Sequence[Mapping[bytes, int]] | None = None,
    ratio: Sequence[float] | None = None,
    variant: str = "base",
    window_size: int = 100,
    alpha: float = 2.0,
    global_merges: int = 0,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    tie_key=None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Learn up to ``n_merges`` parity-aware merges (rule 8) from piece counts per language.

    Every step recounts everything from scratch. ``dev`` (pieces per language) or
    ``ratio`` (one per language) says which language is compressed worst. Among pairs of
    equal count the one with the largest ``tie_key(pair, vocab)`` wins (``vocab``: id ->
    token bytes so far); the default is rule 4's smallest ids. Hugging Face's
    ``ParityBpeTrainer`` takes the largest pair of ``ByteLevel`` strings.
    Returns the merges and the language each was chosen for (-1: on the union). For tests only.

    >>> train_parity([{b"aab": 5}, {b"bbc": 5}], 2, dev=[{b"ab": 1}, {b"bbbb": 1}])
    ([(98, 98), (97, 97)], [1, 0])
    """
    words = [[(list(piece), count) for piece, count in lang.items() if count > 0] for lang in languages]
    dev_words = [[(list(piece), count) for piece, count in d.items() if count > 0] for d in dev or ()]
    vocab = {token: bytes([token]) for token in range(256)}
    limit = float("inf") if max_token_length is None else max_token_length
    tie_key = tie_key or (lambda pair, vocab: (-pair[0], -pair[1]))

    def n_tokens(ws):
        return sum(len(ids) * count for ids, count in ws)

    def best(ws_list):
        stats: dict = {}
        for ws in ws_list:
            for ids, count in ws:
                get_stats(ids, stats, count)
        live = {p: c for p, c in stats.items() if len(vocab[p[0]]) + len(vocab[p[1]]) <= limit}
        if not live:
            return None, 0
        pair = max(live, key=lambda p: (live[p], tie_key(p, vocab)))
        return pair, live[pair]

    initial = [n_tokens(ws) for ws in words]
    window: deque = deque(maxlen=window_size)
    dropped: set = set()
    merges, chosen = [], []
    while len(merges) < n_merges:
        if len(merges) < global_merges:
            language = -1
            pair, count = best(words)
            if pair is None or count < min_frequency:
                break
        else:
            live = [i for i in range(len(words)) if i not in dropped]
            if not live:
                break
            if dev is not None:
                order = sorted(live, key=lambda i: (-n_tokens(dev_words[i]), i))
            else:
                order = sorted(live, key=lambda i: (initial[i] / n_tokens(words[i]) / ratio[i], i))
            language = order[0]
            if variant == "window":
                fair = [i for i in order if window.count(i) / window_size <= alpha / len(words)]
                language = fair[0] if fair else order[0]
            pair, count = best([words[language]])
            if pair is None or count < min_frequency:
                dropped.add(language)
                continue
            if variant == "window":
                window.append(language)
        idx = 256 + len(merges)
        vocab[idx] = vocab[pair[0]] + vocab[pair[1]]
        for ws in (*words, *dev_words):
            ws[:] = [(merge(ids, pair, idx), count) for ids, count in ws]
        merges.append(pair)
        chosen.append(language)
    return merges, chosen
