"""Classify an upstream MCP tool into a semantic category (CORE §8, CRUDE §6; REQ-CLS-001/002).

Evidence is weighed in a fixed order, and every step that decides something says so in
``why`` (it ends up in the discovery bundle's provenance and the build report):

1. **Annotations.** ``readOnlyHint: true`` → READ. An explicit ``readOnlyHint: false``
   rules READ out. ``destructiveHint`` / ``idempotentHint`` only break ties later; the MCP
   defaults for absent hints are *not* treated as evidence.
2. **Multi-method tools.** A ``method``/``action`` enum (``issue_write``: create|update) is
   classified per value and combined: upserts → CREATE, anything with EXECUTE → EXECUTE,
   other mixtures → UPDATE; a DELETE among them raises the danger to ``destructive``.
3. **The verb grammar of the name** (snake, camel or kebab case): the first word, else the
   last (``issue_read``, ``projects_write``), else the second (``git_create_branch``).
4. **The description's first verb** ("Returns …", "Creates …").
5. **Annotation fallback**: non-read-only and ``destructiveHint: false`` → CREATE (additive),
   otherwise EXECUTE; always flagged for review.

Ambiguity is flagged (``needs_review``) instead of guessed silently (REQ-DISC-012).
Danger levels start from the DANGER §3.3 defaults per category and are raised by an explicit
``destructiveHint: true`` and by the DANGER §6 name patterns. Pure functions, no I/O.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...protocol.categories import Category

C, R, U, D, E = Category.CREATE, Category.READ, Category.UPDATE, Category.DELETE, Category.EXECUTE

def _w(text: str) -> list[str]:
    return text.split()


# Verb → category. Canonical verbs (REQ-CLS-003) first; the rest are common synonyms seen in
# real servers. A verb that means different things in different places ("drop") is handled
# in :func:`_verb_category`.
VERBS: dict[str, Category] = {
    # READ
    **dict.fromkeys(
        _w(
            "get list search find read fetch query show view describe lookup look inspect count check retrieve "
            "browse open download peek explore scan diff preview summarize summarise return returns lists gets "
            "reads shows finds searches fetches retrieves status health ping analyze analyse validate verify lint "
            "estimate"
        ),
        R,
    ),
    # CREATE
    **dict.fromkeys(
        _w(
            "create add new insert post fork append make register comment reply star push commit clone copy "
            "duplicate generate init initialize upsert save store record write invite subscribe follow like react "
            "import log"
        ),
        C,
    ),
    # UPDATE
    **dict.fromkeys(
        _w(
            "update edit set modify patch change rename move mark assign unassign replace toggle enable disable "
            "configure manage dismiss triage merge submit reopen lock unlock resolve unresolve checkout switch "
            "reset rebase label tag archive unarchive restore pin unpin approve reject transfer reorder "
            "reprioritize stage unstage apply transition"
        ),
        U,
    ),
    # DELETE
    **dict.fromkeys(
        _w(
            "delete remove unstar destroy purge erase unlink uninstall revoke wipe truncate drop unsubscribe "
            "unfollow unlike clear"
        ), D),
    # EXECUTE
    **dict.fromkeys(
        _w(
            "run execute exec trigger start stop cancel abort restart invoke call send navigate click type press "
            "hover drag select fill evaluate eval handle emulate resize close upload wait install deploy notify "
            "simulate sample rerun dispatch schedule build test sleep request think compress gzip zip unzip "
            "convert calculate compute translate publish sync export"
        ),
        E,
    ),
}
# Words that are verbs only at the start of a name (``request_copilot_review``) or right after
# a namespace (``slack_post_message``); further on they are nouns (``browser_network_request``).
FIRST_ONLY = {"request", "label", "tag", "record", "comment", "reply", "build", "test", "sample", "schedule", "stage",
              "log", "lock", "pin", "post", "copy", "archive"}
CANONICAL = {"create": C, "get": R, "list": R, "search": R, "read": R, "update": U, "delete": D, "remove": D,
             "execute": E, "run": E, "cancel": E, "add": C}
# Pure functions of their input: no state is touched, so READ (REQ-CLS-002 "prefer READ if
# no side effects") when annotations do not say otherwise.
PURE_VERBS = {"convert", "calculate", "compute", "echo", "translate"}
_DROP_OBJECTS = {"table", "tables", "database", "databases", "db", "index", "collection", "schema", "view", "column"}
_METHOD_KEYS = ("method", "action", "operation", "op")

# DANGER §3.3 defaults by category, and §6 patterns (the highest match wins, §5.1).
DANGER_ORDER = ("safe", "reversible", "destructive", "dangerous", "forbidden")
DEFAULT_DANGER: dict[Category, str] = {R: "safe", C: "reversible", U: "reversible", D: "destructive", E: "reversible"}
DANGER_PATTERNS: dict[str, tuple[str, ...]] = {
    "dangerous": ("force_*", "*_permanently", "bulk_delete*", "override_*", "bypass_*", "*_without_backup", "purge_*",
                  "*_unsafe", "*_unsafe_*"),
    "forbidden": ("drop_*", "delete_all*", "truncate_*", "reset_*", "destroy_*", "wipe_*", "*_production"),
}


@dataclass(frozen=True, slots=True)
class Classification:
    """The outcome for one tool. ``source`` is the discovery bundle's inference source."""

    category: Category
    confidence: str  # high | medium | low
    danger_level: str
    why: tuple[str, ...]
    needs_review: bool = False
    review_reasons: tuple[str, ...] = ()
    source: str = "heuristic_classification"
    danger_source: str = "heuristic_classification"
    methods: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category.value,
            "confidence": self.confidence,
            "danger_level": self.danger_level,
            "why": list(self.why),
            "needs_review": self.needs_review,
            "review_reasons": list(self.review_reasons),
        }


