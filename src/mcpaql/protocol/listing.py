"""Bounded operation listings: element types, and the grouped form of a long operation list.

A tool description is paid for in tokens by every conversation, so past a threshold
(``Config.listing_threshold`` operations in one tool) the flat list of names gives way to one
entry per element type (``pull_request: create/get/update``, CORE §8.5's ``{verb}_{resource}``
grammar read backwards), the largest element types first, a fixed number of them, and a count
of what was left out, which ``introspect`` filters find (``element_type``, ``prefix``,
``search``). Under the threshold nothing changes.

Everything here is a pure function of the operations in registry order, with every tie broken
by name, so the same registry gives byte-identical descriptions in every build.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .operations import OperationSpec

GROUPS_SHOWN = 12  # element types named per grouped listing (measured: bench/bench_listings.py)
MEMBERS_SHOWN = 6  # operations named per element type


def verb_and_element(name: str) -> tuple[str, str]:
    """``create_pull_request`` → ``("create", "pull_request")``; ``list_pull_requests`` →
    ``("list", "pull_request")`` (a trailing plural ``s``/``ies`` folds into the singular, so the
    list and the get of one resource share an element type); ``introspect`` → ``("", "introspect")``."""
    verb, sep, rest = name.partition("_")
    if not sep or not rest:
        return "", name
    if rest.endswith("ies") and len(rest) > 4:
        rest = rest[:-3] + "y"
    elif rest.endswith("s") and not rest.endswith("ss") and len(rest) > 2:
        rest = rest[:-1]
    return verb, rest


def element_type(op: OperationSpec) -> str:
    """An operation's element type: declared by the adapter (``extensions["element_type"]``),
    else read from its name."""
    declared = op.extensions.get("element_type")
    if isinstance(declared, str) and declared:
        return declared
    return verb_and_element(op.name)[1]


def _member(op: OperationSpec, element: str) -> str:
    """The verb alone when ``verb_element`` spells the name exactly; else the whole name, so every
    name shown can be sent as is."""
    verb, _ = verb_and_element(op.name)
    return verb if verb and op.name == f"{verb}_{element}" else op.name


def group_by_element(ops: Iterable[OperationSpec]) -> list[tuple[str, list[OperationSpec]]]:
    """Element types with their operations (registry order inside a group), largest first, then by name."""
    groups: dict[str, list[OperationSpec]] = {}
    for op in ops:
        groups.setdefault(element_type(op), []).append(op)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def grouped_names(ops: Sequence[OperationSpec], groups_shown: int = GROUPS_SHOWN, members_shown: int = MEMBERS_SHOWN) -> str:
    """The bounded form of an operation list: ``element: verb/verb (+k more); ...; +n more
    element types (m operations)``. Its length depends on the two limits, not on ``len(ops)``."""
    grouped = group_by_element(ops)
    parts: list[str] = []
    for element, members in grouped[:groups_shown]:
        text = f"{element}: " + "/".join(_member(op, element) for op in members[:members_shown])
        if len(members) > members_shown:
            text += f" (+{len(members) - members_shown} more)"
        parts.append(text)
    rest = grouped[groups_shown:]
    if rest:
        left = sum(len(m) for _, m in rest)
        parts.append(f"+{len(rest)} more element types ({left} operations)")
    return "; ".join(parts)


def is_grouped(count: int, threshold: int) -> bool:
    """Whether a tool hosting ``count`` operations lists them grouped (past the threshold)."""
    return count > threshold


# ---- compact flat lists: shared prefixes in braces ---------------------------------------------
#
# Under the threshold every name is listed. Two things make a list cheaper without hiding a name
# (measured on GitHub-89, o200k, bench/bench_tokens.py): names separated by spaces, not ", " (a
# snake_case name never holds a space, and " name" tokenizes with its space while each comma is a
# token of its own: 393 → 308 tokens for the 90 names), and a verb shared by several names said
# once: ``get_{commit file_contents issue}`` (→ 252). Members are space separated inside the
# braces too, since shell-style commas (``get_{commit,file_contents}``) cost a token per name and
# so save nothing (306). Because that is not the shell's notation, a description that uses braces
# says once how to read them (``BRACE_LEGEND``), and uses them only where they pay for it.

BRACE_MIN = 4  # names sharing a prefix before they are braced (a prefix is ~1 token, the braces 2)
BRACE_LEGEND = "x_{a b} = x_a x_b"
LEGEND_COST = 11  # o200k tokens of " (x_{a b} = x_a x_b)"; the tests check the estimate below against the tokenizer


def name_prefix(name: str) -> str:
    """``get_file_contents`` → ``get_`` (its verb with the underscore); ``""`` for a name with no
    verb to share (``introspect``, ``get_``)."""
    head, sep, rest = name.partition("_")
    return head + sep if sep and rest else ""


def _braced_groups(names: Sequence[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name in names:
        if p := name_prefix(name):
            groups.setdefault(p, []).append(name)
    return {p: members for p, members in groups.items() if len(members) >= BRACE_MIN}


def braces_pay(lists: Sequence[Sequence[str]]) -> bool:
    """Whether braces pay in a description holding ``lists``: each braced group saves its prefix
    once per member but the first and costs two tokens of braces; the legend costs its own."""
    saved = sum(len(m) - 3 for names in lists for m in _braced_groups(names).values())
    return saved > LEGEND_COST


def render_names(names: Sequence[str], braces: bool) -> str:
    """The names, space separated, in the given order; with ``braces``, each group of
    ``BRACE_MIN`` or more names sharing a prefix is written once, at its first member's place,
    as ``prefix{rest rest ...}``."""
    if not braces:
        return " ".join(names)
    groups = _braced_groups(names)
    parts: list[str] = []
    for name in names:
        p = name_prefix(name)
        if p not in groups:
            parts.append(name)
        elif groups[p][0] == name:
            parts.append(p + "{" + " ".join(m[len(p) :] for m in groups[p]) + "}")
    return " ".join(parts)


_WORD = re.compile(r"([a-z0-9_]*)\{([^{}]*)\}|(\S+)")


def expand_names(text: str) -> list[str]:
    """The inverse of :func:`render_names`: every name a listing spells, braces expanded
    (``get_{commit issue} introspect`` → ``[get_commit, get_issue, introspect]``)."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        if m.group(3) is not None:
            out.append(m.group(3))
        else:
            out.extend(m.group(1) + rest for rest in m.group(2).split())
    return out
