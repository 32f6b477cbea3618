"""Compile a parsed split pattern into a leftmost-first DFA over character classes.

The matcher of :mod:`bpetrain.splitting._matcher` backtracks; for most split patterns the
same pieces come from a deterministic automaton that reads each character once. This
module builds it from the pattern's tree (:class:`bpetrain.splitting._compiler.Node`):

- **Classes.** Code points are partitioned by their membership in every character set of
  the pattern: the compiler's *signatures* (distinct combinations of set bits, case
  folding included, from the same Unicode table), so a class is a signature's index and
  the matcher's two-stage table already gives it.
- **Threads and states.** The tree becomes a small NFA (Thompson's construction). A DFA
  state is an *ordered* list of NFA threads after the epsilon closure, in the priority
  the backtracking matcher would try them (the first alternative, the greedy iteration
  first), as in Pike's VM and RE2's DFA (Russ Cox, "Regular Expression Matching: the
  Virtual Machine Approach", 2009; "Regular Expression Matching in the Wild", 2010). When a
  thread reaches the end of the pattern, the match there is recorded and every thread
  after it is dropped (leftmost-first: the backtracker would never try them); threads
  before it run on and may record a longer match. The piece is the last match recorded
  when no thread is left. A thread from which no match can end (every way on passes a
  ``^`` after a character, or a condition the set after it cannot meet,
  :meth:`_Builder.can_match`) is not kept.
- **One-character lookahead.** ``(?=C)`` and ``(?!C)`` (C a set, or an alternation of sets)
  do not become threads: the thread that passes one carries a *condition*, the classes
  (and the end of the text) the next character may have, checked when that character is
  read. A possessive run of one set, ``C*+``, ``C{2,5}+``, and an atomic group around such a
  run, is the greedy run whose every early exit carries the condition "the next character
  is not in C", which is exactly when the backtracker's run would have stopped there.
  ``\\Z`` is the condition "the end of the text"; ``$`` directly before the end of an
  alternative is "the end, or a final newline" (one more thread that waits for the end
  after that newline), elsewhere the end or ``(?=\\n\\Z)``; ``^``/``\\A`` hold in the start
  state of a match at the string's start.
- **Read first** (:meth:`_Nfa.never`, :meth:`_Nfa.first_classes`): a part that can never
  match (an empty set, ``^`` after a character, ``\\Z`` or ``$`` before a character that
  cannot be a final newline) is dropped, whatever it holds; a lookahead whose match the next
  character decides (``(?=\\W+)``, ``(?!\\s+\\d*)``: only whether its body matches counts,
  and a tail that matches everywhere adds nothing) is the condition on that character;
  ``(?=^)`` is ``^``, and ``(?!^...)`` after a character always holds. A lookahead whose
  first character the part after it cannot read (``(?=D+)\\s``, :meth:`_Nfa.firsts`), and
  ``(?!X)`` where X matches everywhere, never match; ``X{0}`` is nothing, whatever X is.
- **Atomic groups and lookaheads as tagged threads** (:meth:`_Builder.step`). Any other
  atomic group, and a possessive quantifier on anything else (``X{lo,hi}+`` is
  ``(?>X{lo,hi})``), is its body between two instructions; a thread carries a tag per
  instance of a group it is in (one per thread that entered it). The first thread in
  priority order to leave an instance is the group's match: it cuts off the instance's
  threads after it, and a thread that left while one before it is still inside is pending
  until that one leaves (cutting it off) or dies. Any other lookahead runs its body as
  threads of their own beside the part after it, which waits, tagged, until the body
  matches or dies (only whether it matches counts). A state is the ordered threads with
  their tags, instances numbered by first appearance. A group left while a lookahead or
  group inside it is undecided has no DFA.
- **Held matches** (:meth:`_Builder.step`). A match still waiting, when the character after
  it is read, on a group's threads or a lookahead's body (``\\p{L}+(?=\\s\\d)``, ``(?:ab)++``)
  is *held*: the transition says KEEP (the splitting loop keeps the position in a register
  of its own) and a pseudo-thread with the undecided tags stands at the match's place
  among the threads; a later transition drops it or says COMMIT (the kept position is the
  last match). This is a tagged DFA with one register (Laurikari, "NFAs with Tagged
  Transitions", 2000; RE2 and the regex crates keep match positions the same way). A match
  held while one from an earlier character is undecided would need a second register: no DFA.
- **Empty iterations.** A loop whose body can match the empty string leaves the loop after
  an optional iteration that read nothing (the backtracker's ``OP_MARK``/``OP_CHECK``, as
  Perl and the regex module do): that iteration is between a ``_MARK`` and a ``_CHECK``, and
  the closure (:meth:`_Builder.closure`) knows which iterations a path began without reading
  since; ``(?:|a)*a`` on "aa" is two pieces, where an automaton that looped on would take both.
- **Refused** (:class:`NoDfa`; the backtracking matcher runs the pattern): the two held
  matches and the undecided exits above, more than :data:`MAX_CLASSES` classes, and automata of more than
  :data:`MAX_STATES` states, of states holding more NFA threads than :data:`MAX_THREADS` (one) or
  :data:`MAX_THREADS_IN_ALL` (all), or NFAs of more than :data:`MAX_NFA` instructions.

The tables (:func:`build_dfa`) are one transition per (state, class), the next state and
whether a match ends before the character read, with the way a piece usually ends (no
thread left, the last match ended right there) folded into the transition: the next
piece's first (:func:`_fast_table`); per state, what the end of the text accepts; the
two start states; where a failed attempt's states tell that the attempts from the characters
it read fail too (:func:`_cover_table`); the reverse automaton that marks where a match can
start, reading the text backwards (:func:`_reverse_table`); with held matches, KEEP and COMMIT per transition
(and no cover or dominance tables: the loop that reads such a DFA reads neither). :func:`pair_table` gives the same transitions on two
ASCII bytes at once,
and :func:`same_pieces` tells whether two patterns' DFAs split every text alike (:func:`first_difference`,
where they part).
"""
from __future__ import annotations

import collections
import itertools

from bpetrain.splitting._charsets import array_view
from bpetrain.splitting._matcher import LAZY, POSSESSIVE

__all__ = ["MAX_NFA", "MAX_STATES", "MAX_THREADS", "MAX_THREADS_IN_ALL", "NoDfa", "build_dfa", "first_difference",
           "pair_codes", "pair_table", "reverse_pair_table", "same_pieces", "shuffle_table"]

#: The most DFA states.
MAX_STATES = 4096
#: The most NFA threads one DFA state holds, and all its states together: building a state
#: costs about the square of its threads a character class (published patterns' states hold
#: at most 34; a generated pattern whose states grew to 469 took over ten minutes to build).
MAX_THREADS = 128
MAX_THREADS_IN_ALL = 65536
#: The most NFA instructions (bounded repetitions are unrolled).
MAX_NFA = 4000
#: The most character classes the DFA reads by.
MAX_CLASSES = 1024

# NFA instructions: (kind, operand, next); _ENTER and _EXIT bound an atomic group's body; _LOOK
# (operand: (negative, the body's entry)) starts a lookahead's body beside the part after it,
# and the body ends at a _FOUND; _MARK (operand: the loop's number) starts an optional iteration
# of a loop whose body can match the empty string, and _CHECK (operand: (the loop's number, the
# loop's exit)) ends it: to the exit if the iteration read nothing, else on to ``next``
_SET, _SPLIT, _COND, _BOS, _MATCH, _ENTER, _EXIT, _LOOK, _FOUND, _MARK, _CHECK = range(11)
# What a thread's tag says of it and an atomic group's instance (see _Builder.step): it is
# inside, it has left while a thread the backtracker would try first is still inside
# (pending), or it has left by this very step (turned into pending when the step ends); and
# of a lookahead's instance: it runs the body, or it is the part after a positive or a
# negative lookahead whose body has not yet matched or failed
_IN, _PENDING, _LEFT_NOW, _BODY, _AFTER_POS, _AFTER_NEG = range(6)
# Pseudo program counters of threads: a match after ``$`` (it holds at the end or before a
# final newline) and the same match once that newline is read (it holds at the end only).
_EOL_MATCH, _LAG_MATCH = -1, -2
# The pseudo program counter of a held match (:meth:`_Builder.step`): its tags are the atomic
# groups' instances and lookaheads that are still to decide it.
_HELD = -3
# What a step ends before the character it reads (:meth:`_Builder.step`): a match; a match held
# until later characters decide it; the held match, decided (it is the last match)
MATCHED, HOLD, COMMITTED = 1, 2, 4


class NoDfa(ValueError):
    """The pattern has no DFA here (the message says why); the backtracking matcher runs it."""


