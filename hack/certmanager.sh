#!/usr/bin/env bash
# Builds cert-manager's controller (tools/certmanager) for the tests, cached by
# its version in the project's cache (hack/lib.sh), and prints its path. With --print it
# prints the path only. cert-manager pins its own Kubernetes libraries, so its
# build module keeps cert-manager's versions, not the distribution's.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=hack/lib.sh
source "$root/hack/lib.sh"
mod="$root/tools/certmanager"
version=$(awk '$1 == "github.com/cert-manager/cert-manager" {print $2; exit}' "$mod/go.mod")
bin="$NETWORK_ENFORCER_CACHE/certmanager/cert-manager-$version/cert-manager-controller"

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
