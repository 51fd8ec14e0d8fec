"""Print the per-server classification table of every captured surface as Markdown.

    python scripts/classification_table.py [DIR …]   (default: tests/wrap/surfaces and ../shared/fixtures/surfaces)

One row per tool: server, tool, the annotations it declares (``ro``/``de``/``id``/``ow``, ``!`` for
false), class, danger, whether ``wrap --read-only`` serves it, and what decided. docs/wrap.md
embeds this output between markers; ``tests/wrap/test_classify_captures.py`` checks it is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcpaql.adapters.upstream.classify import classify

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIRS = (ROOT / "tests" / "wrap" / "surfaces", ROOT.parent / "shared" / "fixtures" / "surfaces")
_HINTS = (("readOnlyHint", "ro"), ("destructiveHint", "de"), ("idempotentHint", "id"), ("openWorldHint", "ow"))


def hints(annotations: dict) -> str:
    out = [short if annotations.get(key) is True else f"!{short}" for key, short in _HINTS if key in annotations]
    return " ".join(out) or "—"


def table(dirs: tuple[Path, ...] = DEFAULT_DIRS) -> str:
    lines = ["| server | tool | annotations | class | danger | --read-only | why |", "|---|---|---|---|---|---|---|"]
    for d in dirs:
        for path in sorted(d.glob("*.tools-list.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            for t in data["tools"] if isinstance(data, dict) else data:
                c = classify(t)
                served = "served" if c.read_only_exclusion() is None else "left out"
                why = c.decided_by() + (f" — review: {'; '.join(c.review_reasons)}" if c.needs_review else "")
                lines.append(
                    f"| {path.name.removesuffix('.tools-list.json')} | `{t['name']}` | "
                    f"{hints(t.get('annotations') or {})} | {c.category.value} | {c.danger_level} | {served} | "
                    f"{why.replace('|', '/')} |"
                )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(table(tuple(Path(a) for a in sys.argv[1:]) or DEFAULT_DIRS))