class _Nfa:
    """Thompson's construction over class masks, built back to front (``next`` known)."""

    def __init__(self, set_classes: dict[int, int], n_classes: int, nullable, newline: int = 0):
        self.nullable = nullable  # the compiler's analysis: can a node match without reading?
        self.code: list[tuple] = []
        self.set_classes = set_classes  # set index -> mask of classes
        self.every = (1 << n_classes) - 1
        self.eot = 1 << n_classes  # the condition bit of "the end of the text"
        self.newline = newline  # the classes of "\n" (what a "$" before more may read)
        self.match = self.add(_MATCH, 0, -1)
        self._never: dict[int, bool] = {}
        self.loops = itertools.count()  # numbers of the loops with a _MARK and a _CHECK

    def add(self, kind: int, operand, nxt: int) -> int:
        if len(self.code) >= MAX_NFA:
            raise NoDfa(f"the automaton would need more than {MAX_NFA} NFA instructions")
        self.code.append((kind, operand, nxt))
        return len(self.code) - 1

    def one_char(self, node) -> int | None:
        """The classes of a node that always reads exactly one character (a set, or an
        alternation of such), or None."""
        if node.kind == "set":
            return self.set_classes[node.value]
        if node.kind == "alt":
            masks = [self.one_char(child) for child in node.children]
            if all(m is not None for m in masks):
                out = 0
                for m in masks:
                    out |= m
                return out
        if node.kind == "seq" and len(node.children) == 1:
            return self.one_char(node.children[0])
        return None

    def never(self, node) -> bool:
        """Whether ``node`` can never match: it must read a character of an empty set, pass
        ``^``/``\\A`` after a character (or a part that begins with one), read a character
        after ``\\Z``, or one other than a newline after ``$`` (where ``$`` holds, the text
        ends or a final newline follows). Such a part is dropped before the NFA is built (an
        alternative of it never runs, a loop of it takes no iteration), so that what it holds
        (a construct the DFA refuses) does not keep the pattern from its DFA; so is ``(?!^...)``
        after a character, which always holds. Exact as far as it says True; False when in
        doubt."""
        found = self._never.get(id(node))
        if found is None:
            found = self._never[id(node)] = self._find_never(node)
        return found

    def _find_never(self, node) -> bool:
        k = node.kind
        if k == "set":
            return self.set_classes[node.value] == 0
        if k == "alt":
            return all(map(self.never, node.children))
        if k == "rep":
            return node.lo > 0 and self.never(node.children[0])
        if k == "atomic" or (k == "look" and not node.value):
            return self.never(node.children[0])
        if k == "look" and _always(node.children[0]):
            return True  # (?!X) where X matches everywhere
        if k != "seq":
            return False
        read = 0  # the fewest characters the children before read
        for i, child in enumerate(node.children):
            if self.never(child) or (read and _at_bos_only(child)):
                return True
            if child.kind == "look" and not child.value:
                # (?=X)Y where X's first character can never be Y's: X reads the character Y must
                ahead, empty = self.firsts(child.children[0])
                then, then_empty = self.firsts_of_seq(node.children[i + 1 :])
                if not empty and not then_empty and not ahead & then:
                    return True
            after = node.children[i + 1] if i + 1 < len(node.children) else None
            if after is not None and _min_length(after):
                if child.kind == "eos":
                    return True
                if child.kind == "eol" and not self.first_classes(after)[1] & self.newline:
                    return True
            read += _min_length(child)
        return False

    def firsts(self, node) -> tuple[int, bool]:
        """``(classes, empty)``: the classes the first character a match of ``node`` reads can
        have (an over-approximation: parts that can never match count too), and whether a
        match can read none (assertions read none, and say nothing here)."""
        k = node.kind
        if k == "set":
            return self.set_classes[node.value], False
        if k == "seq":
            return self.firsts_of_seq(node.children)
        if k == "alt":
            out, empty = 0, False
            for child in node.children:
                classes, child_empty = self.firsts(child)
                out |= classes
                empty = empty or child_empty
            return out, empty
        if k == "rep":
            classes, empty = self.firsts(node.children[0])
            return classes, empty or node.lo == 0
        if k == "atomic":
            return self.firsts(node.children[0])
        return 0, True  # ^, $, \Z, a lookahead

    def firsts_of_seq(self, children) -> tuple[int, bool]:
        """:meth:`firsts` of ``children`` in a row."""
        out = 0
        for child in children:
            classes, empty = self.firsts(child)
            out |= classes
            if not empty:
                return out, False
        return out, True

    def first_classes(self, node) -> tuple[bool, int]:
        """Whether ``node`` matches at a place is decided by the next character alone:
        ``(exact, cond)``, ``cond`` the classes (and the end-of-text bit) the next character
        must have for it to match; if ``exact``, it then matches. ``cond`` is an
        over-approximation always, so ``not exact`` still says which characters it cannot
        start at. Only whether a match exists matters (a lookahead's body): a tail that
        matches at every place (:func:`_always`) adds no condition, ``C{1,}``, ``C{1,}+``
        and ``(?>C+)`` match where C does, an alternation where one of its exact
        alternatives does if those cover where the others can."""
        full = self.every | self.eot
        k = node.kind
        if k == "set":
            return True, self.set_classes[node.value]
        if k == "eos":
            return True, self.eot
        if k == "atomic":
            return self.first_classes(node.children[0])
        if k == "rep":
            if node.lo == 0:
                return True, full
            exact, cond = self.first_classes(node.children[0])
            return exact and node.lo == 1, cond
        if k == "alt":
            found = [self.first_classes(child) for child in node.children if not self.never(child)]
            covered = reach = 0
            for exact, cond in found:
                reach |= cond
                if exact:
                    covered |= cond
            return all(exact or not cond & ~covered for exact, cond in found), reach
        if k == "seq":
            children = list(node.children)
            while children and _always(children[-1]):
                children.pop()
            if not children:
                return True, full
            if len(children) == 1:
                return self.first_classes(children[0])
            if _min_length(children[0]):
                return False, self.first_classes(children[0])[1]
        return False, full

    def compile(self, node, nxt: int) -> int:
        """The entry of ``node`` followed by ``nxt``."""
        if self.never(node):
            return self.add(_SET, 0, nxt)  # reads nothing: a thread at it is never kept
        k = node.kind
        if k == "set":
            return self.add(_SET, self.set_classes[node.value], nxt)
        if k == "seq":
            read, holds = 0, set()
            for i, child in enumerate(node.children):
                if read and child.kind == "look" and child.value and _at_bos_only(child.children[0]):
                    holds.add(i)  # (?!^...) after a character holds
                read += _min_length(child)
            for i in reversed(range(len(node.children))):
                if i not in holds:
                    nxt = self.compile(node.children[i], nxt)
            return nxt
        if k == "alt":
            entries = tuple(self.compile(child, nxt) for child in node.children if not self.never(child))
            return self.add(_SPLIT, entries, -1)
        if k == "rep":
            return self.repeat(node, nxt)
        if k == "atomic":
            body = node.children[0]
            if _choice_free(body):
                return self.compile(body, nxt)
            if body.kind == "rep" and body.mode != LAZY and self.one_char(body.children[0]) is not None:
                return self.possessive(self.one_char(body.children[0]), body.lo, body.hi, nxt)
            return self.atomic(lambda after: self.compile(body, after), nxt)
        if k == "look":
            body = node.children[0]
            classes = self.one_char(body)
            if classes is None:
                if body.kind == "bos" and not node.value:  # (?=^) is ^
                    return self.compile(body, nxt)
                exact, classes = self.first_classes(body)
                if not exact:  # the body runs beside the part after it (_Builder.step)
                    found = self.add(_FOUND, 0, -1)
                    return self.add(_LOOK, (bool(node.value), self.compile(body, found)), nxt)
                if not node.value:
                    return self.add(_COND, classes, nxt)
                return self.add(_COND, (self.every | self.eot) & ~classes, nxt)
            cond = (self.every & ~classes) | self.eot if node.value else classes
            return self.add(_COND, cond, nxt)
        if k == "bos":
            return self.add(_BOS, 0, nxt)
        if k == "eos":
            return self.add(_COND, self.eot, nxt)
        if k == "eol":
            if nxt == self.match:
                return self.add(_MATCH, 1, -1)  # operand 1: the match of $ (see _EOL_MATCH)
            # before more: the end of the text, or (?=\n\Z)
            final_newline = self.add(_SET, self.newline, self.add(_COND, self.eot, self.add(_FOUND, 0, -1)))
            return self.add(_SPLIT, (self.add(_COND, self.eot, nxt), self.add(_LOOK, (False, final_newline), nxt)), -1)
        raise NoDfa(f"the node {k!r}")

    def repeat(self, node, nxt: int) -> int:
        body, lo, hi = node.children[0], node.lo, node.hi
        if hi == 0:
            return nxt  # X{0}, X{0}+, X{0,0}?: no iteration, whatever X is
        if self.never(body):
            return nxt  # no iteration can match (compile() has dropped the loop if lo > 0)
        if node.mode == POSSESSIVE:
            classes = self.one_char(body)
            if classes is not None:
                return self.possessive(classes, lo, hi, nxt)
            if lo != hi or not _choice_free(body):  # X{lo,hi}+ is (?>X{lo,hi})
                return self.atomic(lambda after: self.loop(node, after), nxt)
        return self.loop(node, nxt)

    def atomic(self, body, nxt: int) -> int:
        """``(?>X)`` followed by ``nxt``, ``body(after)`` compiling X followed by ``after``: X
        between an _ENTER and an _EXIT, which the subset construction reads (:class:`_Builder`)."""
        return self.add(_ENTER, 0, body(self.add(_EXIT, 0, nxt)))

    def loop(self, node, nxt: int) -> int:
        """``X{lo,hi}`` or ``X{lo,hi}?`` (a possessive ``node`` as if greedy: :meth:`atomic` bounds it)."""
        body, lo, hi = node.children[0], node.lo, node.hi
        lazy = node.mode == LAZY
        # An optional iteration of a body that can match the empty string leaves the loop when
        # it reads nothing (as the backtracker's OP_MARK/OP_CHECK and the regex module do):
        # between a _MARK and a _CHECK, which the subset construction reads (_Builder.closure)
        empty = self.nullable(body)
        number = next(self.loops) if empty else -1

        def iteration(after: int) -> int:
            if not empty or after == nxt:  # (the last iteration goes on to the exit anyway)
                return self.compile(body, after)
            return self.add(_MARK, number, self.compile(body, self.add(_CHECK, (number, nxt), after)))

        if hi is None:
            loop = self.add(_SPLIT, (), -1)
            entry = iteration(loop)
            self.code[loop] = (_SPLIT, (nxt, entry) if lazy else (entry, nxt), -1)
            tail = loop
        else:
            tail = nxt
            for _ in range(hi - lo):
                entry = iteration(tail)
                tail = self.add(_SPLIT, (nxt, entry) if lazy else (entry, nxt), -1)
        for _ in range(lo):
            tail = self.compile(body, tail)
        return tail

    def possessive(self, classes: int, lo: int, hi: int | None, nxt: int) -> int:
        """``C{lo,hi}+``: the greedy run, each exit before ``hi`` only if no C follows."""
        stop = (self.every & ~classes) | self.eot
        if hi is None:
            loop = self.add(_SPLIT, (), -1)
            entry = self.add(_SET, classes, loop)
            leave = self.add(_COND, stop, nxt)
            self.code[loop] = (_SPLIT, (entry, leave), -1)
            tail = loop
        else:
            tail = nxt
            for _ in range(hi - lo):
                entry = self.add(_SET, classes, tail)
                leave = self.add(_COND, stop, nxt)
                tail = self.add(_SPLIT, (entry, leave), -1)
        for _ in range(lo):
            tail = self.add(_SET, classes, tail)
        return tail


def _choice_free(node) -> bool:
    """Whether ``node`` matches in at most one way at each place (no alternation, no
    repetition with a choice of count but a possessive run of one set, which takes the
    whole run): atomic grouping changes nothing for it."""
    k = node.kind
    if k in ("set", "bos", "eos", "eol", "look"):
        return True
    if k == "seq":
        return all(map(_choice_free, node.children))
    if k == "rep":
        if node.hi == 0 or (node.mode == POSSESSIVE and _one_set(node.children[0])):
            return True
        return node.lo == node.hi and _choice_free(node.children[0])
    if k == "atomic":
        return _choice_free(node.children[0])
    return False


def _one_set(node) -> bool:
    """Whether ``node`` reads exactly one character (a set, or an alternation of such)."""
    if node.kind == "set":
        return True
    if node.kind == "alt":
        return all(map(_one_set, node.children))
    return node.kind == "seq" and len(node.children) == 1 and _one_set(node.children[0])


def _min_length(node) -> int:
    """The fewest characters a match of ``node`` reads."""
    k = node.kind
    if k == "set":
        return 1
    if k == "seq":
        return sum(map(_min_length, node.children))
    if k == "alt":
        return min(map(_min_length, node.children), default=0)
    if k == "rep":
        return node.lo * _min_length(node.children[0])
    if k == "atomic":
        return _min_length(node.children[0])
    return 0


