"""Turning telemetry on and off: the flag, the OTEL_* variables, one-line refusals, and nothing of
OpenTelemetry loaded by mcpaql when it is off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpaql.config import ConfigError, telemetry_settings
from mcpaql.mcp import connect
from mcpaql.observability import MISSING, decide

CLEAN = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MCPAQL_LOG_FORMAT"))}


def mcpaql(*args: str, env: dict[str, str] | None = None, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nimport sys\nfrom mcpaql.cli import main\nsys.argv = ['mcpaql', *{list(args)!r}]\nmain()"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**CLEAN, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_off_by_default_and_on_by_flag_or_environment() -> None:
    assert decide(None, telemetry_settings({})) is False
    assert decide(True, telemetry_settings({})) is True
    assert decide(None, telemetry_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})) is True
    assert decide(None, telemetry_settings({"OTEL_TRACES_EXPORTER": "console"})) is True
    assert decide(None, telemetry_settings({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"})) is False
    assert decide(False, telemetry_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})) is False
    on_but_disabled = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}
    assert decide(None, telemetry_settings(on_but_disabled)) is False


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"OTEL_SDK_DISABLED": "true"}, "OTEL_SDK_DISABLED"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "protocol 'grpc' is not supported"),
        ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "protocol 'http/json' is not supported"),
    ],
)
def test_what_cannot_be_honoured_is_refused(env: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        decide(True, telemetry_settings(env))


def test_cli_refuses_otel_without_the_extra_in_one_line() -> None:
    """A real process where the SDK cannot be imported (as without the ``otel`` extra)."""
    hide = "import sys\nsys.modules['opentelemetry.sdk'] = None"
    done = mcpaql("serve", "--otel", prelude=hide)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {MISSING}"
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (("serve", "--otel"), {"OTEL_SDK_DISABLED": "true"}, "--otel contradicts OTEL_SDK_DISABLED=true"),
        (("serve", "--log-format", "xml"), {}, "--log-format must be text or json"),
        (("serve",), {"MCPAQL_LOG_FORMAT": "yaml"}, "MCPAQL_LOG_FORMAT must be text or json"),
        (("serve",), {"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER must be a list of otlp, console, none"),
        (("guard", "--otel"), {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "protocol 'grpc' is not supported"),
    ],
)
def test_cli_refusals_are_one_line(args: tuple[str, ...], env: dict[str, str], words: str) -> None:
    done = mcpaql(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_every_serving_command_has_the_flags() -> None:
    for command in ("serve", "wrap", "openapi", "guard"):
        done = mcpaql(command, "--help", env={"COLUMNS": "200"})
        assert "--otel" in done.stdout and "--log-format" in done.stdout, command


def test_off_loads_nothing_of_opentelemetry_beyond_the_sdks_own_api() -> None:
    """Serve the demo in-process with the official client, telemetry off: mcpaql's
    instrumentation, the OpenTelemetry SDK, its exporters and the metrics API stay unloaded.
    (The ``mcp`` SDK imports ``opentelemetry-api``'s trace and propagation modules itself.)"""
    code = """
import sys, anyio
from mcp.client.client import Client
from mcpaql import Adapter, Config
from mcpaql.mcp import build_server

app = Adapter("off")

@app.read
def ping() -> dict:
    "Answer."
    return {"ok": True}

async def main():
    async with Client(build_server(app.engine(Config()))) as c:
        r = await c.call_tool("off_mcpaql_read", {"operation": "ping"})
        assert not r.is_error, r
anyio.run(main)
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.metrics",
    "mcpaql.observability.telemetry", "mcpaql.observability.setup", "mcpaql.mcp.observe")))
print(loaded)
"""
    done = subprocess.run([sys.executable, "-c", code], env=CLEAN, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "OTEL_SDK_DISABLED",
                "OTEL_SERVICE_NAME",
                "OTEL_TRACES_EXPORTER",
                "OTEL_METRICS_EXPORTER",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                "MCPAQL_LOG_FORMAT",
            ]
        ),
        st.one_of(st.text(max_size=30), st.sampled_from(["otlp", "console", "none", "otlp,console", "true", "json", "grpc"])),
    )
)
def test_any_environment_gives_settings_or_one_clear_error(env: dict[str, str]) -> None:
    try:
        s = telemetry_settings(env)
    except ConfigError as e:
        assert "\n" not in str(e) and str(e).split()[0] in ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "MCPAQL_LOG_FORMAT")
        return
    assert s.log_format in ("text", "json") and s.service_name
    assert set(s.traces_exporter) <= {"otlp", "console", "none"} and set(s.metrics_exporter) <= {"otlp", "console", "none"}
    try:
        on = decide(None, s)
    except ConfigError as e:
        assert "protocol" in str(e) and "\n" not in str(e)
        return
    assert on == (s.requested and not s.sdk_disabled)


def test_stdio_with_console_exporters_keeps_the_wire_clean(tmp_path: Path) -> None:
    """``mcpaql serve --otel`` over stdio with the console exporters: the client's calls work (stdout
    is the wire and carries nothing else), and the spans and metrics, flushed when the client
    hangs up, are on stderr."""
    err_path = tmp_path / "stderr.txt"
    env = {
        **CLEAN,
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "console",
        "MCPAQL_DEMO_DB": str(tmp_path / "demo.db"),
        "MCPAQL_HOME": str(tmp_path),
    }

    async def client() -> None:
        with err_path.open("w") as err:
            async with connect([sys.executable, "-m", "mcpaql.cli", "serve", "--otel"], env=env, errlog=err) as c:
                tool = next(t["name"] for t in await c.list_tools_raw() if t["name"].endswith("_read"))
                body, is_error, _raw = await c.call_tool(tool, {"operation": "list_projects", "params": {}})
                assert not is_error and body["success"], body

    anyio.run(client)
    err = err_path.read_text()
    assert '"name": "mcpaql list_projects"' in err and '"name": "tools/call tasks_mcpaql_read"' in err
    assert '"name": "mcpaql.calls"' in err
