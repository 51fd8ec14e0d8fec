"""``token_report``: what a server's tools cost in context, discrete vs wrapped (o200k_base).

Works offline on a saved ``tools/list`` or live on an upstream (only ``tools/list`` is read).

Wrapping does not always pay: the wrapped surface costs roughly the same whatever sits behind
it (a few endpoint tools whose descriptions list the operation names), while a discrete
``tools/list`` grows with every tool. A one-tool server (server-postgres: 32 o200k tokens)
costs more wrapped (about 120). :func:`break_even` says so plainly, estimates how many tools of
the same average size it takes to pay, and points at ``--upstream``, which puts several
servers behind one adapter so they share one wrapped surface.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ... import tokens
from ...config import Config
from ...protocol.dispatch import Engine
from .runtime import Upstream, UpstreamSpec
from .wrap import build_registry

MODES = ("semantic", "single", "all")


async def _never(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    raise RuntimeError("token reports never call tools")


def report_for_tools(
    tools: list[dict[str, Any]], name: str = "upstream", config: Config | None = None, **select: Any
) -> dict[str, Any]:
    base = config or Config()
    out: dict[str, Any] = {
        "adapter": name,
        "tools": len(tools),
        "encoding": tokens.ENCODING,
        "discrete": {"tokens": tokens.count_tools(tools), "tokens_as_sent": tokens.count_json(tools)},
        "wrapped": {},
    }
    engines: dict[str, Engine] = {}
    for mode in MODES:
        reg = build_registry(name, {name: tools}, lambda up: _never, **select)
        eng = engines[mode] = Engine(reg, base.with_(mode=mode))
        out["wrapped"][mode] = {"tokens": tokens.count_tools(eng.tools), "tools": [t.name for t in eng.tools]}
    eng = engines["semantic"]
    out["operations"] = len(eng.operations)
    by_origin = {op.origin: op for op in eng.operations if op.origin}
    per_op = []
    for t in tools:
        op = by_origin.get(t["name"])
        if op is None:
            continue
        d = tokens.count_json(eng.introspector.run("operations", op.name, "s"))
        per_op.append(
            {
                "operation": op.name,
                "tool": t["name"],
                "category": op.category.value,
                "tool_tokens": tokens.count_tool(t),
                "tool_tokens_as_sent": tokens.count_json(t),
                "detail_tokens": d,
            }
        )
    out["per_operation"] = per_op
    if per_op:
        ratios = sorted(p["detail_tokens"] / max(p["tool_tokens"], 1) for p in per_op)
        out["detail_max_ratio"] = round(ratios[-1], 3)
        out["detail"] = {
            # against the model-visible definition (what a discrete tools/list costs the model) …
            "max_ratio": round(ratios[-1], 3),
            "median_ratio": round(statistics.median(ratios), 3),
            "larger_than_definition": sum(1 for r in ratios if r > 1),
            "sum_ratio": round(sum(p["detail_tokens"] for p in per_op) / max(sum(p["tool_tokens"] for p in per_op), 1), 3),
            # … and against the definition exactly as the upstream sends it (icons, _meta included)
            "max_ratio_as_sent": round(max(p["detail_tokens"] / max(p["tool_tokens_as_sent"], 1) for p in per_op), 3),
        }
    d = out["discrete"]["tokens"]
    out["savings"] = {m: round(1 - out["wrapped"][m]["tokens"] / d, 3) if d else 0.0 for m in MODES}
    out["break_even"] = break_even(d, out["wrapped"]["semantic"]["tokens"], len(tools))
    return out


COMBINE_HINT = "mcpaql wrap --upstream NAME='COMMAND …' --upstream NAME2='COMMAND …'"


def break_even(discrete: int, wrapped: int, tools: int, upstreams: int = 1) -> dict[str, Any]:
    """Whether wrapping pays for this surface, in o200k tokens per conversation, and if not,
    from about how many tools of the same average size it would."""
    per_tool = discrete / tools if tools else 0.0
    pays = wrapped < discrete
    need = math.ceil(wrapped / per_tool) if per_tool and not pays else None
    if pays:
        msg = (
            f"wrapping pays: {wrapped:,} o200k tokens wrapped vs {discrete:,} discrete "
            f"({1 - wrapped / max(discrete, 1):.0%} less per conversation)"
        )
    else:
        msg = (
            f"wrapping does not pay here: {wrapped:,} o200k tokens wrapped vs {discrete:,} discrete "
            f"(+{wrapped - discrete:,} per conversation) for {tools} tool(s)"
            + (f" from {upstreams} upstreams" if upstreams > 1 else "")
            + (
                f"; it pays from about {need} tools of this size: combine servers behind one adapter ({COMBINE_HINT})"
                if need
                else ""
            )
        )
    return {
        "pays": pays,
        "discrete_tokens": discrete,
        "wrapped_tokens": wrapped,
        "tools": tools,
        "tokens_per_tool": round(per_tool, 1),
        "break_even_tools": need,
        "message": msg,
    }


def wrapped_break_even(holder: Any) -> dict[str, Any]:
    """:func:`break_even` for a running :class:`~.wrap.Wrapper`: the upstream tools it serves
    (as the discrete servers would list them) against its wrapped semantic surface."""
    served = {(op.extensions.get("upstream"), op.origin) for op in holder.engine.registry.operations if op.origin}
    discrete = [t for name, up in holder.upstreams.items() for t in up.tools if (name, t.get("name")) in served]
    return break_even(tokens.count_tools(discrete), tokens.count_tools(holder.engine.tools), len(discrete), len(holder.upstreams))


def token_report(
    target: UpstreamSpec | str | Path | list[dict[str, Any]] | Mapping[str, Any], *, name: str | None = None, **kw: Any
) -> dict[str, Any]:
    """A fixture path, a tools/list (list or ``{"tools": …}``) or a live upstream → token report."""
    if isinstance(target, UpstreamSpec):
        import anyio

        async def fetch() -> list[dict[str, Any]]:
            async with Upstream(target) as up:
                return list(up.tools)

        return report_for_tools(anyio.run(fetch), name or target.name, **kw)
    if isinstance(target, str | Path):
        p = Path(target)
        data = json.loads(p.read_text(encoding="utf-8"))
        default = p.name.removesuffix(".json").removesuffix(".tools-list").replace(".", "-").lower()
        return report_for_tools(tokens.tools_of(data), name or _safe(default), **kw)
    return report_for_tools(tokens.tools_of(target), name or "upstream", **kw)


def _safe(name: str) -> str:
    import re

    s = re.sub(r"[^a-z0-9_-]+", "-", name).strip("-_")
    return s if s and s[0].isalpha() else "u" + s
