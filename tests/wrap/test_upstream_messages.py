"""Upstream errors a model can act on (issue 10 point 6): the wording → code heuristics of
``ops.code_for_message``, the safe preview of ``messages.summarise`` (secrets, traces, HTML, file
paths) — example-based and as hypothesis properties over arbitrary bodies — and wrapped MCP
tools' errors naming the exposed operation."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wrap_helpers import new_ctx

from aql_support import assert_no_leak
from mcpaql.adapters.upstream.messages import REDACTED, Redactor, strip_paths, summarise
from mcpaql.adapters.upstream.ops import code_for_message, upstream_error
from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.errors import MCPAQLError


@pytest.mark.parametrize(
    ("message", "code"),
    [
        # validation: a value outside its constraint (excel-mcp-server, office-word-mcp-server…)
        ("Error: filepath must point to an Excel file (.xlsx)", "VALIDATION_INVALID_VALUE"),
        ("Invalid cell reference: ZZ", "VALIDATION_INVALID_VALUE"),
        ("start_cell must be one of A1 notation", "VALIDATION_INVALID_VALUE"),
        ("Unsupported file type: .txt", "VALIDATION_INVALID_VALUE"),
        ("'limit' is out of range", "VALIDATION_INVALID_VALUE"),
        ("query too long", "VALIDATION_INVALID_VALUE"),
        ("'abc' is not a valid date", "VALIDATION_INVALID_VALUE"),
        ("value must be a string", "VALIDATION_INVALID_TYPE"),
        ("expected number, received string", "VALIDATION_INVALID_TYPE"),
        ("Additional properties are not allowed ('colour' was unexpected)", "VALIDATION_UNKNOWN_PARAM"),
        ("get_item() got an unexpected keyword argument 'colour'", "VALIDATION_UNKNOWN_PARAM"),
        ("Unrecognized key(s) in object: 'colour'", "VALIDATION_UNKNOWN_PARAM"),
        # permission (server-filesystem, server-postgres, mcp-server-duckdb, git)
        ("Error: path /etc/passwd not in allowed list", "PERMISSION_DENIED"),
        ("cannot execute CREATE TABLE in a read-only transaction", "PERMISSION_DENIED"),
        ("Cannot execute write statements: database is in read-only mode", "PERMISSION_DENIED"),
        ("EACCES: permission denied, open '/root/x'", "PERMISSION_DENIED"),
        ("Command not allowed: rm", "PERMISSION_DENIED"),
        ("insufficient privileges for table users", "PERMISSION_DENIED"),
        # not found
        ("No such file: report.docx", "NOT_FOUND_RESOURCE"),
        ("Document report.docx does not exist", "NOT_FOUND_RESOURCE"),
        ("Could not find sheet 'Q3'", "NOT_FOUND_RESOURCE"),
        ("Unknown table: users", "NOT_FOUND_RESOURCE"),
    ],
)
def test_upstream_wording_maps_to_codes(message: str, code: str) -> None:
    assert code_for_message(message) == code
    assert upstream_error(message, tool="op").code == code


def test_status_still_decides_for_http_apis() -> None:
    # REQ-ERR-007: a 5xx is INTERNAL_ERROR whatever its body says; a 4xx body only picks missing vs invalid.
    assert code_for_message("permission denied", 500) == "INTERNAL_ERROR"
    assert code_for_message("name is required", 422) == "VALIDATION_MISSING_PARAM"
    assert code_for_message('{"detail": "extra fields not permitted"}', 400) == "VALIDATION_UNKNOWN_PARAM"
    # a stack frame's file name does not decide the code
    assert upstream_error('Traceback (most recent call last):\n  File "/srv/not_found.py", line 1\n').code == "INTERNAL_ERROR"


SECRET = "sk-live-4f3a9b2c7d1e"


def test_summaries_of_real_looking_bodies() -> None:
    r = Redactor([f"Bearer {SECRET}", "Basic " + base64.b64encode(b"ada:hunter22").decode()])
    cases = {
        'Traceback (most recent call last):\n  File "/srv/app.py", line 3, in <module>\n    run()\nValueError: bad id': (
            "ValueError: bad id"
        ),
        "Error: boom\n    at handler (/home/app/index.js:10:5)\n    at node:internal/process:1:1": "Error: boom",
        '{"message":"nope","stack":"Error\\n at x (/app/a.js:1:1)","detail":"see /var/log/app.log"}': (
            '{"message":"nope","detail":"see …"}'
        ),
        f"token {SECRET} rejected; base64 {base64.b64encode(SECRET.encode()).decode()}": (
            f"token {REDACTED} rejected; base64 {REDACTED}"
        ),
        "bad password hunter22 for ada:hunter22": f"bad password {REDACTED} for {REDACTED}",
        "<html><head><title>503 Service Unavailable</title></head><body><pre>C:\\inetpub\\app.dll</pre></body></html>": (
            "503 Service Unavailable: …"
        ),
    }
    for body, want in cases.items():
        assert summarise(body, redact=r) == want, body
    long = summarise("x" * 5000)
    assert len(long) <= 300 and long.endswith("…")


def test_paths_the_caller_passed_are_kept() -> None:
    text = "ENOENT: no such file or directory, open '/tmp/notes/today.md' (from /srv/app/fs.js)"
    assert (
        strip_paths(text, keep=["/tmp/notes/today.md"])
        == "ENOENT: no such file or directory, open '/tmp/notes/today.md' (from …)"
    )


_SAFE_SECRET = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+/="), min_size=6, max_size=30
).map(lambda s: f"S3{s}")  # never a word of our own templates


def _fragments(secret: str) -> st.SearchStrategy[str]:
    enc = [
        secret,
        urllib.parse.quote(secret, safe=""),
        base64.b64encode(secret.encode()).decode(),
        base64.urlsafe_b64encode(secret.encode()).decode().rstrip("="),
        json.dumps({"token": secret, "trace": 'File "/srv/app.py", line 9'}),
        f"<b>{secret}</b>",
        secret.replace("a", "&#97;"),
        f"Authorization: Bearer {secret}",
    ]
    noise = [
        'Traceback (most recent call last):\n  File "/srv/app/main.py", line 12, in handle\n    do()\n',
        'File "/srv/app.py", line 3',
        "trace: File /srv/app.py line 3",
        "    at Object.handle (/srv/api/index.js:10:5)\n",
        " /srv/app/config.py ",
        " /home/deploy/.env ",
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title><script>x()</script></head><body><h1>502</h1>",
        "</body></html>",
        "<pre>/srv/www/index.php</pre>",
        ' {"error": "bad", "stack": "at f (/srv/x.js:1:1)"} ',
        "<WriteUnixTransport closed=True reading=False 0x7f3a2c1d9e80>",
        "\n",
        " ",
    ]
    return st.one_of(st.sampled_from(enc), st.sampled_from(noise), st.text(max_size=20))


_FRAME = re.compile(r'File \\?"[^"]*\\?", line \d+')


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_property_no_secret_path_or_trace_survives(data: st.DataObject) -> None:
    secret = data.draw(_SAFE_SECRET)
    body = "".join(data.draw(st.lists(_fragments(secret), max_size=12)))
    r = Redactor([f"Bearer {secret}"])
    for message in (
        summarise(body, redact=r),
        upstream_error(body, tool="get_item", redact=r).message,
        upstream_error(body, tool="get_item", status=502, redact=r, lead="HTTP 502 Bad Gateway").message,
    ):
        assert secret not in message, (secret, body, message)
        assert "/srv/" not in message and "/home/deploy" not in message, (body, message)
        assert "Traceback (most recent call last)" not in message and not _FRAME.search(message), (body, message)
        assert "0x7f3a2c1d9e80" not in message, (body, message)
        assert len(message) < 400


# ---- wrapped MCP tools name the exposed operation ------------------------------------------------

TOOLS = [
    {
        "name": "getItem",
        "description": "Get an item",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "deleteItem",
        "description": "Delete an item",
        "annotations": {"destructiveHint": True},
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
]


async def _engine() -> Engine:
    async def call(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        if tool == "deleteItem":  # as the lane raises for a JSON-RPC error: the upstream's own name
            raise upstream_error("permission denied for /srv/data/items.db", tool=tool)
        text = (
            f"Error: no such file '{args['path']}'\nTraceback (most recent call last):\n"
            '  File "/usr/lib/python3/site-packages/office/io.py", line 88, in load\n    open(p)\n'
        )
        return {"content": [{"type": "text", "text": text}], "isError": True}

    return Engine(build_registry("stub", {"stub": TOOLS}, lambda up: call), Config(mode="semantic"))


@pytest.mark.anyio
async def test_wrapped_errors_name_the_exposed_operation_and_stay_safe() -> None:
    eng = await _engine()
    env = await eng.execute({"operation": "get_item", "params": {"path": "/tmp/q3.xlsx"}}, new_ctx())
    e = env["error"]
    assert e["code"] == "NOT_FOUND_RESOURCE" and e["message"].startswith("get_item: "), e
    assert "getItem" not in e["message"] and e["details"]["upstream_tool"] == "getItem"
    assert "'/tmp/q3.xlsx'" in e["message"]  # the caller's own path is kept: it is what was not found
    assert "/usr/lib" not in e["message"] and "Traceback" not in e["message"]
    assert_no_leak(e["message"])
    env = await eng.execute({"operation": "delete_item", "params": {"path": "x"}}, new_ctx())
    e = env["error"]
    assert e["code"] == "PERMISSION_DENIED" and e["message"] == "delete_item: permission denied for …", e


def test_renamed_keeps_code_and_details() -> None:
    from mcpaql.adapters.upstream.ops import renamed

    e = renamed(upstream_error("exploded", tool="getItem"), "getItem", "get_item")
    assert isinstance(e, MCPAQLError) and e.code == "INTERNAL_ERROR"
    assert e.message == "Internal error: 'upstream tool get_item failed: exploded'"
