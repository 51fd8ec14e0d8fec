#!/usr/bin/env bash
# The whole test suite: create/reuse .venv, install mcpaql with test extras and the real upstream
# MCP servers the wrap tests talk to, then run pytest (extra args go to pytest).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXTRAS=test source "$ROOT/scripts/venv.sh"
if [ -x "$ROOT/scripts/upstreams.sh" ]; then
  bash "$ROOT/scripts/upstreams.sh"
fi
# The spec's own conformance runner (npm ci, pinned by its lockfile): its verdicts are tested.
bash "$ROOT/tests/conformance/install_spec_runner.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m pytest "$@"
