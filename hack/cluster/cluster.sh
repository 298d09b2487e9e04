#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, from Go modules and
# Debian packages: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, containerd with runc, kube-proxy (nftables), CoreDNS and a CNI.
#
# The CNI is the real Cilium agent (NETWORK_ENFORCER_CLUSTER_CNI=cilium, the
# default, which the real-node suite runs on); with
# NETWORK_ENFORCER_CLUSTER_CNI=bridge (`make cluster CNI=bridge`) it is a bridge
# CNI network with kube-router's NetworkPolicy firewall instead. The agent runs
# on the host, as its DaemonSet pod would, with Hubble on behind
# mutual TLS (the certificates and Secrets that Cilium's chart issues), and the
# real hubble-relay runs as a pod that finds the agent through the hubble-peer
# Service, as in a Cilium cluster. kube-proxy stays. Without Cilium's operator
# (which does not build from the module), the agent allocates identities as
# CRDs and takes the pod range from the Node, which the controller manager's
# node IPAM sets. CILIUM_MONITOR_AGGREGATION sets the agent's monitor
# aggregation (default medium, as Cilium's chart sets it).
#
# Usage: hack/cluster/cluster.sh run          start it, print its kubeconfig, and keep
#                                             it up until SIGINT/SIGTERM; then clean the host
#        hack/cluster/cluster.sh down         clean up what a killed run left behind
#        hack/cluster/cluster.sh import TAR   import a docker tarball into the node's
#                                             containerd (pods use it with imagePullPolicy: Never)
#
# `run` prints "cluster ready: KUBECONFIG=..." on stdout once every part is up
# (tests wait for that line, then end the run with SIGTERM).
#
# One cluster at a time per machine: it uses the host's kubelet folders, pod log
# folders and netfilter, so a lock refuses a second one. Every process is
# recorded by PID in the state folder and stopped by that PID only. Pod traffic
# stays on the cluster's bridge: no masquerade, no default route in the pods,
# and a forward rule drops whatever would leave the bridge for another interface.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
state=${NETWORK_ENFORCER_CLUSTER_STATE:-/var/lib/network-enforcer-cluster}
run_dir=/run/network-enforcer-cluster
lock=/run/network-enforcer-cluster.lock

CNI=${NETWORK_ENFORCER_CLUSTER_CNI:-cilium}
case "$CNI" in
bridge | cilium) ;;
*)
	echo "cluster: unknown CNI \"$CNI\": must be bridge or cilium" >&2
	exit 2
	;;
esac
NODE=ne-node
BRIDGE=ne-br0
# With the bridge the node's address is the pods' gateway, on the bridge; with
# Cilium it is on a veth pair of its own (this kernel has no dummy device),
# which is the agent's --devices, and the agent puts its own cilium_host
# address in the pod range.
NODE_IP=10.217.0.1
NODE_DEV=ne-node0
if [[ "$CNI" == cilium ]]; then NODE_IP=10.217.1.1; fi
POD_CIDR=10.217.0.0/24
# The test host outside the cluster (Cilium mode): a network namespace of its
# own on a link from the node, at an address outside the pod and service ranges.
OUTSIDE_NS=ne-outside
OUTSIDE_DEV=ne-out0
OUTSIDE_GW=10.217.32.1
OUTSIDE_IP=10.217.32.2
# A second address of the outside host, which CoreDNS names apart
# (other.outside.test): a name that a policy does not allow, at an address
# that no allowed name resolves to.
OUTSIDE_IP2=10.217.33.2
CILIUM_MONITOR_AGGREGATION=${CILIUM_MONITOR_AGGREGATION:-medium}
# build.sh builds kube-router in bridge mode only.
export NETWORK_ENFORCER_CLUSTER_CNI=$CNI
HUBBLE_PORT=4244
SERVICE_CIDR=10.217.16.0/24
API_SERVICE_IP=10.217.16.1
DNS_IP=10.217.16.10
API_PORT=16443
ETCD_PORT=23790
ETCD_PEER_PORT=23800
KUBECONFIG_FILE=$state/pki/admin.kubeconfig
SOCK=$run_dir/containerd.sock
ISOLATION_TABLE=network_enforcer_cluster
PACKAGES=(runc containernetworking-plugins nftables conntrack ipset iproute2 iptables)
# Cilium's loader compiles the datapath with clang from PATH (see agent()).
if [[ "$CNI" == cilium ]]; then PACKAGES+=(clang-19 llvm-19); fi

