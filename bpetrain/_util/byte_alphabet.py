"""GPT-2's byte-level alphabet: the character that stands for each byte value.

Byte-level BPE files (Hugging Face ``tokenizer.json``, GPT-2's ``vocab.json``) write each
token as these characters (:mod:`bpetrain.formats._vocab`), and Hugging Face's trainer
numbers the bytes in the order of their characters (``tie_break="hf"`` in
:mod:`bpetrain.training.trainer`).
"""
from __future__ import annotations

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE"]


def _byte_alphabet() -> list[str]:
    """The character GPT-2's byte-level BPE writes for each byte value.

    Printable Latin-1 bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand for
    themselves; the other 68 bytes (controls, space, soft hyphen) take the characters
    from U+0100 on, in byte order, so a space is ``Ġ`` and a newline ``Ċ``. Source: the
    ``bytes_to_unicode`` table of OpenAI's GPT-2 (``src/encoder.py``), which Hugging
    Face's ``ByteLevel`` pre-tokenizer and decoder also use.
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    alphabet = [""] * 256
    extra = 0
    for b in range(256):
        if b in printable:
            alphabet[b] = chr(b)
        else:
            alphabet[b] = chr(256 + extra)
            extra += 1
    return alphabet


#: ``BYTE_TO_CHAR[b]``: the character of byte ``b``.
BYTE_TO_CHAR: list[str] = _byte_alphabet()
#: The inverse of :data:`BYTE_TO_CHAR`.
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in enumerate(BYTE_TO_CHAR)}
