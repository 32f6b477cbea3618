"""Compile a split pattern (``pat_str``) into the program that :mod:`bpetrain.splitting._matcher` runs.

The pattern is parsed into a tree (alternatives of sequences of quantified atoms), and
the tree into instructions for a backtracking matcher, the classic construction of
Thompson's and Pike's virtual machines as Russ Cox describes it ("Regular Expression
Matching: the Virtual Machine Approach", 2009), run depth first so that the first
alternative that matches wins, as in the ``regex`` module (Perl semantics, not the
leftmost-longest of a DFA). Every single-character atom (a literal, ``.``, an escape such
as ``\\s`` or ``\\p{L}``, a ``[...]`` class) becomes a *character set*, read as the
installed ``regex`` module reads it over every code point under the flags in force
(:mod:`bpetrain.splitting._charsets`), so membership and case-insensitivity are exactly the
``regex`` module's, and so are the
classes' Unicode version unless another is asked for (:mod:`bpetrain.splitting.unicode`). Up to 64 distinct sets get one bit each; the matcher looks a character's bits
up in a two-stage table (code point >> 8 -> block of 256 signatures).

Supported syntax: literals and escapes; ``.``; classes; ``\\d \\D \\s \\S \\w \\W`` and
``\\p{..}``/``\\P{..}``; alternation; ``(?:...)``, capturing groups (as non-capturing),
named groups; scoped flags ``i`` and ``s`` (``(?i:...)``, ``(?-i:...)``), and the same
flags as a whole-pattern prefix ``(?i)``; the quantifiers ``? * + {n} {n,} {,m} {n,m}``,
greedy, lazy and possessive; atomic groups ``(?>...)``; ``^ $ \\A \\Z \\z``; lookahead
``(?=...)`` and ``(?!...)``. Anything else (lookbehind, ``\\b``, backreferences, the
flags ``m x a f`` and versions, ``\\X``, conditionals, fuzzy matching, ...) raises
:class:`Unsupported`, and so does a pattern that can match the empty string, more than 64
distinct sets, more than ``MAX_SLOTS`` loops whose body can match the empty string, or a
program of more than ``MAX_INSTRUCTIONS``; the caller then splits with the ``regex`` module.
So do two readings of the ``regex`` module that depend on where a set stands (a
case-insensitive Unicode property; a case-sensitive set that can start a match beside a
case-insensitive one: :func:`_check_case_mix`).

The compiler also works out where the pattern can be cut (:func:`_glushkov`): which
character sets can be read right after which inside one attempt to match. Between two
characters no such pair covers, no piece can continue and no attempt reads on, so text
can be split in blocks there (see ``_matcher.last_safe_cut``).
"""
from __future__ import annotations

import array
import functools
import hashlib
import importlib.util
import itertools
import re
import sys
import warnings
from dataclasses import dataclass, field

import regex

from bpetrain._util.cache import build_tag
from bpetrain.splitting._charsets import (
    N_CODE_POINTS,
    array_view,
    read_arrays,
    read_shipped_arrays,
    regex_modules,
    store_arrays,
)
# The opcodes, the quantifier modes and the matcher's limits: declared once, in _matcher.pxd.
from bpetrain.splitting._matcher import (
    GREEDY,
    LAZY,
    MAX_SLOTS,
    MAX_STEPS,
    OP_ATOMIC,
    OP_ATOMIC_END,
    OP_BOS,
    OP_CHECK,
    OP_EOL,
    OP_EOS,
    OP_JMP,
    OP_LOOK,
    OP_LOOK_END,
    OP_MARK,
    OP_MATCH,
    OP_OPT,
    OP_PLUS,
    OP_RUN,
    OP_SET,
    OP_SPLIT,
    OP_STAR,
    POSSESSIVE,
)
from bpetrain.splitting.unicode import UnicodeTable, class_members


__all__ = ["Unsupported", "compile_and_keep", "compile_program", "kept_program", "ship_program", "stored_program"]

MAX_SETS = 64
MAX_INSTRUCTIONS = 20_000

_SET_ESCAPES = frozenset("dDsSwW")
_CHAR_ESCAPES = frozenset("afnrtv0")
_SCOPED_FLAGS = frozenset("is")
_QUANTIFIER = regex.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_PROPERTY = regex.compile(r"\\[pP]|\[:")  # a Unicode property or POSIX class in a set's source


class Unsupported(ValueError):
    """The pattern uses syntax the compiled matcher does not run; the ``regex`` module splits it."""


# ------------------------------------------------------------------ the tree

@dataclass
class Node:
    """A node of the parsed pattern.

    ``kind`` is one of ``set`` (``value``: the set's index), ``seq`` and ``alt``
    (``children``), ``rep`` (one child; ``lo``, ``hi`` (None: no limit), ``mode``),
    ``atomic`` (one child), ``look`` (one child; ``value``: True if negative), and
    ``bos``, ``eos``, ``eol`` (the anchors ``^``/``\\A``, ``\\Z``/``\\z``, ``$``).
    """

    kind: str
    children: list = field(default_factory=list)
    value: object = None
    lo: int = 0
    hi: int | None = None
    mode: int = GREEDY


