"""Encoding and decoding with ranks: the tiktoken-compatible :class:`~.core.Encoding`
policy over the compiled encoders, lowest first: ``_buffers`` (working memory),
``_tables`` (a vocabulary's rank tables), ``_heap`` (the merging encoders), ``_linear``
(the backtracking encoder), ``_piece`` (one piece to ids, with the piece cache),
``_encoder`` (the text loops: ``BytePairEncoder``) and ``_incremental`` (counting while
text is appended, or any slice of a text)."""
