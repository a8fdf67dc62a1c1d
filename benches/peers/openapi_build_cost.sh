#!/usr/bin/env bash
# What compiling OpenAPI documents in (`load: build`, the default) adds to `cargo build`.
#
# Builds scratch crates in a temp dir, each with a path dependency on this workspace's toolgate
# (default features off, as the examples use it) and toolgate-codegen (build-dependency), a
# build.rs that calls `toolgate_codegen::compile("tools.yaml")` and writes how long that took to
# $OUT_DIR, and a lib.rs with `toolgate::include_toolset!()`. Variants, one crate each (so no
# incremental state is shared between them; every build is the crate's first):
#
#   baseline  tools.yaml with no source (an empty toolset)
#   untyped   GitHub + Stripe, `typed: false` (tools only, no argument structs / functions)
#   typed     GitHub + Stripe, `typed: true` (the default)
#   catalog   examples/openapi-catalog/tools.yaml (every document under tests/specs, 33 entries;
#             its one `hook:` line dropped, the hook being that crate's code)
#
# Dev profile (`cargo build`), with the workspace's Cargo.lock and [profile.*] sections copied
# (toolgate-model, serde_json and serde-saphyr are optimised in dev builds, as in the workspace).
# All crates share one CARGO_TARGET_DIR (default: this workspace's target/, so that toolgate's
# dependencies are not rebuilt); one untimed build of the baseline first compiles whatever is
# missing. Then, for each variant: touch build.rs, `cargo build`, timed. Reported per variant:
# the whole build (wall), the codegen (the build script's `compile` call, measured inside it),
# the rest (compiling the build script and the crate: the generated code), the generated Rust
# lines in OUT_DIR (`wc -l` of *.rs) and the embedded JSON bytes; then the compile time the
# generated code adds = rest − baseline's rest; and the rebuild after touching build.rs once
# more (the script reruns, the generated code is the same: incremental compilation reuses the
# crate's work). One JSON line per variant on stdout, a markdown
# table at the end.
#
# Usage: benches/peers/openapi_build_cost.sh [VARIANT ...]   (default: all four; ~3-5 min on
# 2 cores once the dependencies are built). KEEP=1 keeps the temp dir.
#
# Not run by scripts/bench.sh: its first, untimed build compiles toolgate's dependencies in the
# dev profile, which nothing else in the suite builds (on a fresh target dir ~560 CPU-seconds,
# 16 min of wall time on a shared 2-core machine), and the timed builds take ~170 CPU-seconds,
# 3-4 min, more; the suite's budget has no room for that. BENCHMARKS.md's build-cost table is
# this script's output, pasted by hand with its date.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
variants=("$@")
if [ "${#variants[@]}" -eq 0 ]; then variants=(baseline untyped typed catalog); fi
WORK="$(mktemp -d -t toolgate-build-cost.XXXXXX)"
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$WORK"' EXIT; fi
GITHUB="$ROOT/tests/specs/github/github-api.github.com-octokit-openapi-23.0.2.json"
STRIPE="$ROOT/tests/specs/stripe/stripe-spec3-2023-09-12.yaml"

# The workspace's profile sections (everything from the first [profile.…] header to the next
# non-profile header).
profiles="$(awk '/^\[/{p = ($0 ~ /^\[profile\./)} p' "$ROOT/Cargo.toml")"

tools_yaml() {
  case "$1" in
    baseline|warmup) printf 'version: 1\ntools: {}\n' ;;
    untyped)  printf 'version: 1\ntools:\n  openapi:\n    - {id: github, spec: %s, typed: false}\n    - {id: stripe, spec: %s, typed: false}\n' "$GITHUB" "$STRIPE" ;;
    typed)    printf 'version: 1\ntools:\n  openapi:\n    - {id: github, spec: %s}\n    - {id: stripe, spec: %s}\n' "$GITHUB" "$STRIPE" ;;
    catalog)  sed -e "s#\.\./\.\./tests/specs/#$ROOT/tests/specs/#g" -e '/^[[:space:]]*hook:/d' \
                "$ROOT/examples/openapi-catalog/tools.yaml" ;;
    *) echo "openapi_build_cost: unknown variant $1" >&2; exit 2 ;;
  esac
}

