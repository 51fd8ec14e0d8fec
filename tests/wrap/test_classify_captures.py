"""Classification of seven more real servers a user would wrap (captures in ``surfaces/``),
plus the annotation rules over every capture, shared ones included (issue 10).

Each row was written by reading the tool (annotations, name, description), not by
snapshotting the classifier: ``(category, danger level, needs_review, served under --read-only)``.
The rules in one line: ``readOnlyHint: true`` → READ; ``destructiveHint: true`` or
``readOnlyHint: false`` → never READ; no hints → the verb, then the description; ``--read-only``
serves only READ by annotation or an unambiguous read verb. Judgement calls are commented.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpaql.adapters.upstream.classify import Classification, classify
from mcpaql.protocol.categories import Category

HERE = Path(__file__).resolve().parent / "surfaces"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces"

R, C, U, D, E = "READ", "CREATE", "UPDATE", "DELETE", "EXECUTE"
S, RV, DS = "safe", "reversible", "destructive"

EXPECTED: dict[str, dict[str, tuple[str, str, bool, bool]]] = {
    # excel-mcp-server 2.2.2 annotates every tool (readOnly/destructive/idempotent/openWorld).
    "excel-mcp-server": {
        "create_workbook": (C, DS, False, False),  # destructiveHint: it overwrites an existing file
        "describe_workbook": (R, S, False, True),
        "set_workbook_settings": (U, RV, False, False),
        "list_workbooks": (R, S, False, True),
        # readOnlyHint wins over the 'export' verb (it returns the file, writes nothing); flagged
        "export_workbook": (R, S, True, True),
        "import_workbook": (C, DS, False, False),
        "import_csv": (C, DS, False, False),  # "overwriting cells": CREATE by verb, destructive by hint
        "export_csv": (E, DS, False, False),  # writes a CSV file: EXECUTE, destructive by hint
        "describe_sheet": (R, S, False, True),
        "create_sheet": (C, RV, False, False),
        "rename_sheet": (U, RV, False, False),
        "copy_sheet": (C, RV, False, False),
        "delete_sheet": (D, DS, False, False),
        "insert_rows_or_columns": (C, RV, False, False),
        "delete_rows_or_columns": (D, DS, False, False),
        "read_range": (R, S, False, True),
        "write_range": (C, DS, False, False),  # "overwriting them": destructive by hint wherever it lands
        "clear_range": (D, DS, False, False),
        "copy_range": (C, DS, False, False),  # "overwriting the destination"
        "sort_range": (U, DS, False, False),  # 'sort' rearranges cells in place
        "transform_range": (U, DS, False, False),  # removes duplicates / splits / fills: changes cells
        "find_cells": (R, S, False, True),
        "replace_cells": (U, DS, False, False),
        "trace_formula": (R, S, False, True),
        # "Goal Seek: change the constant …": no verb in the name or the description's first word;
        # not read-only and destructive → EXECUTE, flagged
        "goal_seek": (E, DS, True, False),
        "format_range": (U, RV, False, False),
        "merge_cells": (U, DS, False, False),
        "set_sheet_layout": (U, RV, False, False),
        "add_conditional_format": (C, RV, False, False),
        "add_data_validation": (C, RV, False, False),
        "set_table": (U, DS, False, False),  # "Create a table, or change one": 'set' → UPDATE
        "create_chart": (C, DS, False, False),  # "Add or replace a chart"
        "delete_chart": (D, DS, False, False),
        "add_sparklines": (C, RV, False, False),
        "delete_sparklines": (D, DS, False, False),
        "create_pivot_table": (C, RV, False, False),
        "delete_pivot_table": (D, DS, False, False),
        "add_slicer": (C, RV, False, False),
        "delete_slicer": (D, DS, False, False),
        "set_defined_name": (U, DS, False, False),
        "delete_defined_name": (D, DS, False, False),
        "set_note": (U, DS, False, False),  # "replacing its existing note"
        "delete_note": (D, DS, False, False),
        "insert_image": (C, RV, False, False),
        "delete_image": (D, DS, False, False),
        "read_vba": (R, S, False, True),
    },
    # mcp-server-duckdb 1.1.0: one generic tool, no annotations, "Execute a query on the DuckDB
    # database". The same call selects or runs CREATE/DROP TABLE: EXECUTE, flagged, never served
    # under --read-only (issue 10 point 1).
    "mcp-server-duckdb": {
        "query": (E, RV, True, False),
    },
    # notion-mcp-server 2.5.2 (generated from Notion's OpenAPI document): readOnlyHint on GETs,
    # destructiveHint on everything else.
    "notion-mcp-server": {
        "API-get-user": (R, S, False, True),
        "API-get-users": (R, S, False, True),
        "API-get-self": (R, S, False, True),
        # POST /v1/search: a search by name, but the server marks it destructive → not READ, and
        # not CREATE either (the POST prefix no longer decides when a verb follows it)
        "API-post-search": (E, DS, True, False),
        "API-get-block-children": (R, S, False, True),
        "API-patch-block-children": (U, DS, False, False),  # PATCH → UPDATE ("Append block children")
        "API-retrieve-a-block": (R, S, False, True),
        "API-update-a-block": (U, DS, False, False),
        "API-delete-a-block": (D, DS, False, False),
        "API-retrieve-a-page": (R, S, False, True),
        "API-patch-page": (U, DS, False, False),
        "API-post-page": (C, DS, False, False),  # POST with no verb after it → CREATE ("Create a page")
        "API-retrieve-a-page-property": (R, S, False, True),
        "API-retrieve-a-comment": (R, S, False, True),
        "API-create-a-comment": (C, DS, False, False),
        "API-query-data-source": (E, DS, True, False),  # a query sent as destructive POST → EXECUTE
        "API-retrieve-a-data-source": (R, S, False, True),
        "API-update-a-data-source": (U, DS, False, False),
        "API-create-a-data-source": (C, DS, False, False),
        "API-list-data-source-templates": (R, S, False, True),
        "API-retrieve-a-database": (R, S, False, True),
        "API-move-page": (U, DS, False, False),
        "API-retrieve-page-markdown": (R, S, False, True),
        "API-update-page-markdown": (U, DS, False, False),
    },
    # office-word-mcp-server 1.1.11: read tools carry readOnlyHint, deleting/overwriting ones
    # destructiveHint, the rest (additions and formatting) no hints at all.
    "office-word-mcp-server": {
        "create_document": (C, DS, False, False),
        "copy_document": (C, DS, False, False),  # may overwrite the target: destructive by hint
        "get_document_info": (R, S, False, True),
        "get_document_text": (R, S, False, True),
        "get_document_outline": (R, S, False, True),
        "list_available_documents": (R, S, False, True),
        "get_document_xml": (R, S, False, True),
        "insert_header_near_text": (C, RV, False, False),
        "insert_line_or_paragraph_near_text": (C, RV, False, False),
        "insert_numbered_list_near_text": (C, RV, False, False),
        "add_paragraph": (C, RV, False, False),
        "add_heading": (C, RV, False, False),
        "add_picture": (C, RV, False, False),
        "add_table": (C, RV, False, False),
        "add_page_break": (C, RV, False, False),
        "delete_paragraph": (D, DS, False, False),
        # issue 10 point 1: this was READ ("search") and served under --read-only. It replaces
        # text (compound name: search + replace → UPDATE) and the server marks it destructive.
        "search_and_replace": (U, DS, False, False),
        "create_custom_style": (C, RV, False, False),
        "format_text": (U, RV, False, False),  # 'format' restyles the document in place
        "format_table": (U, RV, False, False),
        "set_table_cell_shading": (U, RV, False, False),
        "apply_table_alternating_rows": (U, RV, False, False),
        "highlight_table_header": (U, RV, False, False),
        "merge_table_cells": (U, RV, False, False),
        "merge_table_cells_horizontal": (U, RV, False, False),
        "merge_table_cells_vertical": (U, RV, False, False),
        "set_table_cell_alignment": (U, RV, False, False),
        "set_table_alignment_all": (U, RV, False, False),
        "protect_document": (U, RV, False, False),  # adds a password: changes the document
        "unprotect_document": (U, RV, False, False),
        "add_footnote_to_document": (C, RV, False, False),
        "add_footnote_after_text": (C, RV, False, False),
        "add_footnote_before_text": (C, RV, False, False),
        "add_footnote_enhanced": (C, RV, False, False),
        "add_endnote_to_document": (C, RV, False, False),
        "customize_footnote_style": (U, RV, False, False),
        "delete_footnote_from_document": (D, DS, False, False),
        "add_footnote_robust": (C, RV, False, False),
        "validate_document_footnotes": (R, S, False, True),
        "delete_footnote_robust": (D, DS, False, False),
        "get_paragraph_text_from_document": (R, S, False, True),
        "find_text_in_document": (R, S, False, True),
        # issue 10 point 1: was READ as a "pure" conversion; it writes a PDF file and the server
        # marks it destructive → EXECUTE, destructive
        "convert_to_pdf": (E, DS, False, False),
        "replace_paragraph_block_below_header": (U, RV, False, False),
        "replace_block_between_manual_anchors": (U, RV, False, False),
        "get_all_comments": (R, S, False, True),
        "get_comments_by_author": (R, S, False, True),
        "get_comments_for_paragraph": (R, S, False, True),
        "set_table_column_width": (U, RV, False, False),
        "set_table_column_widths": (U, RV, False, False),
        "set_table_width": (U, RV, False, False),
        # no verb in the name ('auto', 'fit'); the description starts with "Set" → UPDATE, flagged
        "auto_fit_table_columns": (U, RV, True, False),
        "format_table_cell_text": (U, RV, False, False),
        "set_table_cell_padding": (U, RV, False, False),
    },
    # @modelcontextprotocol/server-pdf 2.0.4: no annotations at all; the verbs decide.
    "server-pdf": {
        "list_pdfs": (R, S, False, True),
        "read_pdf_bytes": (R, S, False, True),
        "display_pdf": (R, S, False, True),  # opens a viewer on a PDF: shows, changes nothing
        # an action switch mixing reads, annotation edits, remove_annotations and save_as → EXECUTE,
        # destructive (it can delete), flagged
        "interact": (E, DS, True, False),
        "submit_page_data": (U, RV, False, False),
        "submit_save_data": (U, RV, False, False),
        "submit_viewer_state": (U, RV, False, False),
        "poll_pdf_commands": (R, S, False, True),  # 'poll' (issue 10 point 8's verb gap)
        "save_pdf": (C, RV, False, False),  # 'save' → CREATE (it writes the file back)
    },
    # @modelcontextprotocol/server-postgres 0.6.2: one tool, no annotations, "Run a read-only SQL
    # query" (the server wraps it in a READ ONLY transaction). READ by its description, flagged,
    # and *not* served under --read-only: only a readOnlyHint would make that a guarantee.
    "server-postgres": {
        "query": (R, S, True, False),
    },
    # @modelcontextprotocol/server-redis 2025.4.25: bare verbs as names, no annotations.
    "server-redis": {
        "set": (U, RV, False, False),
        "get": (R, S, False, True),
        "delete": (D, DS, False, False),
        "list": (R, S, False, True),
    },
}


def _tools(path: Path) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["tools"] if isinstance(data, dict) else data


def _all_captures() -> list[Path]:
    return sorted([*HERE.glob("*.tools-list.json"), *SHARED.glob("*.tools-list.json")])


def _served(c: Classification) -> bool:
    return c.read_only_exclusion() is None


def test_table_covers_every_capture_and_meta_is_pinned() -> None:
    for path in HERE.glob("*.tools-list.json"):
        key = path.name.removesuffix(".tools-list.json")
        assert [t["name"] for t in _tools(path)] == list(EXPECTED[key]), key
        meta = json.loads((HERE / f"{key}.capture-meta.json").read_text())
        assert meta["tool_count"] == len(EXPECTED[key]) and meta["version"][0].isdigit(), key
    assert len(EXPECTED) >= 6


@pytest.mark.parametrize("server", sorted(EXPECTED))
def test_every_tool_is_classified_as_read(server: str) -> None:
    wrong = []
    for tool in _tools(HERE / f"{server}.tools-list.json"):
        c = classify(tool)
        got = (c.category.value, c.danger_level, c.needs_review, _served(c))
        if got != EXPECTED[server][tool["name"]]:
            wrong.append((tool["name"], got, EXPECTED[server][tool["name"]], c.why))
        assert c.needs_review == bool(c.review_reasons)
    assert not wrong, wrong


@pytest.mark.parametrize("path", _all_captures(), ids=lambda p: p.name.removesuffix(".tools-list.json"))
def test_annotations_decide_on_every_real_capture(path: Path) -> None:
    """Over every capture, shared ones included: the annotations' verdict is never overruled."""
    for tool in _tools(path):
        ann = tool.get("annotations") or {}
        c = classify(tool)
        if ann.get("destructiveHint") is True or ann.get("readOnlyHint") is False:
            assert c.category is not Category.READ, tool["name"]
            assert c.read_only_exclusion(), tool["name"]
        elif ann.get("readOnlyHint") is True:
            assert (c.category, c.read_basis) == (Category.READ, "annotation"), tool["name"]
            assert _served(c), tool["name"]
        if ann.get("destructiveHint") is True:
            assert c.danger_level in ("destructive", "dangerous", "forbidden"), tool["name"]


