#!/usr/bin/env bash
# The spec repository's own conformance runner (scripts/run-conformance-tests.mjs, AGPL, used as a
# tool, never copied into the project), made runnable: its folder copied somewhere writable and
# `npm ci` there, pinned by the spec's package-lock.json. Idempotent; reinstalls when the lockfile
# changes. tests/conformance/test_runner_agreement.py runs it on the evidence mcpaql writes.
#   MCPAQL_SPEC_DIR         the spec checkout (default ../shared/spec next to the repository)
#   MCPAQL_SPEC_RUNNER_DIR  where to install (default .cache-upstreams/spec-runner)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SPEC="${MCPAQL_SPEC_DIR:-$ROOT/../shared/spec}"
DIR="${MCPAQL_SPEC_RUNNER_DIR:-$ROOT/.cache-upstreams/spec-runner}"
[ -f "$SPEC/scripts/run-conformance-tests.mjs" ] || { echo "spec runner not found under $SPEC" >&2; exit 1; }
mkdir -p "$DIR/scripts" "$DIR/tests/conformance"
# The runner reads ROOT/schemas and ROOT/tests/conformance/evidence relative to its own folder.
cp "$SPEC/scripts/run-conformance-tests.mjs" "$DIR/scripts/"
rm -rf "$DIR/schemas" "$DIR/tests/conformance/evidence"
cp -r "$SPEC/schemas" "$DIR/schemas"
cp -r "$SPEC/tests/conformance/evidence" "$DIR/tests/conformance/evidence"
if [ ! -d "$DIR/node_modules/ajv" ] || ! cmp -s "$SPEC/package-lock.json" "$DIR/package-lock.json"; then
  cp "$SPEC/package.json" "$SPEC/package-lock.json" "$DIR/"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi
# Self-check: the runner grades its own reference bundles as they expect.
(cd "$DIR" && node scripts/run-conformance-tests.mjs verify-fixtures >/dev/null)
