"""Grade an evidence bundle the way the spec repository's conformance runner does (Tier 1).

The runner (``spec/scripts/run-conformance-tests.mjs``, AGPL, read for its rules only) checks an
evidence bundle (conformance/EVIDENCE-FORMAT.md) in categories — Introspection Fidelity,
Parameter Handling, Error Quality, Round-Trip Integrity (MUST) and, at Level 2, Level 2
Features, Constraint Documentation, Semantic Evaluation (SHOULD). This module applies the same
rules, with the same test names, so ``mcpaql conformance`` never claims a level the runner
would refuse on the same evidence, and ``mcpaql conformance grade EVIDENCE`` grades a bundle
without Node. The rules that are easy to get subtly wrong are kept as the runner has them:

* its forbidden-message patterns (:data:`FORBIDDEN_MESSAGE_PATTERNS`, case-insensitive), so
  ``at least`` or ``format 'x'`` in a message is a "leak";
* JavaScript equality: defaults compare with ``===`` (objects never equal; a missing path is
  not ``null``), round trips compare ``JSON.stringify`` texts (key order matters, ``1.0`` is
  ``1``), paths walk ``a.b.0.length`` like JavaScript property access;
* a category with a failing test fails when required and warns otherwise; exit 1 on a MUST
  failure, else 2 on a SHOULD warning, else 0 (``conformanceLevel`` 0 on a MUST failure).

Tier 2 (semantic) is skipped as with the runner's ``--tier 1`` unless asked for.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from os import PathLike
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

FORBIDDEN_MESSAGE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.I)
    for p in (r"typeerror", r"referenceerror", r"syntaxerror", r"at\s+\S+", r"/src/", r"/node_modules/", r"\.ts:\d+", r"\.js:\d+")
)
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_MUST = ("Introspection Fidelity", "Parameter Handling", "Error Quality", "Round-Trip Integrity")


class _Missing:
    """JavaScript's ``undefined``: what a path that does not exist evaluates to."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Missing()


def runner_leaks(message: str) -> list[str]:
    """The runner's forbidden patterns ``message`` matches (empty when it passes)."""
    return [p.pattern for p in FORBIDDEN_MESSAGE_PATTERNS if p.search(message)]


def js_get(obj: Any, path: str) -> Any:
    """``path.split('.').reduce((c, s) => c?.[s], obj)`` in Python."""
    for seg in path.split("."):
        if obj is None or obj is UNDEFINED:
            return UNDEFINED
        if isinstance(obj, dict):
            obj = obj.get(seg, UNDEFINED)
        elif isinstance(obj, list | str):
            if seg == "length":
                obj = len(obj)
            elif seg.isdigit() and str(int(seg)) == seg and int(seg) < len(obj):
                obj = obj[int(seg)]
            else:
                return UNDEFINED
        else:
            return UNDEFINED
    return obj


def js_strict_equal(a: Any, b: Any) -> bool:
    """``a === b`` for JSON values: objects and arrays are equal only to themselves."""
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b and not (isinstance(a, float) and math.isnan(a))
    return type(a) is type(b) and a == b


def js_stringify(value: Any) -> str | None:
    """``JSON.stringify(value)`` (``None`` for ``undefined``), for round-trip comparisons."""
    if value is UNDEFINED:
        return None
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(js_stringify(v) or "null" for v in value) + "]"
    if isinstance(value, dict):
        parts = [f"{json.dumps(str(k), ensure_ascii=False)}:{s}" for k, v in value.items() if (s := js_stringify(v)) is not None]
        return "{" + ",".join(parts) + "}"
    return json.dumps(str(value))


def js_number(x: float) -> str:
    """``String(x)`` for a finite double: the shortest round-trip digits (as Python's ``repr``)
    laid out by ECMAScript's Number::toString rules (plain between 1e-7 and 1e21)."""
    if x == 0:
        return "0"
    d = Decimal(repr(x))
    sign, digits_t, exp = d.as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    assert isinstance(exp, int)
    k = len(digits)
    n = exp + len(digits_t)  # the decimal point sits after n digits
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * -n + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return ("-" if sign else "") + s


def _js_json(value: Any) -> str:
    s = js_stringify(value)
    return "undefined" if s is None else s


