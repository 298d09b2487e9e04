#!/usr/bin/env bash
# Runs every Go test of the module: unit tests, the tests on the real control plane
# (kube-apiserver, etcd, kube-controller-manager from hack/controlplane.sh) and the
# tests of the built binary (bin/network-enforcer). `make test` builds both first.
#
# A test process that is killed (a timeout, ^C) cannot stop what it started, so on
# exit this script ends any control-plane process still running from the cache.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

assets=$(hack/controlplane.sh --print)
export KUBEBUILDER_ASSETS="$assets"
# Nothing that the tests need may be missing here: a test that would skip fails.
export NETWORK_ENFORCER_REQUIRE_ALL=1

cleanup() { pkill -f "^$assets/" 2>/dev/null || true; }
trap cleanup EXIT

go test -count=1 -timeout 20m "$@" ./...
