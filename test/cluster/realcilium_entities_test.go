//go:build cluster

package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// TestRealCiliumEntities proves outside_peers entities on the real Cilium
// agent, with each backend: that protect blocks nothing that learning saw and
// the preview allowed, and that the preview is what Cilium does
// (docs/data-plane-verdicts.md).
func TestRealCiliumEntities(t *testing.T) {
	requireCilium(t)
	importImages(t)
	installChart(t, "controller.provider.name=cilium")
	logsOnFailure(t, namespace+"/"+enforcerPods, "kube-system/k8s-app=hubble-relay")
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	outside := startOutsideHost(t)
	if outside != outsideAddr {
		t.Fatalf("the outside host runs at %s, which the cluster's DNS does not name", outside)
	}
	t.Run("kubernetes", func(t *testing.T) { entitiesJourney(t, "kubernetes", 18080) })
	t.Run("cilium", func(t *testing.T) { entitiesJourney(t, "cilium", 18090) })
}

// reach has from reach addr on a fresh connection: the API server as a real
// client (the pods of its namespace, with its service account), else a TCP
// connection that opens.
func reach(t *testing.T, from pod, addr string) error {
	t.Helper()
	if addr != apiServer {
		if d := connect(t, from, addr); d.Error != "" {
			return errors.New(d.Error)
		}
		return nil
	}
	body, err := httpDo("GET", "http://"+net.JoinHostPort(from.IP, "8081")+"/list-pods", "")
	if err != nil {
		t.Fatalf("asking %s to list its pods: %v", from.Name, err)
	}
	var answer struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if answer.Status != 200 {
		return fmt.Errorf("listing pods: status %d %s", answer.Status, answer.Error)
	}
	return nil
}

// outsideName is the outside host by the name that the cluster's CoreDNS
// serves for it (tools/cluster/coredns.yaml), and newName its other address
// by another name, which day 1 never calls.
const (
	outsideName = "shop.outside.test:8080"
	newName     = "other.outside.test:8080"
)

// waitForViolation waits for a violation of action (monitor or protect) on
// port in the policy's status.
func waitForViolation(t *testing.T, ns, policy, action string, port int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a %s violation on port %d in %s", action, port, policy), 90*time.Second, func() bool {
		out, _ := kubectlErr("", "-n", ns, "get", "workloadnetworkpolicy", policy,
			"-o", `jsonpath={range .status.violations[*]}{.action} {.dstPort}{"\n"}{end}`)
		return slices.Contains(strings.Split(out, "\n"), fmt.Sprintf("%s %d", action, port))
	})
}

// entitiesManifests are the entities journey's workloads in namespace %[2]s: a
// caller, and a server on the node's own network listening on ports %[3]d and
// %[4]d; and Cilium's DNS visibility for the namespace, as Cilium documents
// it: a policy whose DNS rule sends the pods' lookups through the agent's DNS
// proxy, without putting them into default deny. %[1]s is the testpod image.
const entitiesManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: %[2]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: list-pods, namespace: %[2]s}
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: caller-lists-pods, namespace: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: list-pods}
subjects:
  - {kind: ServiceAccount, name: default, namespace: %[2]s}
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: dns-visibility, namespace: %[2]s}
spec:
  endpointSelector: {}
  enableDefaultDeny: {egress: false}
  egress:
    - toEndpoints:
        - matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}
      toPorts:
        - ports: [{port: "53", protocol: ANY}]
          rules:
            dns: [{matchPattern: "*"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: caller, namespace: %[2]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: caller}}
  template:
    metadata: {labels: {app: caller}}
    spec:
      containers:
        - name: app
          image: %[1]s
          imagePullPolicy: Never
          args: [app]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nodesrv, namespace: %[2]s}
spec:
  selector: {matchLabels: {app: nodesrv}}
  template:
    metadata: {labels: {app: nodesrv}}
    spec:
      hostNetwork: true
      containers:
        - name: server
          image: %[1]s
          imagePullPolicy: Never
          args: [server, "%[3]d", "%[4]d"]