class _Parser:
    """Recursive descent over ``pat_str``, following the ``regex`` module's (VERSION0) syntax.

    Only patterns the ``regex`` module has already compiled are parsed, so what is not
    recognized here is unsupported syntax, never a syntax error.
    """

    def __init__(self, pat_str: str):
        self.s = pat_str
        self.i = 0
        self.sets: dict[tuple[str, str], int] = {}  # (source, flags) -> set index

    def parse(self) -> Node:
        flags = ""
        m = regex.match(r"\(\?([a-zA-Z]+)\)", self.s)
        if m:  # whole-pattern flags, written first
            for flag in m.group(1):
                if flag not in _SCOPED_FLAGS:
                    raise Unsupported(f"the flag {flag!r}")
            flags = "".join(sorted(set(m.group(1))))
            self.i = m.end()
        node = self.alternation(flags)
        if self.i != len(self.s):
            raise Unsupported(f"{self.s[self.i]!r} at position {self.i}")
        return node

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def alternation(self, flags: str) -> Node:
        branches = [self.sequence(flags)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence(flags))
        return branches[0] if len(branches) == 1 else Node("alt", branches)

    def sequence(self, flags: str) -> Node:
        items = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            items.append(self.quantified(self.atom(flags)))
        return items[0] if len(items) == 1 else Node("seq", items)

    def quantified(self, atom: Node) -> Node:
        c = self.peek()
        if c == "?":
            lo, hi, self.i = 0, 1, self.i + 1
        elif c == "*":
            lo, hi, self.i = 0, None, self.i + 1
        elif c == "+":
            lo, hi, self.i = 1, None, self.i + 1
        elif c == "{" and (m := _QUANTIFIER.match(self.s, self.i)) and (m.group(1) or m.group(2)):
            lo = int(m.group(1) or 0)
            hi = None if m.group(2) and not m.group(3) else int(m.group(3) if m.group(2) else m.group(1))
            self.i = m.end()
        else:
            return atom
        mode = GREEDY
        if self.peek() == "?":
            mode, self.i = LAZY, self.i + 1
        elif self.peek() == "+":
            mode, self.i = POSSESSIVE, self.i + 1
        if atom.kind in ("look", "bos", "eos", "eol"):
            # zero-width: at least once is once, and "maybe" never stops a match
            return atom if lo > 0 else Node("seq")
        if lo == hi == 1:
            return atom  # the regex module drops {1}, possessive or lazy: (?:a*){1}+a matches "aa"
        if self.peek() in ("?", "*", "+") or (self.peek() == "{" and _QUANTIFIER.match(self.s, self.i)):
            raise Unsupported("a quantifier on a quantifier")
        return Node("rep", [atom], lo=lo, hi=hi, mode=mode)

    def add_set(self, source: str, flags: str) -> Node:
        key = (source, flags)
        if key not in self.sets:
            self.sets[key] = len(self.sets)
        return Node("set", value=self.sets[key])

    def atom(self, flags: str) -> Node:
        s, i = self.s, self.i
        c = s[i]
        if c == "(":
            return self.group(flags)
        if c == "[":
            end = _class_end(s, i)
            self.i = end
            return self.add_set(s[i:end], flags)
        if c == "\\":
            return self.escape(flags)
        self.i += 1
        if c == "^":
            return Node("bos")
        if c == "$":
            return Node("eol")
        if c in "*+?":
            raise Unsupported(f"{c!r} at position {i}")
        return self.add_set(regex.escape(c) if c != "." else ".", flags)

    def escape(self, flags: str) -> Node:
        s, i = self.s, self.i
        if i + 1 >= len(s):
            raise Unsupported("a trailing backslash")
        c = s[i + 1]
        self.i = i + 2
        if c == "A":
            return Node("bos")
        if c in "Zz":
            return Node("eos")
        if c in "pP":
            if self.peek() == "{":
                close = s.find("}", self.i)
                if close < 0:
                    raise Unsupported("an unterminated \\p{")
                self.i = close + 1
            else:
                self.i += 1
            return self.add_set(s[i : self.i], flags)
        if c == "x":
            self.i += 2
        elif c == "u":
            self.i += 4
        elif c == "U":
            self.i += 8
        elif c == "N":
            close = s.find("}", self.i)
            if self.peek() != "{" or close < 0:
                raise Unsupported("\\N without {name}")
            self.i = close + 1
        elif c == "0":
            while self.i < min(i + 4, len(s)) and s[self.i] in "01234567":
                self.i += 1
        elif c.isalnum() and c not in _SET_ESCAPES and c not in _CHAR_ESCAPES:
            raise Unsupported(f"the escape \\{c}")
        return self.add_set(s[i : self.i], flags)

    def group(self, flags: str) -> Node:
        s = self.s
        self.i += 1
        kind = "group"
        if s.startswith("?", self.i):
            rest = s[self.i + 1 :]
            if rest.startswith(":"):
                self.i += 2
            elif rest.startswith(">"):
                kind, self.i = "atomic", self.i + 2
            elif rest.startswith(("=", "!")):
                kind, self.i = rest[0], self.i + 2
            elif rest.startswith("#"):
                close = s.find(")", self.i)
                self.i = close + 1
                return Node("seq")
            elif m := regex.match(r"P?<[^\W\d]\w*>", rest):
                self.i += 1 + m.end()
            elif m := regex.match(r"([a-zA-Z]*)(?:-([a-zA-Z]+))?:", rest):
                on, off = m.group(1), m.group(2) or ""
                for flag in on + off:
                    if flag not in _SCOPED_FLAGS:
                        raise Unsupported(f"the flag {flag!r}")
                flags = "".join(sorted((set(flags) | set(on)) - set(off)))
                self.i += 1 + m.end()
            else:
                raise Unsupported(f"the group syntax (?{rest[:3]}")
        body = self.alternation(flags)
        if self.peek() != ")":
            raise Unsupported(f"an unclosed group at position {self.i}")
        self.i += 1
        if kind == "atomic":
            return Node("atomic", [body])
        if kind in ("=", "!"):
            return Node("look", [body], value=kind == "!")
        return body


def _class_end(s: str, i: int) -> int:
    """The index after the ``]`` that closes the class opened at ``s[i]``."""
    j = i + 1
    if j < len(s) and s[j] == "^":
        j += 1
    if j < len(s) and s[j] == "]":
        j += 1
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
        elif c == "[" and s.startswith(":", j + 1) and (k := s.find(":]", j + 2)) >= 0:
            j = k + 2
        elif c == "]":
            return j + 1
        else:
            j += 1
    raise Unsupported("an unterminated character class")


# ------------------------------------------------------------------ analyses

def _nullable(node: Node) -> bool:
    """Whether ``node`` can match without consuming a character (anchors and lookaheads consume none)."""
    k = node.kind
    if k == "set":
        return False
    if k == "seq":
        return all(map(_nullable, node.children))
    if k == "alt":
        return any(map(_nullable, node.children))
    if k == "rep":
        return node.lo == 0 or _nullable(node.children[0])
    if k == "atomic":
        return _nullable(node.children[0])
    return True


def _glushkov(node: Node, pairs: set) -> tuple[bool, frozenset, frozenset]:
    """(nullable, first, last) of ``node`` over its set atoms, adding to ``pairs`` every
    (set a, set b) that one attempt to match can read in a row.

    ``first`` holds the sets that can read the first character (a lookahead's body
    included: it reads the characters that follow); ``last`` those that can consume the
    last one (never a lookahead's: after one, matching goes on where it started).
    ``$`` reads the character after it (a final ``\\n``?) and is given the set ``\\n``
    (``node.value``, filled in by :func:`compile_program`).
    """
    k = node.kind
    if k == "set":
        atom = frozenset([node.value])
        return False, atom, atom
    if k in ("bos", "eos"):
        return True, frozenset(), frozenset()
    if k == "eol":
        return True, frozenset([node.value]), frozenset()
    if k == "look":
        _, first, _ = _glushkov(node.children[0], pairs)
        return True, first, frozenset()
    if k == "atomic":
        return _glushkov(node.children[0], pairs)
    if k == "alt":
        parts = [_glushkov(child, pairs) for child in node.children]
        return (any(p[0] for p in parts), frozenset().union(*(p[1] for p in parts)),
                frozenset().union(*(p[2] for p in parts)))
    if k == "rep":
        nullable, first, last = _glushkov(node.children[0], pairs)
        if node.hi is None or node.hi > 1:
            pairs.update((a, b) for a in last for b in first)
        return nullable or node.lo == 0, first, last
    # seq
    nullable, first, last = True, frozenset(), frozenset()
    for child in node.children:
        c_nullable, c_first, c_last = _glushkov(child, pairs)
        pairs.update((a, b) for a in last for b in c_first)
        if nullable:
            first |= c_first
        last = c_last | last if c_nullable else c_last
        nullable = nullable and c_nullable
    return nullable, first, last


