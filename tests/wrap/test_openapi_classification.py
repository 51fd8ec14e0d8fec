"""OpenAPI operations go through the wrapper's classifier with the HTTP method as annotations
(issue 10 point 8): Notion's ``post-search`` and GitHub's ``markdown/render`` are POSTs that
read, so they are neither CREATE nor served under ``--read-only``; GET is a guaranteed read."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpaql.adapters.openapi import load_document
from mcpaql.adapters.upstream.wrap import select_tools


def _op(method: str, path: str, op_id: str, summary: str) -> dict[str, Any]:
    return {path: {method: {"operationId": op_id, "summary": summary, "responses": {"200": {"description": "ok"}}}}}


DOC = {
    "openapi": "3.1.0",
    "info": {"title": "Mixed", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9"}],
    "paths": {
        **_op("post", "/v1/search", "post-search", "Search by title"),
        **_op("post", "/markdown", "markdown/render", "Render a Markdown document"),
        **_op("get", "/v1/users/{id}", "get-user", "Retrieve a user"),
        **_op("post", "/v1/pages", "post-page", "Create a page"),
        **_op("patch", "/v1/pages/{id}", "patch-page", "Update page properties"),
        **_op("delete", "/v1/blocks/{id}", "delete-a-block", "Delete a block"),
        **_op("post", "/v1/sort", "sort-items", "Sort items"),
    },
}


def test_http_method_names_and_read_only() -> None:
    tools = load_document(DOC).tools
    got = {op: (c.category.value, c.danger_level) for _, _, op, c in select_tools({"api": tools})}
    assert got["post_search"][0] == "EXECUTE" and got["markdown_render"][0] == "EXECUTE"  # not CREATE
    assert got["get_user"] == ("READ", "safe")
    assert got["post_page"][0] == "CREATE"
    assert got["patch_page"] == ("UPDATE", "destructive")  # PATCH is destructiveHint: true
    assert got["delete_a_block"][0] == "DELETE"
    excluded: list[dict[str, str]] = []
    served = [op for _, _, op, _ in select_tools({"api": tools}, read_only=True, excluded=excluded)]
    assert served == ["get_user"]
    reasons = {e["operation"]: e["reason"] for e in excluded}
    assert set(reasons) == {"post_search", "markdown_render", "post_page", "patch_page", "delete_a_block", "sort_items"}
    assert reasons["post_search"].startswith("EXECUTE (annotations.readOnlyHint is false")


@pytest.mark.anyio
async def test_openapi_read_only_lists_what_it_left_out(caplog: pytest.LogCaptureFixture) -> None:
    from mcpaql.adapters.openapi import serve_openapi

    with caplog.at_level(logging.WARNING, logger="mcpaql.openapi"):
        async with serve_openapi(DOC, read_only=True) as rt:
            assert [op.name for op in rt.engine.registry.operations if op.origin] == ["get_user"]
    text = caplog.text
    assert "--read-only: serving 1 guaranteed read operation(s); left out 6" in text
    assert "post_search (mixed): EXECUTE (annotations.readOnlyHint is false" in text
