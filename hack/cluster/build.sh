#!/usr/bin/env bash
# Finds or builds every binary of the real single-node cluster and prints the
# folder that holds them all (as links into per-version cache folders):
#
#   kubelet kube-scheduler kube-proxy kubectl   k8s.io/kubernetes, tools/controlplane's module
#   kube-apiserver kube-controller-manager etcd hack/controlplane.sh
#   containerd containerd-shim-runc-v2 ctr       github.com/containerd/containerd/v2, tools/cluster/containerd's module
#   kube-router                                  github.com/cloudnativelabs/kube-router/v2 (firewall only), for
#                                                the bridge CNI only (NETWORK_ENFORCER_CLUSTER_CNI=bridge)
#   coredns                                      github.com/coredns/coredns, tools/cluster/coredns's
#                                                module (the Corefile's plugins only)
#   cilium-agent cilium-cni cilium-dbg           github.com/cilium/cilium at the version that go.mod
#   hubble-relay                                 pins, built in one go from a copy of the module
#                                                (with its bpf/ sources)
#
# Cilium's part is the largest by far, and one `go build` of its four commands
# compiles each package they share once and links them side by side. The
# real-node suite runs on the Cilium node only: kube-router, the bridge CNI's
# NetworkPolicy firewall, is built only for `make cluster CNI=bridge`.
#
# Each part is built once into cluster/<part>-<version> of the project's cache
# (hack/lib.sh), or under $NETWORK_ENFORCER_CLUSTER_CACHE, so bumping a version
# builds the new one beside the old; a later run takes no time.
#
# Usage: hack/cluster/build.sh          build what is missing; print the folder
#        hack/cluster/build.sh --print  print the folder only
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=hack/lib.sh
source "$root/hack/lib.sh"
cache="${NETWORK_ENFORCER_CLUSTER_CACHE:-$NETWORK_ENFORCER_CACHE/cluster}"

# A third-party version that is not in a go.mod of ours: kube-router's
# Kubernetes libraries are too old to build it at the distribution's.
KUBE_ROUTER_VERSION=v2.1.0

modversion() { grep -E "^\s*(require\s+)?$2 v" "$1" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) {print $i; exit}}'; }
k8s_version=$(modversion "$root/tools/controlplane/go.mod" k8s.io/kubernetes)
containerd_version=$(modversion "$root/tools/cluster/containerd/go.mod" github.com/containerd/containerd/v2)
coredns_version=$(modversion "$root/tools/cluster/coredns/go.mod" github.com/coredns/coredns)
cilium_version=$(modversion "$root/go.mod" github.com/cilium/cilium)

out="$cache/bin-kubernetes-$k8s_version-containerd-$containerd_version-cilium-$cilium_version"
if [[ "${1:-}" == "--print" ]]; then
	echo "$out"
	exit 0
fi

# part NAME DIR BINARIES... -- COMMAND...: runs COMMAND with $tmp as the output
# folder unless DIR holds every binary; the folder appears only once complete.
part() {
	local name=$1 dir=$2 bins=() complete=1 bin
	shift 2
	while [[ "$1" != "--" ]]; do bins+=("$1"); shift; done
	shift
	for bin in "${bins[@]}"; do [[ -x "$dir/$bin" ]] || complete=0; done
	if ((complete)); then return 0; fi
	tmp=$(partial_dir "$dir")
	if ! phase "$name" "$@"; then
		rm -rf "$tmp"
		return 1
	fi
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version}"
k8s_ldflags+=" -X k8s.io/component-base/version.gitMajor=$(cut -d. -f1 <<<"${k8s_version#v}")"
k8s_ldflags+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"${k8s_version}")"
k8s_ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

