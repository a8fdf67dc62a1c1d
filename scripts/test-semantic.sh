#!/usr/bin/env bash
# The `semantic` feature's tests (tool search ranked by a local sentence-embedding model fused
# with BM25; docs/search.md): the search unit tests with the feature, then the tests against the
# real all-MiniLM-L6-v2 that scripts/install-peers.sh unpacks into .peers/models/. The feature is
# off by default, so scripts/test.sh builds none of it; compiling candle and tokenizers adds
# about 6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-peers.sh

cargo test -p toolgate-runtime --features semantic --locked --lib search::
cargo test -p toolgate-runtime --features semantic --locked --test semantic_search
