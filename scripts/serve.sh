#!/usr/bin/env bash
# The main job: serve the embedded Task Tracker demo adapter over stdio (extra args go to `mcpaql serve`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/venv.sh"
exec "$ROOT/.venv/bin/mcpaql" serve "$@"
