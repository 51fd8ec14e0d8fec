"""What ``outputSchema`` costs in ``tools/list`` tokens (o200k_base, offline), side by side.

For the demo (Task Tracker) and the wrapped GitHub-89 surface, in semantic and single mode, it
prints the listing's tokens as the model sees it (``mcpaql.tokens.count_tools``) without and with
the envelope ``outputSchema`` (``Config(output_schema=True)``), the difference and the ratio.
``structuredContent`` on results costs nothing here: results keep their text block unchanged.

``python bench/bench_output_schema.py [--json]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from bench_tokens import engine as wrapped_engine
from bench_tokens import load
from mcpaql import tokens
from mcpaql.config import Config
from mcpaql.demo import make_adapter
from mcpaql.mcp.listing import listing


def listing_tokens(eng: Any, output_schema: bool) -> int:
    result = listing(eng, output_schema=output_schema)
    return tokens.count_tools([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools])


def measure() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        demo = make_adapter(Path(d) / "demo.db")
        github = load("github-mcp-all")
        for mode in ("semantic", "single"):
            for label, eng in (
                ("demo", demo.engine(Config(mode=mode))),
                ("GitHub-89", wrapped_engine(github, "github", mode)),
            ):
                off, on = listing_tokens(eng, False), listing_tokens(eng, True)
                out[f"{label}/{mode}"] = {
                    "tools": len(eng.tools),
                    "without": off,
                    "with_output_schema": on,
                    "added": on - off,
                    "ratio": round(on / off, 3),
                }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    figures = measure()
    if p.parse_args().json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'surface':<22}{'tools':>6}{'without':>10}{'with':>8}{'added':>8}{'ratio':>8}")
    for label, f in figures.items():
        print(f"{label:<22}{f['tools']:>6}{f['without']:>10}{f['with_output_schema']:>8}{f['added']:>8}{f['ratio']:>8}")


if __name__ == "__main__":
    main()
