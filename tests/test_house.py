"""The house's room sizes: no class, Python or Cython, is longer than ``MAX_CLASS_LINES``."""
from __future__ import annotations

import pathlib

import pytest

import bpetrain

PACKAGE = pathlib.Path(bpetrain.__file__).parent
MAX_CLASS_LINES = 600


def class_sizes(path: pathlib.Path) -> dict[str, int]:
    """The lines of each top-level ``class`` or ``cdef class`` of a source file: from its
    ``class`` line to its last line of code before the next top-level statement (blank
    lines and comments in between do not count; text inside triple-quoted strings is
    never a statement)."""
    sizes: dict[str, int] = {}
    name, start, last = None, 0, 0
    in_string = None  # the quote of the triple-quoted string being read, if any
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code_line = in_string is None
        for quote in ('"""', "'''"):
            if (in_string is None or in_string == quote) and line.count(quote) % 2 == 1:
                in_string = None if in_string == quote else quote
        if not code_line or not line.strip() or line.lstrip().startswith("#"):
            if not code_line:
                last = number
            continue
        if line[0].isspace():
            last = number
            continue
        if name is not None:  # a top-level statement ends the class
            sizes[name] = last - start + 1
            name = None
        words = line.replace("(", " ").replace(":", " ").split()
        if words[:1] == ["class"] or words[:2] == ["cdef", "class"]:
            name = words[words.index("class") + 1]
            start = last = number
    if name is not None:
        sizes[name] = last - start + 1
    return sizes


@pytest.mark.parametrize("suffix", [".py", ".pyx"])
def test_no_class_is_over_the_limit(suffix):
    over = {}
    for path in sorted(PACKAGE.rglob(f"*{suffix}")):
        for name, size in class_sizes(path).items():
            if size > MAX_CLASS_LINES:
                over[f"{path.relative_to(PACKAGE.parent).as_posix()}:{name}"] = size
    assert not over, f"classes over {MAX_CLASS_LINES} lines (split them by capability): {over}"


def test_class_sizes_counts_the_class_body(tmp_path):
    source = tmp_path / "m.pyx"
    source.write_text(
        "import x\n\n\n@cython.final\ncdef class A:\n    '''Doc\n\nstill doc\n'''\n    cdef int a\n\n"
        "    def f(self):\n        s = '''\nnot code\n'''\n        return 1\n\n# a comment\n\n"
        "class B(object):\n    pass\n",
        encoding="utf-8")
    assert class_sizes(source) == {"A": 12, "B": 2}
