"""The span tree of wrapped calls, end to end (client → server span → mcpaql operation →
upstream child span, with the traceparent the upstream received), the attributes present and
absent, the metrics, and no parameter value anywhere in what is exported.

The calls run in ``otel_scenario.py`` in a process of its own (see its docstring); each test
here reads its output. ``-s`` shows the span tree of the wrapped stdio call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ALLOWED_OPERATION_ATTRS = {
    "mcpaql.adapter",
    "mcpaql.operation",
    "mcpaql.category",
    "mcpaql.endpoint",
    "mcpaql.outcome",
    "mcpaql.error.code",
    "mcpaql.batch.size",
    "error.type",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("otel") / "out.json"
    proc = subprocess.run([sys.executable, str(HERE / "otel_scenario.py"), str(out)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def by_id(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["span_id"]: s for s in run["spans"]}


def chain(run: dict[str, Any], leaf: dict[str, Any]) -> list[dict[str, Any]]:
    """``leaf`` and its ancestors, root first."""
    spans, out = by_id(run), [leaf]
    while out[0]["parent_id"] in spans:
        out.insert(0, spans[out[0]["parent_id"]])
    return out


def upstream_span(run: dict[str, Any], name: str, transport: str) -> dict[str, Any]:
    found = [s for s in run["spans"] if s["name"] == name and s["attributes"].get("network.transport") == transport]
    assert found, [s["name"] for s in run["spans"]]
    return found[0]


def tree(run: dict[str, Any], leaf: dict[str, Any]) -> str:
    lines = []
    for depth, s in enumerate(chain(run, leaf)):
        attrs = {k: v for k, v in s["attributes"].items() if k.startswith(("mcp", "gen_ai", "network", "url", "http", "error"))}
        lines.append(f"{'   ' * depth}{'└─ ' if depth else ''}{s['name']}  [{s['kind']}] {s['span_id']} {attrs}")
    return "\n".join(lines)


def traceparent_of(span: dict[str, Any]) -> str:
    return f"00-{span['trace_id']}-{span['span_id']}-"


@pytest.mark.parametrize(("transport", "key"), [("pipe", "stdio"), ("tcp", "http")])
def test_wrapped_call_span_tree_reaches_the_upstream(run: dict[str, Any], transport: str, key: str) -> None:
    leaf = upstream_span(run, "tools/call get_current_time", transport)
    spans = chain(run, leaf)
    print(f"\nspan tree of a wrapped call ({key} upstream):\n" + tree(run, leaf))
    assert [(s["name"], s["kind"]) for s in spans] == [
        ("MCP send tools/call time_mcpaql_read", "CLIENT"),  # the official client (SDK span)
        ("tools/call time_mcpaql_read", "SERVER"),  # mcpaql's MCP server (SDK span, our attributes)
        ("mcpaql get_current_time", "INTERNAL"),  # the MCP-AQL operation
        ("tools/call get_current_time", "CLIENT"),  # the upstream call, over the lane
    ]
    assert len({s["trace_id"] for s in spans}) == 1
    # the upstream received the upstream span's context, in _meta (and as a header over HTTP)
    record = next(r for r in run[f"{key}_records"] if r["tool"] == "get_current_time")
    assert record["traceparent"].startswith(traceparent_of(leaf))
    if key == "http":
        assert record["http_traceparent"] == record["traceparent"]
    else:
        assert "http_traceparent" not in record
    server, operation = spans[1], spans[2]
    assert server["attributes"]["mcp.method.name"] == "tools/call"
    assert server["attributes"]["gen_ai.tool.name"] == "time_mcpaql_read"
    assert server["attributes"]["mcp.session.id"].startswith("sess_")  # ours, never the wire's Mcp-Session-Id
    assert operation["attributes"] == {
        "mcpaql.adapter": "time",
        "mcpaql.operation": "get_current_time",
        "mcpaql.category": "READ",
        "mcpaql.endpoint": "read",
        "mcpaql.outcome": "success",
    }
    assert leaf["attributes"]["gen_ai.tool.name"] == "get_current_time"
    assert leaf["attributes"]["mcp.method.name"] == "tools/call"
    assert leaf["attributes"]["mcpaql.upstream"] == "time"
    assert "mcp.session.id" not in leaf["attributes"]  # the upstream's session id is a credential towards it


def test_openapi_request_is_a_child_span_and_carries_traceparent(run: dict[str, Any]) -> None:
    leaf = next(s for s in run["spans"] if s["name"] == "GET /pets/{petId}")
    spans = chain(run, leaf)
    assert [s["name"] for s in spans] == [
        "MCP send tools/call pets_mcpaql_read",
        "tools/call pets_mcpaql_read",
        "mcpaql get_pet",
        "GET /pets/{petId}",
    ]
    assert run["openapi_headers"] == [{"traceparent": run["openapi_headers"][0]["traceparent"]}]
    assert run["openapi_headers"][0]["traceparent"].startswith(traceparent_of(leaf))
    attrs = leaf["attributes"]
    assert attrs["url.template"] == "/pets/{petId}" and attrs["http.request.method"] == "GET"
    assert attrs["http.response.status_code"] == 200 and attrs["server.address"] == "127.0.0.1"
    assert not {"url.full", "url.path", "url.query"} & set(attrs)  # they would carry the parameter values


def test_an_http_traceparent_header_is_the_parent_when_meta_has_none(run: dict[str, Any]) -> None:
    assert run["header_call"]["status"] == 200, run["header_call"]
    server = next(s for s in run["spans"] if s["name"] == "tools/call obs_mcpaql_read" and s["trace_id"] == run["header_trace"])
    assert server["kind"] == "SERVER"
    assert (server["trace_id"], server["parent_id"]) == (run["header_trace"], run["header_span"])
    assert server["attributes"]["network.transport"] == "tcp"
    operation = next(s for s in run["spans"] if s["name"] == "mcpaql echo" and s["trace_id"] == run["header_trace"])
    assert operation["parent_id"] == server["span_id"]


def test_meta_is_the_parent_and_the_http_context_a_link_when_both_are_sent(run: dict[str, Any]) -> None:
    assert run["both_call"]["status"] == 200, run["both_call"]
    server = next(s for s in run["spans"] if s["kind"] == "SERVER" and s["trace_id"] == run["meta_trace"])
    assert server["parent_id"] == run["meta_span"]
    assert server["links"] == [run["header_span"]]


def test_errors_carry_the_code_never_the_message(run: dict[str, Any]) -> None:
    assert run["stdio_invalid"]["error"]["code"] == "VALIDATION_UNKNOWN_PARAM"
    invalid = [s for s in run["spans"] if s["name"] == "mcpaql get_current_time" and s["status"] == "ERROR"]
    assert len(invalid) == 1
    assert invalid[0]["attributes"]["mcpaql.error.code"] == "VALIDATION_UNKNOWN_PARAM"
    assert invalid[0]["attributes"]["mcpaql.outcome"] == "error"
    assert invalid[0]["status_description"] == "VALIDATION_UNKNOWN_PARAM"
    assert not any(s["name"] == "tools/call get_current_time" and s["parent_id"] == invalid[0]["span_id"] for s in run["spans"])
    tool_error = next(s for s in run["spans"] if s["name"] == "tools/call replay_error")
    assert tool_error["attributes"]["error.type"] == "tool_error" and tool_error["status"] == "ERROR"
    failed_op = by_id(run)[tool_error["parent_id"]]
    assert failed_op["attributes"]["mcpaql.error.code"] == "INTERNAL_ERROR"
    for s in run["spans"]:
        if s["name"].startswith("mcpaql"):
            assert set(s["attributes"]) <= ALLOWED_OPERATION_ATTRS, s
        assert not s["events"], s  # no exception events (their messages may quote a parameter)


def test_metrics_count_calls_errors_and_latency(run: dict[str, Any]) -> None:
    def points(name: str, **attrs: Any) -> list[dict[str, Any]]:
        return [p for p in run["metrics"] if p["name"] == name and attrs.items() <= p["attributes"].items()]

    ok = points("mcpaql.calls", **{"mcpaql.operation": "get_current_time", "mcpaql.outcome": "success"})
    assert sum(p["value"] for p in ok) == 2  # stdio and HTTP upstreams
    assert sum(p["value"] for p in points("mcpaql.errors", **{"mcpaql.error.code": "VALIDATION_UNKNOWN_PARAM"})) == 1
    assert sum(p["value"] for p in points("mcpaql.errors", **{"mcpaql.error.code": "INTERNAL_ERROR"})) == 1
    assert sum(p["count"] for p in points("mcpaql.call.duration")) == 7  # 3 stdio, 1 HTTP upstream, 1 OpenAPI, 2 raw HTTP posts
    assert points("mcp.server.operation.duration", **{"mcp.method.name": "tools/call", "error.type": "tool_error"})
    assert points("mcp.client.operation.duration", **{"network.transport": "pipe", "error.type": "tool_error"})
    assert points("http.client.request.duration", **{"url.template": "/pets/{petId}", "http.response.status_code": 200})


def test_no_parameter_value_in_any_span_metric_or_log(run: dict[str, Any]) -> None:
    """Adversarial: every call put a secret-looking value in its parameters (path and query of the
    OpenAPI request, the upstream's arguments, an unknown parameter, an upstream error message)."""
    secret = run["secret"]
    assert secret in json.dumps(run["stdio_ok"])  # it did go through the calls
    for what in ("spans", "metrics", "logs"):
        blob = json.dumps(run[what])
        assert secret not in blob and "SECRETVALUE" not in blob, what
    for line in run["logs"]:  # --log-format json: one object per line
        assert {"timestamp", "level", "logger", "message"} <= set(json.loads(line))