def _at_bos_only(node) -> bool:
    """Whether ``node`` matches only at the start of the text: it begins with ``^``/``\\A``."""
    k = node.kind
    if k == "bos":
        return True
    if k == "seq":
        return bool(node.children) and _at_bos_only(node.children[0])
    if k == "alt":
        return bool(node.children) and all(map(_at_bos_only, node.children))
    if k == "rep":
        return node.lo > 0 and _at_bos_only(node.children[0])
    if k == "atomic" or (k == "look" and not node.value):
        return _at_bos_only(node.children[0])
    return False


def _always(node) -> bool:
    """Whether ``node`` has a match at every place of every text: a loop that may take no
    iteration (a possessive one too: with nothing after it inside a lookahead, it takes
    what it can), or a group of such."""
    k = node.kind
    if k == "seq":
        return all(map(_always, node.children))
    if k == "alt":
        return any(map(_always, node.children))
    if k == "rep":
        return node.lo == 0 or _always(node.children[0])
    if k == "atomic" or (k == "look" and not node.value):
        return _always(node.children[0])
    return False


def _restrict(cond: int, tags: tuple, left: dict, found: dict) -> tuple[int, tuple, int]:
    """A thread's condition and tags once the threads before it in a step have left atomic
    groups (``left``) and matched lookaheads' bodies (``found``), see :meth:`_Builder.closure`:
    ``(cond, tags, rest)``, ``rest`` the classes on which a positive lookahead whose tag went
    still waits (a thread of its own, with the tags it had)."""
    for i, (label, how) in enumerate(tags):
        if how in (_IN, _PENDING):
            cond &= ~left.get(label, 0)
        elif how == _AFTER_NEG:
            cond &= ~found.get(label, 0)  # the body has matched: the lookahead fails
        elif how == _AFTER_POS and cond & found.get(label, 0):  # it holds (on those classes)
            held, held_tags, rest = _restrict(cond & found[label], tags[:i] + tags[i + 1 :], left, found)
            return held, held_tags, rest | (cond & ~found[label])
    return cond, tags, 0


class _Builder:
    """The subset construction over ordered thread lists (see the module docstring)."""

    def __init__(self, nfa: _Nfa, newline_classes: int, n_classes: int):
        self.nfa = nfa
        self.code = nfa.code
        self.newline = newline_classes
        self.n_classes = n_classes
        self.states: dict[tuple, int] = {(): 0}
        self.order: list[tuple] = [()]
        self.held = 0  # the NFA threads of all its states (MAX_THREADS_IN_ALL)
        self.live: dict[tuple[int, int], bool] = {}
        self.fresh = itertools.count(1 << 30)  # labels of atomic-group instances entered in a step

    def can_match(self, pc: int, cond: int) -> bool:
        """Whether a match can still end after a thread at the set ``pc`` whose next
        character must meet ``cond``: some way on where each set can read a character that
        meets the condition before it, and no ``^`` (``^`` and ``\\A`` never hold after a
        character). A thread that cannot never records a match and never drops another
        (only a match does), so a state need not keep it: it would read on, as far as its
        run goes, for nothing (``.+^`` would read every run of text to its end from every
        place, ``.{8,}+\\p{Mn}`` every line). Over-approximates (a condition is only tested
        against the set right after it), so only threads that truly cannot match go.

        The (instruction, condition) pairs reachable from the thread (up to pairs already
        known), then backwards from those that end a match or are known to lead to one;
        remembered for every pair met."""
        key = (pc, cond)
        if key in self.live:
            return self.live[key]
        full = self.nfa.every | self.nfa.eot
        before: dict[tuple[int, int], list] = {}
        todo, seen, ends = [key], {key}, []
        while todo:
            node = todo.pop()
            if node in self.live:  # known from an earlier thread: not followed again
                if self.live[node]:
                    ends.append(node)
                continue
            at, c = node
            kind, operand, nxt = self.code[at]
            if kind == _SET:
                after = [(nxt, full)] if operand & c else []
            elif kind == _SPLIT:
                after = [(target, c) for target in operand]
            elif kind == _COND:
                after = [(nxt, c & operand)] if c & operand else []
            elif kind == _MATCH:
                if self.match_cond(operand, c) & full:
                    ends.append(node)
                after = []
            elif kind in (_ENTER, _LOOK, _MARK):  # (whatever the lookahead's body does)
                after = [(nxt, c)]
            elif kind == _CHECK:
                after = [(nxt, c), (operand[1], c)]
            elif kind in (_EXIT, _FOUND):  # leaving an atomic group cuts off threads, and so
                ends.append(node)  # may a lookahead's match: such a thread must be kept
                after = [(nxt, c)] if kind == _EXIT else []
            else:  # ^ after a character
                after = []
            for other in after:
                before.setdefault(other, []).append(node)
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        live = set(ends)
        todo = list(ends)
        while todo:
            for node in before.get(todo.pop(), ()):
                if node not in live:
                    live.add(node)
                    todo.append(node)
        for node in seen:
            self.live.setdefault(node, node in live)  # (those known before stay as they were)
        return self.live[key]

    def match_cond(self, operand: int, cond: int) -> int:
        """The part of ``cond`` under which the match instruction with ``operand`` ends a
        match: all of it, or for ``$`` (``operand`` set) the end or a final newline."""
        return cond & (self.newline | self.nfa.eot) if operand else cond

    def closure(self, pc: int, cond: int, tags: tuple, at_bos: bool, out: list, seen: set, left: dict,
                found: dict) -> None:
        """Append to ``out``, in priority order, the threads ``pc`` reaches without reading.

        ``tags``: the thread's atomic-group instances (:meth:`step`); ``left``: instance ->
        the classes of the next character (and the end-of-text bit) on which a thread before
        has left it in this step. A thread of an instance left on the next character has been
        cut off on it (the backtracker never tries it: it takes the group's first way out),
        so its condition loses those classes. ``found``: lookahead instance -> the classes of
        the next character on which its body has matched: the part after a negative one loses
        them, the part after a positive one holds on them (its tag goes). A path also carries
        the loops whose optional iteration it has begun (_MARK) in this closure: such an
        iteration has read nothing when it ends (_CHECK), which then leaves the loop; one
        begun before has read the characters since (the backtracker's OP_CHECK compares the
        position with the one OP_MARK kept, and a path's future depends on nothing else of
        it: every other loop's iteration began before the character just read)."""
        stack = [(pc, cond, tags, ())]
        while stack:
            item = stack.pop()
            if item in seen:
                continue
            seen.add(item)
            pc, cond, tags, begun = item
            cond, tags, rest = _restrict(cond, tags, left, found)
            if rest:  # a positive lookahead holds on the classes of cond, not on rest
                stack.append((pc, rest, item[2], begun))
            if not cond:
                continue
            kind, operand, nxt = self.code[pc]
            if kind == _SET:
                if self.can_match(pc, cond):
                    self.append(out, pc, cond, tags)
            elif kind == _MATCH:
                if operand:  # $
                    cond = self.match_cond(operand, cond)
                    if cond:
                        self.append(out, _EOL_MATCH, cond, tags)
                else:
                    self.append(out, pc, cond, tags)
            elif kind == _SPLIT:
                stack.extend((target, cond, tags, begun) for target in reversed(operand))
            elif kind == _COND:
                if cond & operand:
                    stack.append((nxt, cond & operand, tags, begun))
            elif kind == _MARK:
                stack.append((nxt, cond, tags, begun + (operand,)))
            elif kind == _CHECK:
                number, leave = operand
                if number in begun:  # the iteration read nothing: the loop ends
                    stack.append((leave, cond, tags, tuple(n for n in begun if n != number)))
                else:
                    stack.append((nxt, cond, tags, begun))
            elif kind == _ENTER:
                stack.append((nxt, cond, tags + ((next(self.fresh), _IN),), begun))
            elif kind == _EXIT:
                at = max(i for i, (_, how) in enumerate(tags) if how == _IN)  # the innermost group
                label = tags[at][0]
                if tags[at + 1 :]:  # it may yet be cut off: so would the threads it cuts off
                    raise NoDfa("an atomic group left while a lookahead or an atomic group inside it is undecided")
                left[label] = left.get(label, 0) | cond
                # a thread the backtracker tries first is still inside: leaving waits on it
                waits = any((label, _IN) in other[2] for other in out)
                rest = tags[:at] + tags[at + 1 :] + (((label, _LEFT_NOW),) if waits else ())
                stack.append((nxt, cond, rest, begun))
            elif kind == _LOOK:  # the body first (it never matches: only whether it can counts)
                label = next(self.fresh)
                negative, body = operand
                stack.append((nxt, cond, tags + ((label, _AFTER_NEG if negative else _AFTER_POS),), begun))
                stack.append((body, cond, ((label, _BODY),), ()))
            elif kind == _FOUND:
                if len(tags) == 1:  # (only its _BODY tag)
                    found[tags[0][0]] = found.get(tags[0][0], 0) | cond
                else:  # the body's match waits on a lookahead or an atomic group inside it
                    self.append(out, pc, cond, tags)
            elif at_bos:  # _BOS
                stack.append((nxt, cond, tags, begun))

    @staticmethod
    def append(out: list, pc: int, cond: int, tags: tuple) -> None:
        # a thread after another at the same instruction, in the same atomic groups, whose
        # condition holds whenever its own does can never do anything the first does not do first
        for other_pc, other_cond, other_tags in out:
            if other_pc == pc and cond & ~other_cond == 0 and other_tags == tags:
                return
        out.append((pc, cond, tags))

    def settle(self, out: list) -> list:
        """The threads of a step as a state holds them: a thread that left an instance
        which no thread is inside any more stands (its tag goes), one that left it in this
        step is pending, and instances are numbered in the order they first appear."""
        inside = {label for _, _, tags in out for label, how in tags if how in (_IN, _BODY)}
        waiting = {label for _, _, tags in out for label, how in tags if how in (_AFTER_POS, _AFTER_NEG)}
        names: dict[int, int] = {}
        settled: list = []
        for pc, cond, tags in out:
            kept = []
            for label, how in tags:
                if how == _LEFT_NOW:
                    how = _PENDING
                if label in inside or how == _IN:
                    kept.append((names.setdefault(label, len(names)), how))
                elif how == _BODY and label not in waiting:
                    break  # no thread waits on the lookahead any more
                elif how == _AFTER_POS:
                    break  # its body can no longer match: the lookahead fails
                # (left an instance no thread is inside: it stands; a negative lookahead holds)
            else:
                self.append(settled, pc, cond, tuple(kept))
        return settled

    def state(self, threads: list) -> int:
        if len(threads) > MAX_THREADS:
            raise NoDfa(f"the automaton would need more than {MAX_THREADS} NFA threads in a state")
        key = tuple(threads)
        found = self.states.get(key)
        if found is None:
            if len(self.order) >= MAX_STATES:
                raise NoDfa(f"the automaton would need more than {MAX_STATES} states")
            self.held += len(threads)
            if self.held > MAX_THREADS_IN_ALL:
                raise NoDfa(f"the automaton would need more than {MAX_THREADS_IN_ALL} NFA threads in all its states")
            found = self.states[key] = len(self.order)
            self.order.append(key)
        return found

    def step(self, threads: tuple, k: int) -> tuple[list, int]:
        """The threads after reading a character of class ``k``, and what ends before it: a
        match (``MATCHED``), a match held (``HOLD``), the held match committed (``COMMITTED``).

        Atomic groups (``(?>X)``, and ``X{lo,hi}+`` as ``(?>X{lo,hi})``): a thread carries a
        tag per instance of a group it is inside (one per thread that entered it: the
        backtracker runs X afresh each time it gets there), or that it has left while a
        thread before it (the backtracker tries it first) is still inside. The first way
        out of an instance, in priority order, is the group's match: leaving it cuts off the
        threads of the instance after the one that leaves (on the next character's classes
        for which it leaves, :meth:`closure`), and a thread inside before it that leaves
        later cuts off it and what follows it.

        A match that such a thread (or a lookahead's body) decides only after the character
        after the match is *held* (Laurikari's tagged DFA with one register: "NFAs with
        Tagged Transitions", 2000): the transition says HOLD (the splitting loop keeps the
        position), and a ``_HELD`` thread with the undecided tags stands at the match's
        place among the threads, so that the threads after it run on (they count if it is
        dropped). A later step decides it as it would the match: cut off (the thread goes),
        standing (COMMITTED: the held position is the last match; the threads after it go), or
        still waiting. A match of a thread after a held one is recorded as any (the held
        one, if it stands, is committed over it later); a second match held while one from
        an earlier character waits would need a second register: NoDfa."""
        bit = 1 << k
        full = self.nfa.every | self.nfa.eot
        out: list = []
        seen: set = set()
        left: dict[int, int] = {}
        found: dict[int, int] = {}
        flags = 0
        waiting = False  # a match held before this character waits on after it
        for index, (pc, cond, tags) in enumerate(threads):
            if not cond & bit:
                continue
            if pc in (_EOL_MATCH, _LAG_MATCH):
                if pc == _EOL_MATCH:  # cond held: k is a newline; the match holds if the text ends next
                    self.restricted(out, _LAG_MATCH, self.nfa.eot, tags, left, found)
                continue
            if pc == _HELD:
                known = [self.decided(label, how, out, left, found) for label, how in tags]
                if False in known:
                    continue  # cut off, or its lookahead fails: the threads after it count
                if None not in known:
                    return self.settle(out), flags | COMMITTED
                waiting = True
                self.restricted(out, _HELD, full, tuple(t for t, ok in zip(tags, known) if ok is None), left, found)
                continue
            kind, classes, nxt = self.code[pc]
            if kind == _FOUND:  # (whether a lookahead's body matches, not where: it waits on)
                self.closure(pc, full, tags, False, out, seen, left, found)
                continue
            if kind == _MATCH:
                known = [self.decided(label, how, out, left, found) for label, how in tags]
                if False in known:
                    continue  # cut off on the character after k, or its lookahead fails
                if None not in known:
                    return self.settle(out), flags | MATCHED
                if waiting or any(other[0] == _HELD and other[1] & bit for other in threads[index + 1 :]):
                    raise NoDfa("a match held while one held at an earlier character is undecided (one"
                                " register keeps a held match's position)")
                flags |= HOLD
                self.restricted(out, _HELD, full, tuple(t for t, ok in zip(tags, known) if ok is None), left, found)
                continue
            if classes & bit:
                self.closure(nxt, full, tags, False, out, seen, left, found)
        return self.settle(out), flags

    def restricted(self, out: list, pc: int, cond: int, tags: tuple, left: dict, found: dict) -> None:
        """Append the pseudo-thread ``pc`` (a match after ``$`` waiting for the end, or a held
        match) with ``cond`` and ``tags`` as the threads before it in this step leave it
        (:func:`_restrict`: a positive lookahead that holds on some classes only makes two)."""
        while cond:
            held, held_tags, rest = _restrict(cond, tags, left, found)
            if held:
                self.append(out, pc, held, held_tags)
            cond = rest

    def decided(self, label: int, how: int, out: list, left: dict, found: dict) -> bool | None:
        """Whether a match with the tag ``(label, how)``, ending before the character just
        read, stands (True), is cut off (False) or waits on threads still running (None),
        once the threads before it have read that character (``out``, ``left``, ``found``:
        :meth:`closure`)."""
        full = self.nfa.every | self.nfa.eot
        if how == _PENDING:  # left an atomic group while a thread before it was inside
            if left.get(label) == full:
                return False
            running = label in left or any((label, _IN) in other[2] for other in out)
        else:  # after a lookahead
            if found.get(label) == full:
                return how == _AFTER_POS
            running = label in found or any((label, _BODY) in other[2] for other in out)
            if not running:
                return how == _AFTER_NEG
        return None if running else True

    def at_end(self, threads: tuple) -> int:
        """What the end of the text accepts: 0 nothing, 1 a match ending there, 2 one ending
        a byte before it (``$`` before a final newline), 3 the held match (:meth:`step`)."""
        found = set()
        for pc, cond, tags in threads:
            # a thread inside an atomic group or a lookahead's body ends there: a match after
            # the group stands, a lookahead's body matches only where a thread has found it
            if not cond & self.nfa.eot or any((how == _AFTER_POS) != (label in found) for label, how in tags
                                              if how in (_AFTER_POS, _AFTER_NEG)):
                continue
            if pc == _LAG_MATCH:
                return 2
            if pc == _HELD:
                return 3
            if pc == _EOL_MATCH or self.code[pc][0] == _MATCH:
                return 1
            if self.code[pc][0] == _FOUND:
                found.add(next(label for label, how in tags if how == _BODY))
        return 0


