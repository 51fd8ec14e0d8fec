"""Strings that match a documented ``pattern``: a small, bounded generator of our own.

Why not a library: JSON Schema patterns are short ECMA-262 expressions (``^[a-z0-9-]+$``,
``^\\d{4}-\\d{2}-\\d{2}$``, ``^[A-Z]+[0-9]+(:[A-Z]+[0-9]+)?$``), and the suite needs one
deterministic value that also fits ``minLength``/``maxLength``, not a random sample. The parser
covers literals, escapes, ``.``, classes (ranges, negation, ``\\d\\w\\s``), groups (capturing,
``(?:``, named), alternation, anchors and every quantifier (``* + ? {m} {m,} {m,n}``, lazy too).
Lookarounds, back-references and word boundaries are refused (:class:`Unsupported`), and every
candidate is checked with :func:`re.search` before it is returned, so a value is never wrong,
only sometimes unavailable.

The patterns come from the server under test, so the suite's own regex work must stay bounded:
a pattern that repeats something which itself repeats or alternates (``(a+)+``, ``(a|a)*`` —
the shapes with exponential backtracking) is refused before any string is matched against it
(:func:`compile_safe`).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

MAX_PATTERN = 500  # longer patterns are not parsed (bounded work for any server-supplied text)
MAX_OUTPUT = 256
_PRINTABLE = string.ascii_letters + string.digits + "-_.:/@ "
_DIGITS = "1234567890"  # 1 first: '1111-11-11' is a date, 'A1' a cell, '0000' often a reserved value
_CLASSES = {
    "d": _DIGITS,
    "w": string.ascii_letters + _DIGITS + "_",
    "s": " ",
    "D": string.ascii_letters + "-_",
    "W": "-.:/@ ",
    "S": string.ascii_letters + _DIGITS,
}
_PREFERRED = string.ascii_lowercase + _DIGITS + string.ascii_uppercase + "-_.:/@ "


class Unsupported(ValueError):
    """The pattern uses syntax this generator does not reproduce."""


@dataclass(frozen=True, slots=True)
class _Chars:
    chars: str  # allowed characters, in preference order


@dataclass(frozen=True, slots=True)
class _Repeat:
    node: object
    lo: int
    hi: int | None


@dataclass(frozen=True, slots=True)
class _Seq:
    items: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    options: tuple[object, ...]


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def peek(self) -> str | None:
        return self.p[self.i] if self.i < len(self.p) else None

    def take(self) -> str:
        if self.i >= len(self.p):
            raise Unsupported("pattern ends early")
        c = self.p[self.i]
        self.i += 1
        return c

    def parse(self) -> object:
        node = self.alternation()
        if self.i != len(self.p):
            raise Unsupported("unbalanced ')'")
        return node

    def alternation(self) -> object:
        options = [self.sequence()]
        while self.peek() == "|":
            self.take()
            options.append(self.sequence())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def sequence(self) -> _Seq:
        items: list[object] = []
        while self.peek() not in (None, "|", ")"):
            atom = self.atom()
            if atom is None:
                continue
            items.append(self.quantified(atom))
        return _Seq(tuple(items))

    def quantified(self, atom: object) -> object:
        c = self.peek()
        lo: int = 1
        hi: int | None = 1  # None: unbounded
        if c == "*":
            lo, hi = 0, None
        elif c == "+":
            lo, hi = 1, None
        elif c == "?":
            lo, hi = 0, 1
        elif c == "{" and re.match(r"\{\d+(,\d*)?\}", self.p[self.i :]):
            m = re.match(r"\{(\d+)(?:(,)(\d*))?\}", self.p[self.i :])
            assert m is not None
            lo = int(m.group(1))
            hi = lo if not m.group(2) else (int(m.group(3)) if m.group(3) else None)
            self.i += len(m.group(0)) - 1
            if lo > MAX_OUTPUT or (hi is not None and hi < lo):
                raise Unsupported("repetition bounds out of range")
        else:
            return atom
        self.take()
        if self.peek() in ("?", "+"):  # lazy / possessive: same language
            self.take()
        return _Repeat(atom, lo, hi)

    def atom(self) -> object | None:
        c = self.take()
        if c in "^$":
            return None  # anchors: generated strings always span the whole match
        if c == ".":
            return _Chars(_PREFERRED)
        if c == "[":
            return self.char_class()
        if c == "(":
            if self.peek() == "?":
                self.take()
                kind = self.take()
                if kind == ":":
                    pass
                elif (kind == "P" and self.peek() == "<") or (kind == "<" and self.peek() not in ("=", "!")):
                    if kind == "P":
                        self.take()
                    while self.take() != ">":
                        pass
                else:
                    raise Unsupported("lookaround or inline flags")
            node = self.alternation()
            if self.take() != ")":
                raise Unsupported("unbalanced '('")
            return node
        if c == "\\":
            return self.escape(in_class=False)
        if c in "*+?":
            raise Unsupported("quantifier without an atom")
        return _Chars(c)

    def escape(self, *, in_class: bool) -> _Chars:
        c = self.take()
        if c in _CLASSES:
            return _Chars(_CLASSES[c])
        if c.isdigit() or (c in "bBAZzGpPk" and not in_class):
            raise Unsupported(f"escape '\\{c}'")
        if c == "u":
            code = self.p[self.i : self.i + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", code):
                raise Unsupported("bad \\u escape")
            self.i += 4
            return _Chars(chr(int(code, 16)))
        if c == "x":
            code = self.p[self.i : self.i + 2]
            if not re.fullmatch(r"[0-9a-fA-F]{2}", code):
                raise Unsupported("bad \\x escape")
            self.i += 2
            return _Chars(chr(int(code, 16)))
        return _Chars({"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}.get(c, c))

    def char_class(self) -> _Chars:
        negate = self.peek() == "^"
        if negate:
            self.take()
        allowed: list[str] = []
        first = True
        while True:
            c = self.take()
            if c == "]" and not first:
                break
            first = False
            if c == "\\":
                chars = self.escape(in_class=True).chars
            elif c == "[" and self.peek() == ":":
                raise Unsupported("POSIX class")
            else:
                chars = c
            if len(chars) == 1 and self.peek() == "-" and self.p[self.i + 1 : self.i + 2] not in ("]", ""):
                self.take()
                end = self.take()
                if end == "\\":
                    end = self.escape(in_class=True).chars
                    if len(end) != 1:
                        raise Unsupported("class range to a class")
                if ord(end) < ord(chars):
                    raise Unsupported("reversed range")
                span = ord(end) - ord(chars)
                chars = "".join(chr(o) for o in range(ord(chars), ord(chars) + min(span, 400) + 1))
            allowed.append(chars)
        pool = "".join(allowed)
        if negate:
            pool = "".join(ch for ch in _PRINTABLE if ch not in pool)
        if not pool:
            raise Unsupported("empty character class")
        preferred = "".join(ch for ch in _PREFERRED if ch in pool)
        return _Chars(preferred + "".join(ch for ch in dict.fromkeys(pool) if ch not in preferred))


def _multi(r: _Repeat) -> bool:
    return r.hi is None or r.hi > 1


def _backtracks(node: object, inside: bool = False) -> bool:
    """True for nested repetition, or alternation under repetition (star height above one)."""
    if isinstance(node, _Repeat):
        if inside and _multi(node):
            return True
        return _backtracks(node.node, inside or _multi(node))
    if isinstance(node, _Seq):
        return any(_backtracks(n, inside) for n in node.items)
    if isinstance(node, _Alt):
        return inside or any(_backtracks(n, inside) for n in node.options)
    return False


def compile_safe(pattern: str) -> tuple[re.Pattern[str], object]:
    """The compiled pattern and its parse tree, or :class:`Unsupported` when the pattern cannot
    be read or could make matching backtrack exponentially."""
    if len(pattern) > MAX_PATTERN:
        raise Unsupported("pattern too long")
    try:
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        raise Unsupported("not a regular expression Python can read") from None
    try:
        tree = _Parser(pattern).parse()
    except RecursionError:
        raise Unsupported("pattern nested too deeply") from None
    if _backtracks(tree):
        raise Unsupported("nested repetition: matching could backtrack exponentially")
    return compiled, tree


def _render(node: object, extra: int, choice: int) -> str:
    """One string of ``node``'s language: each open repetition takes ``extra`` more items than
    its minimum (bounded by its maximum); alternations take option ``choice`` when they have it."""
    if isinstance(node, _Chars):
        return node.chars[0]
    if isinstance(node, _Seq):
        return "".join(_render(n, extra, choice) for n in node.items)
    if isinstance(node, _Alt):
        return _render(node.options[min(choice, len(node.options) - 1)], extra, choice)
    if isinstance(node, _Repeat):
        n = node.lo + extra if node.hi is None else min(node.hi, node.lo + extra)
        part = _render(node.node, extra, choice)
        return part * n
    raise AssertionError(node)


def matching(pattern: str, min_length: int = 0, max_length: int | None = None) -> str:
    """A string ``s`` with ``re.search(pattern, s)`` and a length within the bounds.

    Raises :class:`Unsupported` when the pattern is outside the supported syntax, and
    :class:`ValueError` when no candidate fits the length bounds."""
    compiled, tree = compile_safe(pattern)
    hi = MAX_OUTPUT if max_length is None else min(max_length, MAX_OUTPUT)
    for choice in range(4):
        for extra in (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64):
            s = _render(tree, extra, choice)
            if len(s) > hi:
                break
            if len(s) >= min_length and compiled.search(s):
                return s
    raise ValueError("no generated string fits the pattern and the length bounds")
