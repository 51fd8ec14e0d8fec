"""The ``mcpaql`` command line: thin — parse flags, build things, call them.

SERVER arguments (introspect, call, conformance, tokens) are a URL (streamable HTTP) or, after
``--``, a command and its arguments (stdio).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import logging
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .config import Config, ConfigError, read_secret_file, store_from_env

app = typer.Typer(
    name="mcpaql",
    help="MCP-AQL for Python: serve adapters, wrap MCP servers, introspect and test any MCP-AQL server.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console()
err = Console(stderr=True)
EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}


def _fail(message: str, code: int = 2) -> NoReturn:
    # One line whatever the width (soft_wrap), and the message is text, not Rich markup ("[::1]").
    err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


# The serving flags: every serving command (serve, wrap, openapi, and any backend's to come) has
# all of them, declared once here and turned into one ServeOptions by _serve_options.
ModeOpt = Annotated[str | None, typer.Option(help="semantic | single | all")]
TransportOpt = Annotated[str, typer.Option(help="stdio | http")]
HostOpt = Annotated[str, typer.Option(help="HTTP bind address")]
PortOpt = Annotated[int, typer.Option(help="HTTP port")]
StatelessOpt = Annotated[bool, typer.Option(help="Stateless streamable HTTP (several processes, one deployment)")]
PrefixOpt = Annotated[str | None, typer.Option(help="Tool name prefix, e.g. github_ (env MCP_AQL_TOOL_PREFIX)")]
ToolPatternOpt = Annotated[str | None, typer.Option(help="Tool name pattern, default {adapter}_mcpaql_{endpoint}")]
BareOpt = Annotated[bool, typer.Option(help="Spec names mcp_aql_{endpoint} / mcp_aql")]
EnumerateOpt = Annotated[bool, typer.Option(help="Add an enum of operations to each input schema")]
AllowOpt = Annotated[str | None, typer.Option(help="Allowed categories, e.g. READ,CREATE")]
ConfigOpt = Annotated[str | None, typer.Option(help="Config file (YAML/JSON)")]
SafetyOpt = Annotated[str | None, typer.Option(help="Safety policy file (YAML/JSON; see docs/safety.md)")]
TrustOpt = Annotated[str | None, typer.Option(help="Switch the safety layer on with this adapter trust level")]
SafetyLoopOpt = Annotated[str | None, typer.Option(help="Add the execution safety loop: enforcing|monitoring|logging")]
# The safety loop's human channel (docs/safety.md "The first blocked agent").
ApprovalPageOpt = Annotated[bool, typer.Option(help="With --safety-loop: serve the local approval page (default on)")]
ApprovalPortOpt = Annotated[int, typer.Option(help="Approval page port (default 0: any free port)")]
ApprovalHostOpt = Annotated[str, typer.Option(help="Approval page address (loopback only)")]
ApprovalUrlFileOpt = Annotated[
    Path | None, typer.Option("--approval-url-file", "--url-file", help="Where the page URL with its key is written (mode 0600)")
]
AgentIdOpt = Annotated[
    str | None,
    typer.Option(help="Safety identity of this server's clients (blocks, pauses, tokens); default $MCPAQL_AGENT_ID or 'default'"),
]
# HTTP authentication (docs/auth.md); each also read from its MCPAQL_* variable (config.AUTH_ENV).
AuthIssuerOpt = Annotated[str | None, typer.Option(help="Trust bearer JWTs from this OAuth issuer (env MCPAQL_AUTH_ISSUER)")]
AuthAudienceOpt = Annotated[
    str | None, typer.Option(help="Accepted token audience(s), comma-separated (default: --resource-url)")
]
AuthJwksOpt = Annotated[str | None, typer.Option(help="The issuer's JWKS URL (default: from the issuer's metadata)")]
ApiKeysFileOpt = Annotated[str | None, typer.Option(help="Static API keys: '<subject> <scope>[,...] <key>' per line")]
ResourceUrlOpt = Annotated[str | None, typer.Option(help="This server's public URL (RFC 9728 resource; default audience)")]
InsecureNoAuthOpt = Annotated[bool, typer.Option(help="Allow HTTP beyond loopback with no authentication at all")]
AUTH_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    ("auth_issuer", AuthIssuerOpt, None),
    ("auth_audience", AuthAudienceOpt, None),
    ("auth_jwks_url", AuthJwksOpt, None),
    ("api_keys_file", ApiKeysFileOpt, None),
    ("resource_url", ResourceUrlOpt, None),
    ("insecure_no_auth", InsecureNoAuthOpt, False),
)
OtelOpt = Annotated[
    bool | None,
    typer.Option("--otel/--no-otel", help="OpenTelemetry traces and metrics (default: on when OTEL_* variables ask)"),
]
LogFormatOpt = Annotated[str | None, typer.Option(help="Log format on stderr: text | json (env MCPAQL_LOG_FORMAT)")]

# Deployments of several processes (docs/deployment.md).
StoreOpt = Annotated[
    str | None,
    typer.Option(help="Shared store for every process: redis://host:port/db or sqlite:////abs.db (env MCPAQL_STORE)"),
]
SecretFileOpt = Annotated[
    Path | None,
    typer.Option(help="Deployment secret file (first line signs, later lines still verify; env MCPAQL_SECRET)"),
]
MaxSessionsOpt = Annotated[int, typer.Option(help="HTTP: most stateful sessions kept; at the cap the oldest idle one ends")]
IdleTimeoutOpt = Annotated[float, typer.Option(help="HTTP: seconds an idle stateful session lives")]
ShutdownGraceOpt = Annotated[float, typer.Option(help="HTTP: seconds SIGTERM waits for calls in flight")]

SERVING_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    ("mode", ModeOpt, None),
    ("transport", TransportOpt, "stdio"),
    ("host", HostOpt, "127.0.0.1"),
    ("port", PortOpt, 8000),
    ("stateless", StatelessOpt, False),
    ("prefix", PrefixOpt, None),
    ("tool_pattern", ToolPatternOpt, None),
    ("bare", BareOpt, False),
    ("enumerate_operations", EnumerateOpt, False),
    ("allow", AllowOpt, None),
    ("config", ConfigOpt, None),
    ("agent_id", AgentIdOpt, None),
    ("safety", SafetyOpt, None),
    ("trust", TrustOpt, None),
    ("safety_loop", SafetyLoopOpt, None),
    ("approval_page", ApprovalPageOpt, True),
    ("approval_port", ApprovalPortOpt, 0),
    ("approval_host", ApprovalHostOpt, "127.0.0.1"),
    ("approval_url_file", ApprovalUrlFileOpt, None),
    *AUTH_FLAGS,
    ("otel", OtelOpt, None),
    ("log_format", LogFormatOpt, None),
    ("store", StoreOpt, None),
    ("secret_file", SecretFileOpt, None),
    ("max_sessions", MaxSessionsOpt, 1000),
    ("session_idle_timeout", IdleTimeoutOpt, 600.0),
    ("shutdown_grace", ShutdownGraceOpt, 30.0),
)


def _auth_options(**flags: Any) -> Any:
    """The serving flags' (and environment's) authentication settings, checked (one line, exit 2)."""
    from .auth.options import AuthConfigError, AuthOptions
    from .config import auth_settings

    try:
        return AuthOptions.from_settings(auth_settings(**flags))
    except AuthConfigError as e:
        _fail(str(e))


def _serve_options(
    log_level: int,
    *,
    mode: str | None,
    transport: str,
    host: str,
    port: int,
    stateless: bool,
    prefix: str | None,
    tool_pattern: str | None,
    bare: bool,
    enumerate_operations: bool,
    allow: str | None,
    config: str | None,
    agent_id: str | None,
    safety: str | None,
    trust: str | None,
    safety_loop: str | None,
    approval_page: bool,
    approval_port: int,
    approval_host: str,
    approval_url_file: Path | None,
    otel: bool | None,
    log_format: str | None,
    store: str | None,
    secret_file: Path | None,
    max_sessions: int,
    session_idle_timeout: float,
    shutdown_grace: float,
    **auth: Any,
) -> Any:
    """The one place the serving flags become a ServeOptions (a bad value exits 2 with one line)."""
    from .mcp.transports import configure_logging
    from .safety.channel import ChannelOptions
    from .serving import TRANSPORTS

    cfg = _config(mode, prefix, tool_pattern, bare, config, enumerate_operations or None, allow)
    log_format, otel = _observability(log_format, otel)
    configure_logging(log_level, log_format)
    if transport not in TRANSPORTS:
        _fail("transport must be stdio or http")
    safety_cfg = _safety_config(safety, trust, safety_loop, agent_id)
    store = store or store_from_env()
    if store and safety_cfg is not None:
        safety_cfg = dataclasses.replace(safety_cfg, store=store)
    cfg = _with_secret(cfg, secret_file, store or (safety_cfg.store if safety_cfg is not None else None))
    return _options(
        config=cfg,
        safety=safety_cfg,
        transport=transport,
        host=host,
        port=port,
        stateless=stateless,
        log_level=log_level,
        channel=ChannelOptions(page=approval_page, host=approval_host, port=approval_port, url_file=approval_url_file),
        store=store,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
        shutdown_grace=shutdown_grace,
        auth=_auth_options(**auth),
        otel=otel,
        log_format=log_format,
    )


def _observability(log_format: str | None, otel: bool | None) -> tuple[str, bool]:
    """The log format and whether telemetry is on, decided before anything starts: what cannot be
    honoured (``--otel`` without the ``otel`` extra, an unknown format) exits 2 with one line."""
    from .config import LOG_FORMATS, telemetry_settings
    from .observability import decide

    try:
        settings = telemetry_settings()
        fmt = (log_format or settings.log_format).lower()
        if fmt not in LOG_FORMATS:
            raise ConfigError("--log-format must be text or json")
        return fmt, decide(otel, settings)
    except ConfigError as e:
        _fail(str(e))


def _options(**fields: Any) -> Any:
    """A ServeOptions, or one line and exit status 2 for a value it refuses."""
    from .serving import ServeOptions

    try:
        return ServeOptions(**fields)
    except ValueError as e:
        _fail(str(e))


def _with_secret(cfg: Config, secret_file: Path | None, store: str | None) -> Config:
    """The deployment secret, so every process of a deployment signs and accepts the same
    cursors: ``--secret-file``, else ``MCPAQL_SECRET`` (already in ``cfg``), else the one kept in
    an explicitly configured store (created there by the first process), else none (random per
    process). A secret that cannot be had is one line and exit status 2; it is never printed."""
    from .store.secret import secret_from_store

    try:
        if secret_file is not None:
            return cfg.with_(secret_keys=read_secret_file(secret_file))
        if cfg.secret_keys or not store:
            return cfg
        return cfg.with_(secret_keys=anyio.run(secret_from_store, store))
    except (ConfigError, ConnectionError, ValueError) as e:
        _fail(str(e))


def serving_command(*, log_level: int = logging.WARNING, **settings: Any) -> Callable[[Callable[..., None]], Any]:
    """Register a serving command: the function declares its own arguments plus ``options``
    (a ServeOptions); every serving flag is added to its signature here, so a backend's command
    is its own flags and a call to :func:`_serve`."""

    def register(fn: Callable[..., None]) -> Any:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "options"]
        shared = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=a, default=d) for n, a, d in SERVING_FLAGS]
        names = [n for n, _a, _d in SERVING_FLAGS]

        @functools.wraps(fn)
        def command(**kw: Any) -> None:
            options = _serve_options(log_level, **{n: kw.pop(n) for n in names})
            fn(options=options, **kw)

        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer must read the signature above, not fn's
        return app.command(**settings)(command)

    return register


def _serve(source: Any, options: Any, *, fail_prefix: str = "", **kw: Any) -> None:
    """Serve through mcpaql.serving; what cannot start is one line and exit status 2."""
    from .safety.channel import ChannelError
    from .serving import serve as do_serve

    try:
        do_serve(source, options, **kw)
    except (ConnectionError, ValueError, ChannelError) as e:
        _fail(fail_prefix + str(e))


def _config(
    mode: str | None,
    prefix: str | None,
    tool_pattern: str | None,
    bare: bool,
    config_file: str | None,
    enumerate_ops: bool | None = None,
    allow: str | None = None,
) -> Config:
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


@serving_command(log_level=logging.INFO)
def serve(
    target: Annotated[str | None, typer.Argument(help="package.module:adapter, a .py file, or an adapter schema file")] = None,
    db: Annotated[str | None, typer.Option(help="Demo adapter: SQLite file (env MCPAQL_DEMO_DB)")] = None,
    *,
    options: Any,
) -> None:
    """Serve an adapter over MCP (no TARGET: the embedded Task Tracker demo)."""
    from .loading import TargetError, load_engine

    if target and target.endswith((".json", ".yaml", ".yml")) and _is_openapi(target):
        _serve_openapi(target, options)
        return
    if target and target.endswith((".json", ".yaml", ".yml", ".md")):
        _serve_schema_file(target, options)
        return
    installed: list[Any] = []
    prepare = _safety_prepare(options.safety, installed)
    try:
        engine = load_engine(target, options.config, demo_db=db, prepare=prepare)
    except (TargetError, ConfigError, ValueError) as e:
        _fail(str(e))
        return
    _serve(engine, options, safety=installed[0] if installed else None)


def _safety_settings(
    policy: str | None, trust: str | None, loop: str | None, agent_id: str | None = None
) -> dict[str, Any] | None:
    if not (policy or trust or loop):
        return None
    data: dict[str, Any] = {}
    if policy:
        import yaml

        try:
            loaded = yaml.safe_load(Path(policy).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as e:
            _fail(f"cannot read safety policy '{policy}': {e}")
        if not isinstance(loaded, dict):
            _fail(f"safety policy '{policy}' must hold a mapping")
        data.update(loaded)
    if trust:
        data["trust"] = trust
    if loop:
        data["loop_mode"] = loop
    if agent_id:
        data["agent_id"] = agent_id
    return data


def _safety_config(policy: str | None, trust: str | None, loop: str | None, agent_id: str | None = None) -> Any:
    """The SafetyConfig the safety options ask for, or None (a bad file or value exits 2)."""
    settings = _safety_settings(policy, trust, loop, agent_id)
    if settings is None:
        return None
    from .safety import SafetyConfig

    try:
        return SafetyConfig.from_dict(settings)
    except (TypeError, ValueError) as e:
        _fail(f"invalid safety settings: {e}")
        raise


def _safety_prepare(cfg: Any, installed: list[Any]) -> Any:
    """The ``prepare`` hook giving the target's engine the safety extension; the Safety it
    makes is appended to ``installed``."""
    if cfg is None:
        return None
    from .protocol.dispatch import Engine
    from .protocol.registry import Registry
    from .safety import Safety

    def prepare(target: Any) -> Any:
        reg = target.registry if isinstance(target, Engine) else target
        installed.append(Safety(cfg, reg.adapter if isinstance(reg, Registry) else target.name))
        return installed[-1].extension()

    return prepare


def _serve_schema_file(path: str, options: Any) -> None:
    from .adapters.schema import serve_adapter
    from .protocol.registry import SchemaError

    try:
        runtime = serve_adapter(path, config=options.config, safety=options.safety)
    except (SchemaError, OSError, ValueError) as e:
        _fail(f"cannot load adapter schema '{path}': {e}")
        return
    _serve(runtime, options)


def _is_openapi(path: str) -> bool:
    from .adapters.openapi import looks_like_openapi

    return looks_like_openapi(path)


def _serve_openapi(source: str, options: Any, **kw: Any) -> None:
    from .adapters.openapi import OpenAPIError, serve_openapi

    try:
        runtime = serve_openapi(source, config=options.config, safety=options.safety, **kw)
    except OpenAPIError as e:
        _fail(str(e))
        return
    _serve(runtime, options)


def _headers(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for h in pairs:
        k, sep, v = h.partition("=")
        if not sep or not k.strip():
            _fail(f"--header must be K=V, got '{h}'")
        out[k.strip()] = v
    return out


def _upstreams(extra: list[str], url: str | None, headers: list[str], upstream: list[str], name: str | None) -> list[Any]:
    from .adapters.upstream import UpstreamSpec

    hdrs = _headers(headers)
    specs = []
    # A stdio upstream is the user's own command: like any process they start, it inherits their
    # environment (API keys such as GITHUB_TOKEN live there), not just the SDK's short safe list.
    env = dict(os.environ)
    try:
        if extra:
            specs.append(UpstreamSpec.from_argv(extra, name=name, env=env))
        if url:
            specs.append(UpstreamSpec.from_url(url, name=name, headers=hdrs or None))
        specs.extend(
            UpstreamSpec.parse(u, env=env) if not re.match(r"^([a-z][a-z0-9_-]*=)?https?://", u) else UpstreamSpec.parse(u)
            for u in upstream
        )
    except ValueError as e:
        _fail(str(e))
    if not specs:
        _fail("give an upstream: '-- command args…', --url URL, or --upstream name=TARGET (repeatable)")
    return specs


def _with_call_timeout(specs: list[Any], seconds: float | None) -> list[Any]:
    if seconds is None:
        return specs
    if seconds <= 0:
        _fail("--call-timeout must be a number of seconds > 0")
    return [dataclasses.replace(s, call_timeout=seconds) for s in specs]


@serving_command(context_settings=EXTRA)
def wrap(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option(help="Upstream streamable HTTP (or SSE) URL")] = None,
    header: Annotated[list[str], typer.Option(help="Upstream HTTP header K=V; values may use ${ENV}")] = [],  # noqa: B006
    upstream: Annotated[list[str], typer.Option(help="name=URL or name=command line; repeat to combine servers")] = [],  # noqa: B006
    name: Annotated[str | None, typer.Option(help="Adapter name (default: derived from the upstream)")] = None,
    display_name: Annotated[str | None, typer.Option(help="Display name used in tool titles")] = None,
    read_only: Annotated[bool, typer.Option(help="Expose READ operations only")] = False,
    include: Annotated[list[str], typer.Option(help="Glob of tools/operations to expose (repeatable)")] = [],  # noqa: B006
    exclude: Annotated[list[str], typer.Option(help="Glob of tools/operations to hide (repeatable)")] = [],  # noqa: B006
    overrides: Annotated[str | None, typer.Option(help="Overrides YAML (classification fixes)")] = None,
    call_timeout: Annotated[float | None, typer.Option(help="Seconds an upstream tool call may take (default: no limit)")] = None,
    *,
    options: Any,
) -> None:
    """Serve an existing MCP server (or several) through MCP-AQL: mcpaql wrap -- npx -y @modelcontextprotocol/server-memory"""
    from .adapters.upstream import wrap as do_wrap

    specs = _with_call_timeout(_upstreams(list(ctx.args), url, header, upstream, name if not upstream else None), call_timeout)
    kw: dict[str, Any] = {
        "config": options.config,
        "read_only": read_only,
        "include": include,
        "exclude": exclude,
        "safety": options.safety,
    }
    if name:
        kw["name"] = name
    if display_name:
        kw["display_name"] = display_name
    if overrides:
        from .adapters.schema.build import load_overrides

        kw["overrides"] = load_overrides(overrides).get("operations") or {}
    _serve(do_wrap(specs, **kw), options, on_open=_say_break_even)


def _say_break_even(holder: Any) -> None:
    """One line on stderr at start: does wrapping pay for what is served (o200k tokens)? Counted
    in a daemon thread (loading the tokenizer takes a second or two), so serving starts at once."""
    import threading

    from .adapters.upstream.report import wrapped_break_even

    def say() -> None:
        try:
            line = wrapped_break_even(holder)["message"]
        except Exception:  # advice only: it must never disturb serving
            return
        print(f"mcpaql wrap: {line}", file=sys.stderr, flush=True)

    threading.Thread(target=say, name="mcpaql-break-even", daemon=True).start()


@serving_command()
def openapi(
    spec: Annotated[str, typer.Argument(help="OpenAPI 3.x document: a file (JSON/YAML) or an http(s) URL")],
    base_url: Annotated[str | None, typer.Option(help="API base URL (default: the document's first server)")] = None,
    header: Annotated[list[str], typer.Option(help="HTTP header K=V sent on every call; values may use ${ENV}")] = [],  # noqa: B006
    name: Annotated[str | None, typer.Option(help="Adapter name (default: from the document's title)")] = None,
    read_only: Annotated[bool, typer.Option(help="Expose READ operations only")] = False,
    include: Annotated[list[str], typer.Option(help="Glob of operations to expose (repeatable)")] = [],  # noqa: B006
    exclude: Annotated[list[str], typer.Option(help="Glob of operations to hide (repeatable)")] = [],  # noqa: B006
    timeout: Annotated[float, typer.Option(help="Seconds an API call may take")] = 30.0,
    allow_private_targets: Annotated[
        bool,
        typer.Option(help="Allow API targets on link-local/metadata addresses, and private ones for a document fetched by URL"),
    ] = False,
    *,
    options: Any,
) -> None:
    """Serve an HTTP API described by OpenAPI 3.x through MCP-AQL: mcpaql openapi petstore.yaml"""
    if timeout <= 0:
        _fail("--timeout must be a number of seconds > 0")
    _serve_openapi(
        spec,
        options,
        base_url=base_url,
        headers=_headers(header),
        name=name,
        read_only=read_only,
        include=include,
        exclude=exclude,
        timeout=timeout,
        allow_private_targets=allow_private_targets,
    )


@app.command(context_settings=EXTRA)
def capture(
    ctx: typer.Context,
    out: Annotated[str, typer.Option(help="Where to write the discovery bundle (JSON)")] = "discovery-bundle.json",
    url: Annotated[str | None, typer.Option(help="Upstream URL (streamable HTTP / SSE)")] = None,
    header: Annotated[list[str], typer.Option(help="Upstream HTTP header K=V; values may use ${ENV}")] = [],  # noqa: B006
    fixture: Annotated[str | None, typer.Option(help="A saved tools/list JSON instead of a live server")] = None,
    name: Annotated[str | None, typer.Option(help="Adapter name")] = None,
) -> None:
    """Write a discovery bundle (spec format) from a live MCP server or a saved tools/list."""
    from .adapters.schema import capture as do_capture

    if fixture:
        bundle = do_capture(Path(fixture), out, name=name)
    else:
        spec = _upstreams(list(ctx.args), url, header, [], name)[0]
        try:
            bundle = do_capture(spec, out)
        except ConnectionError as e:
            _fail(str(e))
            return
    n = len((bundle.get("raw_capture") or {}).get("tools", []))
    err.print(f"wrote {out}: {n} tools from {bundle['source'].get('name', '?')}")


schema_app = typer.Typer(help="Adapter schema files: build them from discovery bundles.", no_args_is_help=True)
app.add_typer(schema_app, name="schema")


@schema_app.command("build")
def schema_build(
    bundle: Annotated[str, typer.Argument(help="Discovery bundle from 'mcpaql capture'")],
    out: Annotated[str, typer.Option(help="Adapter schema to write (.json, .yaml or .md)")] = "adapter.json",
    overrides: Annotated[str | None, typer.Option(help="Overrides YAML: fix categories, names, danger levels")] = None,
    report: Annotated[str | None, typer.Option(help="Also write the build report (Markdown)")] = None,
) -> None:
    """Turn a discovery bundle (plus overrides) into an adapter schema and a build report."""
    from .adapters.schema.build import BuildError, build_checked, format_report

    try:
        _, rep, warnings = build_checked(bundle, overrides, out)
    except BuildError as e:
        for line in e.problems:  # one line per problem, each with its field path
            err.print(f"[red]error:[/red] {escape(line)}", soft_wrap=True)
        raise typer.Exit(2) from None
    for w in warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
    text = format_report(rep)
    if report:
        Path(report).write_text(text, encoding="utf-8")
    out_console = Console(stderr=True)
    out_console.print(text)
    out_console.print(f"wrote {out}")


@app.command(context_settings=EXTRA)
def tokens(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Argument(help="URL, or use '-- command args…'")] = None,
    fixture: Annotated[str | None, typer.Option(help="A saved tools/list JSON instead of a live server")] = None,
    openapi: Annotated[str | None, typer.Option(help="An OpenAPI 3.x document (file or URL): its operations as tools")] = None,
    header: Annotated[list[str], typer.Option(help="Upstream HTTP header K=V")] = [],  # noqa: B006
    operation: Annotated[str | None, typer.Option(help="Also show this operation's detail vs its tool definition")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
) -> None:
    """o200k tokens of a server's discrete tools/list versus its wrapped MCP-AQL surface per mode."""
    from .adapters.upstream import token_report

    if fixture:
        rep = token_report(Path(fixture))
    elif openapi:
        from .adapters.openapi import OpenAPIError, load_document

        try:
            api = load_document(openapi)
        except OpenAPIError as e:
            _fail(str(e))
            return
        rep = token_report(api.tools, name=re.sub(r"[^a-z0-9]+", "-", api.title.lower()).strip("-") or "api")
    else:
        target = _server_target(server, ctx.args)
        url = target if isinstance(target, str) else None
        spec = _upstreams([] if url else list(target), url, header, [], None)[0]
        try:
            rep = token_report(spec)
        except ConnectionError as e:
            _fail(str(e))
            return
    if as_json:
        print(json.dumps(rep, ensure_ascii=False, indent=2))
        return
    d = rep["discrete"]["tokens"]
    t = Table(title=f"{rep['adapter']}: {rep['tools']} tools, {rep['encoding']} tokens")
    t.add_column("surface")
    t.add_column("tools", justify="right")
    t.add_column("tokens", justify="right")
    t.add_column("vs discrete", justify="right")
    t.add_row("discrete tools/list", str(rep["tools"]), f"{d:,}", "1.00x")
    for m, w in rep["wrapped"].items():
        t.add_row(f"mcpaql {m}", str(len(w["tools"])), f"{w['tokens']:,}", f"{w['tokens'] / max(d, 1):.2f}x")
    out.print(t)
    out.print(rep["break_even"]["message"], soft_wrap=True)
    per = rep.get("per_operation", [])
    if per:
        worst = max(per, key=lambda p: p["detail_tokens"] / max(p["tool_tokens"], 1))
        det = rep["detail"]
        out.print(
            f"introspection detail vs original tool definition: median {det['median_ratio']}x, "
            f"max {det['max_ratio']}x ({worst['operation']}: {worst['detail_tokens']} vs {worst['tool_tokens']}), "
            f"{det['larger_than_definition']} of {len(per)} larger; "
            f"vs the definition as sent: max {det['max_ratio_as_sent']}x"
        )
    if operation:
        row = next((p for p in per if operation in (p["operation"], p["tool"])), None)
        if row is None:
            _fail(f"no operation '{operation}'")
        else:
            out.print(f"{row['operation']}: detail {row['detail_tokens']} tokens vs tool definition {row['tool_tokens']}")