log() { echo "cluster: $*" >&2; }

# ---------------------------------------------------------------- processes

# start NAME COMMAND...: runs COMMAND in the background with its output in
# logs/NAME.log and records its PID. It does not get the lock's descriptor
# (9): a part that outlived a killed run would hold the lock, and the `down`
# that cleans up after it would wait for itself.
start() {
	local name=$1
	shift
	mkdir -p "$state/logs" "$state/pids"
	setsid "$@" >"$state/logs/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$state/pids/$name.pid"
}

# ours PID: whether PID is still the process that this cluster started (a PID
# can be reused): its command line names our state or run folder.
ours() {
	local pid=$1
	[[ -r /proc/$pid/cmdline ]] || return 1
	# The process may end between the test and the read: that is "not ours".
	{ tr '\0' ' ' </proc/"$pid"/cmdline; } 2>/dev/null | grep -qF -e "$state" -e "$run_dir"
}

# stop NAME: ends the recorded process NAME (TERM, then KILL after 10 s).
stop() {
	local name=$1 file="$state/pids/$1.pid" pid i
	[[ -f "$file" ]] || return 0
	pid=$(cat "$file")
	if ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			ours "$pid" || break
			sleep 0.1
		done
		if ours "$pid"; then
			log "$name ($pid) ignored SIGTERM: killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$file"
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	log "$what did not come up in ${secs}s; see $state/logs"
	return 1
}

