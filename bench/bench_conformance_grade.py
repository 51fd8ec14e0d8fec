"""Grading an evidence bundle: ``mcpaql conformance grade`` (mcpaql.conformance.grade, in
process) versus the spec repository's own runner (``node run-conformance-tests.mjs test``, a
process per bundle), side by side in one run, on the same bundle and level.

    .venv/bin/python bench/bench_conformance_grade.py EVIDENCE.json [--level 2] [--repeat 20]
        [--runner .cache-upstreams/spec-runner/scripts/run-conformance-tests.mjs]

Prints the best wall time of each and their ratio, and checks both gave the same exit code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from mcpaql.conformance import default_schema_dir, grade_bundle

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("evidence")
    ap.add_argument("--level", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--runner", default=str(ROOT / ".cache-upstreams" / "spec-runner" / "scripts" / "run-conformance-tests.mjs"))
    a = ap.parse_args()
    schemas = default_schema_dir() or (ROOT.parent / "shared" / "spec" / "schemas")
    bundle = json.loads(Path(a.evidence).read_text())
    best_py, best_node, codes = float("inf"), float("inf"), set()
    for _ in range(a.repeat):
        t = time.perf_counter()
        g = grade_bundle(bundle, a.level, schemas)  # includes compiling the schemas, as the runner does
        best_py = min(best_py, time.perf_counter() - t)
        t = time.perf_counter()
        p = subprocess.run(
            ["node", a.runner, "test", a.evidence, "--level", str(a.level), "--tier", "1", "--format", "json"],
            capture_output=True,
        )
        best_node = min(best_node, time.perf_counter() - t)
        codes.add((g.exit_code, p.returncode))
    print(f"bundle: {Path(a.evidence).name}  ({len(json.dumps(bundle)) // 1024} KiB)  level {a.level}")
    print(f"mcpaql grade (in process)  best {best_py * 1000:8.1f} ms")
    print(f"spec runner (node process) best {best_node * 1000:8.1f} ms")
    print(f"ratio runner/grade: {best_node / best_py:.1f}x   exit codes (grade, runner): {sorted(codes)}")


if __name__ == "__main__":
    main()
