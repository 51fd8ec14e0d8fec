"""Classification of every tool of every captured surface (REQ-CLS-001/002, REQ-DISC-006/012).

The table below was reviewed by hand, tool by tool: (category, danger level, needs_review).
Reasoning for the non-obvious rows lives in the classifier's ``why`` and in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpaql.adapters.upstream.classify import classify, name_verb, snake_name, words

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces"

# Notes on judgement calls:
# - mark_all_notifications_read: the first word is the verb ('mark') → UPDATE, not READ.
# - run_secret_scanning / trigger-long-running-operation / browser_wait_for: the server declares
#   readOnlyHint, which wins over the name verb; flagged for review.
# - issue_write (create|update), create_or_update_file, write_file: upserts → CREATE (REQ-CLS-002).
# - label_write, projects_write, pull_request_review_write, sub_issue_write, manage_*_subscription,
#   write_query: multi-method/"write" tools that can also delete → UPDATE, danger destructive, review.
# - actions_run_trigger, browser_tabs: method sets containing EXECUTE verbs → EXECUTE.
# - browser_* interactions (navigate, click, type, …) → EXECUTE: external effects (REQ-CLS-001).
# - browser_run_code_unsafe: '*_unsafe' pattern → dangerous.
# - unstar_repository removes a star → DELETE; star_repository / fork_repository → CREATE.
EXPECTED: dict[str, dict[str, tuple[str, str, bool]]] = {
    "github-mcp-all": {
        "actions_get": ("READ", "safe", False),
        "actions_list": ("READ", "safe", False),
        "actions_run_trigger": ("EXECUTE", "destructive", True),
        "add_comment_to_pending_review": ("CREATE", "reversible", False),
        "add_issue_comment": ("CREATE", "reversible", False),
        "add_reply_to_pull_request_comment": ("CREATE", "reversible", False),
        "assign_copilot_to_issue": ("UPDATE", "reversible", False),
        "check_dependency_vulnerabilities": ("READ", "safe", False),
        "create_branch": ("CREATE", "reversible", False),
        "create_gist": ("CREATE", "reversible", False),
        "create_or_update_file": ("CREATE", "reversible", False),
        "create_pull_request": ("CREATE", "reversible", False),
        "create_pull_request_with_copilot": ("CREATE", "reversible", False),
        "create_repository": ("CREATE", "reversible", False),
        "delete_file": ("DELETE", "destructive", False),
        "dismiss_notification": ("UPDATE", "reversible", False),
        "fork_repository": ("CREATE", "reversible", False),
        "get_code_scanning_alert": ("READ", "safe", False),
        "get_commit": ("READ", "safe", False),
        "get_copilot_job_status": ("READ", "safe", False),
        "get_copilot_space": ("READ", "safe", False),
        "get_dependabot_alert": ("READ", "safe", False),
        "get_discussion": ("READ", "safe", False),
        "get_discussion_comments": ("READ", "safe", False),
        "get_file_contents": ("READ", "safe", False),
        "get_gist": ("READ", "safe", False),
        "get_global_security_advisory": ("READ", "safe", False),
        "get_job_logs": ("READ", "safe", False),
        "get_label": ("READ", "safe", False),
        "get_latest_release": ("READ", "safe", False),
        "get_me": ("READ", "safe", False),
        "get_notification_details": ("READ", "safe", False),
        "get_release_by_tag": ("READ", "safe", False),
        "get_repository_tree": ("READ", "safe", False),
        "get_secret_scanning_alert": ("READ", "safe", False),
        "get_tag": ("READ", "safe", False),
        "get_team_members": ("READ", "safe", False),
        "get_teams": ("READ", "safe", False),
        "github_support_docs_search": ("READ", "safe", False),
        "issue_read": ("READ", "safe", False),
        "issue_write": ("CREATE", "reversible", False),
        "label_write": ("UPDATE", "destructive", True),
        "list_branches": ("READ", "safe", False),
        "list_code_scanning_alerts": ("READ", "safe", False),
        "list_commits": ("READ", "safe", False),
        "list_copilot_spaces": ("READ", "safe", False),
        "list_dependabot_alerts": ("READ", "safe", False),
        "list_discussion_categories": ("READ", "safe", False),
        "list_discussions": ("READ", "safe", False),
        "list_gists": ("READ", "safe", False),
        "list_global_security_advisories": ("READ", "safe", False),
        "list_issue_types": ("READ", "safe", False),
        "list_issues": ("READ", "safe", False),
        "list_label": ("READ", "safe", False),
        "list_notifications": ("READ", "safe", False),
        "list_org_repository_security_advisories": ("READ", "safe", False),
        "list_pull_requests": ("READ", "safe", False),
        "list_releases": ("READ", "safe", False),
        "list_repository_security_advisories": ("READ", "safe", False),
        "list_secret_scanning_alerts": ("READ", "safe", False),
        "list_starred_repositories": ("READ", "safe", False),
        "list_tags": ("READ", "safe", False),
        "manage_notification_subscription": ("UPDATE", "destructive", True),
        "manage_repository_notification_subscription": ("UPDATE", "destructive", True),
        "mark_all_notifications_read": ("UPDATE", "reversible", False),
        "merge_pull_request": ("UPDATE", "reversible", False),
        "projects_get": ("READ", "safe", False),
        "projects_list": ("READ", "safe", False),
        "projects_write": ("UPDATE", "destructive", True),
        "pull_request_read": ("READ", "safe", False),
        "pull_request_review_write": ("UPDATE", "destructive", True),
        "push_files": ("CREATE", "reversible", False),
        "request_copilot_review": ("EXECUTE", "reversible", False),
        "run_secret_scanning": ("READ", "safe", True),
        "search_code": ("READ", "safe", False),
        "search_issues": ("READ", "safe", False),
        "search_orgs": ("READ", "safe", False),
        "search_pull_requests": ("READ", "safe", False),
        "search_repositories": ("READ", "safe", False),
        "search_users": ("READ", "safe", False),
        "semantic_issue_similarity_search": ("READ", "safe", False),
        "semantic_issues_search": ("READ", "safe", False),
        "star_repository": ("CREATE", "reversible", False),
        "sub_issue_write": ("UPDATE", "destructive", True),
        "triage_issue": ("UPDATE", "reversible", False),
        "unstar_repository": ("DELETE", "destructive", False),
        "update_gist": ("UPDATE", "reversible", False),
        "update_pull_request": ("UPDATE", "reversible", False),
        "update_pull_request_branch": ("UPDATE", "reversible", False),
    },
    "github-mcp-default": {
        "add_comment_to_pending_review": ("CREATE", "reversible", False),
        "add_issue_comment": ("CREATE", "reversible", False),
        "add_reply_to_pull_request_comment": ("CREATE", "reversible", False),
        "assign_copilot_to_issue": ("UPDATE", "reversible", False),
        "create_branch": ("CREATE", "reversible", False),
        "create_or_update_file": ("CREATE", "reversible", False),
        "create_pull_request": ("CREATE", "reversible", False),
        "create_pull_request_with_copilot": ("CREATE", "reversible", False),
        "create_repository": ("CREATE", "reversible", False),
        "delete_file": ("DELETE", "destructive", False),
        "fork_repository": ("CREATE", "reversible", False),
        "get_commit": ("READ", "safe", False),
        "get_copilot_job_status": ("READ", "safe", False),
        "get_file_contents": ("READ", "safe", False),
        "get_label": ("READ", "safe", False),
        "get_latest_release": ("READ", "safe", False),
        "get_me": ("READ", "safe", False),
        "get_release_by_tag": ("READ", "safe", False),
        "get_tag": ("READ", "safe", False),
        "get_team_members": ("READ", "safe", False),
        "get_teams": ("READ", "safe", False),
        "issue_read": ("READ", "safe", False),
        "issue_write": ("CREATE", "reversible", False),
        "list_branches": ("READ", "safe", False),
        "list_commits": ("READ", "safe", False),
        "list_issue_types": ("READ", "safe", False),
        "list_issues": ("READ", "safe", False),
        "list_pull_requests": ("READ", "safe", False),
        "list_releases": ("READ", "safe", False),
        "list_tags": ("READ", "safe", False),
        "merge_pull_request": ("UPDATE", "reversible", False),
        "pull_request_read": ("READ", "safe", False),
        "pull_request_review_write": ("UPDATE", "destructive", True),
        "push_files": ("CREATE", "reversible", False),
        "request_copilot_review": ("EXECUTE", "reversible", False),
        "run_secret_scanning": ("READ", "safe", True),
        "search_code": ("READ", "safe", False),
        "search_issues": ("READ", "safe", False),
        "search_pull_requests": ("READ", "safe", False),
        "search_repositories": ("READ", "safe", False),
        "search_users": ("READ", "safe", False),
        "sub_issue_write": ("UPDATE", "destructive", True),
        "update_pull_request": ("UPDATE", "reversible", False),
        "update_pull_request_branch": ("UPDATE", "reversible", False),
    },
    "mcp-server-fetch": {
        "fetch": ("READ", "safe", False),
    },
    "mcp-server-git": {
        "git_status": ("READ", "safe", False),
        "git_diff_unstaged": ("READ", "safe", False),
        "git_diff_staged": ("READ", "safe", False),
        "git_diff": ("READ", "safe", False),
        "git_commit": ("CREATE", "reversible", False),
        "git_add": ("CREATE", "reversible", False),
        "git_reset": ("UPDATE", "destructive", False),
        "git_log": ("READ", "safe", False),
        "git_create_branch": ("CREATE", "reversible", False),
        "git_checkout": ("UPDATE", "reversible", False),
        "git_show": ("READ", "safe", False),
        "git_branch": ("READ", "safe", False),
    },
    "mcp-server-sqlite": {
        "read_query": ("READ", "safe", False),
        "write_query": ("UPDATE", "destructive", True),
        "create_table": ("CREATE", "reversible", False),
        "list_tables": ("READ", "safe", False),
        "describe_table": ("READ", "safe", False),
        "append_insight": ("CREATE", "reversible", False),
    },
    "mcp-server-time": {
        "get_current_time": ("READ", "safe", False),
        "convert_time": ("READ", "safe", False),
    },
    "playwright-mcp": {
        "browser_close": ("EXECUTE", "destructive", False),
        "browser_resize": ("EXECUTE", "destructive", False),
        "browser_console_messages": ("READ", "safe", False),
        "browser_handle_dialog": ("EXECUTE", "destructive", False),
        "browser_emulate_media": ("EXECUTE", "destructive", False),
        "browser_evaluate": ("EXECUTE", "destructive", False),
        "browser_file_upload": ("EXECUTE", "destructive", False),
        "browser_drop": ("EXECUTE", "destructive", False),
        "browser_find": ("READ", "safe", False),
        "browser_fill_form": ("EXECUTE", "destructive", False),
        "browser_press_key": ("EXECUTE", "destructive", False),
        "browser_type": ("EXECUTE", "destructive", False),
        "browser_navigate": ("EXECUTE", "destructive", False),
        "browser_navigate_back": ("EXECUTE", "destructive", False),
        "browser_network_requests": ("READ", "safe", False),
        "browser_network_request": ("READ", "safe", False),
        "browser_run_code_unsafe": ("EXECUTE", "dangerous", False),
        "browser_take_screenshot": ("READ", "safe", False),
        "browser_snapshot": ("READ", "safe", False),
        "browser_click": ("EXECUTE", "destructive", False),
        "browser_drag": ("EXECUTE", "destructive", False),
        "browser_hover": ("EXECUTE", "destructive", False),
        "browser_select_option": ("EXECUTE", "destructive", False),
        "browser_tabs": ("EXECUTE", "destructive", True),
        "browser_wait_for": ("READ", "safe", True),
    },
    "server-everything": {
        "echo": ("READ", "safe", False),
        "get-annotated-message": ("READ", "safe", False),
        "get-env": ("READ", "safe", False),
        "get-resource-links": ("READ", "safe", False),
        "get-resource-reference": ("READ", "safe", False),
        "get-structured-content": ("READ", "safe", False),
        "get-sum": ("READ", "safe", False),
        "get-tiny-image": ("READ", "safe", False),
        "gzip-file-as-resource": ("EXECUTE", "reversible", False),
        "toggle-simulated-logging": ("UPDATE", "reversible", False),
        "toggle-subscriber-updates": ("UPDATE", "reversible", False),
        "trigger-long-running-operation": ("READ", "safe", True),
        "simulate-research-query": ("EXECUTE", "reversible", False),
    },
    "server-filesystem": {
        "read_file": ("READ", "safe", False),
        "read_text_file": ("READ", "safe", False),
        "read_media_file": ("READ", "safe", False),
        "read_multiple_files": ("READ", "safe", False),
        "write_file": ("CREATE", "destructive", False),
        "edit_file": ("UPDATE", "destructive", False),
        "create_directory": ("CREATE", "reversible", False),
        "list_directory": ("READ", "safe", False),
        "list_directory_with_sizes": ("READ", "safe", False),
        "directory_tree": ("READ", "safe", False),
        "move_file": ("UPDATE", "destructive", False),
        "search_files": ("READ", "safe", False),
        "get_file_info": ("READ", "safe", False),
        "list_allowed_directories": ("READ", "safe", False),
    },
    "server-memory": {
        "create_entities": ("CREATE", "reversible", False),
        "create_relations": ("CREATE", "reversible", False),
        "add_observations": ("CREATE", "reversible", False),
        "delete_entities": ("DELETE", "destructive", False),
        "delete_observations": ("DELETE", "destructive", False),
        "delete_relations": ("DELETE", "destructive", False),
        "read_graph": ("READ", "safe", False),
        "search_nodes": ("READ", "safe", False),
        "open_nodes": ("READ", "safe", False),
    },
    "server-sequential-thinking": {
        "sequentialthinking": ("READ", "safe", False),
    },
}


def _tools(name: str) -> list[dict]:
    data = json.loads((FIXTURES / f"{name}.tools-list.json").read_text())
    return data["tools"] if isinstance(data, dict) else data


def test_table_covers_every_fixture_tool() -> None:
    for path in FIXTURES.glob("*.tools-list.json"):
        key = path.name.removesuffix(".tools-list.json")
        assert key in EXPECTED, key
        assert [t["name"] for t in _tools(key)] == list(EXPECTED[key]), key
    assert len(EXPECTED["github-mcp-all"]) == 89


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_every_tool_is_classified_as_reviewed(fixture: str) -> None:
    wrong = []
    for tool in _tools(fixture):
        c = classify(tool)
        got = (c.category.value, c.danger_level, c.needs_review)
        if got != EXPECTED[fixture][tool["name"]]:
            wrong.append((tool["name"], got, EXPECTED[fixture][tool["name"]], c.why))
        assert c.why, tool["name"]
        assert c.confidence in ("high", "medium", "low")
        assert c.needs_review == bool(c.review_reasons)
    assert not wrong, wrong


def test_read_only_hint_wins_and_is_direct_metadata() -> None:
    c = classify({"name": "get_issue", "annotations": {"readOnlyHint": True}})
    assert (c.category.value, c.confidence, c.source) == ("READ", "high", "direct_source_metadata")


def test_verb_grammar_snake_camel_kebab() -> None:
    assert words("getTinyImage") == ["get", "tiny", "image"]
    assert words("get-tiny-image") == ["get", "tiny", "image"]
    assert words("HTTPRequestLog") == ["http", "request", "log"]
    assert name_verb("mark_all_notifications_read")[0] == "mark"
    assert name_verb("issue_read")[0] == "read"
    assert name_verb("git_create_branch")[0] == "create"
    assert classify({"name": "browser_navigate"}).category.value == "EXECUTE"
    for name, cat in [
        ("getUser", "READ"),
        ("listThings", "READ"),
        ("search-docs", "READ"),
        ("createUser", "CREATE"),
        ("add_item", "CREATE"),
        ("updateUser", "UPDATE"),
        ("edit_page", "UPDATE"),
        ("set_flag", "UPDATE"),
        ("deleteUser", "DELETE"),
        ("remove-item", "DELETE"),
        ("run_job", "EXECUTE"),
        ("mark_all_notifications_read", "UPDATE"),
        ("slack_post_message", "CREATE"),
        ("jira_transition_issue", "UPDATE"),
        ("unsubscribe_list", "DELETE"),
        ("validate_config", "READ"),
        ("job_status", "READ"),
        ("translate_text", "READ"),
        ("export_report", "EXECUTE"),
    ]:
        assert classify({"name": name}).category.value == cat, name


def test_description_fallback_is_low_confidence_and_flagged() -> None:
    c = classify({"name": "thing", "description": "Returns the thing."})
    assert (c.category.value, c.confidence, c.needs_review) == ("READ", "low", True)
    c = classify({"name": "thing", "description": "Frobnicate.", "annotations": {"readOnlyHint": False}})
    assert c.category.value == "EXECUTE" and c.needs_review


def test_read_verb_with_declared_side_effects_is_execute() -> None:
    c = classify({"name": "list_things", "annotations": {"readOnlyHint": False}})
    assert c.category.value == "EXECUTE" and c.needs_review


def test_danger_patterns() -> None:
    assert classify({"name": "force_push"}).danger_level == "dangerous"
    assert classify({"name": "delete_all_users"}).danger_level == "forbidden"
    assert classify({"name": "drop_table"}).category.value == "DELETE"
    assert classify({"name": "drop_table"}).danger_level == "forbidden"
    assert classify({"name": "purge_cache"}).danger_level == "dangerous"


def test_snake_name() -> None:
    assert snake_name("get-tiny-image") == "get_tiny_image"
    assert snake_name("sampleLLM") == "sample_llm"
    assert snake_name("2fa_check") == "op_2fa_check"
