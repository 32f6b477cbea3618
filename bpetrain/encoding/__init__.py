"""Encoding and decoding with ranks: the tiktoken-compatible :class:`~.core.Encoding`
policy (:mod:`.core`; its special-token rules in :mod:`.special`, batches in
:mod:`.batching`, streams in :mod:`.stream`, decoding in :mod:`.decoding`, counting and
token-limit chunks in :mod:`.token_counting`, the unstable end of an encoding in
:mod:`.unstable`) over the compiled encoders, lowest first: ``_buffers`` (working memory),
``_tables`` (a vocabulary's rank tables), ``_heap`` (the merging encoders), ``_linear``
(the backtracking encoder), ``_piece`` (one piece to ids, with the piece cache),
``_encoder`` (the text loops: ``BytePairEncoder``) and ``_incremental`` (counting while
text is appended, or any slice of a text); and the merge rule in plain Python where they
do not apply (:mod:`.merge_rule`)."""
