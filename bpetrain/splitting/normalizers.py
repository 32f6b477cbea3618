"""Hugging Face normalizers that Python applies as ``tokenizers`` does: Unicode forms and Lowercase.

A ``tokenizer.json``'s ``normalizer`` changes the text before it is split
(``tokenizers/src/tokenizer/mod.rs``, ``encode_single_sequence``): added tokens with
``normalized`` false are cut out of the text first, each text between them is
normalized, and added tokens with ``normalized`` true (matched by their normalized
content) are cut out of the normalized text (``added_vocabulary.rs``,
``extract_and_normalize``). :class:`Normalizer` holds the normalizers bpetrain applies
exactly; it rides on a :class:`~bpetrain.splitting.pipeline.PreTokenizer`, which
normalizes each text before it splits it.

What each does, as ``tokenizers`` does it (``normalizers/unicode.rs``, ``utils.rs``,
``tokenizer/normalizer.rs``):

- ``NFC``, ``NFD``, ``NFKC``, ``NFKD``: the Unicode normalization forms
  (:func:`unicodedata.normalize`). ``tokenizers`` takes its tables from the
  ``unicode-normalization-alignments`` crate, older than Python 3.11's Unicode 14.0: over
  every code point alone and every canonical decomposition composed again,
  ``tokenizers`` 0.23 differs from Python 3.11 on 1 code point for NFD (U+11938), 1
  sequence for NFC (U+11935 U+11930), 72 code points for NFKC and 73 for NFKD, all
  assigned in Unicode 12.1 to 14.0 (``docs/formats.md`` gives the command).
- ``Lowercase``: each character's ``char::to_lowercase`` (Rust's full lowercase
  mapping, character by character: a final capital sigma is ``σ``, where Python's
  ``str.lower`` gives ``ς``); here ``str.lower`` with every ``Σ`` made ``σ`` first,
  which is the same mapping. Rust's tables are newer than Python 3.11's: 55 code points
  assigned in Unicode 15.0 and 16.0 have a lowercase there and none here.
- ``Sequence``: each in turn. ``Strip`` of neither side, ``Prepend`` of ``""`` and
  empty ``Sequence`` change nothing and are left out.

Every other normalizer (``Replace``, ``Prepend`` of text, ``Strip``, ``StripAccents``,
``BertNormalizer``, ``Precompiled``, ``NMT``, ``ByteLevel``) is refused by
:meth:`Normalizer.from_hf`, naming the field.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

__all__ = ["FORMS", "Normalizer"]

#: The normalizers :class:`Normalizer` applies, by their ``tokenizer.json`` type names.
FORMS = ("NFC", "NFD", "NFKC", "NFKD", "Lowercase")
_READ = "NFC, NFD, NFKC, NFKD, Lowercase, and a Sequence of them (with normalizers that change nothing)"


@dataclass(frozen=True)
class Normalizer:
    """Normalizers applied one after another, as a ``tokenizer.json``'s ``normalizer``.

    Parameters
    ----------
    forms : tuple of str
        Names from :data:`FORMS`, in the order they apply; at least one.

    Raises
    ------
    ValueError
        If ``forms`` is empty or names another normalizer.

    Examples
    --------
    >>> Normalizer(("NFKC", "Lowercase"))("ﬁ ①Σ")
    'fi 1σ'
    """

    forms: tuple

    def __post_init__(self):
        object.__setattr__(self, "forms", tuple(self.forms))
        if not self.forms:
            raise ValueError("a Normalizer needs at least one form; use None for no normalizer")
        unknown = [form for form in self.forms if form not in FORMS]
        if unknown:
            raise ValueError(f"unknown normalizers {unknown}; bpetrain applies {', '.join(FORMS)}")

    def __call__(self, text: str) -> str:
        """``text`` normalized; ASCII text under the Unicode forms comes back as it is."""
        for form in self.forms:
            if form == "Lowercase":
                text = text.replace("\u03a3", "\u03c3").lower()  # no final sigma: Rust's per-character mapping
            elif not text.isascii():  # every form leaves ASCII as it is
                text = unicodedata.normalize(form, text)
        return text

    def normalize_utf8(self, data: bytes) -> bytes:
        """UTF-8 ``data`` normalized (bytes that are not UTF-8 kept, as ``surrogateescape``
        keeps them); ASCII data under the Unicode forms is returned as it is, without decoding."""
        if data.isascii() and "Lowercase" not in self.forms:
            return data
        return self(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    @classmethod
    def from_hf(cls, normalizer, where: str = "normalizer") -> Normalizer | None:
        """The normalizer of a ``tokenizer.json``'s ``normalizer`` object; None when it changes nothing.

        Raises
        ------
        ValueError
            Naming the field (``where``), for a normalizer that is not one of :data:`FORMS`
            and changes text (``Replace``, ``Strip``, ``BertNormalizer``, ``Precompiled``, ...).
        """
        forms = _forms_from_hf(normalizer, where)
        return cls(tuple(forms)) if forms else None

    def to_hf(self) -> dict:
        """The ``normalizer`` object of a ``tokenizer.json`` (a ``Sequence``, or the form alone)."""
        items = [{"type": form} for form in self.forms]
        return items[0] if len(items) == 1 else {"type": "Sequence", "normalizers": items}


def _forms_from_hf(normalizer, where: str) -> list[str]:
    """The forms of a normalizer object, those of a ``Sequence`` in order (see :meth:`Normalizer.from_hf`)."""
    if normalizer is None:
        return []
    kind = normalizer.get("type") if isinstance(normalizer, dict) else None
    if kind == "Sequence" and isinstance(normalizer.get("normalizers"), list):
        return [form for k, item in enumerate(normalizer["normalizers"])
                for form in _forms_from_hf(item, f"{where}.normalizers[{k}]")]
    if kind in FORMS:
        return [kind]
    if (kind == "Strip" and normalizer.get("strip_left") is False and normalizer.get("strip_right") is False) or (
            kind == "Prepend" and normalizer.get("prepend") == ""):
        return []
    raise ValueError(
        f"{where} is {normalizer!r:.120}, which changes the text in a way bpetrain does not reproduce; bpetrain reads "
        f"{_READ}"
    )
