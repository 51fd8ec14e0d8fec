"""An adapter with a blocking sync operation, served over real transports for test_offload.py.

    python offload_server.py stdio
    python offload_server.py http --port N [--exit-with-stdin]

``block`` writes a marker file when it starts (so the test knows it is running), then blocks
its thread with ``time.sleep`` — as a synchronous database driver or HTTP library would.
``ping`` is the small call that must still be answered meanwhile.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import anyio

from mcpaql import Adapter, Config
from mcpaql.mcp import serve_http, serve_stdio

app = Adapter("offload")


@app.execute
def block(seconds: float, marker: str) -> dict[str, float]:
    """Block this thread for `seconds` (after writing `marker`)."""
    Path(marker).write_text("started")
    time.sleep(seconds)
    return {"slept": seconds}


@app.read
def ping() -> str:
    """Answer at once."""
    return "pong"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--exit-with-stdin", action="store_true")
    a = p.parse_args(argv)
    if a.exit_with_stdin:
        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    engine = app.engine(Config())
    if a.transport == "stdio":
        anyio.run(serve_stdio, engine)
    else:
        serve_http(engine, port=a.port)


if __name__ == "__main__":
    main()