build_node() {
	(cd "$root/tools/controlplane" && go build -ldflags "$k8s_ldflags" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl)
}
build_containerd() {
	(cd "$root/tools/cluster/containerd" && go build -tags no_btrfs,no_devmapper,no_zfs \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" -o "$tmp/" \
		github.com/containerd/containerd/v2/cmd/containerd \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
		github.com/containerd/containerd/v2/cmd/ctr)
}
build_kube_router() {
	GOBIN="$tmp" go install -ldflags "-s -w" "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
}
build_coredns() {
	(cd "$root/tools/cluster/coredns" && go build -ldflags "-s -w" -o "$tmp/coredns" .)
}
# build_cilium builds the agent, its CNI plugin, its cleanup tool and the
# relay from a writable copy of the Cilium module, as Cilium's own Makefile
# does from its tree. Two changes:
# the module is not vendored here, so -mod=mod; and v1.20.2 pins a gobgp
# pseudo-version that no proxy serves, where v4.7.0 (tagged the same day, the
# same go.mod) is. The agent compiles its datapath at run time from bpf/,
# which the folder keeps beside the binaries.
build_cilium() {
	local src
	src=$(cd "$root" && go mod download -json "github.com/cilium/cilium@$cilium_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -d "$src" ]] || { echo "no module folder for github.com/cilium/cilium@$cilium_version" >&2; return 1; }
	cp -r "$src" "$tmp/src"
	chmod -R u+w "$tmp/src"
	(
		cd "$tmp/src"
		go mod edit -replace github.com/osrg/gobgp/v4=github.com/osrg/gobgp/v4@v4.7.0
		# The shared flags (hack/lib.sh) and -mod=mod; -trimpath among them
		# matters most here: the copy's folder is a new one each time.
		export GOFLAGS="$GOFLAGS -mod=mod"
		local ldflags="-s -w -X github.com/cilium/cilium/pkg/version.ciliumVersion=${cilium_version#v}"
		go build -ldflags "$ldflags" -o "$tmp/" ./daemon ./plugins/cilium-cni ./cilium-dbg ./hubble-relay
	)
	mv "$tmp/daemon" "$tmp/cilium-agent"
	# What the agent reads at run time: its datapath sources and the CRDs that
	# the operator would install (the operator is not built: see internal/realnodetest).
	mkdir -p "$tmp/lib" "$tmp/crds"
	cp -r "$tmp/src/bpf" "$tmp/lib/bpf"
	cp "$tmp/src"/pkg/k8s/apis/cilium.io/client/crds/v2/*.yaml "$tmp/src"/pkg/k8s/apis/cilium.io/client/crds/v2alpha1/*.yaml "$tmp/crds/"
	rm -rf "$tmp/src"
}

node_dir="$cache/node-kubernetes-$k8s_version"
containerd_dir="$cache/containerd-$containerd_version"
kube_router_dir="$cache/kube-router-$KUBE_ROUTER_VERSION"
# "-cluster-<hash>": the Corefile's plugins only, unlike CoreDNS's own build;
# the hash of the program that lists them builds anew when the list changes.
coredns_dir="$cache/coredns-$coredns_version-cluster-$(sha256sum "$root/tools/cluster/coredns/main.go" | cut -c1-12)"
cilium_dir="$cache/cilium-$cilium_version"

controlplane=$("$root/hack/controlplane.sh")
part "kubelet, kube-scheduler, kube-proxy, kubectl $k8s_version" "$node_dir" kubelet kube-scheduler kube-proxy kubectl -- build_node
part "containerd $containerd_version" "$containerd_dir" containerd containerd-shim-runc-v2 ctr -- build_containerd
dirs=("$controlplane" "$node_dir" "$containerd_dir" "$coredns_dir" "$cilium_dir")
if [[ "${NETWORK_ENFORCER_CLUSTER_CNI:-cilium}" == bridge ]]; then
	part "kube-router $KUBE_ROUTER_VERSION" "$kube_router_dir" kube-router -- build_kube_router
	dirs+=("$kube_router_dir")
fi
part "coredns $coredns_version" "$coredns_dir" coredns -- build_coredns
part "cilium $cilium_version" "$cilium_dir" cilium-agent cilium-cni cilium-dbg hubble-relay -- build_cilium

# Made anew, so that no link to a part that is no longer built stays.
rm -rf "$out"
mkdir -p "$out"
for d in "${dirs[@]}"; do
	for bin in "$d"/*; do ln -sfn "$bin" "$out/$(basename "$bin")"; done
done
echo "$out"
