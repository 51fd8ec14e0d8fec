"""The safety test adapter served over a real MCP transport, for the transport tests of issue 11.

    python identity_server.py stdio STORE_URL [--agent-id ID]
    python identity_server.py http STORE_URL --port N [--stateless] [--agent-id ID]

The safety layer (trust ``validated``, an enforcing loop) keeps its state in STORE_URL, so
several processes can share it. With ``MCPAQL_TEST_CODES`` set, every challenge's code is
appended to that file (the human channel). An HTTP server exits when its stdin closes.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio
from safety_support import make_adapter
from worker import FileChannel

from mcpaql import Config
from mcpaql.mcp import serve_http, serve_stdio
from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.store import open_store

AUTONOMY = {"deny": ["drop_*"], "requires_approval": ["delete_*"]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("store")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--stateless", action="store_true")
    p.add_argument("--agent-id")
    a = p.parse_args()
    app = make_adapter()
    codes = os.environ.get("MCPAQL_TEST_CODES")
    cfg = SafetyConfig(trust="validated", loop_mode="enforcing", autonomy=AUTONOMY, agent_id=a.agent_id)
    install_safety(app, cfg, store=open_store(a.store), channels=[FileChannel(codes)] if codes else None)
    engine = app.engine(Config.load(env={}))
    if a.transport == "stdio":
        anyio.run(serve_stdio, engine)
    else:
        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
        serve_http(engine, port=a.port, stateless=a.stateless)


if __name__ == "__main__":
    main()
