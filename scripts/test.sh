#!/usr/bin/env bash
# The whole test suite: installs the real peers the tests talk to, then runs every test
# (unit, integration, trybuild, insta snapshots, doc tests, and each benchmark once), and the
# `semantic` feature's tests.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-peers.sh

cargo test --workspace --all-targets --locked
# Semantic ranking (the runtime's `semantic` feature, off by default, so the line above builds
# none of it): the search unit tests with the feature, then the tests against the real
# all-MiniLM-L6-v2 that install-peers.sh unpacked into .peers/models/ (docs/search.md).
cargo test -p toolgate-runtime --features semantic --locked --lib search::
cargo test -p toolgate-runtime --features semantic --locked --test semantic_search
cargo test --workspace --doc --locked
