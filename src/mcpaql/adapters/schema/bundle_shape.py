"""The documented shape of a discovery bundle (docs/adapter/discovery-bundle.md; CHECKLIST Part E),
checked on the way in so that ``mcpaql schema build`` refuses a bad bundle with one line per
problem and its field path instead of failing somewhere inside the builder.

The models are written from the documented field table, not from the spec's JSON schema text.
Closed objects forbid unknown keys where the table says "closed"; ``raw_capture`` and
``capture_config_redacted`` stay open. One deliberate widening (docs/conformance.md, "Discovery
bundles"): ``source.transport`` also accepts ``stdio`` and ``sse`` — the bundle contract names
only ``streamable_http``, but mcpaql captures stdio servers and the legacy SSE fallback and records
what it used rather than pretending — and ``unknown`` for a capture whose transport was not
recorded; each of those is a warning.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .check import sub

Endpoint = Literal["CREATE", "READ", "UPDATE", "DELETE", "EXECUTE"]
Danger = Literal["safe", "reversible", "destructive", "dangerous", "forbidden"]
Inference = Literal["direct_source_metadata", "deterministic_normalization", "heuristic_classification", "manual_override"]
STANDARD_TRANSPORT = "streamable_http"
EXTRA_TRANSPORTS = ("stdio", "sse", "unknown")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class ServerInfo(_Closed):
    name: str | None = None
    version: str | None = None
    title: str | None = None


class SourceAuth(_Closed):
    type: Literal["bearer", "none"]
    header: str | None = None
    prefix: str | None = None
    token_env: str | None = None
    token_command: str | None = None


class Source(_Closed):
    name: str
    server_url: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")
    transport: Literal["streamable_http", "stdio", "sse", "unknown"]
    captured_at: str
    server: ServerInfo | None = None
    auth: SourceAuth
    capture_config_redacted: dict[str, Any]

    @field_validator("captured_at")
    @classmethod
    def _date_time(cls, v: str) -> str:
        try:
            datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("must be an ISO 8601 date-time, e.g. '2026-04-01T13:00:21Z'") from None
        return v


class RawTool(_Open):
    name: str


class RawCapture(_Open):
    tools: list[RawTool]


class Param(_Closed):
    name: str
    original_name: str
    type: str
    required: bool
    source_path: str
    description: str | None = None
    default: Any = None
    enum: list[str] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    pattern: str | None = None
    format: str | None = None


class Returns(_Closed):
    type: Literal["object"]
    name: str
    description: str


class InferenceSources(_Closed):
    operation_name: Inference | None = None
    description: Inference | None = None
    endpoint: Inference | None = None
    danger_level: Inference | None = None
    maps_to: Inference | None = None


class Provenance(_Closed):
    name: str
    input_schema_present: bool
    description: str | None = None
    annotations: list[str] | None = None
    inference_sources: InferenceSources | None = None


class Operation(_Closed):
    source_tool_name: str
    operation_name: str
    title: str | None = None
    description: str
    endpoint: Endpoint
    endpoint_confidence: Literal["high", "medium", "low"]
    danger_level: Danger
    needs_review: bool
    review_reasons: list[str]
    params: list[Param]
    maps_to: str
    returns: Returns
    provenance: Provenance


class Warning_(_Closed):
    code: str
    severity: Literal["info", "warning", "error"]
    message: str
    tool: str | None = None
    field: str | None = None
    heuristic: str | None = None


class Normalized(_Closed):
    operations: list[Operation]
    warnings: list[Warning_]


class Bundle(_Closed):
    schema_version: Literal["1.0.0-draft"]
    source: Source
    raw_capture: RawCapture
    normalized_bundle: Normalized


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[", "constrained-")):
            continue  # pydantic's internal step names are not field paths
        else:
            out = sub(out, part)
    return out or "(bundle)"


def bundle_problems(data: Any) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` for a parsed bundle; each entry is ``"<field path>: <problem>"``."""
    if not isinstance(data, dict):
        return ["(bundle): must be a JSON object"], []
    try:
        bundle = Bundle.model_validate(data)
    except ValidationError as e:
        errors = []
        for err in e.errors(include_url=False, include_input=False):
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            elif err["type"] == "missing":
                msg = "is required"
            errors.append(f"{_path(tuple(err['loc']))}: {msg}")
        return list(dict.fromkeys(errors)), []
    warnings = []
    if bundle.source.transport != STANDARD_TRANSPORT:
        warnings.append(
            f"source.transport: '{bundle.source.transport}' is an mcpaql extension (the bundle contract "
            f"names only '{STANDARD_TRANSPORT}')"
        )
    raw = {t.name for t in bundle.raw_capture.tools}
    for i, op in enumerate(bundle.normalized_bundle.operations):
        if op.source_tool_name not in raw:
            warnings.append(
                f"normalized_bundle.operations[{i}].source_tool_name: '{op.source_tool_name}' is not in raw_capture.tools"
            )
    return [], warnings
