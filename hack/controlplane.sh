#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, etcd)
# from the Go modules pinned in hack/controlplane/go.mod into a versioned cache
# folder, and prints that folder. A later run with the same versions reuses it.
#
# Usage: hack/controlplane.sh            build if missing, print the folder
#        hack/controlplane.sh --print    print the folder only
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/hack/controlplane"
# Versions come from go.mod itself, so bumping a module there rebuilds into a new folder.
modversion() { grep -E "^\s*(require\s+)?$1 v" "$mod/go.mod" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) {print $i; exit}}'; }
k8s_version=$(modversion k8s.io/kubernetes)
etcd_version=$(modversion go.etcd.io/etcd/server/v3)
dir="$root/.cache/controlplane/kubernetes-${k8s_version}-etcd-${etcd_version}"

if [[ "${1:-}" == "--print" ]]; then
	echo "$dir"
	exit 0
fi

if [[ -x "$dir/kube-apiserver" && -x "$dir/kube-controller-manager" && -x "$dir/etcd" ]]; then
	echo "$dir"
	exit 0
fi

tmp="$dir.partial"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version}"
ldflags+=" -X k8s.io/component-base/version.gitMajor=$(cut -d. -f1 <<<"${k8s_version#v}")"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"${k8s_version}")"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

cd "$mod"
start=$SECONDS
for cmd in kube-apiserver kube-controller-manager; do
	echo "building $cmd $k8s_version" >&2
	CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done
echo "building etcd $etcd_version" >&2
CGO_ENABLED=0 go build -ldflags "-s -w" -o "$tmp/etcd" ./etcd
mv "$tmp" "$dir"
trap - EXIT
echo "control plane built in $((SECONDS - start))s" >&2
echo "$dir"
