"""One way to serve (issue 12 point 3): every serving command has every serving flag, the flags
become one ServeOptions in one place, and ``guard`` is a typer command like the others."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from mcpaql import cli
from mcpaql.serving import TRANSPORTS, ServeOptions

SERVING = ("serve", "wrap", "openapi")


def options_of(command: str) -> set[str]:
    group = typer.main.get_command(cli.app)
    cmd = group.commands[command]  # type: ignore[attr-defined]
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("command", SERVING)
def test_every_serving_command_has_every_serving_flag(command: str) -> None:
    have = options_of(command)
    for name, _annotation, _default in cli.SERVING_FLAGS:
        assert "--" + name.replace("_", "-") in have, (command, name)
    for flag in ("--allow", "--enumerate-operations", "--agent-id", "--approval-url-file", "--no-approval-page"):
        assert flag in have, (command, flag)


def test_guard_keeps_its_flags() -> None:
    have = options_of("guard")
    assert {
        "--store",
        "--mode",
        "--policy",
        "--max-steps",
        "--risk-tolerance",
        "--webhook",
        "--os-dialog",
        "--transport",
        "--host",
        "--port",
        "--no-approval-page",
        "--approval-port",
        "--approval-host",
        "--url-file",
    } <= have


def test_the_flags_become_one_options_object() -> None:
    defaults = {name: default for name, _a, default in cli.SERVING_FLAGS}
    opts = cli._serve_options(
        logging.WARNING,
        **{**defaults, "transport": "http", "port": 9, "allow": "READ", "enumerate_operations": True, "approval_port": 7},
    )
    assert isinstance(opts, ServeOptions)
    assert (opts.transport, opts.port, opts.channel.port, opts.safety) == ("http", 9, 7, None)
    assert opts.config.enumerate_operations is True and "READ" in str(opts.config.allow)


@given(st.text(max_size=12))
def test_a_transport_is_stdio_or_http(transport: str) -> None:
    if transport in TRANSPORTS:
        assert ServeOptions(transport=transport).transport == transport
    else:
        with pytest.raises(ValueError, match="transport must be stdio or http"):
            ServeOptions(transport=transport)


@pytest.mark.parametrize("command", ["wrap", "openapi", "guard"])
def test_a_bad_transport_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    args = {
        "wrap": ["--transport", "tcp", "--", "true"],
        "openapi": [str(tmp_path / "x.yaml"), "--transport", "tcp"],
        "guard": ["--transport", "tcp", "--store", f"sqlite:///{tmp_path / 'g.db'}"],
    }[command]
    r = subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", command, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "stdio" in r.stderr and "http" in r.stderr
