#!/usr/bin/env bash
# Calls per second of one vs three `toolgate serve` replicas behind haproxy (round robin), with
# rate limits and a budget kept in the process or in Redis: wrk POSTs `calc` calls to the REST
# API for DURATION seconds (default 10) over 16 connections, for each setup in turn.
#
#   scripts/bench-replicas.sh            # builds target/release/toolgate first
#   scripts/bench-replicas.sh 5          # 5 s per setup
#
# Needs haproxy, wrk and redis-server (Debian packages; scripts/install-peers.sh installs the
# first and the last). Every process listens on 127.0.0.1 and is stopped at the end. On a
# 2-core machine the replicas, haproxy and wrk share the same two cores: three replicas cannot
# be faster than one there; the numbers show what the balancer and the shared store cost.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"

for tool in haproxy wrk redis-server; do
  command -v "$tool" >/dev/null || { echo "bench-replicas: $tool is not installed" >&2; exit 1; }
done
cargo build --release --locked --bin toolgate >&2
BIN="$PWD/target/release/toolgate"
WORK="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() {
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "bench-replicas: nothing listens on 127.0.0.1:$1" >&2; exit 1
}

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port "$REDIS_PORT"

# The repository's tools.yaml plus a caller limit and a budget that never refuse here, so every
# call runs both checks (kept where `store:` says).
config() {
  local store="$1" out="$WORK/tools-$1.yaml"
  sed "s|    root: .|    root: $PWD|" tools.yaml >"$out"
  cat >>"$out" <<EOF
gateway:
  api_keys: [{name: bench, key: "bench-key-0123456789"}]
  session_key: "5f1c0d6b9e2a47c38d1e6f0a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e"
EOF
  python3 - "$out" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("policy:\n  defaults:\n    timeout_ms: 30000\n",
              "policy:\n  defaults:\n    timeout_ms: 30000\n    caller_rate_limit: 100000000/s\n    cost_per_call: 0.000001\n"
              "  budgets: {per_caller: 1000000000}\n", 1)
open(p, "w").write(s)
PY
  if [ "$store" = redis ]; then
    printf 'store:\n  redis: {url: "redis://127.0.0.1:%s"}\n' "$REDIS_PORT" >>"$out"
  fi
  echo "$out"
}

start_replicas() { # config count -> ports on stdout
  local cfg="$1" n="$2" ports=()
  for _ in $(seq 1 "$n"); do
    local port; port=$(free_port)
    RUST_LOG=error "$BIN" --config "$cfg" serve --http "127.0.0.1:$port" >"$WORK/replica-$port.log" 2>&1 &
    PIDS+=($!)
    ports+=("$port")
  done
  for p in "${ports[@]}"; do wait_port "$p"; done
  echo "${ports[@]}"
}

start_haproxy() { # ports... -> balancer port
  local port; port=$(free_port)
  {
    printf 'global\n  maxconn 1024\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n'
    printf 'frontend front\n  bind 127.0.0.1:%s\n  default_backend replicas\nbackend replicas\n  balance roundrobin\n' "$port"
    local i=0
    for p in "$@"; do printf '  server r%s 127.0.0.1:%s\n' "$i" "$p"; i=$((i + 1)); done
  } >"$WORK/haproxy-$port.cfg"
  haproxy -db -f "$WORK/haproxy-$port.cfg" >"$WORK/haproxy-$port.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
  echo "$port"
}

cat >"$WORK/post.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"expression": "2 * (3 + 4)"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = "bench-key-0123456789"
EOF

run() { # label port
  local out
  out=$(wrk -t2 -c16 -d"${DURATION}s" -s "$WORK/post.lua" "http://127.0.0.1:$2/tools/calc/call")
  local rps non2xx p50
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  p50=$(awk '/Latency/ {print $2; exit}' <<<"$out")
  printf '| %s | %s | %s | %s |\n' "$1" "$rps" "$p50" "${non2xx:-0}"
}

echo "| setup | calls/s | mean latency | non-2xx |"
echo "| --- | --- | --- | --- |"
for store in process redis; do
  cfg=$(config "$store")
  read -r -a one <<<"$(start_replicas "$cfg" 1)"
  run "1 replica, direct, limits in the $store" "${one[0]}"
  lb1=$(start_haproxy "${one[0]}")
  run "1 replica behind haproxy, limits in the $store" "$lb1"
  read -r -a three <<<"$(start_replicas "$cfg" 3)"
  lb3=$(start_haproxy "${three[@]}")
  run "3 replicas behind haproxy, limits in the $store" "$lb3"
done
