"""``mcpaql guard``: the execution safety loop as its own MCP server — the "safety dongle"
(ESL §2). Seven operations (the six reserved loop operations plus introspect), an embedded
approval page on 127.0.0.1 as the human channel, optional webhook / OS-dialog channels, and
a durable store (SQLite by default, Redis for several processes).

The approval page is opened by :mod:`.channel` like for every served loop: its operator URL
carries its admin key, so it is *not* printed (MCP clients often show a server's stderr to the
model): it is written to a file readable only by the user (``--url-file``, default
``~/.mcpaql/approval-url``) and one stderr line names the page and that file. A port that is
busy is one line and exit status 2.

Run it with ``mcpaql guard [--store URL] [--mode enforcing] …`` (or ``python -m mcpaql.safety.guard``,
the same typer command); it is served by :func:`mcpaql.serving.serve_async` like every server.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio

from ..config import Config
from ..mcp.transports import run_served
from ..protocol.dispatch import Engine
from ..serving import ServeOptions, serve_async
from .channel import default_url_file
from .install import Safety, SafetyConfig, guard_engine

log = logging.getLogger("mcpaql.safety.guard")


def build_guard(
    config: SafetyConfig | dict[str, Any] | None = None, *, engine_config: Config | None = None, **kw: Any
) -> tuple[Engine, Safety]:
    """The dongle's Engine and its safety services."""
    return guard_engine(config, engine_config=engine_config or Config.load(), **kw)


__all__ = ["build_guard", "default_url_file", "guard_config", "main", "run_guard", "serve_guard"]


async def serve_guard(config: SafetyConfig, options: ServeOptions) -> None:
    """Serve the dongle with its human channel (whatever the loop mode) until the client leaves."""
    engine, safety = build_guard(config)
    try:
        await serve_async(engine, options, safety=safety, always_channel=True)
    finally:
        with anyio.CancelScope(shield=True):
            await safety.close()


def run_guard(config: SafetyConfig, options: ServeOptions | None = None) -> None:
    run_served(lambda: serve_guard(config, options or ServeOptions()))


def guard_config(
    *,
    mode: str,
    store: str | None = None,
    policy: Path | None = None,
    max_steps: int | None = None,
    risk_tolerance: str | None = None,
    webhook: str | None = None,
    os_dialog: bool = False,
) -> SafetyConfig:
    """The dongle's SafetyConfig from ``mcpaql guard``'s flags (a policy file's keys, then the flags)."""
    data: dict[str, Any] = {}
    if policy:
        data.update(json.loads(Path(policy).read_text(encoding="utf-8")))
    autonomy = dict(data.pop("autonomy", {}))
    if max_steps is not None:
        autonomy["max_autonomous_steps"] = max_steps
    if risk_tolerance:
        autonomy["risk_tolerance"] = risk_tolerance
    data["autonomy"] = autonomy
    data["loop_mode"] = mode
    if store:
        data["store"] = store
    if webhook:
        data["webhook_url"] = webhook
    if os_dialog:
        data["os_dialog"] = True
    return SafetyConfig.from_dict(data)


def main(argv: list[str] | None = None) -> None:
    """``python -m mcpaql.safety.guard …``: the same command as ``mcpaql guard …``."""
    from ..cli import app

    app(["guard", *(sys.argv[1:] if argv is None else argv)], prog_name="mcpaql")


if __name__ == "__main__":
    main()