def _first_sets(node: Node) -> frozenset:
    """The sets that can consume the first character of a match of ``node`` (not nullable)."""
    k = node.kind
    if k == "set":
        return frozenset([node.value])
    if k in ("alt",):
        return frozenset().union(*map(_first_sets, node.children))
    if k in ("rep", "atomic"):
        return _first_sets(node.children[0])
    if k == "seq":
        found = frozenset()
        for child in node.children:
            found |= _first_sets(child)
            if not _nullable(child):
                break
        return found
    return frozenset()


# ------------------------------------------------------------------ code

class _Emitter:
    """Instructions as rows ``[op, a, b, c, mask]``."""

    def __init__(self, bits: list[int]):
        self.code: list[list[int]] = []
        self.bits = bits  # set index -> class bit
        self.n_slots = 0  # position registers of OP_MARK / OP_CHECK

    def add(self, op: int, a: int = 0, b: int = 0, c: int = 0, mask: int = 0) -> int:
        if len(self.code) >= MAX_INSTRUCTIONS:
            raise Unsupported(f"the program would exceed {MAX_INSTRUCTIONS} instructions")
        self.code.append([op, a, b, c, mask])
        return len(self.code) - 1

    def emit(self, node: Node) -> None:
        k = node.kind
        if k == "set":
            self.add(OP_SET, mask=1 << self.bits[node.value])
        elif k == "seq":
            for child in node.children:
                self.emit(child)
        elif k == "alt":
            jumps = []
            for child in node.children[:-1]:
                split = self.add(OP_SPLIT, a=len(self.code) + 1)
                self.emit(child)
                jumps.append(self.add(OP_JMP))
                self.code[split][2] = len(self.code)
            self.emit(node.children[-1])
            for jump in jumps:
                self.code[jump][1] = len(self.code)
        elif k == "rep":
            self.emit_repeat(node)
        elif k == "atomic":
            self.add(OP_ATOMIC)
            self.emit(node.children[0])
            self.add(OP_ATOMIC_END)
        elif k == "look":
            look = self.add(OP_LOOK, a=int(node.value))
            self.emit(node.children[0])
            self.add(OP_LOOK_END)
            self.code[look][2] = len(self.code)
        elif k == "bos":
            self.add(OP_BOS)
        elif k == "eos":
            self.add(OP_EOS)
        elif k == "eol":
            self.add(OP_EOL)

    def emit_repeat(self, node: Node) -> None:
        body = node.children[0]
        hi = -1 if node.hi is None else node.hi
        if body.kind == "set":
            self.add(OP_RUN, a=node.lo, b=hi, c=node.mode, mask=1 << self.bits[body.value])
            return
        if node.lo == 0 and hi == 0:
            return
        if node.mode == POSSESSIVE:
            self.add(OP_ATOMIC)
            self.emit_repeat(Node("rep", [body], lo=node.lo, hi=node.hi, mode=GREEDY))
            self.add(OP_ATOMIC_END)
            return
        lazy = node.mode == LAZY
        for _ in range(node.lo):
            self.emit(body)
        # An optional iteration of a body that can match the empty string ends the loop
        # when it does (as in Perl and the regex module): OP_MARK notes where it started,
        # OP_CHECK leaves the loop if it did not move.
        slot = self.new_slot() if _nullable(body) else -1
        exits = []
        if hi < 0:
            loop = self.add(OP_SPLIT)
            self.emit_iteration(body, slot, exits)
            self.add(OP_JMP, a=loop)
            self._branch(loop, loop + 1, len(self.code), lazy)
        else:
            splits = []
            for _ in range(hi - node.lo):
                splits.append(self.add(OP_SPLIT))
                self.emit_iteration(body, slot, exits)
            for split in splits:
                self._branch(split, split + 1, len(self.code), lazy)
        for check in exits:
            self.code[check][2] = len(self.code)

    def emit_iteration(self, body: Node, slot: int, exits: list[int]) -> None:
        """One optional iteration of a loop; with a ``slot``, between OP_MARK and OP_CHECK."""
        if slot < 0:
            self.emit(body)
            return
        self.add(OP_MARK, a=slot)
        self.emit(body)
        exits.append(self.add(OP_CHECK, a=slot))

    def new_slot(self) -> int:
        if self.n_slots == MAX_SLOTS:
            raise Unsupported(f"more than {MAX_SLOTS} loops whose body can match the empty string")
        self.n_slots += 1
        return self.n_slots - 1

    def _branch(self, split: int, body: int, out: int, lazy: bool) -> None:
        """Make ``split`` try ``body`` first (greedy) or ``out`` first (lazy)."""
        self.code[split][1:3] = [out, body] if lazy else [body, out]


# ------------------------------------------------------------------ sets

#: A run of equal 32-byte chunks (the packed bits of equal blocks of 256 code points).
_RUN = re.compile(rb"(.{32})\1*", re.DOTALL)