`

// entitiesJourney is outside_peers entities on the real Cilium node with a
// backend: day 1 calls the API server (a real client, through the kubernetes
// Service), a
// server on the node's network, and the outside host; each day-1 edge's
// verdict in the proposal is the preview; every proposal is promoted to
// protect; each day-1 connection is made again on fresh connections. The set
// of connections that fail must be the set whose edge was WouldBlock: with
// backend cilium none (the API server and the node as Cilium's entities),
// with backend kubernetes the API server and the node (an ipBlock does not
// select them on Cilium). A port that day 1 never used, a name that it never
// used and the reverse direction are refused and reported.
func entitiesJourney(t *testing.T, backend string, port int) {
	ns := "edge-" + backend
	start := time.Now()
	upgrade(t, "controller.learning.outsidePeers=entities", "controller.provider.cilium.backend="+backend)
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	leaderPod(t)
	t.Logf("%s: the enforcers run with it %s after the upgrade began", backend, time.Since(start).Round(100*time.Millisecond))
	apply(t, fmt.Sprintf(entitiesManifests, testpodImage, ns, port, port+1))
	deleteNamespaceAfter(t, ns)
	caller := waitReady(t, ns, "app=caller", 1, 2*time.Minute)[0]
	node := waitReady(t, ns, "app=nodesrv", 1, 2*time.Minute)[0].IP // a host-network pod has its node's address
	nodeAddr := fmt.Sprintf("%s:%d", node, port)

	// Day 1, and the edge each call is seen as (class and destination port).
	// The outside host is called by the name that the cluster's DNS serves
	// for it, which the DNS proxy gives its flows (destination_names).
	// The node's server is the API server to Cilium: on this one node the API
	// server runs on the host, whose identity then carries the label
	// reserved:kube-apiserver for every address of the node, and Cilium's
	// entity kube-apiserver selects it (docs/flow-schema.md). The nodes as
	// an entity are learned from the kubelet's probes into caller, below.
	day1 := map[string]string{
		apiServer:   fmt.Sprintf("APIServer TCP/%d", apiPort),
		nodeAddr:    fmt.Sprintf("APIServer TCP/%d", port),
		outsideName: "External TCP/8080",
	}
	for range 2 {
		for addr := range day1 {
			if err := reach(t, caller, addr); err != nil {
				t.Fatalf("day 1: caller to %s: %v", addr, err)
			}
		}
	}
	const proposal = "deployment-caller-egress"
	preview := map[string]string{}
	waitFor(t, "the day-1 edges in "+proposal, 3*time.Minute, func() bool {
		edges, _ := observedEdgesIn(t, ns, "workloadnetworkpolicyproposal", proposal)
		for _, e := range edges {
			preview[fmt.Sprintf("%s %s/%d", e.Class, e.Protocol, e.Port)] = e.Verdict
		}
		for _, key := range day1 {
			if preview[key] == "" {
				return false
			}
		}
		return true
	})
	spec := kubectl(t, "-n", ns, "get", "workloadnetworkpolicyproposal", proposal, "-o", "jsonpath={.spec.backend} {.spec.outside}")
	t.Logf("%s: %s learned %s; preview %v", backend, proposal, spec, preview)
	if !strings.HasPrefix(spec, backend+" ") || !strings.Contains(spec, `"entity":"APIServer"`) || !strings.Contains(spec, `"dnsName":"shop.outside.test"`) {
		t.Errorf("%s: the proposal's backend and outside peers %s, want backend %s with the API server and shop.outside.test", backend, spec, backend)
	}
	// The kubelet's probes come from the node into caller, which Cilium lets
	// in whatever the policy (Allowed on either backend): learned as the
	// pod's own node (Host), never as every node, which would let the other
	// nodes in too.
	const ingress = "deployment-caller-ingress"
	waitFor(t, "the pod's own node in "+ingress, 2*time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", ns, "get", "workloadnetworkpolicyproposal", ingress, "-o", "jsonpath={.spec.outside} {.status.wouldBlockEdges}")
		return strings.Contains(out, `"entity":"Host"`) && !strings.Contains(out, `"entity":"Nodes"`) && strings.HasSuffix(strings.TrimSpace(out), " 0")
	})

	// Monitor mode first, for caller's egress: on either backend it has no
	// object in the data plane (Cilium has no per-policy audit mode), so the
	// enforcer judges the flows against the spec, by the verdict that its
	// evidence shows. A port of the node that day 1 never used still opens,
	// and is reported as a monitor violation; protect, below, refuses the
	// same connection, and reports it as protect.
	newPort := fmt.Sprintf("%s:%d", node, port+1)
	promoteRendered(t, ns, proposal, "monitor")
	waitFor(t, "the policy "+proposal+" in monitor mode", time.Minute, func() bool {
		out, err := kubectlErr("", "-n", ns, "get", "workloadnetworkpolicy", proposal, "-o", "jsonpath={.spec.mode}")
		return err == nil && out == "monitor"
	})
	if d := connect(t, caller, newPort); d.Error != "" {
		t.Fatalf("%s: monitor mode refused %s: %s", backend, newPort, d.Error)
	}
	waitForViolation(t, ns, proposal, "monitor", port+1)
	kubectl(t, "-n", ns, "patch", "workloadnetworkpolicy", proposal, "--type", "merge", "-p", `{"spec":{"mode":"protect"}}`)
	waitFor(t, "the promoted proposal "+proposal+" to go", time.Minute, func() bool {
		_, err := kubectlErr("", "-n", ns, "get", "workloadnetworkpolicyproposal", proposal)
		return err != nil
	})
	t.Logf("%s: monitor reported the connection to %s, which it let through; %s now in protect", backend, newPort, proposal)

	// Promote every other first proposal of the namespace to protect. The
	// caller's policy has an amendment by now (the monitor violation above),
	// which stays unpromoted: the port it would add is refused below.
	names := strings.Fields(kubectl(t, "-n", ns, "get", "workloadnetworkpolicyproposals", "-l", "!"+v1alpha1.AmendsLabel,
		"-o", "jsonpath={.items[*].metadata.name}"))
	kind := map[string]string{"cilium": "ciliumnetworkpolicy", "kubernetes": "networkpolicy"}[backend]
	// Each printed by the built binary's render subcommand first, which
	// reads the API server's and the nodes' addresses from the cluster.
	printed := map[string]string{}
	for _, name := range names {
		printed[name] = promoteRendered(t, ns, name, "protect")
	}
	largest := 0
	for _, name := range names {
		waitFor(t, "the "+kind+" "+name, time.Minute, func() bool {
			out, err := kubectlErr("", "-n", ns, "get", kind, name, "-o", "json")
			largest = max(largest, len(out))
			return err == nil
		})
		checkRendered(t, printed[name])
	}
	waitFor(t, "the "+kind+" "+proposal, time.Minute, func() bool {
		_, err := kubectlErr("", "-n", ns, "get", kind, proposal)
		return err == nil
	})
	t.Logf("%s: promoted %v; the largest %s is %d bytes of JSON", backend, names, kind, largest)

	// The port that monitor reported is refused once Cilium enforces, and
	// reported again, as protect.
	enforced := time.Now()
	waitFor(t, "Cilium to refuse the node's other port", time.Minute, func() bool {
		return connect(t, caller, newPort).Error != ""
	})
	t.Logf("%s: Cilium enforced %s after the policies appeared", backend, time.Since(enforced).Round(100*time.Millisecond))
	waitForViolation(t, ns, proposal, "protect", port+1)

	// A name that day 1 never used, at an address that no allowed name
	// resolves to, and the reverse direction (the outside host calling
	// caller): Cilium refuses both, and the enforcer reports each against the
	// policy that refused it. No day-1 edge of caller uses these ports in
	// these directions, so each record is the new connection's.
	if d := connect(t, caller, newName); d.Error == "" {
		t.Errorf("%s: protect let caller reach %s, a name that day 1 never used", backend, newName)
	}
	waitForViolation(t, ns, proposal, "protect", 8080)
	if err := dialFromOutside(t, net.JoinHostPort(caller.IP, "8080")); err == nil {
		t.Errorf("%s: protect let the outside host reach caller, which day 1 never saw", backend)
	}
	waitForViolation(t, ns, ingress, "protect", 8080)
	t.Logf("%s: the new name and the reverse direction refused and reported", backend)

	// Preview against reality, on fresh connections.
	var failed, wouldBlock, disagree []string
	falseDenies := 0
	for addr, key := range day1 {
		fails := 0
		for range 3 {
			if reach(t, caller, addr) != nil {
				fails++
			}
		}
		if fails > 0 {
			failed = append(failed, key)
		}
		blocked := preview[key] == "WouldBlock"
		if blocked {
			wouldBlock = append(wouldBlock, key)
		} else {
			falseDenies += fails
		}
		if (fails > 0) != blocked || (blocked && fails != 3) {
			disagree = append(disagree, fmt.Sprintf("%s: preview %s, %d of 3 fresh connections failed", key, preview[key], fails))
		}
	}
	sort.Strings(failed)
	sort.Strings(wouldBlock)
	t.Logf("%s: failed in protect %v; WouldBlock on day 1 %v; false denies %d; disagreements %d %v",
		backend, failed, wouldBlock, falseDenies, len(disagree), disagree)
	if len(disagree) > 0 {
		t.Errorf("%s: the preview disagrees with Cilium: %v", backend, disagree)
	}
	wantBlocked := map[string][]string{
		"cilium":     nil,
		"kubernetes": {day1[apiServer], day1[nodeAddr], day1[outsideName]},
	}[backend]
	sort.Strings(wantBlocked)
	if !slices.Equal(wouldBlock, wantBlocked) {
		t.Errorf("%s: WouldBlock %v, want %v", backend, wouldBlock, wantBlocked)
	}
}
