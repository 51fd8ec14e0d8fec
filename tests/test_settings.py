"""Process settings come from the environment in ``mcpaql.config`` only (issue 12, point 6)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcpaql.config import ConfigError, settings

SRC = Path(__file__).resolve().parents[1] / "src" / "mcpaql"

# Where reading the environment is not a setting: a child process inherits ours, ``PATH``
# resolves an executable, and ``${VAR}`` references in adapter files and upstream
# definitions are user data resolved where they are used (documented in docs/architecture.md).
PASS_THROUGH = {
    "cli.py",
    "reaper.py",
    "conformance/__init__.py",
    "adapters/schema/load.py",
    "adapters/upstream/runtime.py",
    "adapters/openapi.py",
}


def _reads_environment(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") for node in ast.walk(tree))


def test_only_config_reads_settings_from_the_environment() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "config.py" or rel in PASS_THROUGH:
            continue
        if _reads_environment(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(rel)
    assert offenders == [], f"read the environment through mcpaql.config.settings(): {offenders}"


def test_settings_defaults_and_overrides(tmp_path: Path) -> None:
    s = settings({})
    assert s.home == Path.home() / ".mcpaql"
    assert (s.agent_id, s.demo_db, s.spec_schemas) == (None, None, None)
    assert s.uvloop and s.upstream_lane and not s.desktop
    assert s.stdio_drain_seconds == 30.0
    s = settings(
        {
            "MCPAQL_HOME": str(tmp_path),
            "MCPAQL_AGENT_ID": "ops-bot",
            "MCPAQL_UVLOOP": "0",
            "MCPAQL_UPSTREAM_LANE": "0",
            "MCPAQL_STDIO_DRAIN_SECONDS": "2.5",
            "WAYLAND_DISPLAY": "wayland-0",
        }
    )
    assert (s.home, s.agent_id, s.uvloop, s.upstream_lane, s.stdio_drain_seconds, s.desktop) == (
        tmp_path,
        "ops-bot",
        False,
        False,
        2.5,
        True,
    )


@pytest.mark.parametrize("raw", ["soon", "-1", "1e9", "nan"])
def test_bad_drain_seconds_is_one_clear_line(raw: str) -> None:
    with pytest.raises(ConfigError) as e:
        settings({"MCPAQL_STDIO_DRAIN_SECONDS": raw})
    assert "MCPAQL_STDIO_DRAIN_SECONDS" in str(e.value) and "\n" not in str(e.value)


def test_settings_are_read_at_call_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mcpaql.store.sqlite import default_path

    monkeypatch.setenv("MCPAQL_HOME", str(tmp_path))
    assert default_path() == tmp_path / "safety.db"
