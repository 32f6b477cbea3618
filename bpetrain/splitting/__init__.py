"""Pre-tokenization: split patterns by name (:mod:`.names`), checked and compiled
(:mod:`.pattern`, :mod:`._compiler`, :mod:`._charsets`), run by the compiled matchers
(``_matcher``: any pattern's program; ``_blocks``: hand-written matchers and 64-byte
block splitting), and the points where a long text may be cut (:mod:`.cuts`)."""
