"""Hugging Face's added tokens: the strings cut out of the text before the model sees it.

A ``tokenizer.json`` lists them under ``added_tokens`` with five flags; ``tokenizers``
(``src/tokenizer/added_vocabulary.rs``, ``AddedVocabulary::extract_and_normalize`` and
``find_matches``) cuts them out of the text as follows, and :func:`split_added` does
the same:

1. the tokens with ``normalized`` false are found in the text, leftmost first and the
   longest of those that start at one place (Aho-Corasick, ``LeftmostLongest``);
2. each text between the tokens of step 1 is normalized (the ``normalizer``, if any:
   :class:`~bpetrain.splitting.normalizers.Normalizer`), and the tokens with
   ``normalized`` true, each as its content normalized, are found in it the same way;
3. a match of a ``single_word`` token is skipped when a word character (``\\w``) touches
   it on either side; an ``lstrip`` token also takes the white space (``\\s``) before it
   (not taken by an earlier match), an ``rstrip`` token the white space after it.

``special`` only says whether decoding may skip the token; it does not change the
split. bpetrain holds every added token among a tokenizer's ``special_tokens``, so its
ids equal ``tokenizers.Tokenizer.encode(text, add_special_tokens=False).ids`` with
``allowed_special="all"``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import regex

__all__ = ["AddedToken", "split_added"]


class AddedToken(NamedTuple):
    """One entry of a ``tokenizer.json``'s ``added_tokens``, with Hugging Face's flags.

    The defaults are those of a special token that bpetrain trains or ``tokenizers``
    adds with ``add_special_tokens``.
    """

    content: str
    id: int
    special: bool = True
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    normalized: bool = False

    @property
    def plain(self) -> bool:
        """Whether the token is cut out exactly where it occurs (no flag changes the match)."""
        return not (self.lstrip or self.rstrip or self.single_word)


_WORD_AT_END = regex.compile(r"\w\Z")
_WORD_AT_START = regex.compile(r"\w")  # used with match(text, pos)
_SPACE_AT_END = regex.compile(r"\s*\Z")
_SPACE_AT_START = regex.compile(r"\s*")  # used with match(text, pos)


def _matches(text: str, tokens: Sequence[AddedToken]) -> list[tuple[AddedToken | None, str]]:
    """``find_matches``: ``text`` cut into runs of text (None) and added tokens."""
    if not tokens:
        return [(None, text)]
    by_content = {t.content: t for t in tokens}
    finder = regex.compile("|".join(regex.escape(c) for c in sorted(by_content, key=len, reverse=True)))
    parts: list[tuple[AddedToken | None, str]] = []
    done = 0  # the end of the last match, in ``text``
    for match in finder.finditer(text):
        token = by_content[match.group()]
        start, stop = match.span()
        if token.single_word and (_WORD_AT_END.search(text[:start]) or _WORD_AT_START.match(text, stop)):
            continue
        if token.lstrip:
            start = max(_SPACE_AT_END.search(text[:start]).start(), done)
        if token.rstrip:
            stop = _SPACE_AT_START.match(text, stop).end()
        if start < done:  # a match inside white space an rstrip token took
            continue
        if done < start:
            parts.append((None, text[done:start]))
        parts.append((token, text[start:stop]))
        done = stop
    if done < len(text):
        parts.append((None, text[done:]))
    return parts


def split_added(text: str, tokens: Iterable[AddedToken],
                normalize: Callable[[str], str] | None = None) -> list[str | AddedToken]:
    """Cut ``tokens`` out of ``text`` as ``tokenizers`` does (see the module docstring).

    Parameters
    ----------
    text : str
    tokens : iterable of AddedToken
    normalize : callable, optional
        The normalizer (str -> str), applied to the text between the tokens with
        ``normalized`` false and to the content of those with ``normalized`` true.

    Returns
    -------
    list of str or AddedToken
        The text between the tokens (non-empty strings; normalized with ``normalize``)
        and the tokens, in order; the white space an ``lstrip``/``rstrip`` token takes is
        part of no string.

    >>> [getattr(p, "id", p) for p in split_added("a <s>b", [AddedToken("<s>", 0, lstrip=True)])]
    ['a', 0, 'b']
    """
    tokens = list(tokens)
    first = [t for t in tokens if not t.normalized]
    second = [t for t in tokens if t.normalized]
    # each token of step 2 as its normalized content -> the token
    by_normalized = {t._replace(content=normalize(t.content) if normalize else t.content): t for t in second}
    out: list[str | AddedToken] = []
    for token, part in _matches(text, first):
        if token is not None:
            out.append(token)
            continue
        for token2, part2 in _matches(normalize(part) if normalize else part, list(by_normalized)):
            if token2 is not None:
                out.append(by_normalized[token2])
            elif part2:
                out.append(part2)
    return out
