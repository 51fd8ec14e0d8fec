"""A small adapter served over real transports for the end-to-end tests.

Run as a script (the tests spawn it):
    python app_server.py stdio [--mode semantic|single|all]
    python app_server.py http --port N [--stateless] [--mode …]

It covers every CRUDE category, an async EXECUTE op that reports progress, a handler that
raises with a path in its message, and session-scoped state whose close hook writes a marker
file into ``$MCPAQL_TEST_MARKER_DIR`` (so a test can see that the session was dropped).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from e2e_support import serve_main

from mcpaql import Adapter, Config, Context

app = Adapter("e2e_shop", display_name="Display", version="1.2.3")

ITEMS: dict[str, dict[str, Any]] = {"i1": {"item_id": "i1", "name": "first", "size": 1}}


@app.read
def get_item(item_id: str) -> dict[str, Any]:
    """Get one item by id."""
    return ITEMS.get(item_id) or {}


@app.read
def list_items() -> list[dict[str, Any]]:
    """List all items."""
    return list(ITEMS.values())


@app.read
def boom() -> str:
    """Always fails with an unexpected error."""
    raise RuntimeError("/secret/path.py")


@app.read
def noisy() -> str:
    """Prints to stdout, which on stdio is the wire: the transport must keep it off — Python
    prints, raw writes to fd 1 and child processes inheriting fd 1 alike."""
    print("stray print from a handler")
    os.write(1, b"raw write to fd 1\n")
    subprocess.run([sys.executable, "-c", "print('output of a child process')"], check=True)
    return "ok"


@app.create
def create_item(item_id: str, name: str, size: int = 1) -> dict[str, Any]:
    """Add an item."""
    ITEMS[item_id] = {"item_id": item_id, "name": name, "size": size}
    return ITEMS[item_id]


@app.update
def rename_item(item_id: str, name: str) -> dict[str, Any]:
    """Rename an item."""
    ITEMS[item_id]["name"] = name
    return ITEMS[item_id]


@app.delete
def delete_item(item_id: str) -> bool:
    """Remove an item."""
    return ITEMS.pop(item_id, None) is not None


@app.execute
async def run_job(steps: int, ctx: Context) -> dict[str, Any]:
    """Run a job of `steps` steps, reporting progress after each."""
    for i in range(1, steps + 1):
        await anyio.sleep(0.005)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return {"steps": steps, "wanted_progress": ctx.wants_progress}


@app.create
def remember(value: str, ctx: Context) -> dict[str, Any]:
    """Store a value in session-scoped state."""
    notes = ctx.state.setdefault("notes", [])
    if not notes:
        marker_dir = os.environ.get("MCPAQL_TEST_MARKER_DIR")
        if marker_dir:
            sid = ctx.session.id

            def closed(session: Any) -> None:
                # write then rename: the test polls for the file and must never see it half-written
                tmp = Path(marker_dir, f"{sid}.closing")
                tmp.write_text(",".join(session.state.get("notes", [])))
                os.replace(tmp, Path(marker_dir, f"{sid}.closed"))

            ctx.session.on_close(closed)
    notes.append(value)
    return {"session_id": ctx.session.id, "notes": list(notes)}


@app.read
def recall(ctx: Context) -> dict[str, Any]:
    """Read session-scoped state."""
    return {"session_id": ctx.session.id, "notes": list(ctx.state.get("notes", []))}


def main(argv: list[str] | None = None) -> None:
    serve_main(lambda mode: app.engine(Config.load(mode=mode)), argv)


if __name__ == "__main__":
    sys.exit(main())
