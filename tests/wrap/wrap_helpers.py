"""Shared helpers for the wrap tests (plain module: the test dirs are not packages)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces"


def fixture_tools(name: str) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / f"{name}.tools-list.json").read_text())
    return data["tools"] if isinstance(data, dict) else data


def new_ctx(**kw: Any) -> Context:
    return Context(session=Session(), **kw)


def assert_retryable_unavailable(env: dict[str, Any]) -> None:
    """A clean, retryable failure: INTERNAL_ERROR, no object repr, no class, transport or library name."""
    assert env["success"] is False, env
    err = env["error"]
    assert err["code"] == "INTERNAL_ERROR" and err["details"]["retryable"] is True, err
    assert not re.search(r"<\w|0x[0-9a-f]{6,}|Transport|Error:|Traceback|httpx", err["message"]), err["message"]
