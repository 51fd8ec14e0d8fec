"""The demo adapter's tools/list in o200k tokens per mode, versus the same operations exposed
as one discrete MCP tool each (the classic surface: name, description, full input schema,
annotations by category). Counted offline with the same tokenizer and JSON form.

Run: .venv/bin/python bench/bench_demo_tokens.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from mcpaql import Config
from mcpaql.demo import make_adapter
from mcpaql.protocol.dispatch import Engine
from mcpaql.tokens import count_json, count_tools, tooldef_json


def discrete_tools(engine: Engine) -> list[dict[str, Any]]:
    """Each operation as its own MCP tool, as a plain MCP server would list it."""
    tools = []
    for op in engine.operations:
        if op.name == "introspect":
            continue
        props = {p.name: {**p.schema, **({"description": p.description} if p.description else {})} for p in op.params}
        schema: dict[str, Any] = {"type": "object", "properties": props}
        required = [p.name for p in op.params if p.required]
        if required:
            schema["required"] = required
        tools.append(
            {
                "name": op.name,
                "description": op.description,
                "inputSchema": _strip_private(schema),
                "annotations": {
                    "readOnlyHint": op.category.read_only,
                    "destructiveHint": op.category.destructive,
                    "idempotentHint": op.category.idempotent,
                },
            }
        )
    return tools


def _strip_private(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_private(v) for k, v in node.items() if not k.startswith("x-mcpaql")}
    if isinstance(node, list):
        return [_strip_private(v) for v in node]
    return node


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        adapter = make_adapter(str(Path(d) / "demo.db"))
        base = adapter.engine(Config())
        discrete = discrete_tools(base)
        n_discrete = count_tools(discrete)
        print(f"demo adapter: {len(discrete)} operations (+ introspect)")
        print(f"{'surface':<34}{'tools':>6}{'o200k tokens':>14}{'vs discrete':>13}")
        print(f"{'discrete (one tool per operation)':<34}{len(discrete):>6}{n_discrete:>14}{'1.00x':>13}")
        for mode in ("semantic", "single", "all"):
            eng = adapter.engine(Config(mode=mode))
            n = count_tools([tooldef_json(t) for t in eng.tools])
            print(f"{'mcpaql ' + mode:<34}{len(eng.tools):>6}{n:>14}{n / n_discrete:>12.2f}x")
        worst = 0.0
        for tool in discrete:
            detail = base.introspector._details[tool["name"]]
            worst = max(worst, count_json(detail) / count_json(tool))
        print(f"largest introspection detail / its discrete tool definition: {worst:.2f}x")


if __name__ == "__main__":
    main()
