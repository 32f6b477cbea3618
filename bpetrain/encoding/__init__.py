"""Encoding and decoding with ranks: the tiktoken-compatible :class:`~.core.Encoding`
policy (:mod:`.core`; its special-token rules in :mod:`.special`, batches in
:mod:`.batching`, streams in :mod:`.stream`, decoding in :mod:`.decoding`, counting and
token-limit chunks in :mod:`.token_counting`, the unstable end of an encoding in
:mod:`.unstable`) over the compiled encoders (``_encoder``, ``_incremental``), and the
merge rule in plain Python where they do not apply (:mod:`.merge_rule`)."""
