"""Capture a real MCP server's ``tools/list`` as a committed fixture (tools-list + capture-meta).

    python scripts/capture_surface.py OUT_DIR NAME PACKAGE VERSION -- command args…

writes ``OUT_DIR/NAME.tools-list.json`` (the tools exactly as the server sent them, keys sorted
so diffs stay readable) and ``OUT_DIR/NAME.capture-meta.json`` (package, version, argv with
scratch paths and secrets replaced by placeholders, server info, timing). Only ``initialize``
and ``tools/list`` are sent (REQ-DISC-013): capturing never changes anything upstream.
Environment for the server (e.g. a dummy ``NOTION_TOKEN``) is passed with ``--env K=V``; only
the names are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import anyio

from mcpaql.adapters.upstream import Upstream, UpstreamSpec


async def _capture(spec: UpstreamSpec) -> tuple[list[dict], dict, float]:
    t0 = time.perf_counter()
    async with Upstream(spec) as up:
        return list(up.tools), dict(up.server_info), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("name")
    ap.add_argument("package", help="registry:name, e.g. pypi:mcp-server-duckdb or npm:@notionhq/notion-mcp-server")
    ap.add_argument("version")
    ap.add_argument("--env", action="append", default=[], help="K=V for the server (only K is recorded)")
    ap.add_argument("--placeholder", action="append", default=[], help="TEXT=<name>: how an argv value is recorded")
    ap.add_argument("--backend", default=None, help="what the server was started against (recorded)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = [c for c in a.command if c != "--"]
    if not cmd:
        ap.error("give the server command after --")
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in a.env)
    spec = UpstreamSpec.from_argv(cmd, name=a.name, env=env)
    tools, info, seconds = anyio.run(_capture, spec)
    recorded = list(cmd)
    for ph in a.placeholder:
        text, _, label = ph.partition("=")
        recorded = [c.replace(text, label) for c in recorded]
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{a.name}.tools-list.json").write_text(
        json.dumps({"tools": tools}, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    meta = {
        "name": a.name,
        "package": a.package,
        "version": a.version,
        "argv": [Path(recorded[0]).name, *recorded[1:]],
        "env_names": sorted(kv.split("=", 1)[0] for kv in a.env),
        "backend": a.backend,
        "client_sdk": f"mcp {version('mcp')} (python, via mcpaql Upstream)",
        "server_info": info,
        "tool_count": len(tools),
        "connect_and_list_s": round(seconds, 3),
        "captured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    (out / f"{a.name}.capture-meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"{a.name}: {len(tools)} tools", file=sys.stderr)


if __name__ == "__main__":
    main()
