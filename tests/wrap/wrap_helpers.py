"""Shared helpers for the wrap tests (plain module: the test dirs are not packages)."""

from __future__ import annotations

import json
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
