"""Throughput of one deployment with 1, 2 and 4 stateless processes behind a round-robin balancer.

Each process is a real ``mcpaql serve --transport http --stateless`` of the demo adapter; all of
them share one Redis (``--store``: the deployment secret lives there) and one demo database file,
exactly as in ``tests/multiproc``. Many concurrent clients (coroutines in this process, each with
its own stream of requests) send ``tools/call`` requests as plain streamable-HTTP POSTs through
:class:`mcpaql.mcp.balancer.RoundRobin` (the stateless path needs no ``initialize``), for a fixed
time per measurement: a cheap read (``get_project``) and a write (``update_task``: one SQLite
transaction). Every answer is parsed and must be a success envelope.

All deployments run at once and are measured in interleaved rounds (medians), so the machine's
load hits each alike. Printed per process count: calls/s for each kind, the ratio to one process,
and the CPU milliseconds per call of the servers and of this client (load-independent; on a 2-core
machine the client's share is part of the ceiling). Expect reads to stop scaling at the core
count and writes to be bounded by SQLite's single writer.
``python bench/bench_processes.py [--seconds 3] [--rounds 3] [--clients 32] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from mcpaql.mcp.balancer import RoundRobin
from mcpaql.store.testing import RedisServer, free_port

MCPAQL = str(Path(sys.executable).with_name("mcpaql"))
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def start(n: int, store: str, db: Path, logs: Path) -> list[tuple[subprocess.Popen[bytes], int]]:
    procs = []
    env = {**os.environ, "MCPAQL_SECRET": ""}
    for i in range(n):
        port = free_port()
        args = [MCPAQL, "serve", "--transport", "http", "--stateless", "--port", str(port), "--db", str(db), "--store", store]
        out = open(logs / f"p{n}-{i}-{port}.log", "wb")  # noqa: SIM115 - the child owns it
        procs.append((subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out), port))
    for p, port in procs:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError("a server did not start")
            time.sleep(0.05)
    return procs


def cpu_of(pid: int) -> float:
    """User+system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def envelope_of(body: str) -> dict[str, Any]:
    """The MCP-AQL envelope inside a tools/call answer (an SSE event or a JSON body)."""
    data = next((ln[5:] for ln in body.splitlines() if ln.startswith("data:")), body)
    result = json.loads(data)["result"]
    return dict(json.loads(result["content"][0]["text"]))


