"""The ``mcp`` SDK behind one door (issue 12 point 2): only ``mcpaql.mcp`` imports it, and every
private SDK part we read (``mcpaql/mcp/sdk_private.py``) still exists in the installed SDK."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import mcpaql
from mcpaql.mcp import sdk_private

SRC = Path(mcpaql.__file__).parent
SDK_ROOTS = {"mcp", "mcp_types"}


def sdk_imports(path: Path) -> list[str]:
    """Every ``import mcp…`` / ``from mcp… import`` in a module (relative imports are ours)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in SDK_ROOTS]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in SDK_ROOTS:
            found.append(node.module or "")
    return found


def test_only_mcpaql_mcp_imports_the_sdk() -> None:
    outside = {
        str(p.relative_to(SRC)): names
        for p in sorted(SRC.rglob("*.py"))
        if p.relative_to(SRC).parts[0] != "mcp" and (names := sdk_imports(p))
    }
    assert outside == {}, f"the mcp SDK is imported outside mcpaql/mcp: {outside}"


def test_the_walker_sees_imports_in_any_form(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text(
        "import os\nif True:\n    from mcp.client import x\ndef f():\n    import mcp_types as t\n"
        "from . import mcp\nfrom .mcp import server\n"
    )
    assert sdk_imports(mod) == ["mcp.client", "mcp_types"]


def test_private_sdk_reads_live_in_one_module() -> None:
    for p in sorted(SRC.rglob("*.py")):
        if p.name == "sdk_private.py":
            continue
        text = p.read_text(encoding="utf-8")
        assert "_httpx_utils" not in text, p
        assert '"_connection"' not in text, p


def test_the_sdk_still_has_the_private_http_defaults() -> None:
    # An SDK upgrade that drops these fails the import of sdk_private itself; check their shape too.
    assert isinstance(sdk_private.MCP_DEFAULT_TIMEOUT, int | float) and sdk_private.MCP_DEFAULT_TIMEOUT > 0
    assert isinstance(sdk_private.MCP_DEFAULT_SSE_READ_TIMEOUT, int | float) and sdk_private.MCP_DEFAULT_SSE_READ_TIMEOUT > 0
    assert callable(sdk_private.create_mcp_http_client)
    assert "headers" in inspect.signature(sdk_private.create_mcp_http_client).parameters


def test_the_sdk_session_still_keeps_its_connection() -> None:
    """``ctx.session._connection`` (list_changed notifications and one mcpaql session per
    connection depend on it): the SDK's per-request session proxy must still set it."""
    from mcp.server.session import ServerSession

    init = inspect.getsource(ServerSession.__init__)
    assert "self._connection = connection" in init, "mcp.server.session.ServerSession no longer keeps _connection"
    from mcp.server.connection import Connection  # what it keeps: sessions.py needs state, exit_stack, session_id

    fields = inspect.get_annotations(Connection)
    assert {"state", "exit_stack", "session_id"} <= set(fields), fields
    assert hasattr(Connection, "send_tool_list_changed"), "server.py sends list_changed on it"

    class Ctx:
        class session:  # stands for the SDK's per-request proxy, in shape only
            _connection = object()

    assert sdk_private.request_connection(Ctx()) is Ctx.session._connection
    assert sdk_private.request_connection(object()) is None


def test_the_sdk_session_manager_still_lists_and_ends_sessions() -> None:
    """Bounded sessions (``sessions.SessionGate``) read the open sessions and end the oldest idle
    one through ``sdk_private``: the manager must still keep and discard them the same way."""
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    server: Server = Server("probe")
    server.streamable_http_app()
    manager = sdk_private.http_session_manager(server)
    assert isinstance(manager, StreamableHTTPSessionManager)
    assert sdk_private.open_http_sessions(manager) == {}
    discard = inspect.signature(StreamableHTTPSessionManager._discard_session)
    assert list(discard.parameters) == ["self", "session_id", "transport"]
    assert "max_sessions" in inspect.signature(StreamableHTTPSessionManager.__init__).parameters
