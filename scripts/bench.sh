#!/usr/bin/env bash
# The benchmark suite: every benchmark of benches/ (toolgate and the peer it is compared with, in
# the same run on the same machine), then BENCHMARKS.md's tables rewritten from the results.
#
#   scripts/bench.sh                     # the full suite (about 30 min on 2 cores, build included)
#   scripts/bench.sh --quick             # fewer rounds and sizes (about 5 min once built)
#   scripts/bench.sh --only dispatch,mcp # some benchmarks (the other tables are kept as they are)
#   scripts/bench.sh --save-baseline main   # also save criterion's estimates as baseline `main`
#   scripts/bench.sh --baseline main        # criterion compares against baseline `main`
#   scripts/bench.sh --no-install        # skip scripts/install-peers.sh (peers already there)
#   scripts/bench.sh --no-write          # measure and print, leave BENCHMARKS.md alone
#
# Results: target/bench-results/<table>.json (one per table), logs in
# target/bench-results/logs/<bench>.log, BENCHMARKS.md updated between its
# `<!-- bench:<table> -->` markers by `bench-report`. Exits 1 when a benchmark failed (the others
# still run and their tables are still written).
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(dispatch validation pipeline guardrails instructions scale search store mcp a2a gateway openapi)
only=""
quick=0
install=1
write=1
criterion_args=()

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --only) only="${2:?--only needs a comma-separated list: ${ALL[*]}}"; shift ;;
    --only=*) only="${1#--only=}" ;;
    --save-baseline) criterion_args+=(--save-baseline "${2:?--save-baseline needs a name}"); shift ;;
    --baseline) criterion_args+=(--baseline "${2:?--baseline needs a name}"); shift ;;
    --no-install) install=0 ;;
    --no-write) write=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench.sh: unknown option \`$1\`" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

benches=("${ALL[@]}")
if [ -n "$only" ]; then
  IFS=',' read -r -a benches <<<"$only"
  for b in "${benches[@]}"; do
    case " ${ALL[*]} " in
      *" $b "*) ;;
      *) echo "bench.sh: no benchmark \`$b\` (there are: ${ALL[*]})" >&2; exit 2 ;;
    esac
  done
fi

now() { date +%s; }
start=$(now)
results=target/bench-results
rm -rf "$results"
mkdir -p "$results/logs"
timings="$results/logs/timings.tsv"
: >"$timings"

export TOOLGATE_BENCH_QUICK=$quick
export TOOLGATE_BENCH_DATE=${TOOLGATE_BENCH_DATE:-$(date -u +%F)}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit+changes"
fi
export TOOLGATE_BENCH_COMMIT=${TOOLGATE_BENCH_COMMIT:-$commit}

mode=full
[ "$quick" = 1 ] && mode=quick
echo "bench.sh: $mode run of ${benches[*]} at $TOOLGATE_BENCH_COMMIT ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"

if [ "$install" = 1 ]; then
  t=$(now)
  scripts/install-peers.sh >"$results/logs/install-peers.log" 2>&1 \
    || { echo "bench.sh: scripts/install-peers.sh failed; see $results/logs/install-peers.log" >&2; exit 1; }
  printf 'install peers\tok\t%s\n' "$(($(now) - t))" >>"$timings"
fi

# One release build of every benchmark, the report tool and the gateway binary, timed apart
# from the measurements. The first command builds the binaries with the benches' feature set
# (benches/Cargo.toml has no dev-dependencies), so the second compiles only the bench targets.
t=$(now)
echo "bench.sh: building (release)…"
cargo build --release --locked -p toolgate -p toolgate-benches --features toolgate-benches/callgrind --bins 2>"$results/logs/build.log" \
  && cargo bench --locked -p toolgate-benches --features callgrind --no-run 2>>"$results/logs/build.log" \
  || { echo "bench.sh: the build failed; see $results/logs/build.log" >&2; tail -20 "$results/logs/build.log" >&2; exit 1; }
printf 'build (release)\tok\t%s\n' "$(($(now) - t))" >>"$timings"
export TOOLGATE_BIN="$PWD/target/release/toolgate"

# The instruction counts run under valgrind through gungraun, whose runner binary must be the
# version of the gungraun library (Cargo.lock pins it).
GUNGRAUN_VERSION=0.20.0
case " ${benches[*]} " in
  *" instructions "*)
    if ! command -v valgrind >/dev/null; then
      echo "bench.sh: valgrind is not installed (Debian: apt-get install valgrind): the instructions benchmark is left out" >&2
      benches=("${benches[@]/instructions}")
    elif [ "$(gungraun-runner --version 2>/dev/null)" != "gungraun-runner $GUNGRAUN_VERSION" ]; then
      echo "bench.sh: installing gungraun-runner $GUNGRAUN_VERSION"
      cargo install gungraun-runner --version "$GUNGRAUN_VERSION" --locked \
        >"$results/logs/gungraun-runner.log" 2>&1 \
        || { echo "bench.sh: cannot install gungraun-runner; see $results/logs/gungraun-runner.log" >&2; exit 1; }
    fi ;;
esac

# One benchmark: criterion's arguments, except for gungraun's (JSON summaries on stdout, one
# line per benchmark, made into the `instructions` table by bench-report). Every cargo command
# here has the `callgrind` feature, so that the benches' crate is compiled once.
run_bench() {
  if [ "$1" = instructions ]; then
    cargo bench --locked -p toolgate-benches --features callgrind --bench instructions -- --output-format=json \
      >"$results/logs/instructions.jsonl" 2>"$results/logs/instructions.log"
  else
    cargo bench --locked -p toolgate-benches --features callgrind --bench "$1" -- "${criterion_args[@]}" \
      >"$results/logs/$1.log" 2>&1
  fi
}

failed=()
for b in "${benches[@]}"; do
  [ -n "$b" ] || continue
  t=$(now)
  echo "bench.sh: $b…"
  if run_bench "$b"; then
    status=ok
  else
    status=failed
    failed+=("$b")
    echo "bench.sh: $b failed; the end of $results/logs/$b.log:" >&2
    tail -15 "$results/logs/$b.log" >&2
  fi
  secs=$(($(now) - t))
  printf '%s\t%s\t%s\n' "$b" "$status" "$secs" >>"$timings"
  echo "bench.sh: $b $status in ${secs}s"
done

printf 'total\t%s\t%s\n' "$([ ${#failed[@]} -eq 0 ] && echo ok || echo failed)" "$(($(now) - start))" >>"$timings"
if [ "$write" = 1 ]; then
  instructions=()
  # Only a complete run's counts: a failed one would leave rows out and fail every table.
  if grep -q "^instructions	ok	" "$timings"; then
    instructions=(--instructions "$results/logs/instructions.jsonl")
  fi
  target/release/bench-report --timings "$timings" "${instructions[@]}" BENCHMARKS.md "$results"
else
  echo "bench.sh: --no-write: tables in $results, BENCHMARKS.md left alone"
fi
echo "bench.sh: $mode run done in $(($(now) - start))s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench.sh: failed: ${failed[*]} (logs in $results/logs)" >&2
  exit 1
fi