@dataclass
class GradedTest:
    name: str
    result: str  # PASS | WARN | FAIL | SKIP
    detail: str


@dataclass
class GradedCategory:
    name: str
    required: bool
    tests: list[GradedTest] = field(default_factory=list)
    fixed: str | None = None  # a result the runner sets outright (Tier 1's skipped semantic category)

    @property
    def result(self) -> str:
        if self.fixed:
            return self.fixed
        results = {t.result for t in self.tests}
        if "FAIL" in results:
            return "FAIL" if self.required else "WARN"
        if "WARN" in results:
            return "WARN"
        return "PASS" if self.tests else "SKIP"

    def add(self, name: str, ok: bool | str, detail_ok: str, detail_bad: str) -> None:
        result = ok if isinstance(ok, str) else "PASS" if ok else "FAIL"
        self.tests.append(GradedTest(name, result, detail_ok if result == "PASS" else detail_bad))


@dataclass
class Grade:
    """The runner's report for one bundle at one level."""

    requested_level: int
    categories: list[GradedCategory]
    implementation: Any = None
    spec_version: Any = None

    @property
    def must_failed(self) -> bool:
        return any(c.required and c.result == "FAIL" for c in self.categories)

    @property
    def should_warned(self) -> bool:
        return any(not c.required and c.result in ("WARN", "FAIL") for c in self.categories)

    @property
    def exit_code(self) -> int:
        return 1 if self.must_failed else 2 if self.should_warned else 0

    @property
    def conformance_level(self) -> int:
        return 0 if self.must_failed else self.requested_level

    def failures(self) -> list[str]:
        """``category: test — detail`` for every failing (or, in SHOULD categories, warning) test."""
        return [
            f"{c.name}: {t.name} — {t.detail}"
            for c in self.categories
            for t in c.tests
            if t.result == "FAIL" or (t.result == "WARN" and not c.required)
        ]

    def summary(self) -> dict[str, int]:
        s = {"passed": 0, "warned": 0, "failed": 0, "skipped": 0}
        key = {"PASS": "passed", "WARN": "warned", "FAIL": "failed"}
        for c in self.categories:
            for t in c.tests:
                s[key.get(t.result, "skipped")] += 1
        return s

    def to_dict(self) -> dict[str, Any]:
        return {
            "implementation": self.implementation,
            "specVersion": self.spec_version,
            "requestedLevel": self.requested_level,
            "conformanceLevel": self.conformance_level,
            "summary": {"total": sum(self.summary().values()), **self.summary()},
            "categories": [
                {
                    "name": c.name,
                    "required": c.required,
                    "result": c.result,
                    "tests": [{"name": t.name, "result": t.result, "detail": t.detail} for t in c.tests],
                }
                for c in self.categories
            ],
            "exitCode": self.exit_code,
        }

    def render_text(self) -> str:
        """The runner's ``--format text`` layout."""
        s = self.summary()
        lines = [
            f"Implementation: {self.implementation}",
            f"Spec version: {self.spec_version}",
            f"Requested level: {self.requested_level}",
            f"Conformance level: {self.conformance_level}",
            f"Summary: {s['passed']} passed, {s['warned']} warned, {s['failed']} failed, {s['skipped']} skipped",
            "",
        ]
        for c in self.categories:
            lines.append(f"{c.name} [{'MUST' if c.required else 'SHOULD'}] -> {c.result}")
            for t in c.tests:
                lines.append(f"  - {t.result}: {t.name}")
                if t.detail:
                    lines.append(f"    {t.detail}")
            lines.append("")
        return "\n".join(lines).rstrip()