def _two_stage(memberships: list[bytes]) -> tuple[list[int], array.array, list[int]]:
    """The sets of every code point as (stage1 [cp >> 8], stage2 uint16 (``array`` "H")
    [block * 256 + (cp & 255)], signatures, sorted): bit k of ``signatures[stage2[...]]``
    says whether the code point is in set k (``memberships[k]``, packed bits).

    Equal blocks of 256 code points are stored once (most of Unicode is a few kinds of
    block), numbered in order of first appearance. They are found on the packed bits (32
    bytes a block and set): each set's runs of equal chunks (:data:`_RUN`, a C loop) cut the
    blocks into spans in which no set changes, and each span's chunks are looked up once.
    Only the distinct blocks are spelled out: each set's 32 bytes become 256 uint64 lanes of
    0 or 1 (:func:`_lanes`), read as one Python int, shifted to the set's bit and or-ed, so a
    block's signatures take one big-int operation per set instead of one per code point and
    set.
    """
    n_blocks = N_CODE_POINTS // 256
    cuts = {0, n_blocks}
    for packed in memberships:
        cuts.update(m.end() >> 5 for m in _RUN.finditer(packed))
    cuts = sorted(cuts)
    blocks: dict[tuple[bytes, ...], int] = {}
    stage1: list[int] = []
    for first, end in zip(cuts, cuts[1:]):
        row = tuple(packed[32 * first : 32 * first + 32] for packed in memberships)
        stage1 += [blocks.setdefault(row, len(blocks))] * (end - first)
    lanes = _lanes()
    empty = bytes(32)
    spelled = []
    for row in blocks:  # in order of first appearance
        total = 0
        for k, chunk in enumerate(row):
            if chunk != empty:
                total |= int.from_bytes(b"".join(map(lanes.__getitem__, chunk)), sys.byteorder) << k
        spelled.append(array.array("Q", total.to_bytes(256 * 8, sys.byteorder)))
    signatures = sorted(set().union(*spelled))
    if len(signatures) > 0xFFFF:
        raise Unsupported("too many distinct combinations of character sets")
    index = {signature: i for i, signature in enumerate(signatures)}
    return stage1, array.array("H", map(index.__getitem__, itertools.chain.from_iterable(spelled))), signatures


@functools.cache
def _lanes() -> list[bytes]:
    """Byte -> its eight bits (the first code point in the high bit, as packed sets hold
    them) as eight uint64 of 0 or 1 in the machine's byte order."""
    one, zero = (1).to_bytes(8, sys.byteorder), bytes(8)
    return [b"".join(one if x >> (7 - j) & 1 else zero for j in range(8)) for x in range(256)]


# ------------------------------------------------------------------ entry point

def compile_program(pat_str: str, unicode: UnicodeTable | None = None) -> dict[str, memoryview]:
    """Parse and compile ``pat_str`` (already accepted by ``regex.compile``), its classes
    under the Unicode table ``unicode`` (None: the installed ``regex`` module's;
    :func:`bpetrain.splitting.unicode.resolve_unicode`).

    Returns
    -------
    dict of memoryview
        Arrays as :func:`bpetrain.splitting._charsets.array_view` gives them (``numpy.asarray``
        gives the numpy array; an empty one has the shape (0,)), made without numpy, so that a
        first process's compile does not import it. ``code`` and ``steps`` (int64, shape (n,
        7): op, a, b, c, 0, 0, mask as the bits of a uint64; each alternative's steps end with
        ``OP_MATCH``); ``alternatives``
        (int64, shape (n_alternatives, 9): first instruction, first step, steps (-1: none,
        run by the general matcher), tail instruction (-1: none), whether the tail has a
        first-character guard, whether the steps have no choices and no tail, the
        prefix filter's two masks (:func:`_prefix_filter`, as int64 bits), the guard's
        sets); ``ascii_mask``, ``ascii_cand`` (uint64, shape (128,): the sets an ASCII
        byte is in, and the top-level alternatives it can start); ``stage1``, ``stage2``
        (uint16) and ``sig_mask``, ``sig_cand`` (uint64) for the other code points; and
        ``follow`` (uint64, shape (64,): for each set, the sets that can be read right
        after it in one attempt to match). The DFA: ``dfa_trans``, ``dfa_eot``, ``dfa_start``, ``dfa_cover``
        (:func:`bpetrain.splitting._dfa.build_dfa`), ``dfa_pairs``, ``dfa_codes``
        (:func:`~bpetrain.splitting._dfa.pair_table`), ``dfa_rev_pairs``
        (:func:`~bpetrain.splitting._dfa.reverse_pair_table`), ``dfa_class`` (uint16, shape (128,):
        each ASCII byte's class), the ``shuffle_*`` arrays
        (:func:`~bpetrain.splitting._dfa.shuffle_table`), and ``dfa_reason``,
        ``shuffle_reason`` (uint8: why there is no DFA, no shuffle table, as UTF-8; empty
        when there is).

    Raises
    ------
    Unsupported
        If the pattern needs the ``regex`` module (the message says why).
    """
    from bpetrain.splitting._dfa import NoDfa, build_dfa, pair_codes, pair_table, reverse_pair_table, shuffle_table

    if regex.DEFAULT_VERSION != regex.VERSION0:
        raise Unsupported("regex.DEFAULT_VERSION is not VERSION0")
    parser = _Parser(pat_str)
    root = parser.parse()
    if _nullable(root):
        raise Unsupported("the pattern can match the empty string")
    _fill_eol(root, parser)
    sources = sorted(parser.sets, key=parser.sets.__getitem__)
    memberships = [class_members(source, flags, unicode) for source, flags in sources]
    for (source, flags), packed in zip(sources, memberships):
        if "i" in flags and _PROPERTY.search(source) and packed != class_members(source, flags.replace("i", ""),
                                                                                 unicode):
            # The regex module matches such a set one way alone and another way beside other
            # alternatives ((?i:\p{Lt})+ matches "a", (?i:\p{Lt})+|x does not; (?i:\p{Lu})+
            # matches 4303 code points, (?i:\p{Lu})+|xxx 3801): leave it to the regex module.
            raise Unsupported(f"the case-insensitive property {source!r}")
    _check_case_mix(root, sources, memberships, unicode)
    distinct: dict[bytes, int] = {}
    bits = [distinct.setdefault(m, len(distinct)) for m in memberships]
    if len(distinct) > MAX_SETS:
        raise Unsupported(f"more than {MAX_SETS} distinct character sets")

    branches = root.children if root.kind == "alt" else [root]
    emitter = _Emitter(bits)
    starts, first = [], []
    for branch in branches:
        starts.append(len(emitter.code))
        emitter.emit(branch)
        emitter.add(OP_MATCH)
        first.append(_mask(bits[s] for s in _first_sets(branch)))
    if len(branches) > 64:
        raise Unsupported("more than 64 top-level alternatives")

    stage1, stage2, sig_mask = _two_stage(list(distinct))
    sig_cand = [0] * len(sig_mask)
    for k, sets in enumerate(first):
        for i, signature in enumerate(sig_mask):
            if signature & sets:
                sig_cand[i] |= 1 << k

    pairs: set = set()
    _glushkov(root, pairs)
    follow = [0] * 64
    for a, b in pairs:
        follow[bits[a]] |= 1 << bits[b]

    overlap = [0] * 64  # set k -> the sets that share a code point with it
    for signature in sig_mask:
        for k in range(64):
            if signature >> k & 1:
                overlap[k] |= signature
    _optimize(emitter.code, overlap)
    steps: list[list[int]] = []
    alternatives = []  # per alternative: start pc, first step, steps, tail pc, tail guarded, tail mask
    for start in starts:
        found = _steps(emitter.code, start)
        if found is None:
            alternatives.append([start, 0, -1, -1, 0, 0, 0, 0, 0])
            continue
        alt_steps, tail, tail_first = found
        linear = tail < 0 and all(step[0] != OP_RUN or step[3] == POSSESSIVE for step in alt_steps)
        prefix, after = _prefix_filter(alt_steps)
        alt_steps = [_specialize(step) for step in alt_steps]
        alternatives.append([start, len(steps), len(alt_steps), tail, int(tail_first is not None), int(linear),
                             prefix, after, tail_first or 0])
        steps += alt_steps + [[OP_MATCH, 0, 0, 0, 0]]
    ascii_class = stage2[stage1[0] * 256 : stage1[0] * 256 + 128]
    try:
        dfa = build_dfa(root, bits, sig_mask, parser.sets.get((r"\n", "")), _nullable)
        dfa["dfa_reason"] = array_view("B", b"")
        if "dfa_held" in dfa:  # (read by a loop of its own, one character at a time)
            dfa["dfa_pairs"], dfa["dfa_codes"] = array_view("I", []), pair_codes(ascii_class)[2]
            dfa["shuffle_reason"] = array_view("B", b"the DFA holds matches that later characters decide")
        else:
            dfa["dfa_pairs"], dfa["dfa_codes"] = pair_table(dfa["dfa_trans"], ascii_class)
            try:
                dfa.update(shuffle_table(dfa["dfa_trans"], ascii_class, dfa["dfa_start"]))
                dfa["shuffle_reason"] = array_view("B", b"")
            except NoDfa as exc:
                dfa["shuffle_reason"] = array_view("B", str(exc).encode())
        dfa["dfa_rev_pairs"] = reverse_pair_table(dfa["dfa_rev"], ascii_class)
    except NoDfa as exc:
        dfa = {"dfa_trans": array_view("H", []), "dfa_eot": array_view("B", b""),
               "dfa_start": array_view("I", [0, 0]), "dfa_pairs": array_view("I", []),
               "dfa_codes": array_view("B", bytes(128)), "dfa_reason": array_view("B", str(exc).encode())}
    return {
        **dfa,
        "dfa_class": array_view("H", ascii_class),
        "code": _code_array(emitter.code),
        "steps": _code_array(steps),
        "alternatives": _code_array(alternatives, 9),
        "ascii_mask": array_view("Q", [sig_mask[c] for c in ascii_class]),
        "ascii_cand": array_view("Q", [sig_cand[c] for c in ascii_class]),
        "stage1": array_view("H", stage1),
        "stage2": array_view("H", stage2),
        "sig_mask": array_view("Q", sig_mask),
        "sig_cand": array_view("Q", sig_cand),
        "follow": array_view("Q", follow),
    }