make_crate() { # variant -> crate dir
  local v="$1" dir="$WORK/$1"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<EOF
[package]
name = "toolgate-build-cost-$v"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
toolgate = { path = "$ROOT", default-features = false }

[build-dependencies]
toolgate-codegen = { path = "$ROOT/codegen" }

[workspace]

$profiles
EOF
  cp "$ROOT/Cargo.lock" "$dir/Cargo.lock"
  cat > "$dir/build.rs" <<'EOF'
fn main() {
    let t = std::time::Instant::now();
    toolgate_codegen::compile("tools.yaml");
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(format!("{out}/codegen_seconds"), t.elapsed().as_secs_f64().to_string())
        .expect("write codegen_seconds");
}
EOF
  cat > "$dir/src/lib.rs" <<'EOF'
#![allow(missing_docs, dead_code, clippy::all)]
pub mod toolset {
    toolgate::include_toolset!();
}
EOF
  tools_yaml "$v" > "$dir/tools.yaml"
  echo "$dir"
}

build() { # dir -> prints "wall_seconds out_dir blocked"
  local dir="$1" log start end out_dir blocked=0
  log="$dir/build.log"
  start=$(date +%s.%N)
  if ! cargo build --manifest-path "$dir/Cargo.toml" --message-format=json >"$log.json" 2>"$log"; then
    echo "openapi_build_cost: cargo build failed in $dir:" >&2; tail -30 "$log" >&2; exit 1
  fi
  end=$(date +%s.%N)
  grep -q "Blocking waiting for file lock" "$log" && blocked=1
  out_dir=$(jq -r 'select(.reason == "build-script-executed" and (.package_id | contains("toolgate-build-cost"))) | .out_dir' "$log.json" | tail -1)
  echo "$(echo "$end - $start" | bc) $out_dir $blocked"
}

echo "openapi_build_cost: target dir $CARGO_TARGET_DIR, work dir $WORK" >&2
echo "openapi_build_cost: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(rustc --version)" >&2
warm="$(make_crate warmup)"
echo "openapi_build_cost: untimed build of the dependencies..." >&2
warm_out="$(build "$warm")"
echo "openapi_build_cost: dependencies built in ${warm_out%% *} s" >&2

declare -A REST WALL CODEGEN LINES JSONB REWALL
for v in "${variants[@]}"; do
  dir="$(make_crate "$v")"
  # A first untimed build would make the timed one a no-op; build.rs is new, so the timed
  # build compiles the build script, runs it and compiles the crate, like a changed tools.yaml.
  touch "$dir/build.rs"
  echo "openapi_build_cost: $v: cargo build (dev)..." >&2
  read -r wall out_dir blocked < <(build "$dir")
  codegen=$(cat "$out_dir/codegen_seconds")
  lines=$(cat "$out_dir"/*.rs | wc -l)
  jsonb=$( (cat "$out_dir"/*.json 2>/dev/null || true) | wc -c)
  rest=$(echo "$wall - $codegen" | bc)
  # Then the rebuild a touched build.rs (or any change that reruns the build script without
  # changing the generated code) costs: incremental compilation reuses the crate's work.
  touch "$dir/build.rs"
  read -r rewall _ reblocked < <(build "$dir")
  [ "$reblocked" = 1 ] && blocked=1
  REWALL[$v]=$rewall
  WALL[$v]=$wall; CODEGEN[$v]=$codegen; REST[$v]=$rest; LINES[$v]=$lines; JSONB[$v]=$jsonb
  printf '{"variant": "%s", "build_s": %.2f, "codegen_s": %.2f, "rest_s": %.2f, "generated_rs_lines": %d, "embedded_json_bytes": %d, "rebuild_after_touch_s": %.2f, "waited_for_lock": %s}\n' \
    "$v" "$wall" "$codegen" "$rest" "$lines" "$jsonb" "$rewall" "$([ "$blocked" = 1 ] && echo true || echo false)"
  if [ "$blocked" = 1 ]; then
    echo "openapi_build_cost: WARNING: $v waited for the target dir's lock (another build): its time includes the wait" >&2
  fi
done

echo
echo "$(date -u +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(rustc --version | cut -d' ' -f1-2), dev profile, load average $(cut -d' ' -f1 /proc/loadavg) at the end"
echo
echo "| variant | cargo build | codegen (build script) | compiling the rest | added by the generated code | generated Rust lines | embedded JSON | rebuild after touching build.rs |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for v in "${variants[@]}"; do
  added="–"
  if [ -n "${REST[baseline]:-}" ] && [ "$v" != baseline ]; then
    added=$(printf '%+.1f s' "$(echo "${REST[$v]} - ${REST[baseline]}" | bc)")
  fi
  printf '| %s | %.1f s | %.1f s | %.1f s | %s | %s | %s KB | %.1f s |\n' "$v" "${WALL[$v]}" "${CODEGEN[$v]}" "${REST[$v]}" \
    "$added" "${LINES[$v]}" "$(( ${JSONB[$v]} / 1024 ))" "${REWALL[$v]}"
done
