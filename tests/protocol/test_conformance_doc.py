"""docs/conformance.md stays honest: every checklist ID of every Part A area has exactly one row,
every test it cites exists, and the summary table agrees with the rows."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "conformance.md"
CHECKLIST = ROOT / ".." / "shared" / "spec" / "CHECKLIST.md"
AREAS = (
    "RQF|VAL|RSP|ERR|MODE|CLS|MCP|INTRO|BATCH|FSEL|CQ|PAGE|AGG|COMP|REL|WARN|UPD|CONC|EXEC|LOOP|AUTO|OOB|TOKEN"
    "|GATE|TRUST|DANGER|RATE|SESS|LIMIT|DISC|ADPT|PLUG|GEN|CONF"
)
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


def test_every_checklist_area_is_covered():
    areas = set(re.findall(r"^### .+ \(`REQ-([A-Z]+)-\*`\)", CHECKLIST.read_text(encoding="utf-8"), re.M))
    assert areas == set(AREAS.split("|"))


def test_summary_counts_match_rows():
    text = DOC.read_text(encoding="utf-8")
    header = re.search(r"^\| Area \| IDs \| (.+) \|$", text, re.M)
    assert header
    labels = [c.strip() for c in header.group(1).split("|")]
    assert len(labels) == len(STATUSES)
    totals = [0] * len(STATUSES)
    rows = re.findall(r"^\| \[.+?\]\(#\w+\) \(`REQ-([A-Z]+)`\) \| (\d+) \| (.+) \|$", text, re.M)
    assert sorted(r[0] for r in rows) == sorted(AREAS.split("|"))
    for code, n, counts in rows:
        statuses = [c.strip() for c in re.findall(rf"^\| REQ-{code}-\d+ \| [^|]+ \| ([^|]+) \|", text, re.M)]
        expected = [sum(s.startswith(key) for s in statuses) for key in STATUSES]
        assert [int(c) for c in counts.split("|")] == expected, code
        assert int(n) == len(statuses), code
        totals = [a + b for a, b in zip(totals, expected, strict=True)]
    overall = re.search(r"^\| \*\*All\*\* \| \*\*(\d+)\*\* \| (.+) \|$", text, re.M)
    assert overall
    assert [int(c.strip().strip("*")) for c in overall.group(2).split("|")] == totals
    assert int(overall.group(1)) == sum(totals)