def build_dfa(root, set_bits: list[int], sig_mask: list[int], newline_set: int | None,
              nullable) -> dict[str, memoryview]:
    """The leftmost-first DFA of the parsed pattern ``root``.

    Parameters
    ----------
    root : bpetrain.splitting._compiler.Node
        The pattern, not nullable.
    set_bits : list of int
        Set index -> its bit in the signatures.
    sig_mask : list of int, length n_classes
        The signatures: class -> the bits of the sets its characters are in.
    newline_set : int or None
        The index of the set ``\\n`` (given to every ``$``), None if the pattern has no ``$``.
    nullable : callable
        Whether a node can match without reading a character (the compiler's analysis).

    Returns
    -------
    dict of memoryview
        (:func:`~bpetrain.splitting._charsets.array_view`: made without numpy)
        ``dfa_trans`` (uint32, shape (n_states, width), width the number of classes
        rounded up to a power of two, at least 8: :func:`_fast_table`, state 0 dead),
        ``dfa_eot`` (uint8, shape (n_states,): 0 to 3, see :meth:`_Builder.at_end`),
        ``dfa_start`` (uint32, shape (2,): the row offset (state * width) of the start
        state away from and at the string's start), ``dfa_cover`` (uint8, shape
        (n_states, width // 8), or (0,) for none: :func:`_cover_table`), ``dfa_dominate``
        (uint8, shape (n_states, (n_states + 7) // 8), or (0,) for none: :func:`_dominance_table`),
        and where a match is held (:meth:`_Builder.step`) ``dfa_held`` (uint8, shape (n_states,
        width): KEEP, COMMIT, read before the transition's own flags; none on a CUT, whose next
        state is dead: a held match is a thread), with ``dfa_eot`` 3 where the held match ends
        the piece at the end of the text; ``dfa_rev`` and ``dfa_rev_start`` (:func:`_reverse_table`).

    Raises
    ------
    NoDfa
        If the pattern has a construct the DFA does not express, or too many states.
    """
    n_classes = len(sig_mask)
    if n_classes > MAX_CLASSES:
        raise NoDfa(f"more than {MAX_CLASSES} character classes")
    set_classes = {}
    signatures = [int(s) for s in sig_mask]
    for index, bit in enumerate(set_bits):
        mask = 0
        for k, signature in enumerate(signatures):
            if signature >> bit & 1:
                mask |= 1 << k
        set_classes[index] = mask
    newline = set_classes[newline_set] if newline_set is not None else 0
    nfa = _Nfa(set_classes, n_classes, nullable, newline)
    entry = nfa.compile(root, nfa.match)
    builder = _Builder(nfa, newline, n_classes)
    starts = []
    for at_bos in (False, True):
        threads: list = []
        builder.closure(entry, nfa.every | nfa.eot, (), at_bos, threads, set(), {}, {})
        starts.append(builder.state(builder.settle(threads)))
    rows = []
    held = []  # per state and class: KEEP, COMMIT
    i = 1
    while i < len(builder.order):
        threads = builder.order[i]
        row = []
        held_row = []
        for k in range(n_classes):
            out, flags = builder.step(threads, k)
            row.append(builder.state(out) << 1 | flags & MATCHED)
            held_row.append((KEEP if flags & HOLD else 0) | (COMMIT if flags & COMMITTED else 0))
        rows.append(row)
        held.append(held_row)
        i += 1
    width = max(8, 1 << max(n_classes - 1, 0).bit_length())
    pad = [0] * (width - n_classes)
    trans = _fast_table([[0] * width] + [row + pad for row in rows], starts[0], width)
    at_end = [builder.at_end(t) for t in builder.order]
    out = {"dfa_trans": array_view("I", [e for row in trans for e in row], (len(trans), width)),
           "dfa_eot": array_view("B", at_end),
           "dfa_start": array_view("I", [start * width for start in starts])}
    if any(map(any, held)):
        # (the cover and dominance tables reason on matches the transitions record: a held
        # one is recorded later; the splitting loop with held matches reads neither)
        out.update(dfa_held=array_view("B", bytes(width) + bytes(h for row in held for h in row + pad),
                                       (len(trans), width)),
                   dfa_cover=array_view("B", b""), dfa_dominate=array_view("B", b""))
    else:
        out.update(dfa_cover=_cover_table(builder, rows, starts[0], width),
                   dfa_dominate=_dominance_table(rows, n_classes, at_end))
    out.update(_reverse_table(rows, held, width, at_end, starts[0]))
    return out


#: The most transitions (states times the row width) of :func:`_reverse_table`'s automaton
#: (beyond: none; a megabyte of uint32).
MAX_REVERSE_ENTRIES = 1 << 18
#: The most (reverse state, thread) steps :func:`_reverse_table` may take (beyond: none).
MAX_REVERSE_WORK = 1 << 20