_ZERO_WIDTH = (OP_LOOK, OP_BOS, OP_EOS, OP_EOL)
_ASSERTIONS = (*_ZERO_WIDTH, OP_ATOMIC, OP_ATOMIC_END)


def _walk(code: list[list[int]], start: int, *, consuming: bool = False, assertions: bool = False) -> set[int]:
    """The instructions matching can reach from ``start``.

    Without ``consuming``, only those reached without consuming a character: a set or a
    run of at least one character is reached but not passed. ``assertions``: pass
    anchors and lookaheads as if they held (else they are reached but not passed).
    """
    todo, seen = [start], set()
    while todo:
        pc = todo.pop()
        if pc in seen:
            continue
        seen.add(pc)
        op, a, b, _, _ = code[pc]
        if op in (OP_SPLIT, OP_CHECK):
            todo += [a if op == OP_SPLIT else pc + 1, b]
        elif op == OP_JMP:
            todo.append(a)
        elif op in (OP_MARK, OP_ATOMIC, OP_ATOMIC_END) or (op == OP_RUN and a == 0):
            todo.append(pc + 1)
        elif op == OP_SET or op == OP_RUN:
            if consuming:
                todo.append(pc + 1)
        elif op == OP_LOOK:
            todo += [pc + 1, b] if consuming else [b] if assertions else []
        elif op in _ZERO_WIDTH and (assertions or consuming):
            todo.append(pc + 1)
    return seen


def _first_after(code: list[list[int]], start: int) -> int | None:
    """The sets that can consume the next character when matching goes on at ``start``,
    or None if it may meet an anchor, a lookahead or an atomic group first (whose
    outcome depends on more than the next character). Reaching the end of the program
    adds nothing: the match is then found without the next character.
    """
    reached = [code[pc] for pc in _walk(code, start)]
    if any(op in _ASSERTIONS for op, *_ in reached):
        return None
    sets = 0
    for op, _, _, _, mask in reached:
        if op in (OP_SET, OP_RUN):
            sets |= mask
    return sets


def _nullable_from(code: list[list[int]], start: int) -> bool:
    """Whether the program can get from ``start`` to its end without consuming (conservative)."""
    return any(code[pc][0] in (OP_MATCH, OP_LOOK_END) for pc in _walk(code, start, assertions=True))


def _optimize(code: list[list[int]], overlap: list[int]) -> None:
    """Two rewrites that change no match, only the work of finding it.

    - A greedy run of a set that nothing after it can start with (no set after it shares
      a code point with it: ``overlap``) becomes possessive
      (PCRE's auto-possessification): giving back a character would leave a character
      of the run next, which every way on must consume but cannot, and a way on that
      consumes nothing succeeds at the run's longest end already.
    - A split whose first way must consume a character gets the sets that can consume
      it (``mask``, ``c`` = 1): the matcher takes the second way at once when the next
      character is in none of them.
    """
    for pc, (op, a, b, c, mask) in enumerate(code):
        if op == OP_RUN and c == GREEDY:
            after = _first_after(code, pc + 1)
            if after is not None and not after & overlap[mask.bit_length() - 1]:
                code[pc][3] = POSSESSIVE
        elif op == OP_SPLIT and not _nullable_from(code, a):
            first = _first_after(code, a)
            if first is not None:
                code[pc][3:5] = [1, first]


