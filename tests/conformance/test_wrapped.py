"""``mcpaql conformance`` against real MCP servers behind ``mcpaql wrap`` (issue 10, point 8).

Each upstream is the real package installed by tests/wrap/install_upstreams.sh (server-filesystem
on a temp dir, server-memory on a temp file, mcp-server-git on a temp repository, mcp-server-time,
server-everything), plus a replay of mcp-server-fetch's capture that records every call it
receives. For each: the wrapper's level is met, no probe carried a non-loopback address, no
mutating tool of the upstream acted (the temp dir, file and repository are unchanged), and
probes the upstream rejected for its own reasons are reported as such, not as failures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpaql.conformance import Report, Status, network, render, run_conformance
from mcpaql.mcp.replay import argv_for

from .conftest import SCHEMAS

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]
REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".cache-upstreams" / "node_modules" / ".bin"
SURFACES = REPO.parent / "shared" / "fixtures" / "surfaces"
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))
CHDIR = "import os, sys; os.chdir(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])"


def _need(path: Path) -> str:
    if not path.exists():
        pytest.fail(f"{path} is missing: run tests/wrap/install_upstreams.sh")
    return str(path)


def _wrapped(*upstream: str, cwd: Path | None = None) -> list[str]:
    cmd = [MCPAQL, "wrap", "--mode", "all", "--", *upstream]
    return [sys.executable, "-c", CHDIR, str(cwd), *cmd] if cwd else cmd


def run(cmd: list[str], tmp: Path, **kw: Any) -> Report:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MEMORY_FILE_PATH": str(tmp / "memory.jsonl")}
    return anyio.run(lambda: run_conformance(cmd, level=2, env=env, schemas=SCHEMAS if SCHEMAS.is_dir() else None, **kw))


def not_passing(r: Report) -> dict[str, str]:
    return {x.id: f"{x.status.value}: {x.message}" for x in r.results if x.status in (Status.FAIL, Status.WARN)}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def _git_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "readme.txt").write_text("conformance\n")
    _git(repo, "add", "readme.txt")
    _git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    return repo


def _assert_safe(r: Report) -> None:
    """No call carried a remote address; no mutating operation of the upstream succeeded."""
    assert not [ex.arguments for ex in r.exchanges if network.remote_urls(ex.arguments)]
    listing = (r.evidence_bundle.get("introspection") or {}).get("operations_list") or {}
    cats = {str(o.get("name")): o.get("semantic_category") for o in listing.get("data", {}).get("operations", [])}
    acted = [
        ex.arguments
        for ex in r.exchanges
        if ex.ok and isinstance(ex.arguments, dict) and cats.get(str(ex.arguments.get("operation")), "READ") != "READ"
    ]
    assert acted == []  # no element type of these upstreams has create+get+delete: nothing may act


def _case_filesystem(tmp: Path) -> tuple[list[str], Path | None, Any]:
    root = tmp / "files"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "sub" / "b.json").write_text('{"b": 1}\n')
    before = _snapshot(root)
    return _wrapped(_need(BIN / "mcp-server-filesystem"), str(root)), None, lambda: _snapshot(root) == before


def _case_memory(tmp: Path) -> tuple[list[str], Path | None, Any]:
    rows = [{"type": "entity", "name": "ada", "entityType": "person", "observations": ["math"]}]
    f = tmp / "memory.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in rows) + "\n")
    before = f.read_text()
    return _wrapped(_need(BIN / "mcp-server-memory")), None, lambda: f.read_text() == before


def _case_git(tmp: Path) -> tuple[list[str], Path | None, Any]:
    repo = _git_repo(tmp)
    before = (_git(repo, "rev-parse", "HEAD"), _git(repo, "branch", "--list"), _git(repo, "status", "--porcelain"))
    cmd = [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]

    def same() -> bool:
        return (_git(repo, "rev-parse", "HEAD"), _git(repo, "branch", "--list"), _git(repo, "status", "--porcelain")) == before

    return _wrapped(*cmd, cwd=repo), repo, same


def _case_time(tmp: Path) -> tuple[list[str], Path | None, Any]:
    return _wrapped(sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"), None, lambda: True


def _case_everything(tmp: Path) -> tuple[list[str], Path | None, Any]:
    return _wrapped(_need(BIN / "mcp-server-everything")), None, lambda: True


# upstream → (case, level the wrapper reaches, READ operations the upstream may refuse a probe for)
CASES = {
    # filesystem: `fields` on a result with both text and structuredContent is validated against
    # the whole result (issue 10 point 6, the wrapper's fields): L2-2 warns. A path ('.') gets past
    # validation everywhere, but the file readers need an existing file, which no schema names.
    "filesystem": (_case_filesystem, 1, {"read_file", "read_text_file", "read_media_file"}),
    "memory": (_case_memory, 2, set()),
    # git: every READ result is plain text, so field selection has no records to show; git_diff's
    # `target` (a ref) has no description, format or pattern to build an existing ref from
    "git": (_case_git, 1, {"git_diff"}),
    "time": (_case_time, 2, set()),
    "everything": (_case_everything, 2, set()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrapped_real_upstream_meets_its_level_safely(name: str, tmp_path: Path) -> None:
    case, level, may_refuse = CASES[name]
    cmd, _, unchanged = case(tmp_path)
    r = run(cmd, tmp_path)
    assert r.fatal is None
    assert not [x for x in r.results if x.status is Status.FAIL], not_passing(r)
    assert r.achieved_level >= level, not_passing(r)
    _assert_safe(r)
    assert unchanged(), "a probe changed the upstream's data"
    # requests built from the schemas get past the upstream's own validation
    if5 = next(x for x in r.results if x.id == "IF-5")
    assert if5.status is Status.PASS, if5.message
    assert {line.split(":")[0] for line in if5.upstream_rejected} <= may_refuse, if5.upstream_rejected


def test_time_probe_values_come_from_the_description_examples(tmp_path: Path) -> None:
    cmd, _, _ = _case_time(tmp_path)
    r = run(cmd, tmp_path)
    sent = [ex.arguments.get("params") for ex in r.exchanges if (ex.arguments or {}).get("operation") == "convert_time" and ex.ok]
    assert sent and sent[0]["source_timezone"] == "America/New_York" and sent[0]["time"] == "12:00"
    assert r.upstream_rejections == 0 and r.met


def test_upstream_rejections_are_neutral_not_the_wrappers_failure(tmp_path: Path) -> None:
    """mcp-server-git started outside its repository: every READ is refused by the upstream
    ('repo_path' '.' is outside the allowed repository). That is reported as upstream-rejected
    probes, not as a failure of the wrapper, which still meets Level 1."""
    repo = _git_repo(tmp_path)
    r = run(_wrapped(sys.executable, "-m", "mcp_server_git", "--repository", str(repo)), tmp_path)
    if5 = next(x for x in r.results if x.id == "IF-5")
    assert if5.status is not Status.FAIL and if5.upstream_rejected
    assert all("outside the allowed repository" in line for line in if5.upstream_rejected)
    assert r.level1_met and r.upstream_rejections >= len(if5.upstream_rejected)
    assert "upstream-rejected probe(s) (neutral)" in r.summary_line()
    doc = r.to_dict()
    assert doc["upstreamRejections"] == r.upstream_rejections
    tests = [t for c in doc["categories"] for t in c["tests"] if t["id"] == "IF-5"]
    assert tests[0]["upstreamRejected"] == if5.upstream_rejected
    assert "upstream rejected probe" in render(r, "text", width=200)
    # the evidence bundle (the spec runner's format) carries none of them
    assert "outside the allowed repository" not in json.dumps(r.evidence_bundle)


def _recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_fetch_replay_is_never_sent_a_remote_address(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    r = run(_wrapped(*argv_for(SURFACES / "mcp-server-fetch.tools-list.json", record=record)), tmp_path)
    assert r.fatal is None and r.level1_met, not_passing(r)
    calls = _recorded(record)
    assert not [c for c in calls if network.urls_in(c["arguments"])], calls  # nothing reached the fetch tool with a URL
    _assert_safe(r)
    assert any("--allow-network" in n for n in r.notes)
    l22 = next(x for x in r.results if x.id == "L2-2")
    assert l22.status is not Status.PASS and "--allow-network" in l22.message  # Level 2 is not claimed unverified
    assert not r.met


def test_fetch_replay_with_allow_network_reaches_level_2(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    r = run(_wrapped(*argv_for(SURFACES / "mcp-server-fetch.tools-list.json", record=record)), tmp_path, allow_network=True)
    assert r.met and r.achieved_level == 2, not_passing(r)
    urls = {u for c in _recorded(record) for u in network.urls_in(c["arguments"])}
    assert urls == {network.PUBLIC_URL}  # the RFC 2606 domain, and only that
    assert r.allow_network and r.to_dict()["allowNetwork"] is True


def test_cli_allow_network_option(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    target = _wrapped(*argv_for(SURFACES / "mcp-server-fetch.tools-list.json", record=record))
    env = {**os.environ, "COLUMNS": "200"}
    base = [MCPAQL, "conformance", "--level", "1", "--format", "json"]
    without = subprocess.run([*base, "--", *target], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    assert without.returncode == 0, without.stderr[-2000:]
    assert json.loads(without.stdout)["allowNetwork"] is False
    assert not [c for c in _recorded(record) if network.urls_in(c["arguments"])]
    with_net = subprocess.run(
        [*base, "--allow-network", "--", *target], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path
    )
    assert with_net.returncode == 0 and json.loads(with_net.stdout)["allowNetwork"] is True
    assert {u for c in _recorded(record) for u in network.urls_in(c["arguments"])} == {network.PUBLIC_URL}


HOSTILE_TOOLS = [
    {
        "name": "load_page",
        "description": "Load a page (e.g. 'https://metadata.google.internal/computeMetadata/v1/').",
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "inputSchema": {
            "type": "object",
            "properties": {"url": {"type": "string", "format": "uri", "default": "http://169.254.169.254/latest/meta-data"}},
        },
    },
    {
        "name": "get_mirror",
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "inputSchema": {
            "type": "object",
            "properties": {"mirror": {"type": "string", "enum": ["https://mirror.example.org/", "http://[fd00:ec2::254]/"]}},
            "required": ["mirror"],
        },
    },
    {
        "name": "get_link",
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "inputSchema": {
            "type": "object",
            "properties": {"target": {"type": "string", "pattern": "^https?://", "description": "e.g. 'https://example.net/x'"}},
            "required": ["target"],
        },
    },
    {
        "name": "get_host_status",
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "inputSchema": {
            "type": "object",
            "properties": {
                "host": {"type": "string", "format": "hostname", "default": "metadata.google.internal"},
                "ip": {"type": "string", "format": "ipv4", "default": "169.254.169.254"},
            },
        },
    },
]


def test_remote_addresses_in_defaults_enums_and_examples_are_never_sent(tmp_path: Path) -> None:
    """Adversarial: a server whose own documentation points at cloud metadata addresses
    (defaults, enums, description examples, a pattern that asks for a URL)."""
    capture = tmp_path / "hostile.tools-list.json"
    capture.write_text(json.dumps({"tools": HOSTILE_TOOLS}))
    record = tmp_path / "calls.jsonl"
    r = run(_wrapped(*argv_for(capture, record=record)), tmp_path)
    assert r.fatal is None and r.level1_met, not_passing(r)
    calls = _recorded(record)
    assert calls, "the closed-world READ tools are still called, with loopback values"
    for c in calls:
        for value in network.strings_in(c["arguments"]):
            assert not network.remote_urls(value), c
            assert "169.254" not in value and "metadata" not in value and "fd00" not in value, c
    _assert_safe(r)
    # the remote-only enum cannot be probed: it is said, not sent
    assert not [c for c in calls if c["tool"] == "get_mirror"]
