#!/usr/bin/env bash
# Finds or builds the test control plane (kube-apiserver, kube-controller-manager,
# etcd) and prints its folder:
#
#   1. $KUBEBUILDER_ASSETS, when that folder holds all three binaries (as a
#      folder of setup-envtest does once kube-controller-manager is added);
#   2. else $NETWORK_ENFORCER_CONTROLPLANE_DIR when set, or the versioned cache
#      folder controlplane/kubernetes-<v>-etcd-<v> of the project's cache
#      ($NETWORK_ENFORCER_CACHE, see hack/lib.sh), built there from the Go
#      modules pinned in tools/controlplane/go.mod when a binary is missing. A later
#      run with the same versions reuses it.
#
# Usage: hack/controlplane.sh            find, or build if missing; print the folder
#        hack/controlplane.sh --print    print the folder only, built or not
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=hack/lib.sh
source "$root/hack/lib.sh"
mod="$root/tools/controlplane"
binaries=(kube-apiserver kube-controller-manager etcd)

# complete reports whether the folder $1 holds every binary.
complete() {
	local bin
	for bin in "${binaries[@]}"; do
		[[ -f "$1/$bin" && -x "$1/$bin" ]] || return 1
	done
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && complete "$KUBEBUILDER_ASSETS"; then
	echo "$KUBEBUILDER_ASSETS"
	exit 0
fi

# Versions come from go.mod itself, so bumping a module there rebuilds into a new folder.
modversion() { grep -E "^\s*(require\s+)?$1 v" "$mod/go.mod" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) {print $i; exit}}'; }
k8s_version=$(modversion k8s.io/kubernetes)
etcd_version=$(modversion go.etcd.io/etcd/server/v3)
dir="${NETWORK_ENFORCER_CONTROLPLANE_DIR:-$NETWORK_ENFORCER_CACHE/controlplane/kubernetes-${k8s_version}-etcd-${etcd_version}}"

if [[ "${1:-}" == "--print" ]] || complete "$dir"; then
	echo "$dir"
	exit 0
fi

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
	echo "\$KUBEBUILDER_ASSETS ($KUBEBUILDER_ASSETS) does not hold all of ${binaries[*]}: building them into $dir" >&2
fi

tmp=$(partial_dir "$dir")
trap 'rm -rf "$tmp"' EXIT

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version}"
ldflags+=" -X k8s.io/component-base/version.gitMajor=$(cut -d. -f1 <<<"${k8s_version#v}")"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"${k8s_version}")"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

cd "$mod"
# One build of the three: the packages they share compile once and the
# binaries link side by side (etcd ignores the -X of Kubernetes' version).
phase "control plane (kube-apiserver, kube-controller-manager $k8s_version, etcd $etcd_version)" \
	go build -ldflags "$ldflags" -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager ./etcd >&2
# The folder may exist already, with some of the binaries or none; etcd comes
# last, so that the folder looks complete only once it is.
mkdir -p "$dir"
for bin in kube-apiserver kube-controller-manager etcd; do
	mv -f "$tmp/$bin" "$dir/$bin"
done
echo "$dir"
