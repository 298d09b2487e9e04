#!/usr/bin/env bash
# Builds cert-manager's controller (tools/certmanager) for the tests, cached by
# its version under .cache/certmanager, and prints its path. With --print it
# prints the path only. cert-manager pins its own Kubernetes libraries, so its
# build module keeps cert-manager's versions, not the distribution's.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/tools/certmanager"
version=$(awk '$1 == "github.com/cert-manager/cert-manager" {print $2; exit}' "$mod/go.mod")
bin="$root/.cache/certmanager/cert-manager-$version/cert-manager-controller"

if [[ "${1:-}" == "--print" || -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi
mkdir -p "$(dirname "$bin")"
start=$SECONDS
echo "building cert-manager's controller $version" >&2
(cd "$mod" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$bin.partial" .)
mv -f "$bin.partial" "$bin"
echo "cert-manager's controller built in $((SECONDS - start))s" >&2
echo "$bin"
