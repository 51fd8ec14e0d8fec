"""A separate server process for the multi-process tests: builds the test adapter with the
safety layer on the store named in argv[1], then answers one JSON request per stdin line
with one JSON envelope per stdout line. Run as ``python worker.py STORE_URL [SAFETY_JSON]``.

The human channel is a file: with ``MCPAQL_TEST_CODES`` set, every challenge this process
issues is appended there as one JSON line with its code (what an operator's webhook or
approval page would show; the store itself never holds codes)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from safety_support import make_adapter

from mcpaql import Config
from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.safety.verification import DisplayChannel
from mcpaql.store import open_store


class FileChannel(DisplayChannel):
    name = "file"

    def __init__(self, path: str) -> None:
        self.path = path

    async def show(self, challenge: dict) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(json.dumps({"id": challenge["id"], "code": challenge["code"]}) + "\n")


async def main() -> None:
    url = sys.argv[1]
    extra = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    app = make_adapter()
    cfg = {"trust": "validated", "loop_mode": "enforcing", **extra}
    codes = os.environ.get("MCPAQL_TEST_CODES")
    install_safety(app, SafetyConfig(**cfg), store=open_store(url), channels=[FileChannel(codes)] if codes else None)
    engine = app.engine(Config.load(env={}))
    session = engine.new_session()
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        req = json.loads(line)
        env = await engine.execute(req, engine.context(session))
        print(json.dumps(env), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
