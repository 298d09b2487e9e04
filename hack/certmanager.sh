#!/usr/bin/env bash
# Builds cert-manager's controller (tools/certmanager) for the tests, cached by
# its version and its build module's sums in the project's cache (hack/lib.sh),
# and prints its path. With --print it prints the path only. Its build module
# raises the modules that it shares with the distribution (Kubernetes' client
# libraries, controller-runtime, gRPC, OpenTelemetry) to the distribution's
# versions, as the other build modules do (tools/modalign checks it): a cold
# build then compiles those packages once, not once for cert-manager and once
# for the rest.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=hack/lib.sh
source "$root/hack/lib.sh"
mod="$root/tools/certmanager"
version=$(awk '$1 == "github.com/cert-manager/cert-manager" {print $2; exit}' "$mod/go.mod")
# "-<hash>": the build module's sums, so that other versions of its
# dependencies build anew beside the old.
bin="$NETWORK_ENFORCER_CACHE/certmanager/cert-manager-$version-$(sha256sum "$mod/go.sum" | cut -c1-12)/cert-manager-controller"

if [[ "${1:-}" == "--print" || -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi
tmp=$(partial_dir "$(dirname "$bin")")
trap 'rm -rf "$tmp"' EXIT
(cd "$mod" && phase "cert-manager's controller $version" go build -ldflags "-s -w" -o "$tmp/" . >&2)
mkdir -p "$(dirname "$bin")"
mv -f "$tmp/certmanager" "$bin"
echo "$bin"
