"""Training: the trainer's policy (:mod:`.trainer`) over the merge kernel (``_merge``)."""