def _steps(code: list[list[int]], start: int) -> tuple[list[list[int]], int, int | None] | None:
    """The alternative at ``start`` as *steps* and a tail, or None if it has no such form.

    Steps are what the matcher runs with backtracking of its own, in a small array
    instead of the general stack: runs and single sets (``OP_RUN``, ``OP_SET``), a
    lookahead at one character (``OP_LOOK`` with the set in ``mask``, ``a`` = 1 if
    negative), ``OP_EOS`` and ``OP_EOL``. The tail (its first instruction, or -1 if the
    steps end the alternative) is whatever follows, provided it always succeeds: it can
    reach the end without consuming or passing an anchor or a lookahead, and holds no
    atomic group, so the depth-first search always finds a match in it and never
    backtracks into the steps. ``tail_first``: the sets that can consume the tail's first
    character, if known (a next character in none of them means the tail matches empty).
    """
    steps = []
    pc = start
    while True:
        op, a, b, c, mask = code[pc]
        if op in (OP_SET, OP_RUN, OP_EOS, OP_EOL):
            steps.append([op, a, b, c, mask])
            pc += 1
        elif op == OP_LOOK and code[pc + 1][0] == OP_SET and code[pc + 2][0] == OP_LOOK_END:
            steps.append([OP_LOOK, a, 0, 0, code[pc + 1][4]])
            pc += 3
        else:
            break
    if len(steps) > MAX_STEPS:
        return None
    if code[pc][0] == OP_MATCH:
        return steps, -1, None
    if not _always_succeeds(code, pc):
        return None
    return steps, pc, _first_after(code, pc)


def _specialize(step: list[int]) -> list[int]:
    """A greedy or possessive run ``?``, ``*`` or ``+`` as its own opcode (a loop without a counter)."""
    op, a, b, c, mask = step
    if op == OP_RUN and c != LAZY:
        op = {(0, 1): OP_OPT, (0, -1): OP_STAR, (1, -1): OP_PLUS}.get((a, b), OP_RUN)
    return [op, a, b, c, mask]


def _prefix_filter(steps: list[list[int]]) -> tuple[int, int]:
    """(P, F) if the steps start with an optional character of the sets P and what follows
    must consume a character of the sets F first (else (0, 0)).

    Then a first character in P but not in F can start a match only if the second is in
    F: the matcher checks that before trying the alternative (cl100k's and o200k's
    ``[^\\r\\n\\p{L}\\p{N}]?`` before letters, at punctuation and spaces).
    """
    if len(steps) < 2 or steps[0][0] != OP_RUN or steps[0][1:3] != [0, 1]:
        return 0, 0
    after = 0
    for op, a, _, _, mask in steps[1:]:
        if op not in (OP_SET, OP_RUN):
            return 0, 0
        after |= mask
        if op == OP_SET or a > 0:
            return steps[0][4], after
    return 0, 0


def _always_succeeds(code: list[list[int]], start: int) -> bool:
    """Whether matching from ``start`` cannot fail (see :func:`_steps`): it can reach the
    end without consuming or passing an anchor or a lookahead, and no atomic group can
    cut the search on any way it may take."""
    return any(code[pc][0] == OP_MATCH for pc in _walk(code, start)) and not any(
        code[pc][0] in (OP_ATOMIC, OP_ATOMIC_END) for pc in _walk(code, start, consuming=True)
    )


def _code_array(rows: list[list[int]], width: int = 7) -> memoryview:
    """Rows of ints as an int64 array (:func:`~bpetrain.splitting._charsets.array_view`) of
    ``width`` columns, zeros where a row is short; the last column is the row's last value,
    a uint64 mask (masks are stored as their bits)."""
    flat = []
    for row in rows:
        flat += [v - 2**64 if v >= 2**63 else v for v in row[:-1]]
        flat += [0] * (width - len(row))
        flat.append(row[-1] - 2**64 if row[-1] >= 2**63 else row[-1])
    return array_view("q", flat, (len(rows), width))


def _start_sets(node: Node) -> dict[int, bool]:
    """The sets that can test the first character of a match, each with whether an
    alternation factors it out: all of that alternation's branches start with it alone, as
    Llama 3's ``(?i:'s|'t|...)`` starts with ``'`` (see :func:`_check_case_mix`)."""
    k = node.kind
    if k == "set":
        return {node.value: False}
    if k == "alt":
        parts = [_start_sets(child) for child in node.children]
        if len({frozenset(part) for part in parts}) == 1 and len(parts[0]) == 1:
            return {next(iter(parts[0])): True}
        found: dict[int, bool] = {}
        for part in parts:
            for key, factored in part.items():
                found[key] = found.get(key, True) and factored
        return found
    if k in ("rep", "atomic"):
        return _start_sets(node.children[0])
    if k == "seq":
        found = {}
        for child in node.children:
            for key, factored in _start_sets(child).items():
                found[key] = found.get(key, True) and factored
            if not _nullable(child):
                break
        return found
    return {}  # anchors and lookaheads: zero width


def _check_case_mix(root: Node, sources: list[tuple[str, str]], memberships: list[bytes],
                    unicode: UnicodeTable | None) -> None:
    """Refuse what the regex module reads by the company a set keeps at the start of a match.

    When a case-insensitive set can test the first character of a match, the regex module
    tests the first character case-insensitively for every set that can: ``[^ss]|(?i:x)``,
    ``(?i:')|[^ss]`` and ``(?i:^|x)[^ss]`` do not match "S" (alone, or after "a",
    ``[^ss]`` does), while ``(?i:'s|'t)|[^ss]`` (the ``'`` factored out) does. Such a
    pattern goes to the regex module when a case-sensitive set that can start a match
    would lose characters that way. (Found by tests/test_pattern_engine.py; the regex
    module documents none of it.)
    """
    starts = _start_sets(root)

    def insensitive(k: int) -> bytes:
        source, flags = sources[k]
        return class_members(source, "".join(sorted(set(flags) | {"i"})), unicode)

    if not any("i" in sources[k][1] and not (factored and memberships[k] == insensitive(k))
               for k, factored in starts.items()):
        return
    for k in starts:
        if "i" not in sources[k][1]:
            if int.from_bytes(memberships[k], "big") & ~int.from_bytes(insensitive(k), "big"):
                raise Unsupported(f"the case-sensitive {sources[k][0]!r} where a case-insensitive set can also "
                                  "start a match")


def _mask(bits) -> int:
    """The bits (set numbers) as one mask; several sets may share a bit."""
    mask = 0
    for bit in bits:
        mask |= 1 << bit
    return mask


def _fill_eol(node: Node, parser: _Parser) -> None:
    """Give every ``$`` the set ``\\n`` (what it reads, see :func:`_glushkov`)."""
    if node.kind == "eol":
        node.value = parser.add_set(r"\n", "").value
    for child in node.children:
        _fill_eol(child, parser)


