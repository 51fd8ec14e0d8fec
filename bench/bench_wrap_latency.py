"""Per-call latency through the wrapper vs directly, stdio and streamable-HTTP upstreams side by side.

Direct:  client ──stdio or HTTP──> upstream
Wrapped: client ──stdio──> mcpaql wrapper ──stdio or HTTP──> upstream
         client ──HTTP──> `mcpaql wrap --transport http` ──HTTP──> upstream   (rows "http→http:")

Calls alternate direct/wrapped on two open clients, so machine noise hits both alike. Upstreams:
the replay server (deterministic echo of a fixture, Python; over stdio and over streamable HTTP)
and, when installed in ``.cache-upstreams``, the real ``@modelcontextprotocol/server-memory``
(Node, stdio) and ``@modelcontextprotocol/server-everything`` (Node, streamable HTTP).
For HTTP upstreams each side has its own upstream process, so the TCP connections each opened
(client-side sockets to its port in any state, TIME-WAIT included, from ``/proc/net/tcp``) are
counted apart; ``wrapper_cpu_ms`` is the wrapper process's CPU time per measured call.
``python bench/bench_wrap_latency.py [-n 200] [--only stdio|http] [--json]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures" / "surfaces"
BIN = REPO / ".cache-upstreams" / "node_modules" / ".bin"
TIME_FIXTURE = str(FIXTURES / "mcp-server-time.tools-list.json")
REPLAY = [sys.executable, "-m", "mcpaql.mcp.replay", TIME_FIXTURE]
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


@dataclass
class Case:
    label: str
    kind: str  # stdio | http (stdio front, HTTP upstream) | http→http (HTTP front too)
    name: str  # upstream name in the wrapper
    tool: str
    args: dict[str, Any]
    argv: list[str]  # stdio: the upstream's command; http: the server's command (PORT appended or in env)
    port_env: bool = False  # http: the server takes its port from $PORT instead of a trailing argument


def cases() -> list[Case]:
    out = [Case("replay(time)", "stdio", "time", "convert_time", CONVERT, REPLAY)]
    if (BIN / "mcp-server-memory").exists():
        out.append(Case("server-memory", "stdio", "memory", "read_graph", {}, [str(BIN / "mcp-server-memory")]))
    for kind in ("http", "http→http"):
        out.append(Case("replay(time)", kind, "time", "convert_time", CONVERT, [*REPLAY, "--http"]))
        if (BIN / "mcp-server-everything").exists():
            everything = [str(BIN / "mcp-server-everything"), "streamableHttp"]
            out.append(Case("server-everything", kind, "everything", "echo", {"message": "hi"}, everything, port_env=True))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(case: Case) -> Iterator[str]:
    """One upstream HTTP server on a fresh port, until the block ends; yields its URL."""
    port = free_port()
    argv, env = (case.argv, {**os.environ, "PORT": str(port)}) if case.port_env else ([*case.argv, str(port)], None)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def http_wrapper(case: Case, upstream_url: str, pidfile: Path) -> Iterator[str]:
    """``mcpaql wrap --transport http`` in front of ``upstream_url``; yields the wrapper's URL."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "mcpaql.cli",
        "wrap",
        "--name",
        case.name,
        "--url",
        upstream_url,
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pidfile.write_text(str(proc.pid))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def tcp_connections_to(port: int) -> int:
    """Client-side TCP sockets to 127.0.0.1:port in any state but LISTEN (TIME-WAIT included)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                remote, state = cols[2], cols[3]
                if state != "0A" and int(remote.rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def interleaved(
    case: Case, direct_target: Any, wrapper_argv: list[str], pidfile: Path, n: int, warmup: int
) -> dict[str, Any]:
    """Both clients open at once; calls alternate direct/wrapped so machine noise hits both alike."""
    wrapped_tool = f"{case.name}_mcpaql_read"
    wargs = {"operation": case.tool, "params": case.args}
    env = {**os.environ, "BENCH_WRAPPER_PIDFILE": str(pidfile)}
    wrapper = StdioServerParameters(command=wrapper_argv[0], args=wrapper_argv[1:], env=env)
    async with (
        Client(direct_target, mode="legacy", cache=None) as d,
        Client(wrapper, mode="legacy", cache=None) as w,
    ):
        await d.list_tools()
        await w.list_tools()
        for _ in range(warmup):
            await d.call_tool(case.tool, case.args)
            await w.call_tool(wrapped_tool, wargs)
        pid = int(pidfile.read_text())
        cpu0 = cpu_seconds(pid)
        direct: list[float] = []
        wrapped: list[float] = []
        for _ in range(n):
            t0 = time.perf_counter()
            r = await d.call_tool(case.tool, case.args)
            direct.append((time.perf_counter() - t0) * 1000)
            assert not r.is_error, r
            t0 = time.perf_counter()
            r = await w.call_tool(wrapped_tool, wargs)
            wrapped.append((time.perf_counter() - t0) * 1000)
            assert not r.is_error, r
        cpu = (cpu_seconds(pid) - cpu0) * 1000 / n
    return {"direct": stats(direct), "wrapped": stats(wrapped), "wrapper_cpu_ms": round(cpu, 3)}


def stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "median_ms": round(statistics.median(xs), 3),
        "p90_ms": round(xs[int(len(xs) * 0.9) - 1], 3),
        "min_ms": round(xs[0], 3),
    }


async def measure_case(case: Case, n: int, warmup: int) -> dict[str, Any]:
    me = [sys.executable, str(Path(__file__).resolve()), "--serve", case.name]
    with tempfile.TemporaryDirectory() as tmp:
        pidfile = Path(tmp) / "wrapper.pid"
        if case.kind == "stdio":
            direct = StdioServerParameters(command=case.argv[0], args=case.argv[1:])
            r = await interleaved(case, direct, [*me, "--", *case.argv], pidfile, n, warmup)
        else:
            with http_server(case) as direct_url, http_server(case) as wrapped_url:
                r = await interleaved(case, streamable_http_client(direct_url), [*me, "--url", wrapped_url], pidfile, n, warmup)
                r["tcp_connections"] = {
                    "direct": tcp_connections_to(int(direct_url.split(":")[2].split("/")[0])),
                    "wrapped": tcp_connections_to(int(wrapped_url.split(":")[2].split("/")[0])),
                }
    d, w = r["direct"], r["wrapped"]
    r.update(
        ratio_median=round(w["median_ms"] / d["median_ms"], 2),
        overhead_median_ms=round(w["median_ms"] - d["median_ms"], 3),
        calls=n,
    )
    return r


async def measure(n: int, warmup: int, only: str | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for case in cases():
        if only is None or case.kind.split("→")[0] == only:
            results[f"{case.kind}:{case.label}"] = await measure_case(case, n, warmup)
    return results


def serve(name: str, rest: list[str]) -> None:
    """The wrapper process: wrap ``-- argv`` (stdio) or ``--url URL`` and serve it over this process's stdio."""
    from mcpaql.adapters.upstream.runtime import UpstreamSpec
    from mcpaql.adapters.upstream.wrap import wrap
    from mcpaql.config import Config
    from mcpaql.mcp.transports import run_served, serve_stdio

    if pidfile := os.environ.get("BENCH_WRAPPER_PIDFILE"):
        Path(pidfile).write_text(str(os.getpid()))
    spec = UpstreamSpec.from_url(rest[1], name=name) if rest[0] == "--url" else UpstreamSpec.from_argv(rest[1:], name=name)

    async def main() -> None:
        async with wrap(spec, config=Config.load(env={})) as w:
            await serve_stdio(w)

    run_served(main)  # as `mcpaql wrap` runs: uvloop when installed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--serve":
        serve(argv[1], argv[2:])
        return 0
    ap = argparse.ArgumentParser(description="wrapper latency vs direct (stdio and streamable HTTP upstreams)")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--only", choices=["stdio", "http"])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = anyio.run(measure, a.n, a.warmup, a.only)
    if a.json:
        print(json.dumps(results, indent=2))
    else:
        for label, r in results.items():
            conns = r.get("tcp_connections")
            extra = f"  TCP connections direct {conns['direct']} wrapped {conns['wrapped']}" if conns else ""
            print(
                f"{label:24} direct median {r['direct']['median_ms']:.3f} ms (p90 {r['direct']['p90_ms']:.3f})  "
                f"wrapped median {r['wrapped']['median_ms']:.3f} ms (p90 {r['wrapped']['p90_ms']:.3f})  "
                f"ratio {r['ratio_median']}x  overhead {r['overhead_median_ms']:.3f} ms  "
                f"wrapper CPU {r['wrapper_cpu_ms']:.2f} ms/call  ({r['calls']} calls){extra}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
