"""Classify an upstream MCP tool into a semantic category (CORE §8, CRUDE §6; REQ-CLS-001/002).

**Annotations decide, the verb only fills gaps.** Evidence is weighed in a fixed order, and
every step that decides something says so in ``why`` (it ends up in the discovery bundle's
provenance, the build report and the ``--read-only`` exclusion list):

1. **Annotations.** ``readOnlyHint: true`` → READ (unless ``destructiveHint: true`` contradicts
   it). ``destructiveHint: true`` or ``readOnlyHint: false`` → *never* READ, whatever the name
   or the description say: a read-looking verb there becomes EXECUTE (``search_and_replace``,
   Notion's ``post_search``) and is flagged. The MCP defaults for *absent* hints are not
   evidence.
2. **Multi-method tools.** A ``method``/``action`` enum (``issue_write``: create|update) is
   classified per value and combined: upserts → CREATE, anything with EXECUTE → EXECUTE,
   other mixtures → UPDATE; a DELETE among them raises the danger to ``destructive``.
3. **HTTP-method names** of OpenAPI-derived tools (``API-post-search``, ``put_item``): GET reads,
   PUT/PATCH update, DELETE deletes; for POST the words after it decide (``post_search`` is a
   search, ``post_page`` creates) and a POST is never a guaranteed read.
4. **The verb grammar of the name** (snake, camel or kebab case): the first word, else the
   last (``issue_read``, ``projects_write``), else the second (``git_create_branch``).
   Compound names combine their verbs (``search_and_replace`` → UPDATE,
   ``create_or_update_file`` → CREATE).
5. **The description's first verb** ("Returns …", "Creates …"): low confidence, flagged.
6. **Annotation fallback**: non-read-only and ``destructiveHint: false`` → CREATE (additive),
   otherwise EXECUTE; always flagged for review.

**Generic statement tools are not reads.** A ``query``/``sql`` tool with no ``readOnlyHint``
whose name is nothing but the generic verb or whose description says it executes or runs a
query/statement (mcp-server-duckdb's ``query``: "Execute a query") is EXECUTE and flagged: the
same call that selects can ``CREATE TABLE``. A description that promises "read-only" keeps it
READ, but only as an unguaranteed read.

**Guaranteed reads** (:attr:`Classification.read_basis`): ``--read-only`` serves an operation
only when it is READ by annotation (``readOnlyHint: true``), by a manual override, or by an
unambiguous read verb in the name with no contrary evidence. READ from the description only,
from a pure-computation verb (``convert``, ``translate``, ``render``), from an ambiguous verb
(``query``, ``open``, ``download``), from a POST, or with a description whose first verb writes,
is still READ but excluded under ``--read-only``; :meth:`Classification.read_only_exclusion`
says why.

Ambiguity is flagged (``needs_review``) instead of guessed silently (REQ-DISC-012).
Danger levels start from the DANGER §3.3 defaults per category and are raised by an explicit
``destructiveHint: true`` (wherever the tool lands: CREATE, UPDATE and EXECUTE too) and by the
DANGER §6 name patterns. Pure functions, no I/O.
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
            "estimate poll display render"
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
            "reprioritize stage unstage apply transition transform sort format highlight protect unprotect customize annotate put"
        ),
        U,
    ),
    # DELETE
    **dict.fromkeys(
        _w(
            "delete remove unstar destroy purge erase unlink uninstall revoke wipe truncate drop unsubscribe "
            "unfollow unlike clear"
        ),
        D,
    ),
    # EXECUTE
    **dict.fromkeys(
        _w(
            "run execute exec trigger start stop cancel abort restart invoke call send navigate click type press "
            "hover drag select fill evaluate eval handle emulate resize close upload wait install deploy notify "
            "simulate sample rerun dispatch schedule build test sleep request think compress gzip zip unzip "
            "convert calculate compute translate publish sync export interact"
        ),
        E,
    ),
}
# Words that are verbs only at the start of a name (``request_copilot_review``) or right after
# a namespace (``slack_post_message``); further on they are nouns (``browser_network_request``).
FIRST_ONLY = {
    "request",
    "label",
    "tag",
    "record",
    "comment",
    "reply",
    "build",
    "test",
    "sample",
    "schedule",
    "stage",
    "log",
    "lock",
    "pin",
    "post",
    "copy",
    "archive",
}
CANONICAL = {
    "create": C,
    "get": R,
    "list": R,
    "search": R,
    "read": R,
    "update": U,
    "delete": D,
    "remove": D,
    "execute": E,
    "run": E,
    "cancel": E,
    "add": C,
}
# Pure functions of their input: no state is touched, so READ (REQ-CLS-002 "prefer READ if
# no side effects") when annotations do not say otherwise.
PURE_VERBS = {"convert", "calculate", "compute", "echo", "translate", "render"}
# Read verbs that do not guarantee a read: a pure computation may write its output to a file
# (``convert_to_pdf``), ``open``/``download`` may save one, and ``query`` is the verb of generic
# statement tools that run writes as readily as selects.
AMBIGUOUS_READ_VERBS = {"convert", "translate", "render", "open", "download", "query"}
# Words of a name that is nothing but a generic statement runner (``query``, ``run_sql``).
_GENERIC_NAME_WORDS = {"query", "sql", "statement", "run", "execute", "exec", "db", "database", "raw", "cypher"}
_EXECUTES_STATEMENTS = re.compile(r"\b(execut\w*|run\w*)\b[^.]{0,40}\b(query|queries|sql|statements?|commands?)\b", re.I)
_SAYS_READ_ONLY = re.compile(r"\bread[- ]only\b", re.I)
# HTTP methods as the first word of an OpenAPI-derived tool's name (or the second, after a
# namespace such as Notion's ``API-``): what the method alone says.
HTTP_METHODS: dict[str, Category] = {"get": R, "post": C, "put": U, "patch": U, "delete": D}
_DROP_OBJECTS = {"table", "tables", "database", "databases", "db", "index", "collection", "schema", "view", "column"}
_METHOD_KEYS = ("method", "action", "operation", "op")

# DANGER §3.3 defaults by category, and §6 patterns (the highest match wins, §5.1).
DANGER_ORDER = ("safe", "reversible", "destructive", "dangerous", "forbidden")
DEFAULT_DANGER: dict[Category, str] = {R: "safe", C: "reversible", U: "reversible", D: "destructive", E: "reversible"}
DANGER_PATTERNS: dict[str, tuple[str, ...]] = {
    "dangerous": (
        "force_*",
        "*_permanently",
        "bulk_delete*",
        "override_*",
        "bypass_*",
        "*_without_backup",
        "purge_*",
        "*_unsafe",
        "*_unsafe_*",
    ),
    "forbidden": ("drop_*", "delete_all*", "truncate_*", "reset_*", "destroy_*", "wipe_*", "*_production"),
}


_DANGER_STEPS = ("danger default", "destructiveHint: true raises", "name matches danger", "it can delete")


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
    # Why a READ is a *guaranteed* read, served under ``--read-only``: "annotation" (readOnlyHint),
    # "verb" (an unambiguous read verb, nothing contrary) or "override"; "" for anything else.
    read_basis: str = ""

    def read_only_exclusion(self) -> str | None:
        """``None`` if ``--read-only`` serves this operation, else the reason it does not."""
        if self.category is R and self.read_basis:
            return None
        if self.category is R:
            reasons = "; ".join(self.review_reasons) or "no read-only annotation and no unambiguous read verb"
            return f"READ but not a guaranteed read ({reasons})"
        said = self.decided_by()
        return f"{self.category.value} ({said})" if said else self.category.value

    def decided_by(self) -> str:
        """The annotations' veto, if any, and the last step that decided the category."""
        steps = [w for w in self.why if not w.startswith(_DANGER_STEPS)]
        veto = [w for w in steps[:1] if w.startswith("annotations")]
        return "; ".join(veto + [w for w in steps[-1:] if w not in veto])

    def as_dict(self) -> dict[str, Any]:
        return {
            "category": self.category.value,
            "confidence": self.confidence,
            "danger_level": self.danger_level,
            "why": list(self.why),
            "needs_review": self.needs_review,
            "review_reasons": list(self.review_reasons),
            "read_only_guaranteed": self.category is R and bool(self.read_basis),
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


def http_method_verb(name: str) -> tuple[str, Category, Category | None] | None:
    """``(method, what the method says, what the words after a POST say)`` for an
    OpenAPI-derived name (``get_user``, ``API-post-search``); ``None`` for other names."""
    ws = words(name)
    for i in (0, 1):
        if i >= len(ws) - 1 or ws[i] not in HTTP_METHODS or (i == 1 and _verb_category(ws, 0) is not None):
            continue
        if i == 0 and ws[0] not in ("post", "put"):
            return None  # ``get_…``/``delete_…``/``patch_…`` first: the ordinary verb grammar agrees
        rest = name_verb("_".join(ws[i + 1 :])) if ws[i] == "post" else None
        return ws[i], HTTP_METHODS[ws[i]], rest[1] if rest else None
    return None


def compound_verbs(name: str) -> set[Category]:
    """The verbs of a compound name (``search_and_replace``, ``create_or_update_file``)."""
    ws = words(name)
    if not ({"and", "or"} & set(ws[1:-1])):
        return set()
    parts: list[list[str]] = []
    cur: list[str] = []
    for w in ws:
        if w in ("and", "or"):
            parts.append(cur)
            cur = []
        else:
            cur.append(w)
    parts.append(cur)
    cats = set()
    for part in parts:
        cat = _verb_category(part, 0) if part else None
        if cat is not None:
            cats.add(cat)
    return cats


@dataclass
class _Evidence:
    """What the gap-filling steps (2–6) conclude before the annotations' veto is applied."""

    category: Category = E
    confidence: str = "low"
    read_basis: str = ""
    why: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)
    method_cats: dict[str, str] = field(default_factory=dict)
    extra_danger: str | None = None


