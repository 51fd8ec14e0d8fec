"""Configuration, in one place. Precedence: explicit arguments (CLI flags) > environment >
config file (YAML or JSON, path in ``MCPAQL_CONFIG``) > defaults.

Environment variables: ``MCP_AQL_ENDPOINT_MODE`` (semantic|single|all, MODES §3.1),
``MCP_AQL_TOOL_PREFIX`` (MCPI §6.2), ``MCPAQL_TOOL_PATTERN``, ``MCPAQL_SINGLE_PATTERN``,
``MCPAQL_BARE_NAMES`` (1 → spec names ``mcp_aql_{endpoint}`` / ``mcp_aql``),
``MCPAQL_ENUMERATE_OPERATIONS`` (1 → per-endpoint ``enum`` of operations in input schemas).
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
    # Sync (plain ``def``) handlers run in worker threads, at most this many at once per engine
    # (mcpaql.protocol.workers); further calls wait for a free thread.
    handler_threads: int = 16

    def __post_init__(self) -> None:
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
    if env.get("MCPAQL_ENUMERATE_OPERATIONS"):
        out["enumerate_operations"] = _truthy(env["MCPAQL_ENUMERATE_OPERATIONS"])
    return out