def test_only_unambiguous_verbs_are_guaranteed_reads_without_annotations() -> None:
    served = {
        (path.name.removesuffix(".tools-list.json"), t["name"])
        for path in _all_captures()
        for t in _tools(path)
        if not (t.get("annotations") or {}).get("readOnlyHint") and _served(classify(t))
    }
    assert served == {
        ("mcp-server-sqlite", "read_query"),
        ("mcp-server-sqlite", "list_tables"),
        ("mcp-server-sqlite", "describe_table"),
        ("server-pdf", "list_pdfs"),
        ("server-pdf", "read_pdf_bytes"),
        ("server-pdf", "display_pdf"),
        ("server-pdf", "poll_pdf_commands"),
        ("server-redis", "get"),
        ("server-redis", "list"),
    }


@pytest.mark.parametrize(
    ("tool", "category", "served"),
    [
        ({"name": "query", "description": "Execute a query on the database"}, E, False),
        ({"name": "run_sql", "description": "Runs SQL."}, E, False),
        ({"name": "sql", "description": "Execute a SQL statement"}, E, False),
        ({"name": "query", "description": "Run a read-only SQL query"}, R, False),
        ({"name": "query_logs", "description": "Query the log index"}, R, False),
        ({"name": "query", "annotations": {"readOnlyHint": True}}, R, True),
        ({"name": "post_search", "description": "Search by title"}, R, False),
        ({"name": "post_search", "annotations": {"readOnlyHint": False}}, E, False),
        ({"name": "post_page"}, C, False),
        ({"name": "put_item"}, U, False),
        ({"name": "patch_page"}, U, False),
        ({"name": "get_commit"}, R, True),
        ({"name": "markdown_render", "description": "Render a Markdown document"}, R, False),
        ({"name": "markdown_render", "annotations": {"readOnlyHint": False, "destructiveHint": False}}, E, False),
        ({"name": "sort_range"}, U, False),
        ({"name": "format_code"}, U, False),
        ({"name": "poll_job"}, R, True),
        ({"name": "search_and_replace"}, U, False),
        ({"name": "get_or_create_user"}, C, False),
        ({"name": "convert_to_pdf"}, R, False),
        ({"name": "download_file"}, R, False),
        ({"name": "get_thing", "annotations": {"readOnlyHint": True, "destructiveHint": True}}, E, False),
    ],
)
def test_generic_and_http_method_names(tool: dict, category: str, served: bool) -> None:
    c = classify(tool)
    assert (c.category.value, _served(c)) == (category, served), c.why
    if not served:
        assert c.read_only_exclusion()