class _Schemas:
    """The runner's four validators, from the spec's schema files (formats checked, like ajv-formats)."""

    def __init__(self, schema_dir: Path) -> None:
        intro = json.loads((schema_dir / "introspection-response.schema.json").read_text(encoding="utf-8"))
        result = json.loads((schema_dir / "operation-result.schema.json").read_text(encoding="utf-8"))
        registry = Registry().with_resources(
            [(intro["$id"], Resource.from_contents(intro)), (result["$id"], Resource.from_contents(result))]
        )
        fc = FormatChecker()

        def sub(name: str) -> Draft202012Validator:
            return Draft202012Validator({"$ref": f"{intro['$id']}#/$defs/{name}"}, registry=registry, format_checker=fc)

        self.result = Draft202012Validator({"$ref": result["$id"]}, registry=registry, format_checker=fc)
        self.operations = sub("OperationsListData")
        self.types = sub("TypesListData")
        self.detail = sub("OperationDetails")

    @staticmethod
    def errors(v: Draft202012Validator, instance: Any) -> str:
        return "; ".join(f"/{'/'.join(map(str, e.absolute_path))} {e.message[:160]}" for e in v.iter_errors(instance))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _message(response: Any) -> str:
    msg = _dict(_dict(response).get("error")).get("message")
    return msg if isinstance(msg, str) else ""


def _introspection(b: dict[str, Any], v: _Schemas) -> GradedCategory:
    cat = GradedCategory("Introspection Fidelity", True)
    intro = _dict(b.get("introspection"))
    for key, name, validator, what in (
        ("operations_list", "Operations query is implemented", v.operations, "operations"),
        ("types_list", "Types query is implemented", v.types, "types"),
    ):
        env = _dict(intro.get(key))
        ok = env.get("success") is True and validator.is_valid(env.get("data"))
        bad = (
            _Schemas.errors(validator, env.get("data"))
            if env.get("success") is True
            else f"Missing or failing `introspect` {what} evidence."
        )
        cat.add(name, ok, f"The fixture includes a valid `introspect` {what} response.", bad)
    accepted = _dict(b.get("accepted_parameters"))
    invalid, missing, undocumented = [], [], []
    for d in _list(intro.get("operation_details")):
        if not v.detail.is_valid(d):
            invalid.append(f"{_dict(d).get('name')}: {_Schemas.errors(v.detail, d)}")
            continue
        documented = [p["name"] for p in d.get("parameters") or []]
        acc = _list(accepted.get(d["name"]))
        missing += [f"{d['name']}.{p}" for p in acc if p not in documented]
        undocumented += [f"{d['name']}.{p}" for p in documented if p not in acc]
    cat.add(
        "Operation detail payloads validate",
        not invalid,
        "All documented operations matched the introspection schema.",
        " | ".join(invalid),
    )
    result = "PASS" if not missing and not undocumented else "FAIL" if missing else "WARN"
    parts = [f"Missing from introspection: {', '.join(missing)}" if missing else ""]
    parts.append(f"Documented but not accepted in fixture evidence: {', '.join(undocumented)}" if undocumented else "")
    cat.add(
        "Introspection completeness matches accepted parameters",
        result,
        "Every accepted parameter is reflected in introspection.",
        " | ".join(p for p in parts if p),
    )
    return cat


def _parameters(b: dict[str, Any]) -> GradedCategory:
    cat = GradedCategory("Parameter Handling", True)
    details = [d for d in _list(_dict(b.get("introspection")).get("operation_details")) if isinstance(d, dict)]
    by_name = {d.get("name"): d for d in details}  # a later duplicate wins, as in a JS Map
    pt = _dict(b.get("parameter_tests"))
    cases = [c for c in _list(pt.get("missing_required")) if isinstance(c, dict)]
    failures = []
    for op, d in by_name.items():
        for p in _list(d.get("parameters")):
            if not _dict(p).get("required"):
                continue
            case = next((c for c in cases if c.get("operation") == op and c.get("parameter") == p.get("name")), None)
            response = _dict(case.get("response")) if case else {}
            if case is None or response.get("success") is not False or str(p.get("name")) not in _message(response):
                failures.append(f"{op}.{p.get('name')}")
    cat.add(
        "Required parameters are enforced",
        not failures,
        "Required parameters fail clearly when omitted.",
        f"Missing or invalid required-parameter evidence: {', '.join(failures)}",
    )
    silent = []
    for c in _list(pt.get("unknown_parameter")):
        c = _dict(c)
        r = _dict(c.get("response"))
        msg = _message(r)
        explicit_error = r.get("success") is False and bool(msg) and str(c.get("parameter")) in msg
        explicit_warning = r.get("success") is True and len(_list(r.get("warnings"))) > 0
        if not (explicit_error or explicit_warning):
            silent.append(f"{c.get('operation')}.{c.get('parameter')}")
    cat.add(
        "Unknown parameters are handled explicitly",
        not silent,
        "Unknown parameters returned either a structured error or warning.",
        f"Unknown-parameter cases were silent: {', '.join(silent)}",
    )
    wrong = []
    for c in _list(pt.get("optional_defaults")):
        c = _dict(c)
        actual = js_get(c.get("response"), str(c.get("expected_value_path")))
        expected = c.get("expected_value", UNDEFINED)
        if not js_strict_equal(actual, expected):
            wrong.append(f"{c.get('operation')}.{c.get('parameter')} expected {_js_json(expected)}, got {_js_json(actual)}")
    cat.add(
        "Documented defaults are observable",
        not wrong,
        "Optional parameter defaults matched the documented behavior.",
        " | ".join(wrong),
    )
    bad_names = [
        f"{d.get('name')}.{p.get('name')}"
        for d in details
        for p in _list(d.get("parameters"))
        if not (isinstance(p.get("name"), str) and _SNAKE.match(p["name"]))
    ]
    cat.add(
        "Canonical parameter names use snake_case",
        not bad_names,
        "All documented parameter names follow snake_case.",
        f"Non-conforming parameters: {', '.join(bad_names)}",
    )
    return cat


