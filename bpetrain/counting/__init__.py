"""Counting the pieces of a corpus: the inputs (:mod:`.inputs`), the counter and its
counts file (:mod:`.counts`, the ``_counter`` kernel), and the drivers that count on
threads (:mod:`.parallel`) or on a Dask cluster (:mod:`.cluster`)."""