def test_destructive_hint_raises_danger_wherever_the_tool_lands() -> None:
    for name in ("write_range", "set_note", "export_csv", "search_and_replace", "convert_to_pdf"):
        c = classify({"name": name, "annotations": {"readOnlyHint": False, "destructiveHint": True}})
        assert c.category is not Category.READ and c.danger_level == "destructive", name


_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_\-]{0,40}", fullmatch=True) | st.sampled_from(
    [
        "get_file",
        "list_things",
        "search",
        "read_query",
        "query",
        "echo",
        "convert_to_pdf",
        "render",
        "API-get-user",
        "post_search",
        "status",
        "search_and_replace",
        "get_or_list",
        "x",
    ]
)
_words = st.sampled_from(
    ["Get", "Returns", "Lists", "Execute", "Read-only", "Search", "Delete", "", "read-only", "query", "and", "the", "file", "."]
)
_descriptions = st.lists(_words, max_size=8).map(" ".join) | st.text(max_size=80)
_schemas = st.none() | st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.fixed_dictionaries(
            {
                "action": st.fixed_dictionaries(
                    {"enum": st.lists(st.sampled_from(["get", "list", "read", "search", "zoom"]), min_size=2, max_size=4)}
                )
            }
        ),
    }
)
_hint = st.sampled_from([None, True, False])