def _errors(b: dict[str, Any], v: _Schemas) -> GradedCategory:
    cat = GradedCategory("Error Quality", True)
    shape, leaks, vague = [], [], []
    for c in _list(b.get("error_tests")):
        c = _dict(c)
        response = c.get("response")
        if not v.result.is_valid(response):
            shape.append(f"{c.get('name')}: {_Schemas.errors(v.result, response)}")
            continue
        msg = _message(response)
        if runner_leaks(msg):
            leaks.append(str(c.get("name")))
        absent = [m for m in _list(c.get("must_mention")) if str(m) not in msg]
        if absent:
            vague.append(f"{c.get('name')}: missing {', '.join(map(str, absent))}")
    cat.add(
        "Error responses match the discriminated union schema",
        not shape,
        "All error evidence matched the operation-result schema.",
        " | ".join(shape),
    )
    cat.add(
        "Error messages do not leak implementation internals",
        not leaks,
        "No stack traces, file paths, or language-specific artifacts were exposed.",
        f"Implementation leakage found in: {', '.join(leaks)}",
    )
    cat.add(
        "Error messages remain actionable",
        "WARN" if vague else "PASS",
        "Each error message identified the affected parameter or correction path.",
        " | ".join(vague),
    )
    return cat


def _round_trip(b: dict[str, Any]) -> GradedCategory:
    cat = GradedCategory("Round-Trip Integrity", True)
    for key, fields, name, ok_text in (
        (
            "round_trip_tests",
            "expected_fields",
            "Create-read cycles preserve submitted fields",
            "Round-trip evidence retained the fields that were submitted.",
        ),
        (
            "update_preservation_tests",
            "preserved_fields",
            "Updates preserve non-targeted fields",
            "Update evidence preserved fields outside the update payload.",
        ),
    ):
        wrong = []
        for c in _list(b.get(key)):
            c = _dict(c)
            for path, expected in _dict(c.get(fields)).items():
                actual = js_get(c.get("read_response"), path)
                if js_stringify(actual) != js_stringify(expected):
                    wrong.append(f"{c.get('name')}:{path} expected {_js_json(expected)}, got {_js_json(actual)}")
        cat.add(name, not wrong, ok_text, " | ".join(wrong))
    return cat