def _reverse_table(rows: list[list[int]], held: list[list[int]], width: int, at_end: list[int],
                   start: int) -> dict[str, memoryview]:
    """Where a match can start, read from the end of the text back: the reverse automaton.

    An attempt from a place ``i`` (the start state, away from the string's start) finds a
    match when its transitions record one (MATCHED, or COMMIT of a held match) before no
    thread is left, or it reaches the end of the text in a state that matches there. Let
    ``R_i`` be the set of DFA states from which the text after ``i`` leads to a match: a
    state is in it when its transition on the character at ``i`` records a match, or goes to
    a state in ``R_(i + 1)``; at the end of the text, the states that match there. So
    ``R_i`` is a function of ``R_(i + 1)`` and the character's class: a DFA over sets of
    states, read backwards (the subset construction on the reversed transitions, as RE2
    and regex-automata build reverse DFAs to find where a match starts; Russ Cox, "Regular
    Expression Matching in the Wild", 2010). A match starts at ``i`` exactly when the start
    state is in ``R_i``. Reading a window of text backwards from a place that is not the end
    of the text, the loop starts from the set of every state: a superset of the true one, so
    the places it marks are a superset too (an attempt from a marked place that fails costs
    time, not pieces), and the marks are exact once the sets agree.

    The splitting loop (``_matcher.pyx``, ``_rev_fill``, ``_rev_next``) reads windows of the
    text so where its attempts often fail, and goes from a failed attempt straight to the
    next marked place, where it went back to the character after the attempt's first (and
    whatever the cover table and the probes skip).

    Returns
    -------
    dict of memoryview
        ``dfa_rev`` (uint32, shape (n_reverse, width): the next reverse state's row offset
        (state * width) ``|`` whether a match starts before the character read, by its
        class; or (0,) for none: more than :data:`MAX_REVERSE_ENTRIES` transitions or
        :data:`MAX_REVERSE_WORK` steps, or no place ever ruled out), ``dfa_rev_start``
        (uint32, shape (2,): the row offsets of the reverse state at a window's end that is
        not, and that is, the end of the text).
    """
    none = {"dfa_rev": array_view("I", []), "dfa_rev_start": array_view("I", [])}
    n_states = len(rows) + 1
    if not start:
        return none
    n_classes = len(rows[0]) if rows else 0
    # per state q: the classes on which it records a match, and the (class, earlier state)
    # pairs that go to it without one
    accept = [0] * n_classes
    into: list[dict[int, int]] = [{} for _ in range(n_states)]
    for q in range(1, n_states):
        row, held_row = rows[q - 1], held[q - 1]
        for k in range(n_classes):
            e = row[k]
            if e & 1 or held_row[k] & COMMIT:
                accept[k] |= 1 << q
            elif e >> 1:
                to = into[e >> 1]
                to[k] = to.get(k, 0) | 1 << q
    every = ((1 << n_states) - 1) & ~1
    at_text_end = sum(1 << q for q in range(1, n_states) if at_end[q])
    order = [every]
    index = {every: 0}
    if at_text_end not in index:
        index[at_text_end] = 1
        order.append(at_text_end)
    trans: list[int] = []
    work = 0
    i = 0
    while i < len(order):
        states = order[i]
        nxt = list(accept)
        for q in _bits(states):
            for k, earlier in into[q].items():
                nxt[k] |= earlier
            work += len(into[q]) + 1
        if work > MAX_REVERSE_WORK:
            return none
        for k in range(n_classes):
            j = index.get(nxt[k])
            if j is None:
                j = index[nxt[k]] = len(order)
                order.append(nxt[k])
                if len(order) * width > MAX_REVERSE_ENTRIES:
                    return none
            trans.append(j)
        trans.extend([0] * (width - n_classes))
        i += 1
    starts_here = [states >> start & 1 for states in order]
    if all(starts_here[j] for j in set(trans)):  # (a window's first state marks no place)
        return none
    return {"dfa_rev": array_view("I", [j * width | starts_here[j] for j in trans], (len(order), width)),
            "dfa_rev_start": array_view("I", [0, index[at_text_end] * width])}


#: The most (state, class) pairs :func:`_cover_table` looks at (beyond: no table).
MAX_COVER_PAIRS = 1 << 17


