"""Listing tokens at scale: flat (every name, the whole list) vs bounded (grouped, paged), side by side.

For generated registries of N operations (five per element type: create/get/list/update/delete,
as CORE §8.5 names them) it prints, in one run, o200k tokens of:

* ``tools/list`` in semantic and single mode with the listing threshold out of reach (the
  behaviour before issue 14: every name in the descriptions) and with the default threshold;
* ``introspect operations`` with no parameters: the whole list (before) vs its first page now;
* a filtered page (``element_type``) and the per-call cost of an exact name (one detail).

The threshold sweep (``--sweep``) prints flat vs grouped description tokens of one tool for
growing operation counts, and for GitHub's REST description when installed: the measurements
``Config.listing_threshold`` was chosen from (docs/listings.md).

    .venv/bin/python bench/bench_listings.py [--sizes 5000,10000] [--sweep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcpaql import tokens
from mcpaql.config import LISTING_THRESHOLD, Config
from mcpaql.protocol.categories import Category
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.envelope import success
from mcpaql.protocol.operations import OperationSpec, ParamSpec
from mcpaql.protocol.registry import Registry
from mcpaql.protocol.session import Session

VERBS = (("create", Category.CREATE), ("get", Category.READ), ("list", Category.READ), ("update", Category.UPDATE))
VERBS += (("delete", Category.DELETE),)
UNBOUNDED = 1_000_000  # a threshold no registry reaches: the flat listing of before
ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / ".cache-upstreams" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"


def generated(n: int, adapter: str = "scale") -> Registry:
    """``n`` operations over ``n / 5`` element types (``create_widget12``, ``list_widget12s``, ...)."""
    reg = Registry(adapter)
    ident = (ParamSpec("id", {"type": "integer"}, required=True, description="Identifier"),)
    for i in range(n):
        verb, cat = VERBS[i % 5]
        element = f"widget{i // 5}"
        name = f"{verb}_{element}s" if verb == "list" else f"{verb}_{element}"
        params = ident if verb in ("get", "update", "delete") else ()
        reg.add(OperationSpec(name=name, category=cat, description=f"{verb.title()} {element}", params=params))
    return reg


def introspect(engine: Engine, params: dict[str, Any]) -> int:
    """Tokens of one introspect round trip as the model sees it: request + envelope."""
    req = {"operation": "introspect", "params": params}
    env = asyncio.run(engine.call_tool(engine.introspect_tool, req, engine.context(Session())))
    return tokens.count_json(req) + tokens.count_json(env)


def measure(n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"operations": n}
    for mode in ("semantic", "single"):
        before = Engine(generated(n), Config(mode=mode, listing_threshold=UNBOUNDED))
        after = Engine(generated(n), Config(mode=mode))
        out[mode] = {"before": tokens.count_tools(before.tools), "after": tokens.count_tools(after.tools)}
    eng = Engine(generated(n), Config())
    # Before: the whole list in one answer (what ``introspect operations`` returned until issue 14).
    whole = {"_protocol": eng.introspector.protocol("s"), "operations": [op.list_info() for op in eng.operations]}
    out["introspect_operations"] = {
        "before": tokens.count_json({"operation": "introspect", "params": {"query": "operations"}})
        + tokens.count_json(success(whole)),
        "after": introspect(eng, {"query": "operations"}),
    }
    out["filtered_page"] = introspect(eng, {"query": "operations", "element_type": f"widget{n // 10}"})
    out["one_detail"] = introspect(eng, {"query": "operations", "name": f"get_widget{n // 10}"})
    return out


def sweep() -> list[dict[str, Any]]:
    """Flat vs grouped tokens of one tool's description as its operation count grows."""
    rows = []
    for n in (50, 100, 150, 200, 300, 500, 1000):
        flat = Engine(generated(n), Config(mode="single", listing_threshold=UNBOUNDED)).tools[0].description
        grouped = Engine(generated(n), Config(mode="single", listing_threshold=1)).tools[0].description
        rows.append({"operations": n, "flat": tokens.count_text(flat), "grouped": tokens.count_text(grouped)})
    if GITHUB.is_file():
        rows.extend(_github_rows())
    return rows


def _github_rows() -> list[dict[str, Any]]:
    """GitHub's REST description (npm ``@octokit/openapi``): the largest real surface at hand."""
    import logging

    from mcpaql.adapters.openapi import OpenAPIRuntime, load_document

    logging.disable(logging.WARNING)  # unsupported media types are listed, not measured
    try:
        reg = OpenAPIRuntime(load_document(GITHUB), base_url="http://127.0.0.1:9").registry()
    except Exception as e:  # the sweep still prints the generated rows
        print(f"(GitHub REST description skipped: {type(e).__name__})", file=sys.stderr)
        return []
    flat = Engine(reg, Config(mode="single", listing_threshold=UNBOUNDED))
    grouped = Engine(reg, Config(mode="single"))
    label = f"GitHub REST ({len(flat.operations):,})"
    return [{"operations": label, "flat": tokens.count_tools(flat.tools), "grouped": tokens.count_tools(grouped.tools)}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="listing tokens at scale (o200k_base)")
    ap.add_argument("--sizes", default="5000,10000")
    ap.add_argument("--sweep", action="store_true", help="flat vs grouped description tokens by operation count")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = [measure(int(s)) for s in a.sizes.split(",") if s.strip()]
    rows = sweep() if a.sweep else []
    if a.json:
        print(json.dumps({"sizes": results, "sweep": rows}, indent=2))
        return 0
    print(f"listing threshold {LISTING_THRESHOLD} operations per tool; o200k tokens, before → after (ratio)")
    for r in results:
        print(f"== {r['operations']:,} operations")
        for key, label in (
            ("semantic", "tools/list semantic"),
            ("single", "tools/list single"),
            ("introspect_operations", "introspect operations"),
        ):
            b, f = r[key]["before"], r[key]["after"]
            print(f"   {label:24} {b:>9,} → {f:>6,}  ({b / f:.0f}x smaller)")
        print(f"   {'filtered page':24} {r['filtered_page']:>9,} tokens (element_type: one element's five operations)")
        print(f"   {'one detail by name':24} {r['one_detail']:>9,} tokens (no listing needed first)")
    if rows:
        print("== threshold sweep: one tool's description, flat vs grouped")
        for row in rows:
            print(f"   {row['operations']!s:>22} operations: flat {row['flat']:>7,}  grouped {row['grouped']:>5,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