def words(name: str) -> list[str]:
    """``mark_all_notifications_read`` / ``getTinyImage`` / ``get-env`` → lowercase words."""
    parts = re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", name)
    return [p.lower() for p in parts if p]


def snake_name(name: str) -> str:
    """An MCP tool name as an operation name ``^[a-z][a-z0-9_]*$`` (REQ-CLS-005)."""
    s = "_".join(words(name)) or "tool"
    if not s[0].isalpha():
        s = "op_" + s
    return s


def _verb_category(ws: list[str], i: int) -> Category | None:
    w = ws[i]
    if w in FIRST_ONLY and (i >= 2 or (i > 0 and i == len(ws) - 1)):
        return None
    if w == "drop":
        nxt = ws[i + 1] if i + 1 < len(ws) else ""
        return D if nxt in _DROP_OBJECTS else E
    if w == "echo":
        return R
    return VERBS.get(w)


def name_verb(name: str) -> tuple[str, Category] | None:
    """The verb that decides: first word, else last word, else second word, else any word."""
    ws = words(name)
    if not ws:
        return None
    order = [0, len(ws) - 1, 1, *range(2, len(ws) - 1)]
    seen: set[int] = set()
    for i in order:
        if i in seen or i >= len(ws) or i < 0:
            continue
        seen.add(i)
        cat = _verb_category(ws, i)
        if cat is not None:
            return ws[i], cat
    return None


def _description_verb(description: str) -> tuple[str, Category] | None:
    m = re.match(r"\s*([A-Za-z]+)", description or "")
    if not m:
        return None
    w = m.group(1).lower()
    for cand in (w, w[:-1] if w.endswith("s") else w, w[:-2] if w.endswith("es") else w):
        if cand in VERBS:
            return cand, VERBS[cand]
    return None


_OPTION_RE = re.compile(r"^\s*[-*]\s*['\"`]?([A-Za-z][A-Za-z0-9_]*)['\"`]?\s*[-:–]", re.M)


def _methods(schema: Mapping[str, Any] | None) -> tuple[str, list[str]] | None:
    """A ``method``/``action`` switch: its ``enum``, or the options its description lists."""
    props = (schema or {}).get("properties") or {}
    for key in _METHOD_KEYS:
        p = props.get(key)
        if not isinstance(p, Mapping):
            continue
        if isinstance(p.get("enum"), list) and len(p["enum"]) >= 2:
            return key, [str(v) for v in p["enum"]]
        listed = _OPTION_RE.findall(str(p.get("description") or ""))
        if len(listed) >= 2:
            return key, listed
    return None


def _combine(cats: set[Category]) -> Category:
    if cats == {R}:
        return R
    if E in cats:
        return E
    if cats <= {C, U} and C in cats:
        return C  # upsert (REQ-CLS-002)
    if cats == {D}:
        return D
    if cats == {C}:
        return C
    return U


def danger_for(op_name: str, category: Category, annotations: Mapping[str, Any] | None = None) -> tuple[str, list[str]]:
    """DANGER §3.3 default, raised by an explicit destructiveHint and by §6 name patterns."""
    level = DEFAULT_DANGER[category]
    why = [f"danger default for {category.value} is {level} (DANGER §3.3)"]
    ann = annotations or {}
    if category is not R and ann.get("destructiveHint") is True and DANGER_ORDER.index(level) < 2:
        level = "destructive"
        why.append("destructiveHint: true raises danger to destructive")
    for lvl in ("dangerous", "forbidden"):
        for pat in DANGER_PATTERNS[lvl]:
            if fnmatch.fnmatchcase(op_name, pat) and DANGER_ORDER.index(lvl) > DANGER_ORDER.index(level):
                level = lvl
                why.append(f"name matches danger pattern '{pat}' → {lvl} (DANGER §6)")
    return level, why