def _cover_table(builder: _Builder, rows: list[list[int]], restart: int, width: int) -> memoryview:
    """Where a failed attempt tells that the attempts after it fail too.

    An attempt that reads from a piece start ``p`` to ``f`` without recording a match fails
    (no thread left at ``f``). Then so does the attempt from a place ``x`` in ``(p, f]``
    where, on the character at ``x`` (class ``k``), the start state's threads after it are
    among those of the failed attempt's state ``S`` after it: from there on the attempt from
    ``x`` keeps a part of the failed one's threads (a thread's future depends on its
    instruction and condition alone), so it records no match either and has no thread left
    by ``f``; and with no match recorded, the order of threads (which decides only which
    match wins) plays no part. ``\\p{L}+\\p{Pf}`` on a word: the attempt from the first
    letter fails after the word, and those from every other letter with it, so the next
    attempt starts after the word, not at each of its letters (the loop went back to each:
    quadratic in the word's length). The splitting loop (``_matcher.pyx``, ``_dfa_retry``,
    and ``_dfa_shuffle_run.h``) starts the next attempt at the first place of a failed one
    whose bit is clear.

    Threads are compared by what they do (:func:`_behaviours`: two instructions that read the
    same set into the same next one are alike) and by the classes their condition lets
    through. This is RE2's and regex-automata's view of a DFA state as a set of NFA states,
    used to tell one attempt's future from another's, not to build an unanchored DFA.

    Returns
    -------
    memoryview of uint8, shape (n_states, width // 8), or shape (0,) for none
        Bit ``k % 8`` of byte ``k // 8`` of row ``S``: an attempt from a character of class
        ``k`` fails if one failed through it in state ``S`` (never set where ``S`` records a
        match before it). No rows (nothing gained, or more than :data:`MAX_COVER_PAIRS`
        pairs to look at) when no bit is set apart from the start state's.
    """
    n_states = len(builder.order)
    if n_states * builder.n_classes > MAX_COVER_PAIRS or restart == 0:  # (0: nothing ever matches)
        return array_view("B", b"")
    behaves = _behaviours(builder.code)

    def threads(state: int) -> list[tuple[int, int]]:
        out = []
        for i, (pc, cond, tags) in enumerate(builder.order[state]):
            if pc >= 0 and builder.code[pc][0] == _SET:
                cond &= builder.code[pc][1]  # (the character must be in the set anyway)
            # a thread in an atomic group's instance depends on the other threads of it: alike
            # to none but itself
            out.append(((state, i) if tags else behaves.get(pc, pc), cond))
        return out

    known: dict[tuple[int, int], bool] = {}

    def among(small: int, large: int) -> bool:
        if small == large or small == 0:
            return True
        key = (small, large)
        if key not in known:
            mine = threads(large)
            known[key] = large != 0 and all(any(b == b2 and c & ~c2 == 0 for b2, c2 in mine)
                                            for b, c in threads(small))
        return known[key]

    out = bytearray(n_states * (width // 8))
    useful = False
    from_start = rows[restart - 1]
    for state in range(1, n_states):
        row = rows[state - 1]
        for k in range(builder.n_classes):
            if (row[k] | from_start[k]) & 1 or not among(from_start[k] >> 1, row[k] >> 1):
                continue
            out[state * (width // 8) + k // 8] |= 1 << (k % 8)
            useful = useful or (state != restart and from_start[k] >> 1 != 0)
    if not useful:
        return array_view("B", b"")
    return array_view("B", bytes(out), (n_states, width // 8))


#: The most (state, state, class) triples :func:`_dominance_table` may look at (beyond: no table).
MAX_DOMINANCE_WORK = 1 << 21


def _dominance_table(rows: list[list[int]], n_classes: int, at_end: list[int]) -> memoryview:
    """Which states read no further and find no more than which others, where those find nothing.

    State ``X`` is *dominated* by state ``Y`` when, on every text that ``Y`` reads without
    recording a match until it has no thread left, ``X`` records no match either and has no
    thread left by then (it may run out sooner). The splitting loop keeps the states of an
    attempt that read on past its last match (or found none) until it had no thread left
    (``_matcher.pyx``, ``_dfa_record``); a later attempt that reaches one of those places in a
    state the kept one dominates there ends as it would have at the kept attempt's end: it
    goes back to its last match, or has none. The equal state is the case the loop knew
    before; dominance catches an attempt that counts (``\\P{Po}{8,}@`` from a place 1 character
    into the run, against the kept attempt's 8 or more), and stops it at once.

    This is simulation (language inclusion, restricted to texts without a match) between the
    states of one DFA, computed as the greatest relation closed under the transitions: a pair
    fails where ``Y``'s transition on a class records no match and ``X``'s records one, or
    where ``Y`` has no thread left after the class and ``X`` still has, or where ``X`` has a
    match at the end of the text and ``Y`` none (the attempt that failed there, ``_dfa_retry``
    at the end, rules out none that ends so), and where both go on
    without a match to a pair that fails (a backward search from the failing pairs, as
    Paige-Tarjan-style refinement does over a product automaton). ``Y``'s transitions that
    record a match impose nothing: a kept attempt records none after its last match.

    Parameters
    ----------
    rows : list of list of int
        ``rows[state - 1][k] = next << 1 | matched`` for the live states ``1..n_states - 1``
        and classes ``k < n_classes`` (state 0: no thread left).
    n_classes : int
        The classes.
    at_end : list of int, length n_states
        Whether a match ends at the end of the text in each state (:meth:`_Builder.at_end`, 0:
        none): an attempt that fails at the end of the text dominates no state that matches
        there.

    Returns
    -------
    memoryview of uint8, shape (n_states, (n_states + 7) // 8), or shape (0,) for none
        Bit ``Y % 8`` of byte ``Y // 8`` of row ``X``: ``X`` is dominated by ``Y`` (``X``,
        ``Y`` live). No rows where no state is dominated by another, or the work would pass
        :data:`MAX_DOMINANCE_WORK`.
    """
    n_states = len(rows) + 1
    if n_states * n_states * n_classes > MAX_DOMINANCE_WORK or n_states < 3:
        return array_view("B", b"")
    live = ((1 << n_states) - 1) & ~1
    # by class: the states whose transition records no match and leaves no thread (dead), and
    # for each next state, those that go to it without a match (into)
    dead = [0] * n_classes
    into = [[0] * n_states for _ in range(n_classes)]
    came = [[[] for _ in range(n_states)] for _ in range(n_classes)]  # the same as lists
    for state in range(1, n_states):
        for k, e in enumerate(rows[state - 1][:n_classes]):
            if e & 1:
                continue
            if e >> 1:
                into[k][e >> 1] |= 1 << state
                came[k][e >> 1].append(state)
            else:
                dead[k] |= 1 << state
    going = [0] * n_classes
    for k in range(n_classes):
        for states in into[k]:
            going[k] |= states
    # bad[X]: the Y that do not dominate X; first where one class tells
    bad = [0] * n_states
    no_end = 0  # the states with no match at the end of the text
    for y in range(1, n_states):
        if not at_end[y]:
            no_end |= 1 << y
    for x in range(1, n_states):
        if at_end[x]:
            bad[x] |= no_end
        for k, e in enumerate(rows[x - 1][:n_classes]):
            if e & 1:  # X records a match where Y records none
                bad[x] |= dead[k] | going[k]
            elif e >> 1:  # X goes on where Y has no thread left
                bad[x] |= dead[k]
    work = [(x, y) for x in range(1, n_states) for y in _bits(bad[x])]
    while work:
        a, b = work.pop()
        for k in range(n_classes):
            ys = into[k][b]
            if not ys:
                continue
            for x in came[k][a]:
                new = ys & ~bad[x]
                if new:
                    bad[x] |= new
                    work.extend((x, y) for y in _bits(new))
    row_bytes = (n_states + 7) // 8
    out = bytearray(n_states * row_bytes)
    useful = False
    for x in range(1, n_states):
        good = live & ~bad[x]
        useful = useful or good != 1 << x
        out[x * row_bytes:(x + 1) * row_bytes] = good.to_bytes(row_bytes, "little")
    if not useful:
        return array_view("B", b"")
    return array_view("B", bytes(out), (n_states, row_bytes))


def _bits(x: int):
    """The indices of the bits set in ``x``, lowest first."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def _behaviours(code: list[tuple]) -> dict[int, int]:
    """Instruction -> a number shared by the instructions that do the same (read the same set,
    test the same condition, into ones that do the same, ...): hash-consing the NFA, in the
    order it was built (an instruction's ``next`` was built before it, but for a loop's split,
    whose body comes after it: that one is compared by its own number)."""
    ids: dict[tuple, int] = {}
    out: dict[int, int] = {}
    for pc, (kind, operand, nxt) in enumerate(code):
        if kind == _SPLIT:
            shape = (kind, tuple(out[t] if t < pc else ("pc", t) for t in operand))
        elif kind in (_MATCH, _FOUND):
            shape = (kind, operand)
        else:
            shape = (kind, operand, out[nxt] if nxt < pc else ("pc", nxt))
        out[pc] = ids.setdefault(shape, len(ids))
    return out


#: Flags in the low bits of a transition (the next state's row offset is a multiple of 8).
CUT, MATCH, SLOW = 1, 2, 4
#: Flags of a transition in ``dfa_held`` (:func:`build_dfa`), read before the transition's own:
#: a match ends before the character, held (keep its position); the held match stands (the
#: kept position is the last match).
KEEP, COMMIT = 1, 2


def _fast_table(basic: list[list[int]], restart: int, width: int) -> list[list[int]]:
    """The transitions as the splitting loop reads them: ``row offset of the next state |
    flags``, with the usual way a piece ends folded in.

    From ``basic[state][class] = next << 1 | matched`` (``width`` classes a row, state 0
    dead): a live next state is its row offset, with MATCH if a match ends before the
    character. A dead one after a match that ends before the character (the piece ends
    there, the usual case) is CUT and the start state's transition on the same character (a
    piece starts with it), or CUT | SLOW if no piece can start with it. A dead one without
    is SLOW: the loop goes back to the last match (or skips a character where nothing
    matches).
    """
    again = [e >> 1 for e in basic[restart]]
    out = []
    for row in basic:
        new = []
        for k, e in enumerate(row):
            if e >> 1:
                new.append((MATCH if e & 1 else 0) | (e >> 1) * width)
            elif e & 1:
                new.append(again[k] * width | CUT if again[k] else CUT | SLOW)
            else:
                new.append(SLOW)
        out.append(new)
    return out


def _joint_classes(a: dict[str, memoryview], b: dict[str, memoryview]) -> dict[tuple[int, int], int]:
    """The pairs (class in ``a``, class in ``b``) that some code point has, each with one of
    those code points (printable ASCII first, then the lowest), those of printable ASCII first:
    read per pair of blocks (``stage1``) the two programs' two-stage tables put code points in."""
    stage1_a, stage1_b = a["stage1"].tolist(), b["stage1"].tolist()
    stage2_a, stage2_b = a["stage2"].tolist(), b["stage2"].tolist()
    members = {}
    seen = set()
    for high, blocks in enumerate(zip(stage1_a, stage1_b)):
        if blocks in seen:
            continue
        seen.add(blocks)
        block_a, block_b = blocks
        row = list(zip(stage2_a[block_a * 256 : block_a * 256 + 256], stage2_b[block_b * 256 : block_b * 256 + 256]))
        if not members.keys() >= set(row):
            for low in _PREFERRED if high == 0 else range(256):
                members.setdefault(row[low], high << 8 | low)
    return dict(sorted(members.items(), key=lambda item: (item[1] not in _PRINTABLE, item[1])))


#: The code points below U+0100 in the order :func:`_joint_classes` takes one of a class:
#: printable ASCII, then the others.
_PRINTABLE = range(0x20, 0x7F)
_PREFERRED = sorted(range(256), key=lambda cp: cp not in _PRINTABLE)


def first_difference(a: dict[str, memoryview], b: dict[str, memoryview], reads=None) -> str | None:
    """A shortest text on which two compiled patterns' DFAs part, or None if they cut every
    text into the same pieces.

    The classic equivalence test of two DFAs (Hopcroft and Karp's, without the union-find),
    on what the splitting loop does rather than on the tables themselves: walk, breadth
    first, the pairs of states the two reach on the same text, over the classes of both
    patterns at once (each code point's pair of classes), with whether the last matches they
    recorded in the current piece end at the same place. Every transition must end a piece
    the same way (CUT, SLOW), a SLOW and the end of the text must find the same last match,
    and the end of the text must accept alike. ``a{1,3}+`` and ``a{1,3}`` then agree as a
    whole pattern, though the second records matches the first does not.

    With ``reads``, the question is the 64-byte blocks' (``_ascii_blocks.h``): whether ``b``'s
    pieces, as the blocks give them in a run of the characters they read (those of the
    joint classes ``reads``), are ``a``'s too, whatever text comes after the run. The walk
    goes on over those classes alone, each checked as above. On any other class it stops,
    and asks only what the blocks rely on: the blocks give no piece that ends at the run's
    end or later, so ``b`` may end its piece before that character (CUT), go on past it
    with a match that ends there or later (MATCH, or a state from which it records one
    before it can fail: not :func:`_may_fall_back`), or start a piece with it (the start
    states); if it goes back to its last match (SLOW), ``a`` must go back to the same one.

    Parameters
    ----------
    a, b : dict of memoryview or numpy.ndarray
        Programs from :func:`bpetrain.splitting._compiler.compile_program` under the same
        Unicode table, each with a DFA; with ``reads``, neither holding matches (``dfa_held``).
    reads : set of (int, int), optional
        The joint classes (a class of ``a``, one of ``b``: :func:`_joint_classes`) of the
        characters the blocks read; None: every character.

    Returns
    -------
    str or None
        The characters (one of each class on the way) up to and with the one where the two
        first end a piece, or stop, otherwise, or up to where the end of the text finds them
        apart. The pieces may part only once more text follows (where one attempt goes back
        to its last match and the other takes the end of the text), or the attempt from a
        later character may make them meet again: the text is where they start to differ.

    Raises
    ------
    ValueError
        If either has no DFA, or ``reads`` is given and either holds matches.
    """
    if len(a["dfa_reason"]) or len(b["dfa_reason"]):
        raise ValueError("first_difference compares two DFAs: a program without one has none to compare")
    if reads is not None and ("dfa_held" in a or "dfa_held" in b):
        raise ValueError("first_difference reads a part of the characters only with DFAs that hold no matches")
    members = _joint_classes(a, b)
    trans_a, trans_b = (list(itertools.chain.from_iterable(x["dfa_trans"].tolist())) for x in (a, b))
    width_a, width_b = a["dfa_trans"].shape[1], b["dfa_trans"].shape[1]
    todo = collections.deque((off_a, off_b, True) for off_a, off_b in zip(a["dfa_start"].tolist(),
                                                                           b["dfa_start"].tolist()))
    came = dict.fromkeys(todo)  # each pair reached: the pair before it and the code point that took it there
    if reads is not None:
        falls_back = _may_fall_back(b, {k_b for _, k_b in members})
        # a start pair starts a piece with the character, unless b comes back to its start state
        starts_b = set(b["dfa_start"].tolist())
        fresh = set(todo) if not any(e & ~7 in starts_b for e in trans_b) else set()

    def text_to(node, last=None) -> str:
        cps = [] if last is None else [last]
        while came[node] is not None:
            node, cp = came[node]
            cps.append(cp)
        return "".join(map(chr, reversed(cps)))

    while todo:
        node = todo.popleft()
        off_a, off_b, same = node
        at_end = int(a["dfa_eot"][off_a // width_a])
        if at_end != b["dfa_eot"][off_b // width_b] or (at_end == 0 and not same):
            return text_to(node)
        for (k_a, k_b), cp in members.items():
            e_a, e_b = int(trans_a[off_a + k_a]), int(trans_b[off_b + k_b])
            if reads is not None and (k_a, k_b) not in reads:  # a character the blocks leave
                if e_b & SLOW and not e_b & CUT:
                    if e_a & (CUT | SLOW) != SLOW or not same:
                        return text_to(node, cp)
                elif not e_b & (CUT | MATCH) and node not in fresh and (e_b & ~7) // width_b in falls_back:
                    return text_to(node, cp)
                continue
            if e_a & (CUT | SLOW) != e_b & (CUT | SLOW):
                return text_to(node, cp)
            if e_a & SLOW:
                if not e_a & CUT and not same:  # both go back to their last match
                    return text_to(node, cp)
                continue
            if e_a & CUT:
                after = True
            elif e_a & MATCH and e_b & MATCH:
                after = True
            else:
                after = same and not (e_a | e_b) & MATCH
            nxt = (e_a & ~7, e_b & ~7, after)
            if nxt not in came:
                came[nxt] = (node, cp)
                todo.append(nxt)
    return None


def _may_fall_back(b: dict[str, memoryview], classes: set[int]) -> set[int]:
    """The states of ``b``'s DFA from which it may end its piece at a match it recorded
    before reaching them: by going back to its last match (SLOW, or the end of the text
    without a match there) before it records another, on some characters of the classes
    ``classes``."""
    trans, eot = b["dfa_trans"].tolist(), b["dfa_eot"].tolist()
    rows = [[row[k] for k in sorted(classes)] for row in trans]
    width = b["dfa_trans"].shape[1]
    out = {q for q in range(1, len(rows)) if eot[q] == 0 or any(e & SLOW and not e & CUT for e in rows[q])}
    grew = True
    while grew:  # (and those from which it reads on into one without recording a match)
        grew = False
        for q in range(1, len(rows)):
            if q not in out and any(not e & (CUT | SLOW | MATCH) and (e & ~7) // width in out for e in rows[q]):
                out.add(q)
                grew = True
    return out


def rules_alphabet(a: dict[str, memoryview], b: dict[str, memoryview], readable: bytes,
                   most: int = 8) -> list[tuple[int, int]] | None:
    """The code points the 64-byte blocks must leave to ``a``'s program for them to read
    its pieces by the rules of the reference ``b``, when the two cut some text apart: the
    classes (of both, :func:`_joint_classes`) of the last character not of an ASCII
    character's class on each text where :func:`first_difference` with ``reads`` finds them
    apart, one class at a time, at most ``most`` of them. A pattern that leaves out a script
    the reference takes as letters (Kimi K2's ``[\\p{L}&&[^\\p{Han}]]``) is read so, but for
    that script.

    Parameters
    ----------
    a, b : dict of memoryview or numpy.ndarray
        As :func:`first_difference` takes them with ``reads``.
    readable : bytes
        For each code point below U+10000, whether the blocks may read it (1) or not (0):
        :func:`bpetrain.splitting._blocks.readable`. ASCII must be read: never left out.

    Returns
    -------
    list of (int, int) or None
        The code points to leave out, as ranges (first, last), both in; None if no such
        choice is found (the two part on ASCII, or on more than ``most`` classes).
    """
    if "dfa_held" in a or "dfa_held" in b:
        return None
    stage1_a, stage1_b = a["stage1"].tolist(), b["stage1"].tolist()
    stage2_a, stage2_b = a["stage2"].tolist(), b["stage2"].tolist()

    def joint(cp: int) -> tuple[int, int]:
        return stage2_a[stage1_a[cp >> 8] * 256 + (cp & 255)], stage2_b[stage1_b[cp >> 8] * 256 + (cp & 255)]

    read: dict[tuple[int, int], list[int]] = {}  # each joint class read: its code points read
    for cp in range(0x10000):
        if readable[cp]:
            read.setdefault(joint(cp), []).append(cp)
    ascii_classes = {joint(cp) for cp in range(0x80)}
    left: list[int] = []
    for _ in range(most + 1):
        text = first_difference(a, b, reads=read.keys())
        if text is None:
            return _ranges(sorted(left))
        # (the last character on the way that is not ASCII's class: leaving out any class keeps the answer sound)
        at = next((k for k in map(joint, map(ord, reversed(text))) if k in read and k not in ascii_classes), None)
        if at is None:
            return None
        left += read.pop(at)
    return None


def _ranges(cps: list[int]) -> list[tuple[int, int]]:
    """The sorted code points ``cps`` as ranges (first, last), both in."""
    out: list[tuple[int, int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def same_pieces(a: dict[str, memoryview], b: dict[str, memoryview]) -> bool:
    """Whether two compiled patterns' DFAs cut every text into the same pieces
    (:func:`first_difference` finds no text where they part).

    Parameters
    ----------
    a, b : dict of memoryview or numpy.ndarray
        Programs from :func:`bpetrain.splitting._compiler.compile_program` under the same
        Unicode table.

    Returns
    -------
    bool
        False if either has no DFA.
    """
    if len(a["dfa_reason"]) or len(b["dfa_reason"]):
        return False
    return first_difference(a, b) is None


#: Flags of a pair transition (:func:`pair_table`): a piece ends before the first or the
#: second character, a match ends before the first or the second, or SLOW (read the two one
#: at a time).
PAIR_CUT0, PAIR_CUT1, PAIR_MATCH0, PAIR_MATCH1, PAIR_SLOW = 1, 2, 4, 8, 16
#: The largest pair table kept, in bytes (it should stay in the L1/L2 cache).
MAX_PAIR_BYTES = 1 << 17


def pair_table(trans: memoryview, ascii_class) -> tuple[memoryview, memoryview]:
    """Transitions on two ASCII characters at once, to halve the loop's chain of dependent
    table reads on ASCII text.

    Parameters
    ----------
    trans : memoryview or numpy.ndarray of uint32, shape (n_states, width)
        :func:`_fast_table`'s transitions (``dfa_trans``).
    ascii_class : sequence of int, length 128
        The class of each ASCII byte.

    Returns
    -------
    (pairs, codes) : memoryview of uint32, shape (n_states, size * size), and of uint8, shape (256,)
        ``codes[b]``: the index of ASCII byte ``b``'s class among the ASCII classes, and
        one index more for every byte >= 0x80 (``size``: their number, rounded up to a
        power of two, at least 8). ``pairs[state, codes[a] * size + codes[b]]``: the row
        offset (state * size * size) after reading ASCII ``a`` then ``b``, with
        PAIR_CUT0/1 and PAIR_MATCH0/1 for what the two single transitions said; or
        PAIR_SLOW if either is SLOW or either byte is not ASCII (so the loop need not test
        that). ``pairs`` empty if the table would be larger than :data:`MAX_PAIR_BYTES`
        (``codes`` are :func:`pair_codes`' all the same: :func:`reverse_pair_table` reads by them).
        (:func:`~bpetrain.splitting._charsets.array_view`: made without numpy.)
    """
    n_states, width = trans.shape
    rows = trans.tolist()
    present, size, codes = pair_codes(ascii_class)
    if n_states * size * size * 4 > MAX_PAIR_BYTES:
        return array_view("I", []), codes
    # the second step from each state on each ASCII class, without the first step's flags
    second = [[PAIR_SLOW if e & SLOW else (e & ~7) // width * size * size | (e & 1) * PAIR_CUT1
               | (e >> 1 & 1) * PAIR_MATCH1 for e in (row[k] for k in present)] for row in rows]
    pad, slow = [PAIR_SLOW] * (size - len(present)), [PAIR_SLOW] * size
    flat = slow * size  # state 0, dead
    for row in rows[1:]:
        for k in present:
            e = row[k]
            if e & SLOW:
                flat += slow
                continue
            first = (e & 1) * PAIR_CUT0 | (e >> 1 & 1) * PAIR_MATCH0  # PAIR_SLOW has neither bit
            flat += [v if v == PAIR_SLOW else v | first for v in second[(e & ~7) // width]]
            flat += pad
        flat += slow * (size - len(present))
    return array_view("I", flat, (n_states, size * size)), codes


def pair_codes(ascii_class) -> tuple[list[int], int, memoryview]:
    """The codes of :func:`pair_table` and :func:`reverse_pair_table`: the ASCII classes
    (``present``, sorted), ``size`` (their number, and one more for the bytes >= 0x80,
    rounded up to a power of two, at least 8) and ``codes`` (uint8, shape (256,): ``codes[b]``
    the index of byte ``b``'s class in ``present``, ``len(present)`` for a byte >= 0x80)."""
    present = sorted(set(ascii_class))
    size = max(8, 1 << len(present).bit_length())  # more than the ASCII classes: one code for the rest
    code = {k: i for i, k in enumerate(present)}
    return present, size, array_view("B", bytes(code[k] for k in ascii_class) + bytes([len(present)]) * 128)


def reverse_pair_table(rev: memoryview, ascii_class) -> memoryview:
    """:func:`_reverse_table`'s automaton on two ASCII characters at once, read backwards,
    to halve the chain of dependent table reads that marks where a match can start.

    Parameters
    ----------
    rev : memoryview or numpy.ndarray of uint32, shape (n_reverse, width) or (0,)
        ``dfa_rev``: the next reverse state's row offset (state * width) ``|`` whether a
        match starts before the character read.
    ascii_class : sequence of int, length 128
        The class of each ASCII byte.

    Returns
    -------
    memoryview of uint32, shape (n_reverse, size * size), or (0,)
        With ``codes`` and ``size`` of :func:`pair_codes`: ``pairs[r, codes[a] * size +
        codes[b]]``, the reverse state reached from ``r`` by reading ``a``, then ``b`` (the
        character before it), as a row offset (state * size * size), ``| 2`` where a match
        starts before ``a``, ``| 1`` before ``b``. Entries for a byte >= 0x80 are 0: the loop
        reads pairs of ASCII bytes only. Empty where ``rev`` is, or where the table would
        be larger than :data:`MAX_PAIR_BYTES`.
    """
    if not len(rev):
        return array_view("I", [])
    n_reverse, width = rev.shape
    present, size, _ = pair_codes(ascii_class)
    if n_reverse * size * size * 4 > MAX_PAIR_BYTES:
        return array_view("I", [])
    rows = rev.tolist()
    flat: list[int] = []
    for row in rows:
        for a in present:
            first = row[a]
            after = rows[(first & ~1) // width]
            flat += [(e & ~1) // width * size * size | (first & 1) << 1 | e & 1 for e in (after[b] for b in present)]
            flat += [0] * (size - len(present))
        flat += [0] * (size * (size - len(present)))
    return array_view("I", flat, (n_reverse, size * size))


#: The most lanes of the shuffle table (:func:`shuffle_table`): those of one 64-byte vector.
SHUFFLE_STATES = 64
#: Flags of a shuffle-table entry, above its six bits of lane.
SHUFFLE_MATCH, SHUFFLE_CUT = 0x40, 0x80
#: The largest table of two-byte steps kept (:func:`shuffle_table`), in bytes.
MAX_SHUFFLE_PAIR_BYTES = 1 << 16

# The kinds of lanes of :func:`shuffle_table`, keyed (state, the class of the byte before it or
# None, kind, where the piece started): a state; one entered by going back a byte; one entered
# after a failed piece's first byte; and after going back to a byte that no piece takes. The
# gaps' keys have no state. Where the piece started: _LATER (no matter), _BYTE_BACK (at the
# byte before), _HERE (here: a start state at a piece start).
_PLAIN, _BACK, _FAILED, _BACK_FAILED = range(4)
_LATER, _BYTE_BACK, _HERE = range(3)
_GAP, _FAILED_GAP, _BACK_FAILED_GAP = (-1, None, _PLAIN, _LATER), (-2, None, _FAILED, _LATER), (-3, None, _BACK_FAILED,
                                                                                                  _LATER)


def shuffle_table(trans: memoryview, ascii_class, start) -> dict[str, memoryview]:
    """The DFA on ASCII text as one 64-byte row of next lanes per byte class, so that a
    vector shuffle takes a step (Hyperscan's "Sheng" DFA, with Intel's ``vpermb``): the
    lane broadcast in every lane of a vector picks the lane of its next state.

    A lane is a state of the DFA that the start states reach by ASCII bytes, with what the
    splitting loop (``_matcher.pyx``, ``_dfa_fast``) would have to look back for, so that the
    usual ends of pieces need no going back:

    - the *gap*: where :func:`_fast_table` says CUT | SLOW (a piece ends before the byte and
      none starts with it), the step goes to the gap with SHUFFLE_CUT; from the gap a byte that
      starts no piece stays in it, any other steps as the start state does (a piece starts);
    - a state entered by a transition with MATCH (inside a run of spaces whose match ends before
      its last byte), if it has a SLOW on an ASCII byte, has a lane per class of the byte read
      into it: the SLOW, which goes back to that match a byte back, steps as the start state
      reading that byte, then the current one (a lane of kind *back*: a piece ends a byte back),
      or, if no piece takes that byte, reads the current one from the gap (kind *back-failed*);
    - a state entered by a piece's first byte has a lane of its own (if the lanes suffice): no
      match has ended in its piece, so its SLOW puts that byte in the gap and reads the current
      one from the gap (a lane of kind *failed*, or the failed gap).

    Other SLOWs (back further) and bytes >= 0x80 step into the dead lane 0: the loop takes
    those one character at a time. Where it takes ``pshufb`` no more quarters a step, the states
    on or after a cycle of ASCII steps have a lane of their own too (row _LATER of
    ``shuffle_lane``; its SLOWs dead), so that the loop enters them after a byte >= 0x80, from
    which no other lane may lead there. Entries carry what :func:`_fast_table` says: SHUFFLE_CUT for
    CUT, SHUFFLE_MATCH for MATCH.

    Parameters
    ----------
    trans : memoryview or numpy.ndarray of uint32, shape (n_states, width)
        :func:`_fast_table`'s transitions (``dfa_trans``).
    ascii_class : sequence of int, length 128
        The class of each ASCII byte.
    start : sequence of int, length 2
        The start states' row offsets (``dfa_start``).

    Returns
    -------
    dict of memoryview
        (:func:`~bpetrain.splitting._charsets.array_view`: made without numpy)
        ``shuffle_rows`` (uint8, shape (n_codes, 64)): row ``code``, lane ``lane``: the next
        lane after a byte of that code | flags, the last row all dead (bytes >= 0x80);
        ``shuffle_pairs`` (uint8, shape (n_codes * n_codes, 64)): row ``code1 * n_codes +
        code2``, the entry of the second step of a byte of ``code1`` then one of ``code2``, or
        no rows if the table would be larger than :data:`MAX_SHUFFLE_PAIR_BYTES`;
        ``shuffle_codes`` (uint8, shape (256,)): each byte's row; ``shuffle_lane`` (uint8,
        shape (3, n_states)): the lane the loop enters a state by, 0 for none: row 0 wherever
        the piece started, row 1 if it started at the byte before, row 2 if it starts here
        (a start state); ``shuffle_state``
        (uint32, shape (64,)): each lane's state as a row offset in ``trans`` (the gaps': the
        start state away from the string's start); ``shuffle_special`` (uint8, shape (5,)): the
        lanes of that start state, of the gap, of the failed gap (the failed lanes follow it),
        the first back lane (the others follow it), the back-failed gap (the back-failed lanes
        follow it).

    Raises
    ------
    NoDfa
        If ASCII text reaches more lanes than a vector has.
    """
    n_states, width = trans.shape
    trans = trans.tolist()
    present = sorted(set(ascii_class))
    restart = int(start[0]) // width
    starts = sorted({int(s) // width for s in start})
    # the states whose "no thread left" on an ASCII byte may go back to the last match
    going_back = {state for state, row in enumerate(trans) if any(row[k] & (SLOW | CUT) == SLOW for k in present)}

    def flags(e: int) -> int:
        return (SHUFFLE_CUT if e & CUT else 0) | (SHUFFLE_MATCH if e & MATCH else 0)

    # the states that ASCII bytes can keep the DFA among for as long as they come: those on a
    # cycle of steps on ASCII bytes that leave a thread, and those after one (what is left once
    # the states that no such step from the rest enters are taken out, again and again); a
    # piece that reaches one through a byte >= 0x80 can read the rest of a long ASCII run there
    ins = [0] * n_states
    nexts = [set() for _ in range(n_states)]
    for state in range(1, n_states):
        for k in present:
            if not trans[state][k] & SLOW:
                nexts[state].add((trans[state][k] & ~7) // width)
    for state in range(1, n_states):
        for nxt in nexts[state]:
            ins[nxt] += 1
    lasting = set(range(1, n_states))
    todo = [state for state in lasting if not ins[state]]
    while todo:
        state = todo.pop()
        lasting.discard(state)
        for nxt in nexts[state]:
            ins[nxt] -= 1
            if not ins[nxt]:
                todo.append(nxt)

    def lanes_of(split_first: bool, entries: bool) -> tuple[list, list]:
        def target(e: int, k: int, kind: int, first: bool) -> tuple:
            nxt = (e & ~7) // width
            return (nxt, k if e & MATCH and nxt in going_back else None, kind,
                    _BYTE_BACK if first and split_first else _LATER)

        def step(key: tuple, k: int) -> tuple[tuple | None, int]:
            """The lane key after a byte of class k, and the entry's flags (None: dead)."""
            state, before, _, started = key
            if state < 0:  # a gap
                e = trans[restart][k]
                return (_GAP, 0) if e & SLOW else (target(e, k, _PLAIN, True), flags(e))
            e = trans[state][k]
            if not e & SLOW:
                return target(e, k, _PLAIN, bool(e & CUT) or started == _HERE), flags(e)
            if e & CUT:
                return _GAP, SHUFFLE_CUT
            if before is not None:  # the last match ended a byte back, before a byte of class `before`
                e1 = trans[restart][before]
                e2 = trans[(e1 & ~7) // width][k] if not e1 & SLOW else SLOW
                if not e2 & SLOW:
                    return target(e2, k, _BACK, bool(e2 & CUT)), flags(e2)
                if not e2 & CUT:  # and no piece takes that byte (as below)
                    nxt, entry = step(_GAP, k)
                    return (_BACK_FAILED_GAP if nxt == _GAP else nxt[:2] + (_BACK_FAILED, nxt[3])), entry
            elif started == _BYTE_BACK:  # no match in the piece that started a byte back: that byte is in the gap
                nxt, entry = step(_GAP, k)
                return (_FAILED_GAP if nxt == _GAP else nxt[:2] + (_FAILED, nxt[3])), entry
            return None, 0

        queue = [(s, None, _PLAIN, _HERE) for s in starts] + [_GAP, _FAILED_GAP, _BACK_FAILED_GAP]
        seen = set(queue)
        edges = []
        done = 0
        while True:
            while done < len(queue):  # grows as it goes
                key = queue[done]
                row = [step(key, k) for k in present]
                for nxt, _ in row:
                    if nxt is not None and nxt not in seen:
                        seen.add(nxt)
                        queue.append(nxt)
                edges.append((key, row))
                done += 1
            if not entries:
                break
            # a lane to enter each state of ``lasting`` by from the one-character loop, where
            # it has none (_matcher.pyx looks a state up in row _LATER of ``shuffle_lane`` when
            # it has no lane for where its piece started): a state that only a byte >= 0x80
            # leads to, or that is entered by a match only (its lanes know the byte before
            # it), would otherwise read the rest of its run one character at a time. Its
            # SLOWs are dead (the one-character loop then goes back to the last match), its
            # other steps as the state's.
            entries = False
            for state in sorted(lasting):
                if (state, None, _PLAIN, _LATER) not in seen:
                    seen.add((state, None, _PLAIN, _LATER))
                    queue.append((state, None, _PLAIN, _LATER))
            if len(queue) == done:
                break
        return [key for key in queue if key[0] >= 0], edges

    def quarters(n_keys: int) -> int:  # of a pshufb step (_dfa_shuffle.h, bpetrain_pshufb_quarters)
        n_lanes = n_keys + 4
        return 1 if n_lanes <= 17 else (n_lanes + 14) // 16

    split_first = True
    keys, edges = lanes_of(split_first, False)
    if len(keys) + 4 > SHUFFLE_STATES:  # dead, and the three gaps
        split_first = False
        keys, edges = lanes_of(split_first, False)
        if len(keys) + 4 > SHUFFLE_STATES:
            raise NoDfa(f"ASCII text reaches more than {SHUFFLE_STATES - 4} states (and copies of them)")
    more, more_edges = lanes_of(split_first, True)
    if len(more) + 4 <= SHUFFLE_STATES and quarters(len(more)) == quarters(len(keys)):
        keys, edges = more, more_edges  # (only where they cost a step nothing)
    # lanes: 0 dead, the states, the gap, the failed gap, the failed lanes, the back lanes (the
    # splitting loop tells the last four kinds by lane)
    order = ([key for key in keys if key[2] == _PLAIN] + [_GAP, _FAILED_GAP]
             + [key for key in keys if key[2] == _FAILED] + [key for key in keys if key[2] == _BACK]
             + [_BACK_FAILED_GAP] + [key for key in keys if key[2] == _BACK_FAILED])
    lane = {key: i + 1 for i, key in enumerate(order)}
    code = {k: i for i, k in enumerate(present)}
    codes = bytes(code[k] for k in ascii_class) + bytes([len(present)]) * 128
    rows = [bytearray(SHUFFLE_STATES) for _ in range(len(present) + 1)]
    for key, row in edges:
        for c, (nxt, entry) in enumerate(row):
            if nxt is not None:
                rows[c][lane[key]] = lane[nxt] | entry
    lanes = [bytearray(n_states) for _ in range(3)]
    offsets = [0] * SHUFFLE_STATES
    for key, i in lane.items():
        offsets[i] = (restart if key[0] < 0 else key[0]) * width
        if key[0] >= 0 and key[1] is None and key[2] == _PLAIN:
            lanes[key[3]][key[0]] = i
    n_codes = len(rows)
    if n_codes * n_codes * SHUFFLE_STATES <= MAX_SHUFFLE_PAIR_BYTES:
        # two bytes: the second's step from where the first's leads (the dead lane's row is
        # dead): entry x of the first's row is read in the second's row at lane x & 63, which
        # bytes.translate does with the second's row four times over (256 entries)
        pairs = b"".join(bytes(first).translate(bytes(second) * 4) for first in rows for second in rows)
    else:
        pairs = b""
    first_back = min((lane[key] for key in keys if key[2] == _BACK), default=lane[_BACK_FAILED_GAP])
    special = [lane[(restart, None, _PLAIN, _HERE)], lane[_GAP], lane[_FAILED_GAP], first_back,
               lane[_BACK_FAILED_GAP]]
    return {"shuffle_rows": array_view("B", b"".join(rows), (n_codes, SHUFFLE_STATES)),
            "shuffle_pairs": array_view("B", pairs, (len(pairs) // SHUFFLE_STATES, SHUFFLE_STATES)),
            "shuffle_codes": array_view("B", codes), "shuffle_lane": array_view("B", b"".join(lanes), (3, n_states)),
            "shuffle_state": array_view("I", offsets), "shuffle_special": array_view("B", special)}

