#!/usr/bin/env bash
# Create or reuse .venv at the repo root and install mcpaql into it (editable).
# Sourced by serve.sh and test.sh; EXTRAS selects optional dependency groups.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
STAMP="$ROOT/.venv/.mcpaql-installed${EXTRAS:+-$EXTRAS}"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  "$ROOT/.venv/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT${EXTRAS:+[$EXTRAS]}" >&2
  touch "$STAMP"
fi
