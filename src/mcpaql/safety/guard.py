"""``mcpaql guard``: the execution safety loop as its own MCP server — the "safety dongle"
(ESL §2). Seven operations (the six reserved loop operations plus introspect), an embedded
approval page on 127.0.0.1 as the human channel, optional webhook / OS-dialog channels, and
a durable store (SQLite by default, Redis for several processes).

The approval page is opened by :mod:`.channel` like for every served loop: its operator URL
carries its admin key, so it is *not* printed (MCP clients often show a server's stderr to the
model): it is written to a file readable only by the user (``--url-file``, default
``~/.mcpaql/approval-url``) and one stderr line names the page and that file. A port that is
busy is one line and exit status 2.

Run it with ``python -m mcpaql.safety.guard [--store URL] [--mode enforcing] …`` or through
the CLI (``mcpaql guard``), which calls :func:`run_guard`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from ..config import Config
from ..protocol.dispatch import Engine
from .channel import ChannelError, ChannelOptions, default_url_file, human_channel
from .install import Safety, SafetyConfig, guard_engine

log = logging.getLogger("mcpaql.safety.guard")


def build_guard(config: SafetyConfig | dict[str, Any] | None = None, *, engine_config: Config | None = None,
                **kw: Any) -> tuple[Engine, Safety]:
    """The dongle's Engine (serve it with ``mcpaql.mcp.transports``) and its safety services."""
    return guard_engine(config, engine_config=engine_config or Config.load(), **kw)


__all__ = ["build_guard", "default_url_file", "main", "run_guard", "serve_guard"]


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def serve_guard(
    config: SafetyConfig,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    approval_page: bool = True,
    approval_port: int = 0,
    approval_host: str = "127.0.0.1",
    url_file: Path | None = None,
) -> None:
    engine, safety = build_guard(config)
    options = ChannelOptions(page=approval_page, host=approval_host, port=approval_port, url_file=url_file)
    try:
        async with human_channel(safety, options, _announce):
            if transport == "stdio":
                from ..mcp.transports import serve_stdio

                await serve_stdio(engine)
            elif transport == "http":
                from ..mcp.transports import serve_http_async

                await serve_http_async(engine, host=host, port=port)
            else:
                raise ValueError("transport must be stdio or http")
    finally:
        with anyio.CancelScope(shield=True):
            await safety.close()


def run_guard(config: SafetyConfig, **kw: Any) -> None:
    anyio.run(lambda: serve_guard(config, **kw))


def config_from_args(ns: argparse.Namespace) -> SafetyConfig:
    data: dict[str, Any] = {}
    if ns.policy:
        data.update(json.loads(Path(ns.policy).read_text(encoding="utf-8")))
    autonomy = dict(data.pop("autonomy", {}))
    if ns.max_steps is not None:
        autonomy["max_autonomous_steps"] = ns.max_steps
    if ns.risk_tolerance:
        autonomy["risk_tolerance"] = ns.risk_tolerance
    data["autonomy"] = autonomy
    data["loop_mode"] = ns.mode
    if ns.store:
        data["store"] = ns.store
    if ns.webhook:
        data["webhook_url"] = ns.webhook
    if ns.os_dialog:
        data["os_dialog"] = True
    return SafetyConfig.from_dict(data)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcpaql guard", description=__doc__.split("\n\n")[0])
    p.add_argument("--store", help="sqlite:///path.db (default ~/.mcpaql/safety.db) or redis://host:port/db")
    p.add_argument("--mode", default=os.environ.get("MCPAQL_SAFETY_LOOP", "enforcing"),
                   choices=["enforcing", "monitoring", "logging", "disabled"])
    p.add_argument("--policy", help="JSON file: SafetyConfig keys, e.g. {\"autonomy\": {\"deny\": [\"drop_*\"]}}")
    p.add_argument("--max-steps", type=int, dest="max_steps")
    p.add_argument("--risk-tolerance", choices=["conservative", "moderate", "aggressive"])
    p.add_argument("--webhook", help="POST each challenge (with its code) to this operator URL")
    p.add_argument("--os-dialog", action="store_true", help="Show codes in a desktop dialog where available")
    p.add_argument("--transport", default="stdio", choices=["stdio", "http"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-approval-page", action="store_true")
    p.add_argument("--approval-port", type=int, default=0, help="approval page port (default: any free port)")
    p.add_argument("--approval-host", default="127.0.0.1", help="approval page address: loopback only")
    p.add_argument("--url-file", type=Path, help="where the page URL with its key is written (mode 0600)")
    return p


def main(argv: list[str] | None = None) -> None:
    ns = parser().parse_args(argv)
    try:
        run_guard(config_from_args(ns), transport=ns.transport, host=ns.host, port=ns.port,
                  approval_page=not ns.no_approval_page, approval_port=ns.approval_port,
                  approval_host=ns.approval_host, url_file=ns.url_file)
    except ChannelError as e:
        print(f"mcpaql guard: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
