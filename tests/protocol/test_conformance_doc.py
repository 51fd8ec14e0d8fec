"""docs/conformance.md stays honest: every checklist ID of the core's areas has exactly one row,
and every test it cites exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "conformance.md"
CHECKLIST = ROOT / ".." / "shared" / "spec" / "CHECKLIST.md"
AREAS = "RQF|VAL|RSP|ERR|MODE|CLS|MCP|INTRO|SESS|LIMIT"
STATUSES = ("done", "partial", "not applicable", "client obligation", "not implemented", "see e2e")


def test_every_requirement_has_one_row():
    ids = re.findall(rf"^\| \d+ \| (REQ-(?:{AREAS})-\d+) \|", CHECKLIST.read_text(encoding="utf-8"), re.M)
    rows = re.findall(rf"^\| (REQ-(?:{AREAS})-\d+) \| ([^|]+) \| ([^|]+) \|", DOC.read_text(encoding="utf-8"), re.M)
    assert sorted(r[0] for r in rows) == sorted(ids)
    for rid, _, status in rows:
        assert status.strip().startswith(STATUSES), rid


def test_cited_tests_exist():
    refs = re.findall(r"`(tests/[^`:]+)::([A-Za-z0-9_]+)`", DOC.read_text(encoding="utf-8"))
    assert refs
    for path, name in refs:
        source = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^(async )?def {name}\b", source, re.M), f"{path}::{name} not found"


def test_done_rows_cite_a_test():
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 4 and cells[1].startswith("REQ-") and cells[3].startswith("done"):
            assert "::test_" in cells[4], cells[1]
