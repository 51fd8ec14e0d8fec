#!/usr/bin/env bash
# Real upstream MCP servers for the wrap tests (npm + PyPI); see tests/wrap/install_upstreams.sh.
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/wrap/install_upstreams.sh"
