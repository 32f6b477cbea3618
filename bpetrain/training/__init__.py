"""Training: the trainer's policy (:mod:`.trainer`) over the merge kernel, lowest first:
``_buffers`` (array doubling), ``_pairs`` (the pair table and its occurrence lists),
``_maxheap`` (the lazy max-heap) and ``_merge`` (``PairMerger``: the merges)."""
