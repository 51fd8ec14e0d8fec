"""Start-up time and peak memory of ``mcpaql openapi`` against the size of the API document.

For GitHub's REST description (npm ``@octokit/openapi``, installed by
``tests/wrap/install_upstreams.sh``) and for synthetic documents of 100 / 1,000 / 10,000
operations (five per resource, components a tenth of the operations, referring to each other in
cycles and fan-outs), each measured in a fresh subprocess, side by side in one run:

* load      — read and parse the document, derive the tools (every schema resolved once);
* registry  — operations, parameters and named types (the wrapper's classification included);
* engine    — every parameter's checker compiled, tools/list for the ``semantic`` mode;
* introspect — the detail of every operation (what ``introspect`` answers, one by one);
* peak RSS  — the child's maximum resident set, less that of a child that only imports mcpaql;
* tokens    — (GitHub only, ``--tokens``) o200k tokens of the discrete tools/list, chunked.

The ratio columns divide each synthetic size's figures by the previous size's: with the operation
count growing 10×, linear growth shows as ≈10× time and memory (per-operation figures flat).

    .venv/bin/python bench/bench_openapi_scale.py [--sizes 100,1000,10000] [--github PATH] [--tokens]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / ".cache-upstreams" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"


def synthetic(operations: int) -> dict[str, Any]:
    """A document with ``operations`` operations over ``operations / 5`` resources."""
    resources = max(1, operations // 5)
    count = max(20, operations // 10)
    comps: dict[str, Any] = {}
    for i in range(count):
        comps[f"Thing{i}"] = {
            "type": "object",
            "description": f"Thing number {i}",
            "required": ["id", "name"],
            "properties": {
                "id": {"type": "integer", "minimum": 1},
                "name": {"type": "string", "minLength": 1, "maxLength": 200},
                "status": {"type": "string", "enum": ["active", "archived", "deleted"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string", "nullable": True},
                "parent": {"$ref": f"#/components/schemas/Thing{(i * 7 + 1) % count}"},
                "children": {"type": "array", "items": {"$ref": f"#/components/schemas/Thing{(i * 3 + 2) % count}"}},
                "source": {
                    "anyOf": [
                        {"type": "string", "enum": ["a", "b"]},
                        {"type": "object", "properties": {"branch": {"type": "string"}}},
                    ]
                },
            },
        }
    paths: dict[str, Any] = {}
    made = 0
    for r in range(resources):
        ref = {"$ref": f"#/components/schemas/Thing{r % count}"}
        ok = {"200": {"description": "ok", "content": {"application/json": {"schema": ref}}}}
        listed = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": ref}}}}}
        body = {"required": True, "content": {"application/json": {"schema": ref}}}
        ident = [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}]
        paths[f"/res{r}"] = {
            "get": {
                "operationId": f"listRes{r}",
                "summary": f"List resource {r}",
                "responses": listed,
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}}],
            },
            "post": {"operationId": f"createRes{r}", "summary": f"Create resource {r}", "requestBody": body, "responses": ok},
        }
        paths[f"/res{r}/{{id}}"] = {
            "parameters": ident,
            "get": {"operationId": f"getRes{r}", "summary": f"Get resource {r}", "responses": ok},
            "put": {"operationId": f"replaceRes{r}", "summary": f"Replace resource {r}", "requestBody": body, "responses": ok},
            "delete": {
                "operationId": f"deleteRes{r}",
                "summary": f"Delete resource {r}",
                "responses": {"204": {"description": "gone"}},
            },
        }
        made += 5
    return {
        "openapi": "3.0.3",
        "info": {"title": f"synthetic {operations}", "version": "1.0.0"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "components": {"schemas": comps},
        "paths": paths,
    }


# ---- the measured child ----------------------------------------------------------------------


def child(path: str, tokens: bool) -> None:
    """Run in a fresh interpreter: prints one JSON line of figures."""
    import logging

    logging.disable(logging.WARNING)  # unsupported media types are listed, not measured
    t0 = time.perf_counter()
    from mcpaql.adapters.openapi import OpenAPIRuntime, load_document
    from mcpaql.config import Config
    from mcpaql.protocol.dispatch import Engine

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t1 = time.perf_counter()
    api = load_document(path)
    t2 = time.perf_counter()
    reg = OpenAPIRuntime(api, base_url="http://127.0.0.1:9").registry()
    t3 = time.perf_counter()
    eng = Engine(reg, Config().with_(mode="semantic"))
    listed = len(eng.tools)
    t4 = time.perf_counter()
    for op in reg.operations:
        eng.introspector.run("operations", op.name, "s")
    t5 = time.perf_counter()
    out = {
        "operations": len(reg.operations),
        "types": len(reg.types),
        "tools": listed,
        "import": t1 - t0,
        "load": t2 - t1,
        "registry": t3 - t2,
        "engine": t4 - t3,
        "introspect": t5 - t4,
        "rss_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024,
        "nodes": api.schemas.nodes,
    }
    if tokens:
        from mcpaql import tokens as tk

        t6 = time.perf_counter()
        out["discrete_tokens"] = tk.count_tools(api.tools)
        out["semantic_tokens"] = tk.count_tools(eng.tools)
        out["tokens_s"] = time.perf_counter() - t6
    print(json.dumps(out))


def measure(path: Path, tokens: bool = False) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(path), *(["--tokens"] if tokens else [])],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(label: str, m: dict[str, Any], size_mb: float) -> str:
    start = m["load"] + m["registry"] + m["engine"]
    n = m["operations"]
    return (
        f"{label:<24}{n:>7}{size_mb:>8.1f}{m['load']:>8.2f}{m['registry']:>9.2f}{m['engine']:>8.2f}"
        f"{start:>8.2f}{m['introspect']:>11.2f}{m['rss_mb']:>9.0f}{1000 * start / n:>10.2f}"
        f"{1024 * m['rss_mb'] / n:>9.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--github", default=str(GITHUB))
    ap.add_argument("--tokens", action="store_true", help="also count GitHub's discrete tools/list tokens")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.tokens)
        return
    head = (
        f"{'document':<24}{'ops':>7}{'MB':>8}{'load s':>8}{'registry':>9}{'engine':>8}{'start s':>8}"
        f"{'introspect':>11}{'RSS MB':>9}{'ms/op':>10}{'KB/op':>9}"
    )
    print(head)
    print("-" * len(head))
    prev: tuple[int, float, float] | None = None
    ratios: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",") if s):
            path = Path(tmp) / f"synthetic-{size}.json"
            path.write_text(json.dumps(synthetic(size)))
            m = measure(path)
            print(row(f"synthetic {size:,}", m, path.stat().st_size / 2**20), flush=True)
            start = m["load"] + m["registry"] + m["engine"]
            if prev:
                ratios.append(
                    f"  {prev[0]:,} → {m['operations']:,} operations ({m['operations'] / prev[0]:.1f}×): "
                    f"start-up {start / prev[1]:.1f}×, peak RSS {m['rss_mb'] / max(prev[2], 1):.1f}×"
                )
            prev = (m["operations"], start, m["rss_mb"])
    gh = Path(args.github)
    if gh.exists():
        m = measure(gh, args.tokens)
        print(row("GitHub REST (octokit)", m, gh.stat().st_size / 2**20))
        print(
            f"  GitHub: {m['types']:,} named types, {m['nodes']:,} schema nodes resolved once, "
            f"{m['tools']} tools in semantic mode"
        )
        if args.tokens:
            print(
                f"  GitHub tokens: discrete tools/list {m['discrete_tokens']:,}, mcpaql semantic "
                f"{m['semantic_tokens']:,} ({m['semantic_tokens'] / m['discrete_tokens']:.3f}×), "
                f"counted in {m['tokens_s']:.1f} s"
            )
    else:
        print(f"(GitHub's description not found at {gh}: run tests/wrap/install_upstreams.sh)")
    print("growth between synthetic sizes (linear: the ratios track the operation ratio):")
    print("\n".join(ratios))


if __name__ == "__main__":
    main()