def stored_program(pat_str: str, unicode: UnicodeTable | None = None,
                   references: tuple[str, ...] = ()) -> dict[str, memoryview]:
    """:func:`compile_program`, kept on disk (:func:`bpetrain.splitting._charsets.store_arrays`)
    under the pattern, the Unicode table's digest and ``references`` (:func:`_program_key`),
    tagged with the build of what compiled it (:func:`_program_tag`), as memoryviews of the arrays (``numpy.asarray`` gives them;
    an empty one has the shape (0,): :func:`~bpetrain.splitting._charsets.read_arrays`),
    whether read back (:func:`kept_program`) or compiled now.

    ``references`` are patterns to recognise: the array ``like`` (int64, shape (1,)) holds
    the index of the first whose DFA cuts every text as this pattern's does
    (:func:`bpetrain.splitting._dfa.same_pieces`), -1 if none: the pattern itself is its own,
    and a reference the ``regex`` module splits a probe text apart from it with
    (:func:`probe_cuts`) is not compiled to be compared. Failing that, of one whose pieces
    the blocks may give but on some characters (:func:`_like_but_for`), which
    ``like_without`` then names.

    A program whose compiling warned (a class the Unicode table lacks) is not kept, so the
    warning comes in every process, as without the cache.

    Raises
    ------
    Unsupported
        As :func:`compile_program` (such patterns are not kept).
    """
    arrays = kept_program(pat_str, unicode, references)
    return compile_and_keep(pat_str, unicode, references) if arrays is None else arrays


def compile_and_keep(pat_str: str, unicode: UnicodeTable | None = None, references: tuple[str, ...] = (),
                     beside: tuple[str, ...] = ()) -> dict[str, memoryview]:
    """:func:`stored_program` after :func:`kept_program` has found nothing: compile the
    program and keep it (nothing is looked up; the ``regex`` module must have compiled
    ``pat_str``). ``beside`` are references of the pattern's own, derived from it by the
    caller (so not in the key): ``like`` counts them after ``references``.

    Raises
    ------
    Unsupported
        As :func:`compile_program`.
    """
    arrays, warned = _compile_like(pat_str, unicode, references, beside)
    if not warned:
        store_arrays(_program_key(pat_str, unicode, references), arrays, tag=_program_tag())
    return arrays


def ship_program(pat_str: str, unicode: UnicodeTable | None, references: tuple[str, ...], folder: str,
                 beside: tuple[str, ...] = ()) -> None:
    """Keep :func:`compile_and_keep`'s arrays in ``folder`` (the build's
    :data:`~bpetrain.splitting._charsets.SHIPPED_DIR`) under the contents of the modules
    that compiled them (:func:`_contents_key`), which an installed copy of the same modules
    reads (:func:`kept_program`), whatever the files' times.

    Raises
    ------
    Unsupported
        As :func:`compile_program`.
    ValueError
        If compiling warned (the program would not be kept).
    """
    arrays, warned = _compile_like(pat_str, unicode, references, beside)
    if warned:
        raise ValueError(f"compiling {pat_str!r} warned: {warned[0].message}")
    store_arrays(_shipped_key(_program_key(pat_str, unicode, references)), arrays, folder)


def _compile_like(pat_str: str, unicode: UnicodeTable | None, references: tuple[str, ...],
                  beside: tuple[str, ...] = ()) -> tuple[dict[str, memoryview], list]:
    """:func:`compile_program`'s arrays and ``like`` (:func:`stored_program`; an index of
    ``references + beside``), and the warnings compiling gave (given again here)."""
    from bpetrain.splitting._dfa import same_pieces

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arrays = compile_program(pat_str, unicode)
        like = -1
        # (no references: nothing to compare, no probe text to cut)
        probe, cuts = (cuts_of_probe(pat_str), reference_cuts(references, beside)) if references or beside else (None, [])
        for i, reference in enumerate(references + beside):
            if reference == pat_str:
                like = i  # the pattern itself
                break
            if probe is not None and cuts[i] is not None and probe != cuts[i]:
                continue  # (the regex module splits the probe text apart: their programs cannot cut alike)
            try:
                if same_pieces(arrays, stored_program(reference, unicode)):
                    like = i
                    break
            except Unsupported:
                continue
        if like < 0 and probe is not None and not len(arrays["dfa_reason"]):
            like = _like_but_for(arrays, unicode, references + beside, probe, cuts)
        arrays["like"] = array_view("q", [like])
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return arrays, caught


#: How many references :func:`_like_but_for` compares a pattern with, those whose cuts of the
#: probe text agree with its own the longest.
NEAREST_BUT_FOR = 2


def _like_but_for(arrays: dict[str, memoryview], unicode: UnicodeTable | None, references: tuple[str, ...],
                  probe: tuple[int, ...], cuts: list[tuple[int, ...] | None]) -> int:
    """The index of a reference of ``references`` (their probe cuts ``cuts``; the pattern's
    ``probe``) whose pieces the 64-byte blocks may give for the program ``arrays`` but on
    some characters, which they leave to it: ``arrays["like_without"]`` then holds those
    (:func:`bpetrain.splitting._dfa.rules_alphabet`: uint32, ranges of code points as first,
    last, ...). -1 if none: only the :data:`NEAREST_BUT_FOR` references that cut the probe
    text alike the longest are compared, and only those that cut its ASCII start alike."""
    from bpetrain.splitting import _blocks
    from bpetrain.splitting._dfa import rules_alphabet

    ascii_end = next(i for i, c in enumerate(PROBE) if ord(c) >= 0x80) - 4  # (a cut may read a few characters on)

    def agreeing(k: int) -> int:
        if cuts[k] is None or [c for c in cuts[k] if c < ascii_end] != [c for c in probe if c < ascii_end]:
            return -1
        return cuts_agreeing(probe, cuts[k])

    nearest = sorted((k for k in range(len(references)) if agreeing(k) >= 0), key=agreeing, reverse=True)
    readable = _blocks.readable(unicode) if nearest else None
    for k in nearest[:NEAREST_BUT_FOR] if readable is not None else ():
        try:
            without = rules_alphabet(arrays, stored_program(references[k], unicode), readable)
        except Unsupported:
            continue
        if without is not None:
            arrays["like_without"] = array_view("I", [cp for pair in without for cp in pair])
            return k
    return -1


