"""Break-even bench: when does wrapping pay? (o200k_base tokens, offline, issue 10)

For each real capture (tests/wrap/surfaces and ../shared/fixtures/surfaces) it prints, side by
side in one run, the discrete ``tools/list`` tokens, the wrapped semantic surface, the ratio
and the break-even estimate; then the small servers that do not pay alone combined behind one
adapter (``mcpaql wrap --upstream …`` repeated), against the sum of their discrete lists and
against wrapping each on its own.

``python bench/bench_break_even.py [--json]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mcpaql import tokens
from mcpaql.adapters.upstream.report import break_even
from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine

ROOT = Path(__file__).resolve().parents[1]
DIRS = (ROOT / "tests" / "wrap" / "surfaces", ROOT.parent / "shared" / "fixtures" / "surfaces")


async def _never(*_: Any) -> dict[str, Any]:
    raise RuntimeError("the bench never calls tools")


def captures() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for d in DIRS:
        for p in sorted(d.glob("*.tools-list.json")):
            data = json.loads(p.read_text(encoding="utf-8"))
            out[p.name.removesuffix(".tools-list.json")] = data["tools"] if isinstance(data, dict) else data
    return out


def wrapped(sources: dict[str, list[dict[str, Any]]]) -> int:
    name = next(iter(sources)) if len(sources) == 1 else "combined"
    return tokens.count_tools(Engine(build_registry(name, sources, lambda _up: _never), Config(mode="semantic")).tools)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    caps = captures()
    rows = []
    for name, tools in caps.items():
        d, w = tokens.count_tools(tools), wrapped({name: tools})
        rows.append({"server": name, "tools": len(tools), "discrete": d, "wrapped": w, **break_even(d, w, len(tools))})
    small = [r["server"] for r in rows if not r["pays"]]
    combo = {n: caps[n] for n in small}
    combined = {
        "servers": small,
        "tools": sum(len(t) for t in combo.values()),
        "discrete": sum(r["discrete"] for r in rows if r["server"] in small),
        "wrapped_each": sum(r["wrapped"] for r in rows if r["server"] in small),
        "wrapped_combined": wrapped(combo) if combo else 0,
    }
    if a.json:
        print(json.dumps({"servers": rows, "combined": combined}, indent=2))
        return
    print(f"{'server':32} {'tools':>5} {'discrete':>9} {'wrapped':>8} {'ratio':>6}  pays  break-even tools")
    for r in rows:
        print(
            f"{r['server']:32} {r['tools']:>5} {r['discrete']:>9,} {r['wrapped']:>8,} "
            f"{r['wrapped'] / max(r['discrete'], 1):>6.2f}  {'yes ' if r['pays'] else 'no  '}  "
            f"{r['break_even_tools'] or ''}"
        )
    c = combined
    print(f"\nthe {len(c['servers'])} servers that do not pay alone ({', '.join(c['servers'])}), {c['tools']} tools:")
    print(f"  discrete, summed:          {c['discrete']:>7,}")
    print(f"  each wrapped on its own:   {c['wrapped_each']:>7,}")
    print(
        f"  one adapter, --upstream×{len(c['servers'])}: {c['wrapped_combined']:>7,} "
        f"({c['wrapped_combined'] / max(c['discrete'], 1):.2f}× discrete)"
    )


if __name__ == "__main__":
    main()
