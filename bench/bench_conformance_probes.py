"""Probe values of the live conformance suite on real tool schemas, side by side in one run.

For every parameter of every tool in the real servers' captures (``../shared/fixtures/surfaces``,
plus any given with ``--surfaces``), a value is built from the ParameterInfo a wrapper shows for it
(``parameter_info``) two ways, and each is validated with ``jsonschema`` against the parameter's
original JSON Schema:

* tag     — the suite's former strategy: enum, else the run's tag (``mcpaql-conformance-…``) padded
            to ``minLength``, ``1`` for numbers clamped to the bounds, the first of a few fixed
            strings for a pattern, fixed samples for five formats;
* schema  — ``mcpaql.conformance.values.build_value``: formats, patterns, bounds, description
            examples, name hints, loopback addresses.

It prints, per capture and in total: parameters, values built, values valid against the schema,
values naming a non-loopback address, and the build time per parameter.

    .venv/bin/python bench/bench_conformance_probes.py [--surfaces DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from mcpaql.conformance import network
from mcpaql.conformance.values import CannotBuild, build_value
from mcpaql.protocol.schema import parameter_info, resolve

SURFACES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "surfaces"
TAG = "mcpaql-conformance-0123abcd"
_OLD_FORMATS = {
    "date-time": "2026-01-02T03:04:05Z",
    "date": "2026-01-02",
    "email": "conformance@example.com",
    "uri": "https://example.com/mcpaql-conformance",
    "url": "https://example.com/mcpaql-conformance",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def tag_value(p: dict[str, Any]) -> Any:
    """The former builder, reduced to scalars and arrays of scalars."""
    if p.get("enum"):
        return p["enum"][0]
    if "default" in p and p["default"] is not None and not p.get("required"):
        return p["default"]
    t = str(p.get("type", "")).split("|")[0].strip()
    if t.endswith("[]") or t == "array":
        item = dict(p.get("items") or {"type": t[:-2] if t.endswith("[]") else "string"})
        return [tag_value(item)]
    if t == "string":
        if p.get("format") in _OLD_FORMATS:
            return _OLD_FORMATS[p["format"]]
        for c in (TAG, "conformance", "abc", "a", "A", "1", "123"):
            v = c + "x" * max(0, (p.get("minLength") or 0) - len(c))
            if not p.get("pattern") or re.search(p["pattern"], v):
                return v
        return TAG
    if t in ("integer", "number"):
        v = 1
        v = max(v, p.get("minimum", v))
        v = min(v, p.get("maximum", v))
        return v
    if t == "boolean":
        return False
    return {}


def load(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    return list(data["tools"] if isinstance(data, dict) else data)


def params(tools: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for t in tools:
        schema = resolve(dict(t.get("inputSchema") or {}), "Input")
        req = set(schema.get("required") or [])
        for name, s in (schema.get("properties") or {}).items():
            if isinstance(s, dict):
                out.append((parameter_info(name, s, name in req), s))
    return out


def _informed(v: Any) -> bool:
    """A value taken from the documentation (facet, example, hint), not the run's bare tag."""
    return not any("mcpaql-conformance" in x for x in network.strings_in(v))


def measure(pairs: list[tuple[dict[str, Any], dict[str, Any]]], build: Any) -> dict[str, float]:
    built = valid = remote = informed = 0
    t0 = time.perf_counter()
    values = []
    for info, _ in pairs:
        try:
            values.append(build(info))
        except CannotBuild:
            values.append(CannotBuild)
    elapsed = time.perf_counter() - t0
    for (_, schema), v in zip(pairs, values, strict=True):
        if v is CannotBuild:
            continue
        built += 1
        valid += Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(v)
        remote += bool(network.remote_urls(v))
        informed += _informed(v)
    return {"built": built, "valid": valid, "remote": remote, "informed": informed, "us": 1e6 * elapsed / max(1, len(pairs))}


def _scalar(info: dict[str, Any]) -> bool:
    """Parameters both builders handle without ``introspect types`` (no named object types)."""
    t = str(info.get("type", "")).split("|")[0].strip().removesuffix("[]")
    return (t in ("string", "integer", "number", "boolean", "array", "any") and "items" not in info) or (
        isinstance(info.get("items"), dict) and info["items"].get("type") in ("string", "integer", "number", "boolean")
    )


KEYS = ("built", "valid", "informed", "remote")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--surfaces", type=Path, default=SURFACES)
    a = ap.parse_args()
    files = sorted(a.surfaces.glob("*.tools-list.json"))
    print("scalar parameters (and arrays of scalars); object-typed ones need introspect types and are left out")
    head = f"{'tag: built valid informed remote':>33} | {'schema: built valid informed remote µs':>40}"
    print(f"{'capture':28} {'params':>6} | {head}")
    tot: dict[str, Any] = {"n": 0, "tag": dict.fromkeys(KEYS, 0), "new": dict.fromkeys(KEYS, 0)}
    for f in files:
        pairs = [(i, s) for i, s in params(load(f)) if _scalar(i)]
        old = measure(pairs, tag_value)
        new = measure(pairs, lambda p: build_value(p, lambda _n: None))
        tot["n"] += len(pairs)
        for k, m in (("tag", old), ("new", new)):
            for key in KEYS:
                tot[k][key] += int(m[key])
        o = " ".join(f"{old[k]:{w}.0f}" for k, w in zip(KEYS, (10, 5, 8, 6), strict=True))
        n = " ".join(f"{new[k]:{w}.0f}" for k, w in zip(KEYS, (13, 5, 8, 6), strict=True))
        print(f"{f.name.removesuffix('.tools-list.json'):28} {len(pairs):6} | {o} | {n} {new['us']:5.0f}")
    n = tot["n"]
    o = " ".join(f"{tot['tag'][k]:{w}}" for k, w in zip(KEYS, (10, 5, 8, 6), strict=True))
    w = " ".join(f"{tot['new'][k]:{w}}" for k, w in zip(KEYS, (13, 5, 8, 6), strict=True))
    print(f"{'all':28} {n:6} | {o} | {w}")
    t, s = tot["tag"], tot["new"]
    print(
        f"valid/params: tag {t['valid'] / max(1, n):.1%}, schema {s['valid'] / max(1, n):.1%}; "
        f"informed (not the bare tag): tag {t['informed'] / max(1, n):.1%}, schema {s['informed'] / max(1, n):.1%}; "
        f"remote addresses: tag {t['remote']}, schema {s['remote']}"
    )


if __name__ == "__main__":
    main()
