#!/usr/bin/env bash
# OpenAPI conversion time, toolgate vs FastMCP, on the big vendored documents (GitHub, Stripe).
# FastMCP: benches/peers/fastmcp_openapi.py in .peers/venv-fastmcp (scripts/install-peers.sh),
# one JSON line per document. toolgate: `toolgate openapi inspect --json DOC` (parse + convert +
# print), wall time of the whole command, when a release binary exists (cargo build --release;
# another binary with TOOLGATE_BIN=...). Usage: benches/peers/openapi_conversion.sh [DOC ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
docs=("$@")
if [ "${#docs[@]}" -eq 0 ]; then
  docs=(tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json
        tests/specs/stripe/stripe-spec3-2023-09-12.yaml)
fi
PY=.peers/venv-fastmcp/bin/python
if [ ! -x "$PY" ]; then
  echo "openapi_conversion: $PY is missing: run scripts/install-peers.sh first" >&2
  exit 1
fi
"$PY" benches/peers/fastmcp_openapi.py "${docs[@]}"
BIN="${TOOLGATE_BIN:-target/release/toolgate}"
if [ ! -x "$BIN" ]; then
  echo "openapi_conversion: $BIN is missing (cargo build --release): toolgate timings skipped" >&2
  exit 0
fi
for doc in "${docs[@]}"; do
  start=$(date +%s.%N)
  if "$BIN" openapi inspect --json "$doc" > /tmp/toolgate-openapi-inspect.$$.json; then err=null; else err='"exit status '$?'"'; fi
  end=$(date +%s.%N)
  tools=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d.get("tools", d) if isinstance(d, dict) else d; print(len(t) if isinstance(t, list) else "null")' /tmp/toolgate-openapi-inspect.$$.json 2>/dev/null || echo null)
  rm -f /tmp/toolgate-openapi-inspect.$$.json
  printf '{"doc": "%s", "impl": "toolgate", "inspect_s": %s, "tools": %s, "error": %s}\n' \
    "$doc" "$(echo "$end - $start" | bc)" "$tools" "$err"
done
