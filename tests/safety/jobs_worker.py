"""A separate process that starts one long background execution and runs until it is killed,
for the owner-liveness test. ``python jobs_worker.py STORE_URL OWNER_TTL`` prints
``{"execution_id": …}`` once the execution is running."""

from __future__ import annotations

import asyncio
import json
import sys

from mcpaql import Adapter, Config
from mcpaql.protocol.context import Context
from mcpaql.safety.jobs import install_jobs
from mcpaql.store import open_store


async def main() -> None:
    app = Adapter("jobs")

    @app.execute(background=True)
    async def rebuild_index(shard: str, *, ctx: Context) -> dict:
        """Rebuild one shard's index (here: for an hour)."""
        await ctx.report_progress(1, 10, "started")
        await asyncio.sleep(3600)
        return {"rebuilt": shard}

    install_jobs(app, open_store(sys.argv[1]), owner_ttl=float(sys.argv[2]))
    engine = app.engine(Config.load(env={}))
    env = await engine.execute({"operation": "rebuild_index", "params": {"shard": "s1"}}, engine.context(engine.new_session()))
    print(json.dumps({"execution_id": env["data"]["execution_id"]}), flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main())
