"""Configuration, in one place. Precedence: explicit arguments (CLI flags) > environment >
config file (YAML or JSON, path in ``MCPAQL_CONFIG``) > defaults.

Environment variables: ``MCP_AQL_ENDPOINT_MODE`` (semantic|single|all, MODES §3.1),
``MCP_AQL_TOOL_PREFIX`` (MCPI §6.2), ``MCPAQL_TOOL_PATTERN``, ``MCPAQL_SINGLE_PATTERN``,
``MCPAQL_BARE_NAMES`` (1 → spec names ``mcp_aql_{endpoint}`` / ``mcp_aql``),
``MCPAQL_ENUMERATE_OPERATIONS`` (1 → per-endpoint ``enum`` of operations in input schemas),
``MCPAQL_SECRET`` / ``MCPAQL_SECRET_PREVIOUS`` (the deployment secret that signs cursors, so
every process of a deployment accepts every other's; the previous one is still accepted while
a rotation rolls out), ``MCPAQL_STORE`` (the shared store: ``redis://…`` or ``sqlite:///…``).

Process settings (not part of an engine's :class:`Config`; see :class:`Settings`) are read from
the environment here too, and nowhere else in the package: ``MCPAQL_HOME``, ``MCPAQL_AGENT_ID``,
``MCPAQL_DEMO_DB``, ``MCPAQL_UVLOOP``, ``MCPAQL_UPSTREAM_LANE``, ``MCPAQL_STDIO_DRAIN_SECONDS``,
``MCPAQL_SPEC_SCHEMAS`` and the desktop's ``DISPLAY``/``WAYLAND_DISPLAY``.
HTTP authentication (docs/auth.md): see :data:`AUTH_ENV` and :func:`auth_settings`.
Telemetry and logs (:func:`telemetry_settings`): ``OTEL_SDK_DISABLED``, ``OTEL_SERVICE_NAME``,
``OTEL_TRACES_EXPORTER``, ``OTEL_METRICS_EXPORTER``, ``OTEL_EXPORTER_OTLP_*ENDPOINT`` (any of them
turns telemetry on), ``OTEL_EXPORTER_OTLP_*PROTOCOL`` and ``MCPAQL_LOG_FORMAT`` (text|json).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml

Mode = Literal["semantic", "single", "all"]
MODES: tuple[str, ...] = ("semantic", "single", "all")
DEFAULT_PATTERN = "{adapter}_mcpaql_{endpoint}"
DEFAULT_SINGLE_PATTERN = "{adapter}_mcpaql"
BARE_PATTERN = "mcp_aql_{endpoint}"
BARE_SINGLE_PATTERN = "mcp_aql"
PREFIX_RE = re.compile(r"^[a-z0-9_]*_$")
TOOL_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")


class ConfigError(ValueError):
    """A configuration value is invalid; the message says which and how to fix it."""


# (default, minimum, maximum) — CORE §4.7.5
_LIMIT_RANGES: dict[str, tuple[int, int, int]] = {
    "max_request_size": (1_048_576, 65_536, 10_485_760),
    "max_response_size": (10_485_760, 1_048_576, 104_857_600),
    "max_string_length": (1_048_576, 65_536, 10_485_760),
    "max_array_elements": (10_000, 100, 100_000),
    "max_nesting_depth": (32, 8, 64),
}


@dataclass(frozen=True, slots=True)
class Limits:
    max_request_size: int = 1_048_576
    max_response_size: int = 10_485_760
    max_string_length: int = 1_048_576
    max_array_elements: int = 10_000
    max_nesting_depth: int = 32

    def __post_init__(self) -> None:
        for name, (_, lo, hi) in _LIMIT_RANGES.items():
            v = getattr(self, name)
            if not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"limit {name}={v!r} is outside the allowed range {lo}..{hi}")

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# Chosen from bench/bench_listings.py (docs/listings.md): the largest captured surfaces
# (GitHub-89: 90 operations in one tool in single mode) stay flat, every name shown.
LISTING_THRESHOLD = 150
INTROSPECT_PAGE_SIZE = 100
INTROSPECT_PAGE_MAX = 500


@dataclass(frozen=True)
class Config:
    mode: Mode = "semantic"
    tool_pattern: str = DEFAULT_PATTERN
    single_pattern: str = DEFAULT_SINGLE_PATTERN
    prefix: str = ""
    enumerate_operations: bool = False
    strict_mode: bool = True
    limits: Limits = field(default_factory=Limits)
    # None: derive from the adapter (HTTP-backed adapters are open world).
    open_world: bool | None = None
    # Categories this server lets through, in every mode (MODES §5.3, OVW "Single Mode").
    allow: frozenset[str] = frozenset({"CREATE", "READ", "UPDATE", "DELETE", "EXECUTE"})
    # Bounded listings (docs/listings.md): a tool hosting more operations than this lists them
    # grouped by element type; ``introspect operations`` returns at most this many per page
    # unless ``first`` asks for another size (up to INTROSPECT_PAGE_MAX).
    listing_threshold: int = LISTING_THRESHOLD
    introspect_page_size: int = INTROSPECT_PAGE_SIZE
    # Advertise each tool's outputSchema (the response envelope) in tools/list. Off by default:
    # it costs tokens in every conversation and tells the model nothing the description does not
    # (docs/protocol.md has the figures); structuredContent is sent either way.
    output_schema: bool = False
    # The deployment secret(s): the first signs, all verify (rotation). Empty: a random key per
    # engine, so cursors are valid only in the process that issued them. Never printed.
    secret_keys: tuple[bytes, ...] = field(default=(), repr=False, compare=False)
    # Sync (plain ``def``) handlers run in worker threads, at most this many at once per engine
    # (mcpaql.protocol.workers); further calls wait for a free thread.
    handler_threads: int = 16

    def __post_init__(self) -> None:
        for key, hi in (("listing_threshold", 1_000_000), ("introspect_page_size", INTROSPECT_PAGE_MAX)):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
                raise ConfigError(f"{key} must be an integer from 1 to {hi}, got {v!r}")
        if isinstance(self.handler_threads, bool) or not isinstance(self.handler_threads, int):
            raise ConfigError(f"handler_threads must be an integer, got {self.handler_threads!r}")
        if not 1 <= self.handler_threads <= 1024:
            raise ConfigError(f"handler_threads={self.handler_threads} is outside the allowed range 1..1024")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.prefix and not PREFIX_RE.match(self.prefix):
            raise ConfigError(
                f"tool prefix '{self.prefix}' must contain only lowercase letters, digits and "
                "underscores and end with '_' (e.g. 'github_')"
            )
        if "{endpoint}" not in self.tool_pattern:
            raise ConfigError(f"tool pattern '{self.tool_pattern}' must contain '{{endpoint}}'")
        bad_cats = {c.upper() for c in self.allow} - {"CREATE", "READ", "UPDATE", "DELETE", "EXECUTE"}
        if bad_cats:
            raise ConfigError(f"unknown semantic categories in allow: {', '.join(sorted(bad_cats))}")
        object.__setattr__(self, "allow", frozenset(c.upper() for c in self.allow))
        for secret in self.secret_keys:
            check_secret(secret)
        for pat in (self.tool_pattern, self.single_pattern):
            unknown = set(re.findall(r"{([^}]*)}", pat)) - {"adapter", "endpoint"}
            if unknown:
                raise ConfigError(f"tool pattern '{pat}' uses unknown variable(s): {', '.join(sorted(unknown))}")

    @classmethod
    def load(
        cls,
        file: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Config:
        """Build a config from defaults, then the file, then the environment, then overrides."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        path = file or env.get("MCPAQL_CONFIG")
        if path:
            values.update(_read_file(Path(path)))
        values.update(_from_env(env))
        values.update({k: v for k, v in overrides.items() if v is not None})
        if values.pop("bare_names", False):
            values.setdefault("tool_pattern", BARE_PATTERN)
            values.setdefault("single_pattern", BARE_SINGLE_PATTERN)
        if isinstance(values.get("allow"), str):
            values["allow"] = frozenset(x.strip() for x in values["allow"].split(",") if x.strip())
        elif values.get("allow") is not None:
            values["allow"] = frozenset(values["allow"])
        values.update(secrets_from_env(env))
        if isinstance(values.get("limits"), Mapping):
            values["limits"] = Limits(**values["limits"])
        known = {f.name for f in fields(cls)}
        bad = set(values) - known
        if bad:
            raise ConfigError(f"unknown configuration key(s): {', '.join(sorted(bad))}")
        return cls(**values)

    def with_(self, **changes: Any) -> Config:
        return replace(self, **changes)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config file '{path.name}': {e.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        raise ConfigError(f"config file '{path.name}' is not valid YAML/JSON") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file '{path.name}' must hold a mapping")
    data = dict(data.get("mcpaql", data))
    if "tool_names" in data and isinstance(data["tool_names"], Mapping):  # seed 003 layout
        tn = data.pop("tool_names")
        if "pattern" in tn:
            data["tool_pattern"] = tn["pattern"]
        if "single_pattern" in tn:
            data["single_pattern"] = tn["single_pattern"]
        if "prefix" in tn:
            data["prefix"] = tn["prefix"]
    return data


def _truthy(v: str) -> bool:
    return v.strip().lower() in ("1", "true", "yes", "on")


# ---- observability: the standard OpenTelemetry variables and the log format (docs/observability.md) ----

OTEL_EXPORTERS = ("otlp", "console", "none")
LOG_FORMATS = ("text", "json")
_OTEL_REQUESTING = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """What the environment asks of a serving process's telemetry and logs.

    Why here: every environment read of the package lives in this module. Only the variables
    that decide *whether and how* telemetry starts are read here; the OTLP exporter reads its own
    (``OTEL_EXPORTER_OTLP_*`` endpoint, headers, timeout, compression) as the OpenTelemetry SDK
    documents, and the SDK reads ``OTEL_RESOURCE_ATTRIBUTES`` and the batch/interval settings.
    """

    requested: bool  # an OTLP endpoint or an exporter other than "none" is configured
    sdk_disabled: bool  # OTEL_SDK_DISABLED=true: the standard kill switch
    service_name: str  # OTEL_SERVICE_NAME, default "mcpaql"
    traces_exporter: tuple[str, ...]  # OTEL_TRACES_EXPORTER: otlp (default), console, none
    metrics_exporter: tuple[str, ...]  # OTEL_METRICS_EXPORTER: otlp (default), console, none
    protocols: tuple[str, ...]  # OTEL_EXPORTER_OTLP_{,TRACES_,METRICS_}PROTOCOL values that are set
    log_format: str  # MCPAQL_LOG_FORMAT: text (default) | json


def _exporters(raw: str | None, variable: str) -> tuple[str, ...]:
    names = tuple(x.strip().lower() for x in (raw or "otlp").split(",") if x.strip()) or ("otlp",)
    bad = [n for n in names if n not in OTEL_EXPORTERS]
    if bad:
        raise ConfigError(f"{variable} must be a list of {', '.join(OTEL_EXPORTERS)}")
    return tuple(n for n in names if n != "none") if len(names) > 1 else names


def telemetry_settings(env: Mapping[str, str] | None = None) -> TelemetrySettings:
    """The telemetry and log settings, read from ``env`` (default: ``os.environ``) now."""
    env = os.environ if env is None else env
    traces = _exporters(env.get("OTEL_TRACES_EXPORTER"), "OTEL_TRACES_EXPORTER")
    metrics = _exporters(env.get("OTEL_METRICS_EXPORTER"), "OTEL_METRICS_EXPORTER")
    log_format = (env.get("MCPAQL_LOG_FORMAT") or "text").strip().lower()
    if log_format not in LOG_FORMATS:
        raise ConfigError("MCPAQL_LOG_FORMAT must be text or json")
    requested = any((env.get(k) or "").strip() for k in _OTEL_REQUESTING) or any(
        (env.get(k) or "").strip().lower() not in ("", "none") for k in ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER")
    )
    protocols = tuple(
        v.strip().lower()
        for k in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
        if (v := env.get(k) or "").strip()
    )
    return TelemetrySettings(
        requested=requested,
        sdk_disabled=_truthy(env.get("OTEL_SDK_DISABLED") or ""),
        service_name=(env.get("OTEL_SERVICE_NAME") or "").strip() or "mcpaql",
        traces_exporter=traces,
        metrics_exporter=metrics,
        protocols=protocols,
        log_format=log_format,
    )


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if env.get("MCP_AQL_ENDPOINT_MODE"):
        out["mode"] = env["MCP_AQL_ENDPOINT_MODE"].strip().lower()
    if "MCP_AQL_TOOL_PREFIX" in env:
        out["prefix"] = env["MCP_AQL_TOOL_PREFIX"].strip()
    if env.get("MCPAQL_TOOL_PATTERN"):
        out["tool_pattern"] = env["MCPAQL_TOOL_PATTERN"].strip()
    if env.get("MCPAQL_SINGLE_PATTERN"):
        out["single_pattern"] = env["MCPAQL_SINGLE_PATTERN"].strip()
    if env.get("MCPAQL_BARE_NAMES"):
        out["bare_names"] = _truthy(env["MCPAQL_BARE_NAMES"])
    if env.get("MCPAQL_ALLOW"):
        out["allow"] = env["MCPAQL_ALLOW"]
    if env.get("MCPAQL_OUTPUT_SCHEMA"):
        out["output_schema"] = _truthy(env["MCPAQL_OUTPUT_SCHEMA"])
    if env.get("MCPAQL_ENUMERATE_OPERATIONS"):
        out["enumerate_operations"] = _truthy(env["MCPAQL_ENUMERATE_OPERATIONS"])
    for key in ("listing_threshold", "introspect_page_size"):
        raw = env.get("MCPAQL_" + key.upper())
        if raw:
            try:
                out[key] = int(raw.strip())
            except ValueError:
                raise ConfigError(f"MCPAQL_{key.upper()} must be an integer, got '{raw.strip()[:40]}'") from None
    return out


@dataclass(frozen=True, slots=True)
class Settings:
    """Process settings from the environment, one documented place (issue 12, point 6).

    Why a separate object from :class:`Config`: a ``Config`` describes one engine (names, mode,
    limits) and can differ between engines in one process; these describe the process and its
    machine (where state lives, which event loop, the desktop). :func:`settings` reads them at
    call time, not import time, so a test or an embedding application that changes the
    environment is obeyed.
    """

    home: Path  # MCPAQL_HOME: the safety store and the approval-url file live here (~/.mcpaql)
    agent_id: str | None  # MCPAQL_AGENT_ID: the operator-assigned identity of unauthenticated clients
    demo_db: str | None  # MCPAQL_DEMO_DB: the demo adapter's SQLite file
    uvloop: bool  # MCPAQL_UVLOOP=0 keeps asyncio's own loop
    upstream_lane: bool  # MCPAQL_UPSTREAM_LANE=0 sends every upstream call through the SDK transports
    stdio_drain_seconds: float  # MCPAQL_STDIO_DRAIN_SECONDS: how long answers may drain after stdin closes
    spec_schemas: str | None  # MCPAQL_SPEC_SCHEMAS: the spec's JSON schema directory
    desktop: bool  # DISPLAY or WAYLAND_DISPLAY: a desktop session to show verification dialogs on


def _seconds(raw: str | None, default: float) -> float:
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ConfigError("MCPAQL_STDIO_DRAIN_SECONDS must be a number of seconds") from None
    if not 0 <= value <= 3600:
        raise ConfigError("MCPAQL_STDIO_DRAIN_SECONDS must be between 0 and 3600")
    return value


def settings(env: Mapping[str, str] | None = None) -> Settings:
    """The process settings, read from ``env`` (default: ``os.environ``) now."""
    env = os.environ if env is None else env
    return Settings(
        home=Path(env.get("MCPAQL_HOME") or Path.home() / ".mcpaql"),
        agent_id=env.get("MCPAQL_AGENT_ID") or None,
        demo_db=env.get("MCPAQL_DEMO_DB") or None,
        uvloop=env.get("MCPAQL_UVLOOP", "1") != "0",
        upstream_lane=env.get("MCPAQL_UPSTREAM_LANE", "1") != "0",
        stdio_drain_seconds=_seconds(env.get("MCPAQL_STDIO_DRAIN_SECONDS"), 30.0),
        spec_schemas=env.get("MCPAQL_SPEC_SCHEMAS") or None,
        desktop=bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")),
    )


# HTTP authentication settings (docs/auth.md) and the variables they are read from; a flag wins.
AUTH_ENV: dict[str, str] = {
    "auth_issuer": "MCPAQL_AUTH_ISSUER",
    "auth_audience": "MCPAQL_AUTH_AUDIENCE",
    "auth_jwks_url": "MCPAQL_AUTH_JWKS_URL",
    "api_keys_file": "MCPAQL_API_KEYS_FILE",
    "api_keys": "MCPAQL_API_KEYS",  # inline keys, ';'-separated (a file is better: see docs/auth.md)
    "resource_url": "MCPAQL_RESOURCE_URL",
    "insecure_no_auth": "MCPAQL_INSECURE_NO_AUTH",
}


def auth_settings(env: Mapping[str, str] | None = None, **flags: Any) -> dict[str, Any]:
    """The authentication settings: each flag given (not ``None``/``False``), else its variable."""
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for name, var in AUTH_ENV.items():
        flag = flags.get(name)
        if flag not in (None, False, ""):
            out[name] = flag
        elif env.get(var, "").strip():
            out[name] = _truthy(env[var]) if name == "insecure_no_auth" else env[var].strip()
    return out


# ---- the deployment secret -------------------------------------------------------------------

MIN_SECRET_BYTES = 32


def check_secret(secret: bytes) -> bytes:
    """A secret long enough to sign with (>= 32 bytes: e.g. ``openssl rand -hex 32``)."""
    if not isinstance(secret, bytes) or len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(f"the secret must be at least {MIN_SECRET_BYTES} characters (e.g. from 'openssl rand -hex 32')")
    return secret


def secrets_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """``secret_keys`` from ``MCPAQL_SECRET`` (+ ``MCPAQL_SECRET_PREVIOUS``), if set."""
    current = env.get("MCPAQL_SECRET", "").strip()
    if not current:
        return {}
    previous = env.get("MCPAQL_SECRET_PREVIOUS", "").strip()
    keys = [current] + ([previous] if previous else [])
    return {"secret_keys": tuple(check_secret(k.encode()) for k in keys)}


def read_secret_file(path: str | os.PathLike[str]) -> tuple[bytes, ...]:
    """The secrets in a file: the first non-empty line signs, later lines are previous secrets
    still accepted (a rotation in progress). The message never quotes the file's content."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ConfigError(f"cannot read the secret file '{Path(path).name}'") from None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ConfigError(f"the secret file '{Path(path).name}' holds no secret")
    return tuple(check_secret(ln.encode()) for ln in lines)


def store_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``MCPAQL_STORE``: the store URL shared by a deployment's processes, if set."""
    value = (os.environ if env is None else env).get("MCPAQL_STORE", "").strip()
    return value or None
