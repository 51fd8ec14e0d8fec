"""The ``mcpaql`` command line: thin — parse flags, build things, call them.

SERVER arguments (introspect, call, conformance, tokens) are a URL (streamable HTTP) or, after
``--``, a command and its arguments (stdio).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.table import Table

from .config import Config, ConfigError

app = typer.Typer(
    name="mcpaql",
    help="MCP-AQL for Python: serve adapters, wrap MCP servers, introspect and test any MCP-AQL server.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console()
err = Console(stderr=True)
EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


def _config(mode: str | None, prefix: str | None, tool_pattern: str | None, bare: bool, config_file: str | None,
            enumerate_ops: bool | None = None, allow: str | None = None) -> Config:
    try:
        return Config.load(
            config_file,
            mode=mode,
            prefix=prefix,
            tool_pattern=tool_pattern,
            bare_names=bare or None,
            enumerate_operations=enumerate_ops,
            allow=allow,
        )
    except ConfigError as e:
        _fail(str(e))
        raise


def _server_target(server: str | None, extra: list[str]) -> str | list[str]:
    """A URL, or a stdio command. With ``-- cmd args…`` click hands the first word to the
    ``server`` argument and the rest to ``extra``; a quoted command string is split too."""
    if server and server.startswith(("http://", "https://")) and not extra:
        return server
    parts = ([server] if server else []) + list(extra)
    if len(parts) == 1 and " " in parts[0]:
        parts = shlex.split(parts[0])
    if parts:
        return parts
    _fail("give a SERVER: a URL (http://host:port/mcp) or '-- command args…' for stdio")
    raise AssertionError


@app.command()
def serve(
    target: Annotated[str | None, typer.Argument(help="package.module:adapter, a .py file, or an adapter schema file")] = None,
    mode: Annotated[str | None, typer.Option(help="semantic | single | all")] = None,
    transport: Annotated[str, typer.Option(help="stdio | http")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port")] = 8000,
    stateless: Annotated[bool, typer.Option(help="Stateless streamable HTTP (several processes, one deployment)")] = False,
    prefix: Annotated[str | None, typer.Option(help="Tool name prefix, e.g. github_ (env MCP_AQL_TOOL_PREFIX)")] = None,
    tool_pattern: Annotated[str | None, typer.Option(help="Tool name pattern, default {adapter}_mcpaql_{endpoint}")] = None,
    bare: Annotated[bool, typer.Option(help="Spec names mcp_aql_{endpoint} / mcp_aql")] = False,
    enumerate_operations: Annotated[bool, typer.Option(help="Add an enum of operations to each input schema")] = False,
    allow: Annotated[str | None, typer.Option(help="Allowed categories, e.g. READ,CREATE")] = None,
    config: Annotated[str | None, typer.Option(help="Config file (YAML/JSON)")] = None,
    db: Annotated[str | None, typer.Option(help="Demo adapter: SQLite file (env MCPAQL_DEMO_DB)")] = None,
) -> None:
    """Serve an adapter over MCP (no TARGET: the embedded Task Tracker demo)."""
    from .loading import TargetError, load_engine

    cfg = _config(mode, prefix, tool_pattern, bare, config, enumerate_operations or None, allow)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        engine = load_engine(target, cfg, demo_db=db)
    except (TargetError, ConfigError) as e:
        _fail(str(e))
        return
    from .mcp.transports import serve_http, serve_stdio

    if transport == "stdio":
        anyio.run(serve_stdio, engine)
    elif transport == "http":
        err.print(f"serving {engine.registry.display_name} on http://{host}:{port}/mcp" + (" (stateless)" if stateless else ""))
        serve_http(engine, host=host, port=port, stateless=stateless)
    else:
        _fail("transport must be stdio or http")


def _print_json(obj: Any) -> None:
    out.print_json(json.dumps(obj, ensure_ascii=False))


async def _introspect(target: str | list[str], name: str | None, types: bool) -> tuple[list[dict[str, Any]], Any]:
    from .mcp.client import connect

    async with connect(target, env=dict(os.environ)) as client:
        tools = await client.list_tools_raw()
        read_tool = _introspect_tool(tools)
        params: dict[str, Any] = {"query": "types" if types else "operations"}
        if name:
            params["name"] = name
        result, _is_error, _raw = await client.call_tool(read_tool, {"operation": "introspect", "params": params})
        return tools, result


def _introspect_tool(tools: list[dict[str, Any]]) -> str:
    for t in tools:
        if "introspect" in (t.get("description") or "") and (t.get("annotations") or {}).get("readOnlyHint"):
            return t["name"]
    for t in tools:
        if "introspect" in (t.get("description") or ""):
            return t["name"]
    _fail("no MCP-AQL tool advertises 'introspect' on this server")
    raise AssertionError


@app.command(context_settings=EXTRA)
def introspect(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Argument(help="URL, or use '-- command args…'")] = None,
    name: Annotated[str | None, typer.Option(help="Operation (or type, with --types) to detail")] = None,
    types: Annotated[bool, typer.Option(help="List types instead of operations")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Raw JSON output")] = False,
) -> None:
    """Show an MCP-AQL server's tools and operations (or one operation's detail)."""
    target = _server_target(server, ctx.args)
    try:
        tools, result = anyio.run(_introspect, target, name, types)
    except Exception as e:  # connection problems are the user's to fix: say so plainly
        _fail(f"cannot talk to the server: {e}")
        return
    if as_json or name or not isinstance(result, dict) or not result.get("success"):
        _print_json(result if not as_json or name else {"tools": tools, "introspection": result})
        return
    data = result["data"]
    proto = data.get("_protocol", {})
    if types:
        table = Table(title="Types")
        table.add_column("name")
        table.add_column("kind")
        table.add_column("description")
        for t in data.get("types", []):
            table.add_row(t["name"], t["kind"], t.get("description", ""))
        out.print(table)
        return
    out.print(f"[bold]{proto.get('display_name', '?')}[/bold]  adapter={proto.get('adapter')}  "
              f"mode={proto.get('mode')}  MCP-AQL {proto.get('version')}  {proto.get('conformance', '')}")
    tt = Table(title="Tools")
    tt.add_column("tool", no_wrap=True)
    tt.add_column("title")
    for col in ("read-only", "destructive", "idempotent", "open-world"):
        tt.add_column(col)
    for t in tools:
        a = t.get("annotations") or {}
        tt.add_row(t["name"], a.get("title", ""), *(str(a.get(k, "-")) for k in
                                                      ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")))
    out.print(tt)
    ot = Table(title="Operations")
    for col in ("operation", "category", "endpoint", "description"):
        ot.add_column(col)
    for op in data.get("operations", []):
        ot.add_row(op["name"], op["semantic_category"], op["endpoint"], op["description"].split("\n")[0][:90])
    out.print(ot)


async def _call(target: str | list[str], operation: str, params: dict[str, Any], endpoint: str | None) -> Any:
    from .mcp.client import connect

    async with connect(target, env=dict(os.environ)) as client:
        tools = await client.list_tools_raw()
        names = [t["name"] for t in tools]
        tool = None
        if endpoint:
            tool = endpoint if endpoint in names else next((n for n in names if n.endswith("_" + endpoint)), None)
            if tool is None:
                _fail(f"no tool for endpoint '{endpoint}' (tools: {', '.join(names)})")
        else:
            tool = await _find_tool(client, tools, operation)
        async def progress(p: float, total: float | None, message: str | None) -> None:
            err.print(f"[dim]progress {p}{'/' + str(total) if total else ''} {message or ''}[/dim]")

        result, is_error, _raw = await client.call_tool(tool, {"operation": operation, "params": params}, progress=progress)
        return tool, result, is_error


async def _find_tool(client: Any, tools: list[dict[str, Any]], operation: str) -> str:
    """Route by introspection: the operations list says which endpoint family owns it."""
    read_tool = _introspect_tool(tools)
    listing, _e, _r = await client.call_tool(read_tool, {"operation": "introspect", "params": {"query": "operations"}})
    if isinstance(listing, dict) and listing.get("success"):
        proto = listing["data"].get("_protocol", {})
        endpoints = proto.get("endpoints", {})
        for op in listing["data"].get("operations", []):
            if op["name"] == operation:
                fam = op["endpoint"]
                if fam in endpoints:
                    return endpoints[fam]
                for t in tools:
                    if t["name"].endswith("_" + fam) or t["name"] == fam:
                        return t["name"]
        if "single" in endpoints:
            return endpoints["single"]
    return read_tool


@app.command(context_settings=EXTRA)
def call(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Argument(help="URL, or use '-- command args…'")] = None,
    operation: Annotated[str, typer.Option("--operation", "-o", help="Operation name")] = "introspect",
    params: Annotated[str, typer.Option("--params", "-p", help="Params as a JSON object")] = "{}",
    endpoint: Annotated[str | None, typer.Option(help="Endpoint family or tool name (default: found by introspection)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print only the JSON envelope")] = False,
) -> None:
    """Call one operation on an MCP-AQL server and print its envelope."""
    target = _server_target(server, ctx.args)
    try:
        parsed = json.loads(params)
    except ValueError:
        _fail("--params must be a JSON object, e.g. '{\"task_id\": \"t_1\"}'")
        return
    if not isinstance(parsed, dict):
        _fail("--params must be a JSON object")
    try:
        tool, result, is_error = anyio.run(_call, target, operation, parsed, endpoint)
    except typer.Exit:
        raise
    except Exception as e:
        _fail(f"cannot talk to the server: {e}")
        return
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        err.print(f"[dim]via {tool} · isError={is_error}[/dim]")
        _print_json(result)
    if isinstance(result, dict) and not result.get("success", False):
        raise typer.Exit(1)


@app.command(context_settings=EXTRA)
def conformance(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Argument(help="URL, or use '-- command args…'")] = None,
    level: Annotated[int, typer.Option(help="Conformance level to require: 1 or 2")] = 2,
    fmt: Annotated[str, typer.Option("--format", help="text | json | markdown")] = "text",
    evidence: Annotated[str | None, typer.Option(help="Write an evidence bundle (spec fixture-runner format)")] = None,
    read_only: Annotated[bool, typer.Option(help="Skip every test that creates, changes or deletes data")] = False,
) -> None:
    """Test a live MCP-AQL server against the spec; exit 0 when the level is met."""
    from .conformance import run_cli

    if level not in (1, 2):
        _fail("--level must be 1 or 2")
    if fmt not in ("text", "json", "markdown"):
        _fail("--format must be text, json or markdown")
    target = _server_target(server, ctx.args)
    output, code = run_cli(target, level=level, fmt=fmt, evidence=evidence, read_only=read_only,
                           color=sys.stdout.isatty())
    print(output)
    raise typer.Exit(code)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