#: What :func:`probe_cuts` splits: where the split patterns of published tokenizers
#: differ (contractions in either case, runs of digits, letters after punctuation, a case
#: change, runs of spaces and new lines, a slash after punctuation and a new line, whitespace
#: at the end, Han and other scripts), in characters that Unicode has classed alike for decades.
PROBE = ("Hello world's 1234567 don'T  THEY'LL, x.y!!  \n\n  fooBar_baz\t\t 12 ab12cd  "
          "'Re 'sx--- ??\r\n\r\n!\n/ A1   z \u00c9t\u00e9 \u4e2d\u6587\u5b57 \u0661\u0662\u0663 "
          "'\u017f x'\u017fx \u041f\u0440\u0438\u0432\u0435\u0442 \n  ")


def cuts_agreeing(own: tuple[int, ...], theirs: tuple[int, ...] | None) -> int:
    """How many of two patterns' cuts of :data:`PROBE` (:func:`cuts_of_probe`) agree before
    the first that does not; -1 if ``theirs`` is None."""
    if theirs is None:
        return -1
    return next((i for i, (x, y) in enumerate(zip(own, theirs)) if x != y), min(len(own), len(theirs)))


def cuts_of_probe(pat_str: str) -> tuple[int, ...] | None:
    """Where the ``regex`` module cuts :data:`PROBE` with ``pat_str`` (each match's start
    and end), or None if it runs past a second (catastrophic backtracking)."""
    try:
        return tuple(itertools.chain.from_iterable(m.span() for m in regex.finditer(pat_str, PROBE, timeout=1.0)))
    except TimeoutError:
        return None


@functools.cache
def probe_cuts(references: tuple[str, ...]) -> list[tuple[int, ...] | None]:
    """:func:`cuts_of_probe` of each of ``references``, kept on disk under them and the
    ``regex`` version (:func:`~bpetrain.splitting._charsets.store_arrays`; the build ships
    those of :data:`bpetrain.splitting.pattern`'s references), so that a first compile in a
    process does not compile every reference for the ``regex`` module. Two patterns whose
    cuts differ cannot cut every text alike, and the reference need not be compiled to be
    compared (:func:`bpetrain.splitting._dfa.same_pieces`)."""
    key = _probe_key(references)
    arrays = read_arrays(key)
    if arrays is not None and len(arrays["counts"]) == len(references):
        counts, flat, cuts, at = arrays["counts"], arrays["cuts"], [], 0
        for count in counts:
            cuts.append(None if count < 0 else tuple(flat[at:at + count]))
            at += max(count, 0)
        return cuts
    cuts = [cuts_of_probe(reference) for reference in references]
    store_arrays(key, _probe_arrays(cuts))
    return cuts


def reference_cuts(references: tuple[str, ...], beside: tuple[str, ...]) -> list[tuple[int, ...] | None]:
    """:func:`cuts_of_probe` of each of ``references`` (:func:`probe_cuts`: kept on disk), then
    of each of ``beside`` (the references found beside them, for one pattern: not kept)."""
    return [*probe_cuts(references), *map(cuts_of_probe, beside)]


def ship_probe_cuts(references: tuple[str, ...], folder: str) -> None:
    """Keep :func:`probe_cuts` of ``references`` in ``folder`` (the build's
    :data:`~bpetrain.splitting._charsets.SHIPPED_DIR`)."""
    store_arrays(_probe_key(references), _probe_arrays([cuts_of_probe(reference) for reference in references]), folder)


def _probe_key(references: tuple[str, ...]) -> str:
    return "\0".join(["probe cuts", PROBE, str(len(references)), *references])


def _probe_arrays(cuts: list[tuple[int, ...] | None]) -> dict[str, memoryview]:
    """:func:`probe_cuts`' as arrays: each reference's number of cuts (-1: None), then all
    the cuts in a row (int64)."""
    return {"counts": array_view("q", [-1 if c is None else len(c) for c in cuts]),
            "cuts": array_view("q", [x for c in cuts if c is not None for x in c])}


def kept_program(pat_str: str, unicode: UnicodeTable | None = None,
                 references: tuple[str, ...] = ()) -> dict[str, memoryview] | None:
    """:func:`stored_program`'s arrays if they are on disk, else None (nothing is compiled:
    a kept program was compiled from a pattern the ``regex`` module compiled).

    They are looked up in the cache folder, tagged with :func:`_program_tag` (what this
    process's modules are, by their files' sizes and times), then in the build's shipped
    folder under :func:`_shipped_key` (what the modules hold, read only then), and those are
    then kept in the cache folder.
    """
    key = _program_key(pat_str, unicode, references)
    arrays = read_arrays(key, _program_tag(), shipped=False)
    if arrays is None:
        arrays = read_shipped_arrays(_shipped_key(key))
        if arrays is not None:
            store_arrays(key, arrays, tag=_program_tag())
    return arrays


def _program_key(pat_str: str, unicode: UnicodeTable | None, references: tuple[str, ...]) -> str:
    """What a program is of: the pattern, the Unicode table's digest, the references."""
    return "\0".join(["program", "regex" if unicode is None else unicode.digest,
                      str(len(references)), *references, pat_str])


def _shipped_key(key: str) -> str:
    """The key of a shipped program of :func:`_program_key` ``key``: with the contents of
    the modules that compiled it (:func:`_contents_key`)."""
    return f"{key}\0{_contents_key()}"


def _compiler_modules() -> list[str]:
    """The files of the modules a compiled program depends on: this compiler, the
    character sets, the DFA's builder, the matcher whose instructions it emits, the
    Unicode tables (the ``regex`` module they read classes from is in the keys by its version),
    the splitter that names the references."""
    from bpetrain.splitting import _charsets, _matcher, unicode

    # not imported: a kept program needs no DFA builder; the references and those derived
    # from a pattern (``like``) are the splitter's
    dfa, splitter = (importlib.util.find_spec(f"bpetrain.splitting.{name}").origin for name in ("_dfa", "pattern"))
    return [__file__, _charsets.__file__, dfa, _matcher.__file__, unicode.__file__, splitter]


@functools.cache
def _contents_key() -> str:
    """The SHA-256 of the contents of :func:`_compiler_modules` (about a megabyte, read
    only when the cache folder has no program): the key of the programs the build ships,
    which no other build of the modules reads, whatever the files' times after installing."""
    digest = hashlib.sha256()
    for path in _compiler_modules():
        with open(path, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    return "contents:" + digest.hexdigest()


@functools.cache
def _program_tag() -> str:
    """The build tag (:func:`bpetrain._util.cache.build_tag`: paths, sizes and modification
    times) of :func:`_compiler_modules` and the ``regex`` module
    (:func:`~bpetrain.splitting._charsets.regex_modules`), which the programs in the cache
    folder carry: a changed or rebuilt module never reads a program another one compiled,
    and the cache's trim removes the programs of a build no longer installed."""
    return build_tag([*_compiler_modules(), *regex_modules()])