def _from_methods(key: str, values: list[str], ann: Mapping[str, Any], ev: _Evidence) -> None:
    cats: set[Category] = set()
    for v in values:
        mv = name_verb(v)
        cat = mv[1] if mv else None
        ev.method_cats[v] = cat.value if cat else "?"
        cats.add(cat if cat is not None else U)  # an unknown action on a non-read-only tool changes state
    if ann.get("readOnlyHint") is False or ann.get("destructiveHint") is True:
        cats.discard(R)
    if not cats:
        ev.category, ev.confidence = U, "low"
        ev.review.append(f"no recognisable verb among {key} values {values}")
    else:
        ev.category = _combine(cats)
        ev.confidence = "medium" if len(cats) > 1 else "high"
        if ev.category is R:
            ev.read_basis = "verb"
        if len(cats) > 1 and ev.category is not C:
            ev.review.append(
                f"multi-method tool ({key}: {', '.join(values)}) mixes "
                f"{', '.join(sorted(c.value for c in cats))}; classified {ev.category.value}"
            )
        if D in cats and ev.category is not D:
            ev.extra_danger = "destructive"
    unknown = [k for k, v in ev.method_cats.items() if v == "?"]
    if unknown:
        ev.why.append(f"{key} values without a known verb: {unknown}")
    ev.why.append(f"multi-method tool: {key} ∈ {values} → {ev.category.value}")