def _print_json(obj: Any) -> None:
    out.print_json(json.dumps(obj, ensure_ascii=False))


class _ServerStderr:
    """A stdio server's stderr, captured while a client command runs (the SDK hands the process
    ``sys.stderr``), replayed afterwards, so a server that fails to start is reported by its own
    last line instead of the client's "unhandled errors in a TaskGroup"."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by _server_stderr)

    def text(self) -> str:
        self.file.flush()
        self.file.seek(0)
        return self.file.read()

    def last_line(self) -> str | None:
        lines = [ln.strip() for ln in self.text().splitlines() if ln.strip()]
        return lines[-1][:300] if lines else None

    def fail(self, e: BaseException | None) -> None:
        line = self.last_line()
        if sys.stderr is not self.file:  # the server's own output first, then our one-line verdict
            sys.stderr.write(self.text())
            sys.stderr.flush()
            self.file.seek(0)
            self.file.truncate()
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        _fail(f"the server failed to start: {line}" if line else f"cannot talk to the server: {e}")


@contextlib.contextmanager
def _server_stderr(swap: bool = False) -> Iterator[_ServerStderr]:
    """``log.file`` is what the server's stderr goes to (``errlog``); ``swap`` also points
    ``sys.stderr`` at it, for runners that hand the SDK ``sys.stderr`` themselves."""
    log = _ServerStderr()
    saved = sys.stderr
    if swap:
        sys.stderr = log.file
    try:
        yield log
    finally:
        sys.stderr = saved
        text = log.text()
        if text:
            saved.write(text)
            saved.flush()
        log.file.close()


async def _introspect(
    target: str | list[str], name: str | None, types: bool, errlog: Any = None
) -> tuple[list[dict[str, Any]], Any]:
    from .mcp.client import connect

    async with connect(target, env=dict(os.environ), errlog=errlog) as client:
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
    with _server_stderr() as log:
        try:
            tools, result = anyio.run(_introspect, target, name, types, log.file)
        except Exception as e:  # connection problems are the user's to fix: say so plainly
            log.fail(e)
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
    out.print(
        f"[bold]{proto.get('display_name', '?')}[/bold]  adapter={proto.get('adapter')}  "
        f"mode={proto.get('mode')}  MCP-AQL {proto.get('version')}  {proto.get('conformance', '')}"
    )
    from .protocol.surface import MCP_HINT_DEFAULTS

    tt = Table(title="Tools")
    tt.add_column("tool", no_wrap=True)
    tt.add_column("title")
    for col in ("read-only", "destructive", "idempotent", "open-world"):
        tt.add_column(col)
    for t in tools:
        a = t.get("annotations") or {}
        tt.add_row(
            t["name"],
            a.get("title", ""),
            # an absent hint means MCP's default (mcpaql sends idempotent/open-world only when they differ)
            *(str(a.get(k, MCP_HINT_DEFAULTS.get(k, "-"))) for k in ("readOnlyHint", "destructiveHint", *MCP_HINT_DEFAULTS)),
        )
    out.print(tt)
    ot = Table(title="Operations")
    for col in ("operation", "category", "endpoint", "description"):
        ot.add_column(col)
    for op in data.get("operations", []):
        ot.add_row(op["name"], op["semantic_category"], op["endpoint"], op["description"].split("\n")[0][:90])
    out.print(ot)


async def _call(target: str | list[str], operation: str, params: dict[str, Any], endpoint: str | None, errlog: Any = None) -> Any:
    from .mcp.client import connect

    async with connect(target, env=dict(os.environ), errlog=errlog) as client:
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
    """Route by introspection: the operation's detail names its tool (``mcpTool``), whatever the
    size of the server; else the operations list says which endpoint family owns it."""
    read_tool = _introspect_tool(tools)
    detail, _e, _r = await client.call_tool(
        read_tool, {"operation": "introspect", "params": {"query": "operations", "name": operation}}
    )
    found = detail.get("data", {}).get("operation") if isinstance(detail, dict) and detail.get("success") else None
    if isinstance(found, dict) and found.get("mcpTool") in {t["name"] for t in tools}:
        return str(found["mcpTool"])
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
        _fail('--params must be a JSON object, e.g. \'{"task_id": "t_1"}\'')
        return
    if not isinstance(parsed, dict):
        _fail("--params must be a JSON object")
    with _server_stderr() as log:
        try:
            tool, result, is_error = anyio.run(_call, target, operation, parsed, endpoint, log.file)
        except typer.Exit:
            raise
        except Exception as e:
            log.fail(e)
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
    allow_network: Annotated[
        bool, typer.Option(help="Let probes carry non-loopback addresses and call open-world tools with an address")
    ] = False,
) -> None:
    """Test a live MCP-AQL server against the spec; exit 0 when the level is met.

    ``mcpaql conformance grade EVIDENCE`` grades an evidence file the way the spec's runner does."""
    from .conformance import grade_cli, run_cli

    if level not in (1, 2):
        _fail("--level must be 1 or 2")
    if fmt not in ("text", "json", "markdown"):
        _fail("--format must be text, json or markdown")
    if server == "grade" and len(ctx.args) == 1:
        output, code = grade_cli(ctx.args[0], level=level, fmt="json" if fmt == "json" else "text")
        if code == 3:
            _fail(output, 3)
        print(output)
        raise typer.Exit(code)
    target = _server_target(server, ctx.args)
    with _server_stderr(swap=True) as log:
        output, code = run_cli(
            target,
            level=level,
            fmt=fmt,
            evidence=evidence,
            read_only=read_only,
            color=sys.stdout.isatty(),
            allow_network=allow_network,
        )
        if code == 3 and log.last_line():  # the server did not start: say what it said
            log.fail(None)
    print(output)
    raise typer.Exit(code)


