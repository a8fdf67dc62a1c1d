#!/usr/bin/env bash
# Installs the real peers the tests talk to into .peers/ (git-ignored). Idempotent.
# Today the tests need only python3 (its http.server serves pages to the fetch tool's tests);
# later issues add the npm and PyPI peers listed in ../shared/PEERS.md here.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .peers

if ! command -v python3 >/dev/null 2>&1; then
  echo "install-peers: python3 is required (the fetch tool's tests serve pages with python3 -m http.server)" >&2
  exit 1
fi
echo "install-peers: python3 $(python3 -c 'import sys; print(sys.version.split()[0])') ok"
