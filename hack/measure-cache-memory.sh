#!/usr/bin/env bash
# Measures the resident memory of the built collector when its enforcer extension
# caches a large cluster (50,000 pods and 10,000 workloads unless told otherwise),
# against the same pipeline without the extension. Flags go to testbed/cachemem:
#
#   hack/measure-cache-memory.sh                              the full cluster
#   hack/measure-cache-memory.sh -pods 5000 -workloads 1000   a quick check
#   hack/measure-cache-memory.sh -v -godebug gctrace=1        with the GC's trace
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

make build controlplane
KUBEBUILDER_ASSETS=$(hack/controlplane.sh --print)
export KUBEBUILDER_ASSETS

go run ./testbed/cachemem "$@"