LoopMode = Literal["enforcing", "monitoring", "logging", "disabled"]


@app.command()
def guard(
    store: Annotated[
        str | None, typer.Option(help="sqlite:///path.db (default ~/.mcpaql/safety.db) or redis://host:port/db")
    ] = None,
    mode: Annotated[LoopMode, typer.Option(envvar="MCPAQL_SAFETY_LOOP", show_envvar=False)] = "enforcing",
    policy: Annotated[
        Path | None, typer.Option(help='JSON file: SafetyConfig keys, e.g. {"autonomy": {"deny": ["drop_*"]}}')
    ] = None,
    max_steps: Annotated[int | None, typer.Option()] = None,
    risk_tolerance: Annotated[Literal["conservative", "moderate", "aggressive"] | None, typer.Option()] = None,
    webhook: Annotated[str | None, typer.Option(help="POST each challenge (with its code) to this operator URL")] = None,
    os_dialog: Annotated[bool, typer.Option("--os-dialog", help="Show codes in a desktop dialog where available")] = False,
    transport: Annotated[Literal["stdio", "http"], typer.Option(help="stdio | http")] = "stdio",
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    stateless: StatelessOpt = False,
    approval_page: ApprovalPageOpt = True,
    approval_port: ApprovalPortOpt = 0,
    approval_host: ApprovalHostOpt = "127.0.0.1",
    approval_url_file: ApprovalUrlFileOpt = None,
    auth_issuer: AuthIssuerOpt = None,
    auth_audience: AuthAudienceOpt = None,
    auth_jwks_url: AuthJwksOpt = None,
    api_keys_file: ApiKeysFileOpt = None,
    resource_url: ResourceUrlOpt = None,
    insecure_no_auth: InsecureNoAuthOpt = False,
    otel: OtelOpt = None,
    log_format: LogFormatOpt = None,
    max_sessions: MaxSessionsOpt = 1000,
    session_idle_timeout: IdleTimeoutOpt = 600.0,
    shutdown_grace: ShutdownGraceOpt = 30.0,
) -> None:
    """The execution safety loop as its own MCP server (the "safety dongle")."""
    from .safety.channel import ChannelError, ChannelOptions
    from .safety.guard import guard_config, run_guard

    try:
        config = guard_config(
            mode=mode,
            store=store,
            policy=policy,
            max_steps=max_steps,
            risk_tolerance=risk_tolerance,
            webhook=webhook,
            os_dialog=os_dialog,
        )
    except (OSError, TypeError, ValueError) as e:
        _fail(f"invalid guard settings: {e}")
        return
    auth = _auth_options(
        auth_issuer=auth_issuer,
        auth_audience=auth_audience,
        auth_jwks_url=auth_jwks_url,
        api_keys_file=api_keys_file,
        resource_url=resource_url,
        insecure_no_auth=insecure_no_auth,
    )
    fmt, on = _observability(log_format, otel)
    channel = ChannelOptions(page=approval_page, host=approval_host, port=approval_port, url_file=approval_url_file)
    bounds = {"max_sessions": max_sessions, "session_idle_timeout": session_idle_timeout, "shutdown_grace": shutdown_grace}
    options = _options(
        transport=transport,
        host=host,
        port=port,
        stateless=stateless,
        channel=channel,
        auth=auth,
        otel=on,
        log_format=fmt,
        **bounds,
    )
    try:
        run_guard(config, options)
    except ChannelError as e:
        print(f"mcpaql guard: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


@app.command("rotate-secret")
def rotate_secret(store: StoreOpt = None) -> None:
    """Make a new deployment secret in the shared store; the previous one still verifies cursors.
    Restart the processes to pick it up (docs/deployment.md "The deployment secret")."""
    from .store.base import open_store
    from .store.secret import rotate_shared_secret, where

    url = store or store_from_env()
    if not url:
        _fail("give the shared store: --store redis://host:port/db (or MCPAQL_STORE)")

    async def rotate() -> None:
        async with open_store(url) as opened:
            await rotate_shared_secret(opened)

    try:
        anyio.run(rotate)
    except ValueError as e:
        _fail(str(e))
    except Exception:  # the store's own errors (redis-py's are not OSErrors): one line, no detail
        _fail(f"cannot rotate the deployment secret in the store at {where(url)}")
    err.print(f"rotated the deployment secret in {escape(where(url))}; restart the processes to sign with it", soft_wrap=True)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
