"""Encoding and decoding with ranks: the tiktoken-compatible :class:`~.core.Encoding`
policy over the compiled encoders (``_encoder``, ``_incremental``)."""
