#!/usr/bin/env bash
# The whole test suite: installs the real peers the tests talk to, then runs every test
# (unit, integration, trybuild, insta snapshots, doc tests, and each benchmark once).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-peers.sh

cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
# The optional `semantic` feature's tests (tool search with a local embedding model).
scripts/test-semantic.sh --no-install
# The deployment files (Dockerfile, deploy/kubernetes): hadolint, the Kubernetes schemas, and
# the ConfigMap's tools.yaml loaded by the binary the tests built (offline, seconds).
scripts/check-deploy.sh
