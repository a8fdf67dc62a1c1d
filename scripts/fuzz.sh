#!/usr/bin/env bash
# Builds the fuzz targets in fuzz/ (cargo-fuzz, libFuzzer) and runs each for a while; see
# docs/fuzzing.md. Usage:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 20 s each, every target
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 3600 validate   # a long run: whichever ends first
#   FUZZ_SEED=1 scripts/fuzz.sh 20             # libFuzzer's random seed fixed (.ci/run)
#
# Installs cargo-fuzz (pinned) when it is missing or another version. The machine's stable
# toolchain builds the targets with `-s none`: no sanitizer (the code is safe Rust; ASan would
# need nightly's -Zsanitizer), and libFuzzer's coverage instrumentation is made of stable
# codegen options, so no nightly and no RUSTC_BOOTSTRAP is needed. New inputs go to
# fuzz/corpus/<target> (git-ignored), seeded from fuzz/seeds/<target> (committed); a crash or a
# timeout fails the script, its input saved under fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.1
SECONDS_EACH=${1:-20}
shift || true
RUNS=${FUZZ_RUNS:-}
SEED=${FUZZ_SEED:-}

if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

FUZZ_BUILD=(--sanitizer none --debug-assertions --release)

cd fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi

echo "== cargo fuzz build (${#targets[@]} targets)"
start=$(date +%s)
cargo fuzz build "${FUZZ_BUILD[@]}"
echo "fuzz: build took $(( $(date +%s) - start )) s"

for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "artifacts/$target"
  echo "== fuzz $target for ${SECONDS_EACH} s${RUNS:+ or $RUNS runs}"
  # -timeout: one input taking longer is a finding (a hang); -rss_limit_mb: so is one using
  # more memory. -print_final_stats: the executions and speed reported in docs/fuzzing.md.
  log="artifacts/$target/last-run.log"
  status=0
  cargo fuzz run "${FUZZ_BUILD[@]}" "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$SECONDS_EACH" ${RUNS:+-runs="$RUNS"} ${SEED:+-seed="$SEED"} -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="artifacts/$target/" >"$log" 2>&1 ||
    status=$?
  grep -E '^(INFO: seed corpus|#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|Done [0-9]+ runs)' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target FAILED (exit $status); the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
done
echo "fuzz: ${#targets[@]} targets ran ${SECONDS_EACH} s${RUNS:+ or $RUNS runs} each without a crash"