def _level2(b: dict[str, Any], v: _Schemas, tier: str) -> list[GradedCategory]:
    l2 = GradedCategory("Level 2 Features", False)
    modes = _list(b.get("endpoint_modes"))
    caps = _dict(b.get("capabilities"))
    l2.add(
        "Both endpoint modes are documented",
        "crude" in modes and "single" in modes,
        "The implementation advertises both CRUDE and single-endpoint modes.",
        "Level 2 evidence must include both `crude` and `single` endpoint modes.",
    )
    l2.add(
        "Field selection is supported",
        bool(caps.get("field_selection")),
        "Field selection support is advertised in the fixture capabilities.",
        "Level 2 evidence must advertise field selection support.",
    )
    example = b.get("batch_example")
    l2.add(
        "Batch operations are supported",
        bool(caps.get("batch_operations")) and bool(example) and v.result.is_valid(example),
        "Batch evidence validates against the operation-result schema.",
        "Level 2 evidence must include a valid batch example and capability flag.",
    )
    cd = GradedCategory("Constraint Documentation", False)
    failures, warnings = [], []
    for c in _list(b.get("constraint_tests")):
        c = _dict(c)
        r = _dict(c.get("response"))
        if not (r.get("success") is False and isinstance(_dict(r.get("error")).get("message"), str)):
            failures.append(f"{c.get('name')}: constraint not enforced with a structured error")
        elif c.get("documented") is not True:
            warnings.append(f"{c.get('name')}: enforced but not documented in introspection")
    cd.add(
        "Constraints are enforced with structured errors",
        not failures,
        "Constraint cases rejected invalid writes.",
        " | ".join(failures),
    )
    cd.add(
        "Constraints are disclosed in introspection guidance",
        "WARN" if warnings else "PASS",
        "Constraint metadata remained discoverable.",
        " | ".join(warnings),
    )
    return [l2, cd, _semantic(b, tier)]


def _norm(text: Any) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9_]+", " ", str("" if text is None else text).lower())).strip()


def _semantic(b: dict[str, Any], tier: str) -> GradedCategory:
    """Tier 1 skips the category; otherwise each semantic test's structural patterns (Tier 1) and
    phrase groups / expected operations / expected parameters (Tier 2) decide it."""
    if tier == "1":
        sem = GradedCategory("Semantic Evaluation", False, fixed="SKIP")
        sem.tests.append(GradedTest("Semantic evaluation skipped", "SKIP", "Tier 1 execution does not run semantic checks."))
        return sem
    sem = GradedCategory("Semantic Evaluation", False)
    for c in _list(b.get("semantic_tests")):
        c = _dict(c)
        text = _norm(c.get("response_text"))
        calls = [_dict(t) for t in _list(c.get("tool_calls"))]
        spec = _dict(c.get("semantic"))
        structural = all(_norm(p) in text for p in _list(_dict(c.get("structural")).get("required_patterns")))
        semantic = (
            all(any(_norm(p) in text for p in _list(g)) for g in _list(spec.get("phrase_groups")))
            and all(any(t.get("operation") == o for t in calls) for o in _list(spec.get("expected_operations")))
            and all(
                any(_norm(p) in _norm(json.dumps(t.get("params") or {})) for t in calls) or _norm(p) in text
                for p in _list(spec.get("expected_parameters"))
            )
        )
        if structural and semantic:
            result, detail = "PASS", "Tier 1 and Tier 2 both confirmed the expected discovery behavior."
        elif semantic:
            result, detail = "WARN", "Structural patterns missed a valid response; update the fast matcher."
        elif structural:
            result, detail = "FAIL", "Structural checks passed, but the semantic interpretation was still wrong."
        else:
            result, detail = "FAIL", "Both structural and semantic checks failed."
        sem.tests.append(GradedTest(str(c.get("name")), result, detail))
    return sem


def grade_bundle(bundle: Any, level: int, schema_dir: str | PathLike[str], tier: str = "1") -> Grade:
    """Grade ``bundle`` at ``level`` (1 or 2) as ``run-conformance-tests.mjs test --tier TIER``
    does (``"1"``: structural only, what mcpaql uses; anything else also runs Tier 2 on
    ``semantic_tests``, like the runner's default ``both``)."""
    b = _dict(bundle)
    v = _Schemas(Path(schema_dir))
    cats = [_introspection(b, v), _parameters(b), _errors(b, v), _round_trip(b)]
    if level >= 2:
        cats += _level2(b, v, tier)
    return Grade(level, cats, b.get("implementation"), b.get("spec_version"))


def grade_file(path: str | PathLike[str], level: int, schema_dir: str | PathLike[str]) -> Grade:
    """Read an evidence file and grade it (:class:`ValueError` when it is not a JSON object)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read evidence '{path}': {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"evidence '{path}' is not a JSON object")
    return grade_bundle(data, level, schema_dir)
