#!/usr/bin/env bash
# The `semantic` feature's tests (tool search ranked by a local sentence-embedding model fused
# with BM25; docs/search.md): the search unit tests with the feature, then the tests against the
# real all-MiniLM-L6-v2 that scripts/install-peers.sh unpacks into .peers/models/. The feature is
# off by default, so the workspace build has none of it: this builds toolgate-runtime once more
# with it, and candle and tokenizers (about 6 minutes on 2 cores, cold). scripts/test.sh runs
# it last, with `--no-install` (the peers are installed by then).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-install" ]; then
  scripts/install-peers.sh
fi

cargo test -p toolgate-runtime --features semantic --locked --lib search::
cargo test -p toolgate-runtime --features semantic --locked --test semantic_search