def _from_name(name: str, description: str, verb: str, category: Category, ann: Mapping[str, Any], ev: _Evidence) -> None:
    ws = words(name)
    ev.category = category
    ev.confidence = "high" if ws[0] in CANONICAL and CANONICAL[ws[0]] is category else "medium"
    ev.why.append(f"name verb '{verb}' → {category.value}")
    both = compound_verbs(name)
    if len(both) > 1:
        # the read half of "search and replace" / "get or create" does not change what the write does
        ev.category, ev.confidence = _combine(both - {R}), "medium"
        ev.why.append(f"compound name: verbs {sorted(c.value for c in both)} → {ev.category.value}")
        if D in both and ev.category is not D:
            ev.extra_danger = "destructive"
    if verb == "write" and re.search(r"\b(delete|remove|drop)\b", description, re.I):
        ev.category, ev.confidence = U, "medium"
        ev.extra_danger = "destructive"
        ev.review.append("a 'write' tool whose description mentions deletion; classified UPDATE")
        ev.why.append("'write' + deletion in the description → UPDATE, danger destructive")
    if verb in PURE_VERBS and ann.get("readOnlyHint") is None and ann.get("destructiveHint") is not True:
        ev.category = R
        ev.why.append(f"'{verb}' is a pure computation with no side effects → READ (REQ-CLS-002)")
    if ev.category is not R:
        return
    if (
        verb == "query"
        and "readOnlyHint" not in ann
        and (set(ws) <= _GENERIC_NAME_WORDS or _EXECUTES_STATEMENTS.search(description))
    ):
        if _SAYS_READ_ONLY.search(description):
            ev.review.append("a generic query tool; only its description says read-only (no readOnlyHint)")
            ev.why.append("generic 'query' tool described as read-only → READ, not guaranteed")
        else:
            ev.category, ev.confidence = E, "low"
            ev.review.append("a generic query/statement tool with no readOnlyHint can write (CREATE/DROP TABLE)")
            ev.why.append("generic 'query' tool without readOnlyHint → EXECUTE")
        return
    dv = _description_verb(description)
    if verb in AMBIGUOUS_READ_VERBS:
        ev.review.append(f"'{verb}' does not guarantee a read (it may write files or run statements)")
    elif dv is not None and dv[1] in (C, U, D):
        ev.review.append(f"the description starts with '{dv[0]}' ({dv[1].value}) while the name reads")
    else:
        ev.read_basis = "verb"