@settings(max_examples=int(os.environ.get("MCPAQL_HYPOTHESIS_EXAMPLES", "400")), deadline=None)
@given(name=_names, description=_descriptions, schema=_schemas, ro=_hint, de=_hint, idem=_hint)
def test_declared_side_effects_are_never_read(
    name: str, description: str, schema: dict | None, ro: bool | None, de: bool | None, idem: bool | None
) -> None:
    ann = {k: v for k, v in (("readOnlyHint", ro), ("destructiveHint", de), ("idempotentHint", idem)) if v is not None}
    tool = {"name": name, "description": description, "annotations": ann}
    if schema is not None:
        tool["inputSchema"] = schema
    c = classify(tool)
    if de is True or ro is False:
        assert c.category is not Category.READ
        assert c.read_only_exclusion() is not None
    if de is True:
        assert c.danger_level in ("destructive", "dangerous", "forbidden")
    if c.read_only_exclusion() is None:
        assert c.category is Category.READ and c.read_basis in ("annotation", "verb")
    assert c.needs_review == bool(c.review_reasons)


def test_build_report_lists_what_read_only_would_not_serve() -> None:
    from mcpaql.adapters.schema import build_schema, capture, format_report

    _, report = build_schema(capture(HERE / "mcp-server-duckdb.tools-list.json"))
    assert report["read_only_excluded"] == {"query": "EXECUTE (generic 'query' tool without readOnlyHint → EXECUTE)"}
    assert "## Not served under --read-only (1)" in format_report(report)
    _, report = build_schema(capture(HERE / "office-word-mcp-server.tools-list.json"))
    excluded = report["read_only_excluded"]
    assert excluded["search_and_replace"].startswith("UPDATE (annotations.destructiveHint is true")
    assert "get_document_text" not in excluded and len(excluded) == 54 - 11  # 11 tools carry readOnlyHint


def test_docs_table_is_current() -> None:
    """docs/wrap.md embeds scripts/classification_table.py's output; regenerate it when rules change."""
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("classification_table", root / "scripts" / "classification_table.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = (root / "docs" / "wrap.md").read_text(encoding="utf-8")
    embedded = doc.split("<!-- classification-table:start -->\n", 1)[1].split("<!-- classification-table:end -->", 1)[0]
    assert embedded == mod.table(), "docs/wrap.md is stale: python scripts/classification_table.py"
