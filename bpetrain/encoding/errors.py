"""The errors :class:`~bpetrain.encoding.core.Encoding` raises beyond tiktoken's types."""
from __future__ import annotations

__all__ = ["DisallowedSpecialTokenError"]


class DisallowedSpecialTokenError(ValueError):
    """A text holds a special token that is not allowed.

    A ``ValueError`` with tiktoken's message, word for word (code written for tiktoken
    catches it as it is); ``token`` names the special token, so that a caller can say what
    to do without reading the message back.

    Parameters
    ----------
    token : str
        The disallowed special token the text holds (its first occurrence).
    """

    def __init__(self, token: str):
        self.token = token
        super().__init__(
            f"Encountered text corresponding to disallowed special token {token!r}.\n"
            f"If you want this text to be encoded as a special token, pass it to `allowed_special`, "
            f"e.g. `allowed_special={{{token!r}, ...}}`.\n"
            f"If you want this text to be encoded as normal text, disable the check for this token "
            f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
            "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
        )

    def __reduce__(self):
        return type(self), (self.token,)