def classify(tool: Mapping[str, Any]) -> Classification:
    """Classify one ``tools/list`` entry (a dict in wire form)."""
    name = str(tool.get("name", ""))
    description = str(tool.get("description") or "")
    ann: Mapping[str, Any] = tool.get("annotations") or {}
    why: list[str] = []
    review: list[str] = []
    ro = ann.get("readOnlyHint")
    nv = name_verb(name)
    dv = _description_verb(description)
    methods = _methods(tool.get("inputSchema"))
    category: Category
    confidence: str
    source = "heuristic_classification"
    method_cats: dict[str, str] = {}
    extra_danger: str | None = None

    if ro is True:
        category, source = R, "direct_source_metadata"
        why.append("annotations.readOnlyHint is true")
        confidence = "high"
        if nv is not None and nv[1] is not R and nv[0] not in PURE_VERBS:
            confidence = "medium"
            review.append(f"name verb '{nv[0]}' suggests {nv[1].value}, but the server declares the tool read-only")
            why.append(f"name verb '{nv[0]}' ({nv[1].value}) overruled by readOnlyHint")
    else:
        if ro is False:
            why.append("annotations.readOnlyHint is false: not READ")
        if methods is not None:
            key, values = methods
            cats: set[Category] = set()
            for v in values:
                mv = name_verb(v)
                cat = mv[1] if mv else None
                method_cats[v] = cat.value if cat else "?"
                if cat is not None:
                    cats.add(cat)
                elif ro is False or ann.get("readOnlyHint") is not True:
                    cats.add(U)  # an unknown action on a non-read-only tool changes state
            if ro is False:
                cats.discard(R)
            if not cats:
                category, confidence = U, "low"
                review.append(f"no recognisable verb among {key} values {values}")
            else:
                category = _combine(cats)
                confidence = "medium" if len(cats) > 1 else "high"
                if len(cats) > 1 and category is not C:
                    review.append(
                        f"multi-method tool ({key}: {', '.join(values)}) mixes "
                        f"{', '.join(sorted(c.value for c in cats))}; classified {category.value}"
                    )
                if D in cats and category is not D:
                    extra_danger = "destructive"
            if any(v == "?" for v in method_cats.values()):
                why.append(f"{key} values without a known verb: {[k for k, v in method_cats.items() if v == '?']}")
            why.append(f"multi-method tool: {key} ∈ {values} → {category.value}")
        elif nv is not None:
            verb, category = nv
            confidence = "high" if words(name)[0] in CANONICAL and CANONICAL[words(name)[0]] is category else "medium"
            why.append(f"name verb '{verb}' → {category.value}")
            if verb == "write" and re.search(r"\b(delete|remove|drop)\b", description, re.I):
                category, confidence = U, "medium"
                extra_danger = "destructive"
                review.append("a 'write' tool whose description mentions deletion; classified UPDATE")
                why.append("'write' + deletion in the description → UPDATE, danger destructive")
            if verb in PURE_VERBS and ro is None:
                category = R
                why.append(f"'{verb}' is a pure computation with no side effects → READ (REQ-CLS-002)")
        elif dv is not None:
            verb, category = dv
            confidence = "low"
            why.append(f"no verb in the name; description starts with '{verb}' → {category.value}")
            review.append("classified from the description only")
        else:
            if ann.get("destructiveHint") is False:
                category = C
                why.append("no verb found; not read-only and destructiveHint false → additive CREATE")
            elif ann.get("idempotentHint") is True:
                category = U
                why.append("no verb found; idempotent and not read-only → UPDATE")
            else:
                category = E
                why.append("no verb found; side effects of unknown kind → EXECUTE")
            confidence = "low"
            review.append("no verb in the name or description; classified from annotations")
        if category is R and ro is False:
            category = E
            confidence = "low" if confidence == "low" else "medium"
            review.append("reads by name, but the server declares side effects (readOnlyHint: false) → EXECUTE")
            why.append("readOnlyHint false with a read verb → EXECUTE")
        if ann.get("destructiveHint") is False and category in (D,):
            review.append("a DELETE verb, but destructiveHint is false")
            confidence = "medium"
        if ro is False or "destructiveHint" in ann:
            if confidence == "medium" and not review:
                confidence = "high"  # the annotations agree with the grammar
            source = "heuristic_classification"

    op_name = snake_name(name)
    danger, dwhy = danger_for(op_name, category, ann)
    if extra_danger and DANGER_ORDER.index(extra_danger) > DANGER_ORDER.index(danger):
        danger = extra_danger
        dwhy.append("it can delete (a method or its description) → destructive")
    why.extend(dwhy[1:] if len(dwhy) > 1 else dwhy)
    return Classification(
        category=category,
        confidence=confidence,
        danger_level=danger,
        why=tuple(why),
        needs_review=bool(review),
        review_reasons=tuple(review),
        source=source,
        danger_source="heuristic_classification",
        methods=method_cats,
    )
