#!/usr/bin/env bash
# Install the real upstream MCP servers the wrap tests and benches talk to (idempotent).
#   npm:  @modelcontextprotocol/server-{everything,filesystem,memory} → .cache-upstreams/node_modules/.bin
#   PyPI: mcp-server-git, mcp-server-time                            → the project venv (.venv/bin)
#   PyPI: mcp-server-duckdb, office-word-mcp-server → one venv each in .cache-upstreams/venvs/NAME:
#         mcp-server-duckdb 1.1.0 needs mcp<2 (the project needs mcp>=2.3) and office-word-mcp-server
#         brings fastmcp and an unpinned pytest, so neither may share the project venv.
# Needs node ≥ 18 + npm, git, and the project venv. Override the npm dir with MCPAQL_UPSTREAMS_DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${MCPAQL_UPSTREAMS_DIR:-$ROOT/.cache-upstreams}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
NPM_PKGS=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
          @modelcontextprotocol/server-memory@2026.8.31)
mkdir -p "$DIR"
if [ ! -x "$DIR/node_modules/.bin/mcp-server-memory" ] || [ ! -x "$DIR/node_modules/.bin/mcp-server-everything" ] \
   || [ ! -x "$DIR/node_modules/.bin/mcp-server-filesystem" ]; then
  [ -f "$DIR/package.json" ] || echo '{"name":"mcpaql-upstreams","private":true,"version":"0.0.0"}' > "$DIR/package.json"
  (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error "${NPM_PKGS[@]}")
fi
# GitHub's REST description (OpenAPI 3, ~1,200 operations, 13 MB): the scale tests and bench.
OCTOKIT_OPENAPI=@octokit/openapi@23.0.2
if [ ! -f "$DIR/node_modules/@octokit/openapi/generated/api.github.com.json" ]; then
  [ -f "$DIR/package.json" ] || echo '{"name":"mcpaql-upstreams","private":true,"version":"0.0.0"}' > "$DIR/package.json"
  (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error "$OCTOKIT_OPENAPI")
fi
if ! "$PY" -c "import mcp_server_git, mcp_server_time" 2>/dev/null; then
  "$PY" -m pip install -q "mcp-server-git==2026.10.19" "mcp-server-time==2026.10.19"
fi
PYBASE="${UPSTREAM_PYTHON:-$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')}"
venv_pkg() {  # venv_pkg NAME EXE PIP-ARGS…: an isolated venv holding one upstream server
  local name="$1" exe="$2"; shift 2
  local v="$DIR/venvs/$name"
  [ -x "$v/bin/$exe" ] && return 0
  rm -rf "$v" && "$PYBASE" -m venv "$v" && "$v/bin/pip" install -q --disable-pip-version-check "$@"
}
venv_pkg duckdb mcp-server-duckdb "mcp-server-duckdb==1.1.0" "mcp==1.30.0" "duckdb==2.0.0"
venv_pkg office-word word_mcp_server "office-word-mcp-server==1.1.11" "fastmcp==4.1.2" "python-docx==1.2.0"
