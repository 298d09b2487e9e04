package clustertest

// table is the cluster that the fixtures describe. Hubble gives pod IPs, labels
// and workload kinds; ztunnel gives pod IPs and service accounts but no labels, so
// its pods get app=<workload>; Goldmane gives only aggregated names, and its one
// pod that no other fixture has gets an address from 10.0.9.0/24, a range no
// fixture uses. Pod names, IPs and namespaces are the fixtures' own: a resolver
// under test must find exactly these.
var table = []row{
	// shop: Hubble and Goldmane (frontend, cart, orders), ztunnel (checkout, legacy).
	{namespace: "shop", kind: KindDeployment, name: "frontend", child: "6d5f7b8c9", labels: app("frontend"),
		pods: []pod{{"frontend-6d5f7b8c9-abcde", "10.0.1.10"}}},
	{namespace: "shop", kind: KindDeployment, name: "cart", child: "7f8e9d0c1", labels: app("cart"),
		pods: []pod{{"cart-7f8e9d0c1-fghij", "10.0.1.11"}}},
	{namespace: "shop", kind: KindDeployment, name: "orders", child: "5d8f7c9b4", labels: app("orders"),
		pods: []pod{{"orders-5d8f7c9b4-qw7lm", "10.0.2.45"}}},
	{namespace: "shop", kind: KindDeployment, name: "checkout", child: "6b7f9c8d4", labels: app("checkout"),
		serviceAccount: "checkout", pods: []pod{{"checkout-6b7f9c8d4-zt5hn", "10.244.3.21"}}},
	{namespace: "shop", kind: KindDeployment, name: "legacy", child: "7d9f8b6c5", labels: app("legacy"),
		serviceAccount: "legacy", pods: []pod{{"legacy-7d9f8b6c5-p4q2r", "10.244.3.4"}}},

	// payments (Hubble, Goldmane) and pay (ztunnel) are two namespaces, each with
	// its own payments StatefulSet.
	{namespace: "payments", kind: KindStatefulSet, name: "payments", labels: app("payments"),
		pods: []pod{{"payments-0", "10.0.2.50"}}},
	{namespace: "pay", kind: KindStatefulSet, name: "payments", labels: app("payments"),
		serviceAccount: "payments", pods: []pod{{"payments-0", "10.244.4.30"}}},

	{namespace: "data", kind: KindStatefulSet, name: "postgres", labels: app("postgres"),
		pods: []pod{{"postgres-0", "10.0.3.20"}}},

	// The Job's suffix is the CronJob's scheduled time in minutes, as the CronJob
	// controller names Jobs.
	{namespace: "batch", kind: KindCronJob, name: "report", child: "29000000", labels: app("report"),
		pods: []pod{{"report-29000000-kq8zn", "10.0.3.60"}}},

	// No fixture has a Job of its own; this one, with an address from the range
	// no fixture uses, is for tests of resolution to a bare Job.
	{namespace: "batch", kind: KindJob, name: "migrate-db", labels: app("migrate-db"),
		pods: []pod{{"migrate-db-h7k2m", "10.0.9.20"}}},

	{namespace: "monitoring", kind: KindDeployment, name: "prometheus", child: "6b7c8d9e0", labels: app("prometheus"),
		pods: []pod{{"prometheus-6b7c8d9e0-lmnop", "10.0.3.40"}}},
	{namespace: "monitoring", kind: KindDaemonSet, name: "node-exporter", labels: app("node-exporter"),
		pods: []pod{{"node-exporter-x7k2p", "10.0.1.30"}}},

	// The fixtures label coredns app=kube-dns, not k8s-app=kube-dns as clusters do.
	{namespace: "kube-system", kind: KindDeployment, name: "coredns", child: "5d78c9869d", labels: app("kube-dns"),
		pods: []pod{{"coredns-5d78c9869d-qrstu", "10.0.0.10"}}},
	// No fixture has a host-network pod. This one has a node IP that no fixture
	// end uses, for tests of ends whose IP is a node's and not one pod's.
	{namespace: "kube-system", kind: KindDaemonSet, name: "kube-proxy", labels: map[string]string{"k8s-app": "kube-proxy"},
		serviceAccount: "kube-proxy", hostNetwork: true, pods: []pod{{"kube-proxy-r7v2n", "172.18.0.2"}}},

	{namespace: "default", kind: KindDeployment, name: "probe", child: "6f8d9c7b5", labels: app("probe"),
		pods: []pod{{"probe-6f8d9c7b5-vwxyz", "10.0.1.31"}}},
	// Goldmane names debug-shell without "*": a pod that no workload owns, as
	// `kubectl run` makes it.
	{namespace: "default", name: "debug-shell", labels: map[string]string{"run": "debug-shell"},
		pods: []pod{{"debug-shell", "10.0.9.10"}}},

	// store, analytics and web: ztunnel only.
	{namespace: "store", kind: KindDeployment, name: "web", child: "7c9d8b6f5", labels: app("web"),
		serviceAccount: "web", pods: []pod{{"web-7c9d8b6f5-x2k9p", "10.244.1.12"}}},
	{namespace: "store", kind: KindDeployment, name: "orders", child: "5d8f7c9b4", labels: app("orders"),
		serviceAccount: "orders", pods: []pod{{"orders-5d8f7c9b4-qw7lm", "10.244.2.7"}}},
	// ztunnel gives db-0 no identity, so it runs as "default".
	{namespace: "store", kind: KindStatefulSet, name: "db", labels: app("db"),
		pods: []pod{{"db-0", "10.244.2.9"}}},
	{namespace: "store", kind: KindCronJob, name: "batch", child: "28391760", labels: app("batch"),
		serviceAccount: "batch", pods: []pod{{"batch-28391760-k8x2q", "10.244.5.40"}}},
	{namespace: "analytics", kind: KindDeployment, name: "reports", child: "55c6d7b8f9", labels: app("reports"),
		serviceAccount: "reports", pods: []pod{{"reports-55c6d7b8f9-lm2xp", "10.244.1.15"}}},
	{namespace: "web", kind: KindDeployment, name: "frontend", child: "84c9d6b7f", labels: app("frontend"),
		serviceAccount: "frontend", pods: []pod{{"frontend-84c9d6b7f-9zq1w", "10.244.6.2"}}},

	// guarded: no fixture has it, and its addresses come from 10.0.8.0/24, a
	// range no fixture uses. Violation tests send their own flows between these
	// workloads, so that what the fixtures teach stays as it is.
	{namespace: "guarded", kind: KindDeployment, name: "api", child: "5c6d7e8f9", labels: app("api"),
		serviceAccount: "api", pods: []pod{{"api-5c6d7e8f9-a1b2c", "10.0.8.10"}}},
	{namespace: "guarded", kind: KindDeployment, name: "client", child: "6d7e8f9a0", labels: app("client"),
		serviceAccount: "client", pods: []pod{{"client-6d7e8f9a0-d3e4f", "10.0.8.11"}}},
	{namespace: "guarded", kind: KindDeployment, name: "intruder", child: "7e8f9a0b1", labels: app("intruder"),
		serviceAccount: "intruder", pods: []pod{{"intruder-7e8f9a0b1-g5h6i", "10.0.8.12"}}},
}