def _gap_filler(tool: Mapping[str, Any], name: str, description: str, ann: Mapping[str, Any]) -> _Evidence:
    """Steps 2–6 of the module docstring: what the tool does, when annotations do not say READ."""
    ev = _Evidence()
    methods = _methods(tool.get("inputSchema"))
    hm = http_method_verb(name)
    nv = name_verb(name)
    if methods is not None:
        _from_methods(*methods, ann, ev)
    elif hm is not None and (hm[0] != "post" or hm[2] is not None) and len(compound_verbs(name)) < 2:
        method, by_method, rest = hm
        ev.category, ev.confidence = (rest or by_method), "medium"
        ev.why.append(
            f"HTTP-method name: {method.upper()} → {by_method.value}" + (f"; the words after it → {rest.value}" if rest else "")
        )
        if method == "post" and rest is R:
            ev.review.append("a read by name, sent as HTTP POST: not a guaranteed read")
        elif ev.category is R:
            ev.read_basis = "verb"
    elif nv is not None:
        _from_name(name, description, *nv, ann, ev)
    elif (dv := _description_verb(description)) is not None:
        verb, ev.category = dv
        ev.why.append(f"no verb in the name; description starts with '{verb}' → {ev.category.value}")
        ev.review.append("classified from the description only")
    else:
        if ann.get("destructiveHint") is False:
            ev.category = C
            ev.why.append("no verb found; not read-only and destructiveHint false → additive CREATE")
        elif ann.get("idempotentHint") is True:
            ev.category = U
            ev.why.append("no verb found; idempotent and not read-only → UPDATE")
        else:
            ev.category = E
            ev.why.append("no verb found; side effects of unknown kind → EXECUTE")
        ev.review.append("no verb in the name or description; classified from annotations")
    return ev


def classify(tool: Mapping[str, Any]) -> Classification:
    """Classify one ``tools/list`` entry (a dict in wire form)."""
    name = str(tool.get("name", ""))
    description = str(tool.get("description") or "")
    ann: Mapping[str, Any] = tool.get("annotations") or {}
    if not isinstance(ann, Mapping):
        ann = {}
    ro, de = ann.get("readOnlyHint"), ann.get("destructiveHint")
    nv = name_verb(name)
    source = "heuristic_classification"
    if ro is True and de is not True:
        ev = _Evidence(category=R, confidence="high", read_basis="annotation", why=["annotations.readOnlyHint is true"])
        source = "direct_source_metadata"
        if nv is not None and nv[1] is not R and nv[0] not in PURE_VERBS:
            ev.confidence = "medium"
            ev.review.append(f"name verb '{nv[0]}' suggests {nv[1].value}, but the server declares the tool read-only")
            ev.why.append(f"name verb '{nv[0]}' ({nv[1].value}) overruled by readOnlyHint")
    else:
        veto = []
        if ro is True:
            veto.append("annotations contradict each other (readOnlyHint and destructiveHint both true): not READ")
        elif ro is False:
            veto.append("annotations.readOnlyHint is false: not READ")
        if de is True:
            veto.append("annotations.destructiveHint is true: not READ, danger at least destructive")
        ev = _gap_filler(tool, name, description, ann)
        ev.why[:0] = veto
        if veto and ev.category is R:
            ev.category, ev.read_basis = E, ""
            ev.confidence = "low" if ev.confidence == "low" else "medium"
            ev.review.append(
                "reads by name, but the server declares side effects (readOnlyHint false or destructiveHint true) → EXECUTE"
            )
            ev.why.append("declared side effects with a read verb → EXECUTE")
        if ro is True:
            ev.review.append("readOnlyHint and destructiveHint are both true; treated as not read-only")
        if de is False and ev.category is D:
            ev.review.append("a DELETE verb, but destructiveHint is false")
            ev.confidence = "medium"
        if (ro is False or de is not None) and ev.confidence == "medium" and not ev.review:
            ev.confidence = "high"  # the annotations agree with the grammar

    op_name = snake_name(name)
    danger, dwhy = danger_for(op_name, ev.category, ann)
    if ev.extra_danger and DANGER_ORDER.index(ev.extra_danger) > DANGER_ORDER.index(danger):
        danger = ev.extra_danger
        dwhy.append("it can delete (a method, its name or its description) → destructive")
    ev.why.extend(dwhy[1:] if len(dwhy) > 1 else dwhy)
    return Classification(
        category=ev.category,
        confidence=ev.confidence,
        danger_level=danger,
        why=tuple(ev.why),
        needs_review=bool(ev.review),
        review_reasons=tuple(ev.review),
        source=source,
        danger_source="heuristic_classification",
        methods=ev.method_cats,
        read_basis=ev.read_basis if ev.category is R else "",
    )
