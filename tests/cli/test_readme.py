"""The README's "Python API in ten lines" example, served as a file with `mcpaql serve`, works
as the README says (the example is extracted from README.md, so the two cannot drift)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))


def readme_example(tmp_path: Path) -> Path:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, "README has no python example"
    path = tmp_path / "notes.py"
    path.write_text(block.group(1), encoding="utf-8")
    return path


def call(example: Path, operation: str, params: dict) -> dict:
    r = subprocess.run(
        [MCPAQL, "call", "--json", "-o", operation, "-p", json.dumps(params), "--", MCPAQL, "serve", str(example)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_readme_python_example_serves(tmp_path: Path) -> None:
    example = readme_example(tmp_path)
    got = call(example, "get_note", {"note_id": "n_1"})
    assert got == {"success": True, "data": {"note_id": "n_1", "text": "hello", "kind": "idea"}}
    assert call(example, "reindex", {"full": True}) == {"success": True, "data": {"reindexed": True}}
    detail = call(example, "introspect", {"query": "types", "name": "Kind"})
    assert detail["data"]["type"] == {"name": "Kind", "kind": "enum", "values": ["idea", "todo"]}