async def measure(urls: list[str], tool: str, make_args: Any, clients: int, seconds: float) -> float:
    rr = RoundRobin(urls)
    count = 0
    async with httpx2.AsyncClient(transport=rr, timeout=30, headers=HEADERS) as http:

        async def client(c: int) -> None:
            nonlocal count
            k = 0
            while time.monotonic() < stop:
                body = {"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {"name": tool, "arguments": make_args(c, k)}}
                r = await http.post(urls[0], json=body)
                env = envelope_of(r.text)
                if not env.get("success"):
                    raise RuntimeError(f"call failed: {env}")
                count += 1
                k += 1

        stop = time.monotonic() + seconds
        async with anyio.create_task_group() as tg:
            for c in range(clients):
                tg.start_soon(client, c)
    return count / seconds


async def ids(url: str) -> tuple[str, list[str]]:
    async with httpx2.AsyncClient(timeout=30, headers=HEADERS) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        args = {"operation": "list_tasks", "params": {"first": 100}}
        r = await http.post(url, json={**body, "params": {"name": "tasks_mcpaql_read", "arguments": args}})
        tasks = envelope_of(r.text)["data"]["items"]
    return tasks[0]["project_id"], [t["task_id"] for t in tasks]


def calls(project: str, tasks: list[str]) -> tuple[Any, Any]:
    def read(c: int, k: int) -> dict[str, Any]:
        return {"operation": "get_project", "params": {"project_id": project}}

    def write(c: int, k: int) -> dict[str, Any]:
        change = {"task_id": tasks[(c + k) % len(tasks)], "input": {"description": f"client {c} call {k}"}}
        return {"operation": "update_task", "params": change}

    return read, write


async def run(counts: list[int], clients: int, seconds: float, rounds: int) -> list[dict[str, Any]]:
    """Every deployment is started first (each on its own demo database), then measured in
    interleaved rounds (1, 2, 4, 1, 2, 4, …) so a change in the machine's load hits every
    configuration alike; each figure is the median over the rounds."""
    samples: dict[int, dict[str, list[float]]] = {n: {"reads": [], "writes": [], "server": [], "client": []} for n in counts}
    with RedisServer() as redis, tempfile.TemporaryDirectory(prefix="mcpaql-bench-") as tmp:
        deployments: dict[int, list[tuple[subprocess.Popen[bytes], int]]] = {}
        try:
            for i, n in enumerate(counts):
                store = redis.url.rsplit("/", 1)[0] + f"/{i}"
                deployments[n] = start(n, store, Path(tmp) / f"demo{n}.db", Path(tmp))
            plans = {}
            for n, procs in deployments.items():
                urls = [f"http://127.0.0.1:{port}/mcp" for _, port in procs]
                read, write = calls(*await ids(urls[0]))
                await measure(urls, "tasks_mcpaql_read", read, clients, 1.0)  # warm-up
                plans[n] = (urls, read, write)
            for _ in range(rounds):
                for n, (urls, read, write) in plans.items():
                    procs = deployments[n]
                    cpu0 = sum(cpu_of(p.pid) for p, _ in procs)
                    me0 = resource.getrusage(resource.RUSAGE_SELF)
                    samples[n]["reads"].append(await measure(urls, "tasks_mcpaql_read", read, clients, seconds))
                    samples[n]["writes"].append(await measure(urls, "tasks_mcpaql_update", write, clients, seconds))
                    me1 = resource.getrusage(resource.RUSAGE_SELF)
                    done = (samples[n]["reads"][-1] + samples[n]["writes"][-1]) * seconds
                    samples[n]["server"].append(1000 * (sum(cpu_of(p.pid) for p, _ in procs) - cpu0) / done)
                    samples[n]["client"].append(1000 * (me1.ru_utime + me1.ru_stime - me0.ru_utime - me0.ru_stime) / done)
        finally:
            for procs in deployments.values():
                for p, _ in procs:
                    p.terminate()
            for procs in deployments.values():
                for p, _ in procs:
                    p.wait(20)
    med = statistics.median
    return [
        {
            "processes": n,
            "reads_per_s": round(med(s["reads"]), 1),
            "writes_per_s": round(med(s["writes"]), 1),
            # load-independent: what one call costs the servers / this client, whoever else uses the cores
            "server_cpu_ms_per_call": round(med(s["server"]), 2),
            "client_cpu_ms_per_call": round(med(s["client"]), 2),
        }
        for n, s in samples.items()
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    ap.add_argument("--clients", type=int, default=32, help="concurrent clients")
    ap.add_argument("--processes", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; figures are medians")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = anyio.run(run, [int(x) for x in a.processes.split(",")], a.clients, a.seconds, a.rounds)
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    base = rows[0]
    load = os.getloadavg()[0]
    print(
        f"{os.cpu_count()} CPU cores (load average {load:.1f} after the run); {a.clients} clients; "
        f"medians of {a.rounds} interleaved rounds of {a.seconds:g} s"
    )
    head = ("processes", "reads/s", "ratio", "writes/s", "ratio", "server CPU ms/call", "client CPU ms/call")
    print("{:>9} {:>9} {:>6} {:>9} {:>6} {:>19} {:>19}".format(*head))
    for r in rows:
        print(
            f"{r['processes']:>9} {r['reads_per_s']:>9.1f} {r['reads_per_s'] / base['reads_per_s']:>5.2f}x "
            f"{r['writes_per_s']:>9.1f} {r['writes_per_s'] / base['writes_per_s']:>5.2f}x "
            f"{r['server_cpu_ms_per_call']:>19.2f} {r['client_cpu_ms_per_call']:>19.2f}"
        )


if __name__ == "__main__":
    main()
