#!/usr/bin/env bash
# Installs the real peers the tests talk to into .peers/ (git-ignored). Idempotent, and fast when
# everything is present. Today: python3 (its http.server serves pages to the fetch tool's tests)
# and the BFCL data (PyPI bfcl-eval, for the corpus test); later issues add the npm and PyPI peers
# listed in ../shared/PEERS.md here.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .peers

if ! command -v python3 >/dev/null 2>&1; then
  echo "install-peers: python3 is required (the fetch tool's tests serve pages with python3 -m http.server)" >&2
  exit 1
fi
echo "install-peers: python3 $(python3 -c 'import sys; print(sys.version.split()[0])') ok"

# BFCL (Berkeley Function Calling Leaderboard) data, for runtime/tests/bfcl_corpus.rs: the PyPI
# wheel `bfcl-eval` (pure Python), unpacked with python3's zipfile into .peers/bfcl/, then its
# multi-turn ground truth (Python call strings) converted to JSON (scripts/bfcl_multi_turn_calls.py).
BFCL_VERSION=2026.3.23
BFCL_DIR=.peers/bfcl
if [ "$(cat "$BFCL_DIR/.version" 2>/dev/null)" != "$BFCL_VERSION" ] || [ ! -d "$BFCL_DIR/bfcl_eval/data" ]; then
  rm -rf "$BFCL_DIR" .peers/wheels/bfcl
  mkdir -p .peers/wheels/bfcl
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "bfcl-eval==$BFCL_VERSION" -d .peers/wheels/bfcl
  python3 - "$BFCL_DIR" .peers/wheels/bfcl/bfcl_eval-"$BFCL_VERSION"-*.whl <<'PY'
import sys, zipfile
dest, wheel = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest)
PY
  echo "$BFCL_VERSION" > "$BFCL_DIR/.version"
fi
if [ ! -f "$BFCL_DIR/multi_turn_calls.jsonl" ] || [ scripts/bfcl_multi_turn_calls.py -nt "$BFCL_DIR/multi_turn_calls.jsonl" ]; then
  python3 scripts/bfcl_multi_turn_calls.py "$BFCL_DIR"
fi
echo "install-peers: bfcl-eval $BFCL_VERSION ok ($BFCL_DIR/bfcl_eval/data)"