kubectl() { "$bin/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# ---------------------------------------------------------------- tear-down

# down cleans the host of everything a run of this script makes, whether that
# run ended or was killed: the order matters (pods go while the kubelet runs, so
# that the CNI plugin frees their addresses and namespaces).
down() {
	bin=$("$root/hack/cluster/build.sh" --print)
	if [[ -f "$state/pids/kubelet.pid" ]] && ours "$(cat "$state/pids/kubelet.pid")"; then
		stop kube-controller-manager
		stop kube-scheduler
		if kubectl get --raw /readyz >/dev/null 2>&1; then
			kubectl delete pods --all --all-namespaces --now --wait=true --timeout=40s >/dev/null 2>&1 ||
				log "some pods did not go before the kubelet stops"
		fi
	fi
	stop kube-router
	if [[ -x "$bin/kube-router" ]]; then "$bin/kube-router" --cleanup-config >/dev/null 2>&1 || true; fi
	stop kube-proxy
	if [[ -x "$bin/kube-proxy" ]]; then "$bin/kube-proxy" --cleanup >/dev/null 2>&1 || true; fi
	stop kubelet
	if [[ -S "$SOCK" ]] && [[ -f "$state/pids/containerd.pid" ]] && ours "$(cat "$state/pids/containerd.pid")"; then
		local task
		for task in $("$bin/ctr" -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
			"$bin/ctr" -a "$SOCK" -n k8s.io tasks kill -s KILL "$task" >/dev/null 2>&1 || true
		done
		sleep 0.5
	fi
	stop containerd
	# A shim outlives containerd; ours are those that serve our socket.
	local pid
	for pid in $(ps -eo pid=,args= | awk -v s="$SOCK" '$2 ~ /containerd-shim/ && index($0, s) {print $1}'); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	stop kube-scheduler
	stop kube-controller-manager
	stop kube-apiserver
	stop etcd
	cilium_down

	# Mounts under the kubelet's and containerd's folders, deepest first.
	local m
	for m in $(awk '{print $2}' /proc/mounts | { grep -E "^(/var/lib/kubelet|$state/containerd|$run_dir|/run/netns/cni-)" || true; } | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do
		ip netns delete "$ns" 2>/dev/null || true
	done
	ip link delete "$BRIDGE" 2>/dev/null || true
	ip link delete "$NODE_DEV" 2>/dev/null || true
	ip link delete "$OUTSIDE_DEV" 2>/dev/null || true
	ip netns delete "$OUTSIDE_NS" 2>/dev/null || true
	nft delete table inet "$ISOLATION_TABLE" 2>/dev/null || true
	flush_chains
	# Tables that the run made (iptables-nft makes ip filter, ip nat and so on
	# for kube-router and the CNI plugins), once they hold no rule.
	if [[ -f "$state/nft-tables.before" ]]; then
		local family name left=0
		while read -r family name; do
			[[ -z "$name" ]] && continue
			grep -qxF "$family $name" "$state/nft-tables.before" && continue
			if [[ -z "$(nft list table "$family" "$name" 2>/dev/null | grep -vE '^\s*(table|chain|type|policy|\}|$)')" ]]; then
				nft delete table "$family" "$name" 2>/dev/null || left=1
			else
				log "nft table $family $name still holds rules: left in place"
				left=1
			fi
		done < <(nft list tables 2>/dev/null | awk '{print $2, $3}')
		# Kept while a table is left, so that the next clean-up knows it.
		((left)) || rm -f "$state/nft-tables.before"
	fi
	local key
	for key in "${SYSCTLS[@]}"; do restore_sysctl "$key"; done
	# Every run starts from an empty etcd and new certificates: nothing of a
	# previous run's objects comes back.
	# The CNI configuration goes too: the next run may have another CNI.
	rm -rf /var/lib/kubelet /var/log/pods /var/log/containers "$run_dir" "$state/containerd" "$state/pids" "$state/pki" \
		"$state/cni" "$state/cni-bin" \
		"$state/etcd" "$state/apiserver-certs" "$state/kcm-certs" "$state/kubelet-certs"
}

# cilium_down removes what the Cilium agent put on the host, whether it ended
# or was killed: its processes, then (with the agent's own post-uninstall
# clean-up) its BPF programs, maps and tc filters, its links and routes, then
# its pins, mounts, run folder and iptables chains (in flush_chains).
cilium_down() {
	stop cilium-agent
	if [[ -x "$bin/cilium-dbg" ]] && { [[ -d /sys/fs/bpf/cilium ]] || ip link show cilium_host >/dev/null 2>&1; }; then
		"$bin/cilium-dbg" post-uninstall-cleanup --all-state --force >/dev/null 2>&1 || log "cilium-dbg post-uninstall-cleanup failed"
	fi
	local link
	for link in cilium_host cilium_net cilium_vxlan $(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^lxc/ {sub(/@.*/, "", $2); print $2}'); do
		ip link delete "$link" 2>/dev/null || true
	done
	rm -rf /sys/fs/bpf/cilium /sys/fs/bpf/tc/globals/cilium_* 2>/dev/null || true
	if mountpoint -q /run/cilium/cgroupv2; then umount /run/cilium/cgroupv2 || true; fi
	if [[ -f "$state/bpffs.mounted" ]]; then
		umount /sys/fs/bpf 2>/dev/null || true
		rm -f "$state/bpffs.mounted"
	fi
	rm -rf /run/cilium /var/run/cilium
}

# flush_chains removes the KUBE-*, CNI-* and CILIUM_* chains of iptables
# (kube-router, the CNI plugins, the Cilium agent) and the jumps to them from
# the built-in chains.
flush_chains() {
	local ipt table rule chain
	for ipt in iptables ip6tables; do
		command -v "$ipt" >/dev/null || continue
		for table in filter nat mangle raw; do
			"$ipt" -t "$table" -S 2>/dev/null | { grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE-|CNI-|CILIUM_)' || true; } |
				while read -r rule; do
					# eval: a rule's comment is quoted, as -S prints it.
					eval "\"\$ipt\" -t \"\$table\" ${rule/-A/-D}" 2>/dev/null || true
				done
			for chain in $("$ipt" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && ($2 ~ /^(KUBE-|CNI-|CILIUM_)/) {print $2}'); do
				"$ipt" -t "$table" -F "$chain" 2>/dev/null || true
			done
			for chain in $("$ipt" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && ($2 ~ /^(KUBE-|CNI-|CILIUM_)/) {print $2}'); do
				"$ipt" -t "$table" -X "$chain" 2>/dev/null || true
			done
		done
	done
	if command -v ipset >/dev/null; then
		for chain in $(ipset list -n 2>/dev/null | { grep -E '^(KUBE-|kube-router)' || true; }); do
			ipset destroy "$chain" 2>/dev/null || true
		done
	fi
}

# The sysctls that a run changes: this script (forwarding, the bridge's
# netfilter) and the Cilium agent (forwarding on every interface, reverse-path
# filtering, its BPF JIT and neighbour settings). Each is remembered before the
# run changes it and restored at the end.
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.ipv4.conf.all.forwarding
	net.ipv4.conf.default.forwarding net.ipv4.conf.all.rp_filter net.ipv4.conf.default.rp_filter
	net.core.bpf_jit_enable net.ipv4.fib_multipath_use_neigh kernel.timer_migration)

# remember_sysctl KEY saves the current value once, so that a killed run's
# saved value stays the one to restore.
remember_sysctl() {
	local file="$state/sysctl.$1"
	[[ -f "$file" ]] || sysctl -n "$1" >"$file" 2>/dev/null || rm -f "$file"
}

# set_sysctl KEY VALUE remembers the old value once (a killed run's value stays
# the one to restore) and sets the new one.
set_sysctl() {
	remember_sysctl "$1"
	sysctl -qw "$1=$2"
}

restore_sysctl() {
	local file="$state/sysctl.$1"
	[[ -f "$file" ]] || return 0
	sysctl -qw "$1=$(cat "$file")" || true
	rm -f "$file"
}

# ---------------------------------------------------------------- start-up

packages() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# images builds the images that no registry serves here into docker tarballs.
images() {
	local tools="$state/tools"
	mkdir -p "$tools" "$state/images"
	(cd "$root" && go build -o "$tools/" ./tools/cluster/pki ./tools/cluster/staticimage ./tools/cluster/pause)
	"$tools/staticimage" -name ne.local/pause:1 -binary "$tools/pause" -tarball "$state/images/pause.tar"
	"$tools/staticimage" -name "ne.local/coredns:$(basename "$(dirname "$(readlink -f "$bin/coredns")")")" \
		-binary "$bin/coredns" -tarball "$state/images/coredns.tar"
	if [[ "$CNI" == cilium ]]; then
		"$tools/staticimage" -name "$(relay_image)" -binary "$bin/hubble-relay" -tarball "$state/images/hubble-relay.tar"
	fi
}

relay_image() { echo "ne.local/hubble-relay:$(basename "$(dirname "$(readlink -f "$bin/hubble-relay")")")"; }

network() {
	[[ -f "$state/nft-tables.before" ]] || nft list tables 2>/dev/null | awk '{print $2, $3}' >"$state/nft-tables.before"
	local key
	for key in "${SYSCTLS[@]}"; do remember_sysctl "$key"; done
	set_sysctl net.ipv4.ip_forward 1
	if [[ "$CNI" == cilium ]]; then
		cilium_network
		return
	fi
	modprobe br_netfilter 2>/dev/null || true
	# kube-router filters pod-to-pod traffic on the bridge through iptables.
	set_sysctl net.bridge.bridge-nf-call-iptables 1
	ip link add "$BRIDGE" type bridge
	ip addr add "$NODE_IP/${POD_CIDR#*/}" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	nft -f - <<-EOF
		table inet $ISOLATION_TABLE {
			chain forward {
				type filter hook forward priority -10; policy accept;
				iifname "$BRIDGE" oifname != "$BRIDGE" drop
				oifname "$BRIDGE" iifname != "$BRIDGE" drop
			}
		}
	EOF
	mkdir -p "$state/cni"
	cat >"$state/cni/10-network-enforcer.conflist" <<-EOF
		{
		  "cniVersion": "1.0.0",
		  "name": "network-enforcer",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "$BRIDGE",
		      "isGateway": true,
		      "ipMasq": false,
		      "hairpinMode": true,
		      "ipam": {
		        "type": "host-local",
		        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
		        "routes": [{"dst": "$SERVICE_CIDR"}],
		        "dataDir": "$run_dir/cni-ipam"
		      }
		    }
		  ]
		}
	EOF
}

# cilium_network makes the node's device, the outside test host and the
# isolation rules of Cilium mode, and the CNI configuration that calls the
# agent's plugin. Pod traffic has no way off the machine: the forward hook
# drops any packet from or to the pod range on an interface that is not the
# cluster's (the pods' lxc*, the agent's cilium_*, this script's ne-*), and
# the agent masquerades nothing.
cilium_network() {
	ip link add "$NODE_DEV" type veth peer name ne-node1
	ip addr add "$NODE_IP/24" dev "$NODE_DEV"
	ip link set ne-node1 up
	ip link set "$NODE_DEV" up
	ip netns add "$OUTSIDE_NS"
	ip link add "$OUTSIDE_DEV" type veth peer name ne-out1 netns "$OUTSIDE_NS"
	ip addr add "$OUTSIDE_GW/30" dev "$OUTSIDE_DEV"
	ip link set "$OUTSIDE_DEV" up
	ip -n "$OUTSIDE_NS" addr add "$OUTSIDE_IP/30" dev ne-out1
	ip -n "$OUTSIDE_NS" link set ne-out1 up
	ip -n "$OUTSIDE_NS" link set lo up
	ip -n "$OUTSIDE_NS" route add "$POD_CIDR" via "$OUTSIDE_GW"
	ip -n "$OUTSIDE_NS" addr add "$OUTSIDE_IP2/32" dev ne-out1
	ip route add "$OUTSIDE_IP2/32" via "$OUTSIDE_IP" dev "$OUTSIDE_DEV"
	nft -f - <<-EOF
		table inet $ISOLATION_TABLE {
			chain forward {
				type filter hook forward priority -10; policy accept;
				ip saddr $POD_CIDR oifname "lxc*" accept
				ip saddr $POD_CIDR oifname "cilium_*" accept
				ip saddr $POD_CIDR oifname "ne-*" accept
				ip saddr $POD_CIDR drop
				ip daddr $POD_CIDR iifname "lxc*" accept
				ip daddr $POD_CIDR iifname "cilium_*" accept
				ip daddr $POD_CIDR iifname "ne-*" accept
				ip daddr $POD_CIDR drop
			}
		}
	EOF
	mkdir -p "$state/cni" "$state/cni-bin"
	ln -sfn "$bin/cilium-cni" "$state/cni-bin/cilium-cni"
	cat >"$state/cni/05-cilium.conflist" <<-EOF
		{
		  "cniVersion": "0.3.1",
		  "name": "cilium",
		  "plugins": [{"type": "cilium-cni", "enable-debug": false, "log-file": "$state/logs/cilium-cni.log"}]
		}
	EOF
}

control_plane() {
	local pki="$state/pki"
	start etcd "$bin/etcd" --name "$NODE" --data-dir "$state/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "$NODE=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls ""
	start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
		--service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode Node,RBAC --allow-privileged=true \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
		--kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
		--cert-dir "$state/apiserver-certs"
	wait_for kube-apiserver 60 kubectl get --raw /readyz
	# With the bridge, the kubelet is given the pod range; the Cilium agent reads
	# it from the Node, where the controller manager's node IPAM writes it.
	local ipam=(--controllers '*,-nodeipam')
	if [[ "$CNI" == cilium ]]; then
		ipam=(--controllers '*' --allocate-node-cidrs --cluster-cidr "$POD_CIDR" --node-cidr-mask-size "${POD_CIDR#*/}")
	fi
	start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$KUBECONFIG_FILE" \
		"${ipam[@]}" --leader-elect=false --secure-port 0 \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials \
		--cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
		--service-cluster-ip-range "$SERVICE_CIDR" --cert-dir "$state/kcm-certs"
	start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$KUBECONFIG_FILE" --leader-elect=false \
		--secure-port 0 --authentication-kubeconfig "$KUBECONFIG_FILE" --authorization-kubeconfig "$KUBECONFIG_FILE"
}

runtime() {
	mkdir -p "$run_dir" "$state/containerd" "$state/cni-bin"
	cat >"$state/containerd.toml" <<-EOF
		version = 3
		root = "$state/containerd/root"
		state = "$run_dir/state"
		[grpc]
		  address = "$SOCK"
		[ttrpc]
		  address = "$run_dir/containerd.sock.ttrpc"
		[debug]
		  address = "$run_dir/debug.sock"
		[plugins.'io.containerd.cri.v1.runtime']
		  restrict_oom_score_adj = true
		  disable_apparmor = true
		  [plugins.'io.containerd.cri.v1.runtime'.containerd]
		    default_runtime_name = "runc"
		    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
		        BinaryName = "$(command -v runc)"
		        SystemdCgroup = false
		  [plugins.'io.containerd.cri.v1.runtime'.cni]
		    bin_dirs = ["$state/cni-bin", "/usr/lib/cni"]
		    conf_dir = "$state/cni"
		[plugins.'io.containerd.cri.v1.images']
		  snapshotter = "overlayfs"
		  [plugins.'io.containerd.cri.v1.images'.pinned_images]
		    sandbox = "ne.local/pause:1"
		[plugins.'io.containerd.grpc.v1.cri']
		  enable_cdi = false
	EOF
	PATH="$bin:$PATH" start containerd "$bin/containerd" --config "$state/containerd.toml"
	wait_for containerd 30 "$bin/ctr" -a "$SOCK" version
	local tar
	for tar in "$state"/images/*.tar; do
		"$bin/ctr" -a "$SOCK" -n k8s.io images import --no-unpack=false "$tar" >/dev/null
	done
}

node() {
	local pki="$state/pki"
	cat >"$state/kubelet.yaml" <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		address: $NODE_IP
		port: 10250
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: 10248
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: true}
		  x509: {clientCAFile: $pki/ca.crt}
		authorization: {mode: Webhook}
		tlsCertFile: $pki/kubelet.crt
		tlsPrivateKeyFile: $pki/kubelet.key
		cgroupDriver: cgroupfs
		failCgroupV1: false
		failSwapOn: false
		containerRuntimeEndpoint: unix://$SOCK
		podCIDR: $POD_CIDR
		clusterDNS: [$DNS_IP]
		clusterDomain: cluster.local
		resolvConf: /etc/resolv.conf
		maxPods: 60
		serializeImagePulls: false
		# Mounted Secrets follow their objects within seconds (the default is a
		# minute): the tests renew certificates that live for minutes.
		syncFrequency: 10s
		# A shared disk: never evict or collect images for its use by others.
		evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		localStorageCapacityIsolation: false
	EOF
	start kubelet "$bin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$pki/node.kubeconfig" \
		--node-ip "$NODE_IP" --hostname-override "$NODE" --root-dir /var/lib/kubelet \
		--cert-dir "$state/kubelet-certs"
	wait_for "node $NODE" 60 kubectl get node "$NODE"
	cat >"$state/kube-proxy.yaml" <<-EOF
		apiVersion: kubeproxy.config.k8s.io/v1alpha1
		kind: KubeProxyConfiguration
		mode: nftables
		clusterCIDR: $POD_CIDR
		hostnameOverride: $NODE
		bindAddress: $NODE_IP
		healthzBindAddress: 127.0.0.1:10256
		metricsBindAddress: 127.0.0.1:10249
		nodePortAddresses: ["$NODE_IP/32"]
		clientConnection: {kubeconfig: $KUBECONFIG_FILE}
	EOF
	start kube-proxy "$bin/kube-proxy" --config "$state/kube-proxy.yaml"
	if [[ "$CNI" == cilium ]]; then
		agent
		wait_for "node $NODE Ready" 120 kubectl wait --for=condition=Ready "node/$NODE" --timeout=1s
		return
	fi
	# kube-router exits when its Node does not exist yet: it starts after.
	start kube-router "$bin/kube-router" --kubeconfig "$KUBECONFIG_FILE" --hostname-override "$NODE" \
		--run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
		--metrics-port 0 --health-port 0 --service-cluster-ip-range "$SERVICE_CIDR"
	wait_for "node $NODE Ready" 60 kubectl wait --for=condition=Ready "node/$NODE" --timeout=1s
	# kube-router's firewall is in place once its forward chain is.
	wait_for "kube-router's firewall" 30 iptables -S KUBE-ROUTER-FORWARD
}

# hubble_secrets puts the Hubble certificates in the Secrets that Cilium's
# chart makes (kube-system: cilium-ca, hubble-server-certs,
# hubble-relay-client-certs, hubble-relay-server-certs), each with ca.crt.
hubble_secrets() {
	local dir="$state/pki/hubble" name
	kubectl -n kube-system create secret generic cilium-ca --from-file=ca.crt="$dir/ca.crt" --from-file=ca.key="$dir/ca.key" >/dev/null
	for name in hubble-server hubble-relay-client hubble-relay-server; do
		kubectl -n kube-system create secret tls "$name-certs" --cert "$dir/$name.crt" --key "$dir/$name.key" >/dev/null
		kubectl -n kube-system patch secret "$name-certs" --type merge \
			-p "{\"data\":{\"ca.crt\":\"$(base64 -w0 "$dir/ca.crt")\"}}" >/dev/null
	done
}

# agent starts the Cilium agent on the host, as its DaemonSet pod would run:
# Cilium's CRDs first (the operator would install them), then the agent in a
# mount namespace of its own, where kernel.unprivileged_bpf_disabled is a
# plain file (the agent sets it to 1, which the host could not undo before a
# reboot). Its bpffs and cgroup2 mounts are the host's, so that the clean-up
# finds them.
agent() {
	kubectl apply --server-side -f "$bin/crds/" >/dev/null
	hubble_secrets
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf
		touch "$state/bpffs.mounted"
	fi
	mkdir -p /run/cilium/cgroupv2 "$state/cilium/path"
	mountpoint -q /run/cilium/cgroupv2 || mount -t cgroup2 none /run/cilium/cgroupv2
	ln -sfn "$(command -v clang-19)" "$state/cilium/path/clang"
	ln -sfn "$(command -v llc-19)" "$state/cilium/path/llc"
	echo 0 >"$state/cilium/unprivileged_bpf_disabled"
	agent_process
}

# agent_process starts the Cilium agent's process and waits until it is ready.
# Its L7 proxy is on for its DNS proxy, which DNS visibility and toFQDNs rules
# need; Envoy, which only HTTP rules need, is external and not run.
# Its Hubble buffer holds 16383 flows (the chart's default is 4095), so that a
# whole journey of the real-node suite can be captured from it.
# A restart (SIGUSR1 to `run`) calls it again: the datapath stays, as on a
# restart of the agent's pod, and Hubble's buffer starts empty.
agent_process() {
	local pki="$state/pki/hubble"
	PATH="$state/cilium/path:$PATH" K8S_NODE_NAME="$NODE" start cilium-agent \
		unshare --mount --propagation slave -- sh -c 'mount --bind "$0" /proc/sys/kernel/unprivileged_bpf_disabled && exec "$@"' \
		"$state/cilium/unprivileged_bpf_disabled" "$bin/cilium-agent" \
		--k8s-kubeconfig-path "$KUBECONFIG_FILE" --lib-dir "$(readlink -f "$bin/lib")" --state-dir /run/cilium \
		--ipam kubernetes --k8s-require-ipv4-pod-cidr --routing-mode native --ipv4-native-routing-cidr "$POD_CIDR" \
		--enable-ipv6=false --kube-proxy-replacement=false --enable-ipv4-masquerade=false \
		--enable-host-legacy-routing=true --devices "$NODE_DEV" --enable-policy default \
		--enable-l7-proxy=true --external-envoy-proxy=true \
		--enable-health-checking=false --enable-endpoint-health-checking=false \
		--cni-exclusive=false --cgroup-root /run/cilium/cgroupv2 --identity-allocation-mode crd \
		--cluster-name default --monitor-aggregation "$CILIUM_MONITOR_AGGREGATION" \
		--enable-hubble --hubble-listen-address "$NODE_IP:$HUBBLE_PORT" --hubble-disable-tls=false \
		--hubble-event-buffer-capacity 16383 \
		--hubble-tls-cert-file "$pki/hubble-server.crt" --hubble-tls-key-file "$pki/hubble-server.key" \
		--hubble-tls-client-ca-files "$pki/ca.crt"
	wait_for "the Cilium agent" 300 "$bin/cilium-dbg" status --brief
}

# relay runs the real hubble-relay as Cilium's chart does: a Deployment in
# kube-system that finds the agents through the hubble-peer Service (here one
# with no selector: the agent is not a pod) and reads them over mutual TLS.
relay() {
	sed -e "s|@IMAGE@|$(relay_image)|" -e "s|@NODE_IP@|$NODE_IP|" -e "s|@HUBBLE_PORT@|$HUBBLE_PORT|" \
		"$root/tools/cluster/hubble-relay.yaml" | kubectl apply -f - >/dev/null
	wait_for "hubble-relay" 120 kubectl -n kube-system wait --for=condition=Available deployment/hubble-relay --timeout=1s
}

# alive fails unless every process that this cluster started still runs.
alive() {
	local file
	for file in "$state"/pids/*.pid; do
		if ! ours "$(cat "$file")"; then
			log "$(basename "$file" .pid) exited; see $state/logs/$(basename "$file" .pid).log"
			return 1
		fi
	done
}

dns() {
	local image
	image="ne.local/coredns:$(basename "$(dirname "$(readlink -f "$bin/coredns")")")"
	sed -e "s|@IMAGE@|$image|" -e "s|@DNS_IP@|$DNS_IP|" -e "s|@OUTSIDE_IP@|$OUTSIDE_IP|" -e "s|@OUTSIDE_IP2@|$OUTSIDE_IP2|" "$root/tools/cluster/coredns.yaml" | kubectl apply -f - >/dev/null
	wait_for "CoreDNS" 90 kubectl -n kube-system wait --for=condition=Available deployment/coredns --timeout=1s
}

up() {
	start_time=$SECONDS
	packages
	bin=$("$root/hack/cluster/build.sh")
	mkdir -p "$state"
	images
	network
	local hubble=()
	[[ "$CNI" == cilium ]] && hubble=(-hubble "$state/pki/hubble")
	"$state/tools/pki" -dir "$state/pki" -node "$NODE" -ip "$NODE_IP" -service-ip "$API_SERVICE_IP" \
		-server "https://$NODE_IP:$API_PORT" "${hubble[@]}"
	control_plane
	runtime
	node
	dns
	[[ "$CNI" == cilium ]] && relay
	alive
	log "up in $((SECONDS - start_time))s"
}

# ---------------------------------------------------------------- main

if [[ "${1:-}" == import ]]; then
	bin=$("$root/hack/cluster/build.sh" --print)
	exec "$bin/ctr" -a "$SOCK" -n k8s.io images import "${2:?usage: $0 import TAR}"
fi

mkdir -p "$state" "$(dirname "$lock")"
exec 9>"$lock"
if ! flock -n 9; then
	# Another run (a test suite in another work tree, `make cluster`) has the
	# machine's cluster: wait for it to end, as a test run would for a CPU.
	log "another cluster runs on this machine (lock $lock): waiting up to ${NETWORK_ENFORCER_CLUSTER_WAIT:-1200}s"
	if ! flock -w "${NETWORK_ENFORCER_CLUSTER_WAIT:-1200}" 9; then
		log "the other cluster did not end in time"
		exit 1
	fi
fi
bin=$("$root/hack/cluster/build.sh" --print)

case "${1:-}" in
down)
	down
	;;
run)
	down
	finish() {
		trap - EXIT
		# Nothing is written to stdout from here: it is often a pipe whose
		# reader (the test process) has gone, and a write would end the script.
		exec 1>&2
		# The sleeper may be gone already (a signal to the whole session):
		# under set -e a failed kill here would end the script before down.
		if [[ -n "${sleeper:-}" ]]; then kill "$sleeper" 2>/dev/null || true; fi
		log "stopping"
		down
		log "host clean"
	}
	# The first signal ends the run (and so runs finish); any later one is
	# ignored: an interrupted test run sends SIGTERM twice at once (its own
	# clean-up's, and the kernel's when the test process that started this
	# script dies), and an exit during finish would leave the host half clean.
	on_signal() {
		if [[ -n "${stopping:-}" ]]; then
			log "already stopping: the host is cleaned first"
			return 0
		fi
		stopping=1
		exit "$1"
	}
	trap finish EXIT
	trap 'on_signal 130' INT
	trap 'on_signal 143' TERM
	up
	if [[ "$CNI" == cilium ]]; then
		# SIGUSR1 restarts the Cilium agent (the real-node suite's failure test).
		restart_agent() {
			log "restarting the Cilium agent"
			stop cilium-agent
			agent_process
			echo "cilium agent restarted"
		}
		trap restart_agent USR1
	fi
	echo "cluster ready: KUBECONFIG=$KUBECONFIG_FILE"
	if [[ "$CNI" == cilium ]]; then
		echo "outside host: netns $OUTSIDE_NS at $OUTSIDE_IP"
		log "Cilium: $bin/cilium-dbg status; $bin/cilium-dbg monitor"
	fi
	log "kubectl at the node's version: $bin/kubectl; import an image: $0 import TAR; Ctrl-C stops the cluster and cleans the host"
	# sleep in the background, so that a signal reaches the trap at once.
	# A trapped signal (USR1) ends the wait, not the sleep: start another
	# only when the last one is over.
	while :; do
		if [[ -z "${sleeper:-}" ]] || ! kill -0 "$sleeper" 2>/dev/null; then
			sleep 3600 &
			sleeper=$!
		fi
		wait "$sleeper" || true
	done
	;;
*)
	echo "usage: $0 run|down" >&2
	exit 2
	;;
esac
