//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// TestRealCiliumRelease proves what follows promotion on the real Cilium
// node, with each backend. A workload's egress policy, learned and promoted
// to protect; then a release of the workload (a new image, so a new
// ReplicaSet) whose pod calls a port and an outside name that the policy does
// not allow. Cilium refuses both, the policy reports them, and both are
// learned into the policy's amendment, each tied to the new ReplicaSet and
// its image. The amendment's promote label lets them through, but for the
// name with backend kubernetes: a NetworkPolicy cannot allow a DNS name,
// which the amendment's WouldBlock said before it was promoted. A rollback to
// the first revision refuses them again.
func TestRealCiliumRelease(t *testing.T) {
	requireCilium(t)
	importImages(t)
	// Outside peers as entities: the outside host is learned by the name
	// that the pods call it by.
	installChart(t, "controller.provider.name=cilium", "controller.learning.outsidePeers=entities",
		"controller.provider.cilium.backend=kubernetes")
	logsOnFailure(t, namespace+"/"+enforcerPods, "kube-system/k8s-app=hubble-relay")
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	if outside := startOutsideHost(t); outside != outsideAddr {
		t.Fatalf("the outside host runs at %s, which the cluster's DNS does not name", outside)
	}
	t.Run("kubernetes", func(t *testing.T) { releaseJourney(t, "kubernetes") })
	t.Run("cilium", func(t *testing.T) {
		upgrade(t, "controller.provider.cilium.backend=cilium")
		leaderPod(t)
		releaseJourney(t, "cilium")
	})
}

// The server's ports: day 1 calls the first, the release the second.
const (
	releasePortA = 7070
	releasePortB = 9090
)

// releaseManifests are the release journey's workloads in namespace %[2]s:
// caller, which calls; server, behind a Service, on ports %[3]d and %[4]d;
// and Cilium's DNS visibility for the namespace (as in entitiesManifests),
// which gives the flows to the outside host the name that the pod looked up.
// %[1]s is the testpod image.
const releaseManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: %[2]s
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
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: %[1]s
          imagePullPolicy: Never
          args: [app]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: server, namespace: %[2]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: server}}
  template:
    metadata: {labels: {app: server}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: server
          image: %[1]s
          imagePullPolicy: Never
          args: [server, "%[3]d", "%[4]d"]
          readinessProbe: {tcpSocket: {port: %[3]d}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: server, namespace: %[2]s}
spec:
  selector: {app: server}
  ports:
    - {name: a, port: %[3]d, targetPort: %[3]d}
    - {name: b, port: %[4]d, targetPort: %[4]d}
`

// releaseJourney is the release journey with a backend: day 1 (caller calls
// server's port A and the outside host by name), learned and promoted to
// protect; the release (caller's image changes) calls server's port B and
// the outside host by another name; the amendment, promoted; the rollback.
func releaseJourney(t *testing.T, backend string) {
	start := time.Now()
	ns := "release-" + backend
	apply(t, fmt.Sprintf(releaseManifests, testpodImage, ns, releasePortA, releasePortB))
	deleteNamespaceAfter(t, ns)
	caller := waitReady(t, ns, "app=caller", 1, 2*time.Minute)[0]
	server := waitReady(t, ns, "app=server", 1, 2*time.Minute)[0]
	serverA := fmt.Sprintf("server.%s.svc.cluster.local:%d", ns, releasePortA)
	serverB := fmt.Sprintf("server.%s.svc.cluster.local:%d", ns, releasePortB)
	newHost, _, _ := strings.Cut(newName, ":")
	kind := map[string]string{"cilium": "ciliumnetworkpolicy", "kubernetes": "networkpolicy"}[backend]

	// Day 1, learned; promoted to protect once caller's egress proposal has
	// every day-1 edge: DNS, server's port A, the outside host's name.
	for range 2 {
		for _, addr := range []string{serverA, outsideName} {
			if d := connect(t, caller, addr); !d.ok() {
				t.Fatalf("day 1: caller to %s: %+v", addr, d)
			}
		}
	}
	const policy = "deployment-caller-egress"
	day1 := []string{fmt.Sprintf("TCP/%d", releasePortA), "UDP/53", "shop.outside.test TCP/8080"}
	var proposal v1alpha1.WorkloadNetworkPolicyProposal
	waitFor(t, "the day-1 edges in "+policy, 3*time.Minute, func() bool {
		return getJSON(ns, "workloadnetworkpolicyproposal", policy, &proposal) &&
			slices.Equal(allowedBy(&proposal.Spec), day1)
	})
	t.Logf("%s: day 1 learned %s after the workloads were applied: %v", backend, time.Since(start).Round(100*time.Millisecond), day1)
	kubectl(t, "-n", ns, "label", "workloadnetworkpolicyproposal", policy, v1alpha1.PromoteLabel+"=protect")
	var uid string
	waitFor(t, "the "+kind+" "+policy, time.Minute, func() bool {
		out, err := kubectlErr("", "-n", ns, "get", kind, policy, "-o", "jsonpath={.metadata.uid}")
		uid = strings.TrimSpace(out)
		return err == nil && uid != ""
	})
	// The agent holds the policy before the release's pod starts, so that
	// the pod's first connection meets it.
	waitFor(t, "the Cilium agent to hold the "+kind+" "+policy, time.Minute, func() bool {
		out, err := testproc.Command(filepath.Join(env.bin, "cilium-dbg"), "policy", "get", "-o", "json").Output()
		return err == nil && strings.Contains(string(out), uid)
	})
	var pol v1alpha1.WorkloadNetworkPolicy
	if !getJSON(ns, "workloadnetworkpolicy", policy, &pol) || pol.Spec.Mode != v1alpha1.PolicyModeProtect ||
		pol.Annotations[v1alpha1.RevisionAnnotation] != "1" {
		t.Fatalf("%s: the policy %s after promotion: mode %q, revision %q", backend, policy, pol.Spec.Mode, pol.Annotations[v1alpha1.RevisionAnnotation])
	}
	// Time must pass because Kubernetes keeps times to the second: a release
	// is told from what was live at the promotion when its ReplicaSet appears
	// in a later second.
	time.Sleep(time.Until(v1alpha1.PromotedAt(&pol).Add(time.Second)))

	// The release: a new image, so a new ReplicaSet, whose pod calls
	// server's port B and the outside host by a name that day 1 never used.
	released := time.Now()
	kubectl(t, "-n", ns, "set", "image", "deployment/caller", "app="+testpodRelease)
	var release pod
	waitFor(t, "the release's pod, alone and Ready", 2*time.Minute, func() bool {
		pods := listPods(t, ns, "app=caller")
		if len(pods) != 1 || pods[0].Name == caller.Name || !pods[0].ready() || pods[0].DeletionTimestamp != "" {
			return false
		}
		release = pods[0]
		return true
	})
	rs, serverRS := replicaSetOf(t, ns, release), replicaSetOf(t, ns, server)
	t.Logf("%s: the release %s (%s) rolled out in %s", backend, rs, testpodRelease, time.Since(released).Round(100*time.Millisecond))

	// Both new connections at once, refused, and the time from their
	// attempt to each one's edge in the amendment.
	amendment := policy + "-amendment"
	var am v1alpha1.WorkloadNetworkPolicyProposal
	edges := []releaseEdge{
		{what: "server's port B", addr: serverB, class: v1alpha1.PeerClassWorkload, name: "server", port: releasePortB, peerRevision: serverRS},
		{what: newHost, addr: newName, class: v1alpha1.PeerClassExternal, host: newHost, port: 8080},
	}
	attempted := time.Now()
	type answer struct {
		d   dial
		err error
	}
	answers := make([]chan answer, len(edges))
	for i, c := range edges {
		answers[i] = make(chan answer, 1)
		go func() {
			d, err := askConnect(release, c.addr)
			answers[i] <- answer{d, err}
		}()
	}
	toAmendment := map[string]time.Duration{}
	for i, c := range edges {
		if a := <-answers[i]; a.err != nil {
			t.Fatal(a.err)
		} else if a.d.Error == "" {
			t.Errorf("%s: protect let the release reach %s, which the policy does not allow", backend, c.addr)
		}
		waitFor(t, fmt.Sprintf("the edge to %s in %s", c.addr, amendment), 2*time.Minute, func() bool {
			return getJSON(ns, "workloadnetworkpolicyproposal", amendment, &am) && am.Status.Amendment != nil &&
				slices.ContainsFunc(am.Status.Amendment.Added, c.is)
		})
		toAmendment[c.addr] = time.Since(attempted)
	}
	// The policy reports both, from the release's ReplicaSet.
	for _, want := range []string{fmt.Sprintf("protect %d %s ", releasePortB, rs), fmt.Sprintf("protect 8080 %s %s", rs, newHost)} {
		waitFor(t, fmt.Sprintf("the violation %q in %s", want, policy), 90*time.Second, func() bool {
			out, _ := kubectlErr("", "-n", ns, "get", "workloadnetworkpolicy", policy, "-o",
				`jsonpath={range .status.violations[*]}{.action} {.dstPort} {.source.revision} {.destination.dnsName}{"\n"}{end}`)
			return slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, want) })
		})
	}
	reported := time.Since(attempted)

	a := am.Status.Amendment
	if am.Labels[v1alpha1.AmendsLabel] != policy || a.Policy != policy ||
		!slices.ContainsFunc(am.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == pol.UID }) {
		t.Errorf("%s: the amendment does not name its policy: label %q, status %q, owners %+v", backend, am.Labels[v1alpha1.AmendsLabel], a.Policy, am.OwnerReferences)
	}
	for _, want := range edges {
		i := slices.IndexFunc(a.Added, want.is)
		if i < 0 {
			t.Errorf("%s: no edge to %s in the amendment's %+v", backend, want.what, a.Added)
			continue
		}
		e := a.Added[i]
		if e.Origin != v1alpha1.EdgeOriginNewRevision || e.TargetRevision == nil || e.TargetRevision.Name != rs ||
			!slices.Equal(e.TargetRevision.Images, []string{testpodRelease}) {
			t.Errorf("%s: the edge to %s: origin %s, target revision %+v; want NewRevision by %s with %s", backend, want.what, e.Origin, e.TargetRevision, rs, testpodRelease)
		}
		if want.peerRevision != "" && (e.PeerRevision == nil || e.PeerRevision.Name != want.peerRevision) {
			t.Errorf("%s: the edge to %s: peer revision %+v, want %s", backend, want.what, e.PeerRevision, want.peerRevision)
		}
	}
	if a.NewRevisionEdges != 2 || a.LearnedRevisionEdges != 0 {
		t.Errorf("%s: %d new and %d learned revision edges, want 2 and 0", backend, a.NewRevisionEdges, a.LearnedRevisionEdges)
	}
	if c := meta.FindStatusCondition(am.Status.Conditions, v1alpha1.ConditionRevisions); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s: the amendment's Revisions condition %+v, want True", backend, c)
	}
	amended := []string{fmt.Sprintf("TCP/%d", releasePortA), fmt.Sprintf("TCP/%d", releasePortB), "UDP/53",
		"other.outside.test TCP/8080", "shop.outside.test TCP/8080"}
	if got := allowedBy(&am.Spec); !slices.Equal(got, amended) {
		t.Errorf("%s: the amendment's spec allows %v, want %v", backend, got, amended)
	}
	specYAML, err := yaml.Marshal(am.Spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: from the refused connections' attempt (%s timeout) to their edges in %s: port B %s, %s %s; to both violations in the policy's status %s; the amendment: %d added edges, its spec %d bytes of YAML",
		backend, dialTimeout, amendment, toAmendment[serverB].Round(100*time.Millisecond), newHost, toAmendment[newName].Round(100*time.Millisecond),
		reported.Round(100*time.Millisecond), len(a.Added), len(specYAML))

	// The preview: with backend kubernetes, protect would still block the
	// name (a NetworkPolicy cannot name it); with backend cilium, nothing.
	var wouldBlock *metav1.Condition
	waitFor(t, "the amendment's WouldBlock condition", 2*time.Minute, func() bool {
		if !getJSON(ns, "workloadnetworkpolicyproposal", amendment, &am) {
			return false
		}
		wouldBlock = meta.FindStatusCondition(am.Status.Conditions, v1alpha1.ConditionWouldBlock)
		if wouldBlock == nil {
			return false
		}
		if backend == "kubernetes" {
			return wouldBlock.Status == metav1.ConditionTrue && strings.Contains(wouldBlock.Message, string(v1alpha1.PeerClassExternal))
		}
		return wouldBlock.Status == metav1.ConditionFalse
	})
	t.Logf("%s: the amendment's WouldBlock: %s %s: %s", backend, wouldBlock.Status, wouldBlock.Reason, wouldBlock.Message)

	// One label merges the amendment: revision 2, and the native object lets
	// the release through.
	kubectl(t, "-n", ns, "label", "workloadnetworkpolicyproposal", amendment, v1alpha1.PromoteLabel+"=protect")
	labelled := time.Now()
	waitFor(t, "revision 2 of "+policy, time.Minute, func() bool {
		return getJSON(ns, "workloadnetworkpolicy", policy, &pol) && pol.Annotations[v1alpha1.RevisionAnnotation] == "2"
	})
	merged := time.Since(labelled)
	if got := allowedBy(&pol.Spec.PolicySpec); !slices.Equal(got, amended) || pol.Spec.Mode != v1alpha1.PolicyModeProtect {
		t.Errorf("%s: the policy after the label: mode %s, allows %v; want protect, %v", backend, pol.Spec.Mode, got, amended)
	}
	// The first connection that opens: begun (after refused tries) and
	// opened, from the label.
	var began, opened time.Duration
	refusedTries := 0
	waitFor(t, "the release's connection to server's port B", time.Minute, func() bool {
		try := time.Now()
		if connect(t, release, serverB).ok() {
			began, opened = try.Sub(labelled), time.Since(labelled)
			return true
		}
		refusedTries++
		return false
	})
	// The amendment goes, as a promoted proposal does.
	waitFor(t, "the amendment "+amendment+" to go", 30*time.Second, func() bool {
		return !getJSON(ns, "workloadnetworkpolicyproposal", amendment, &am)
	})

	if backend == "kubernetes" {
		// The name is in the policy's spec, as the amendment said, and the
		// NetworkPolicy cannot allow it, as its WouldBlock said: Cilium
		// still refuses it. That edge is the policy's already: no
		// amendment comes back for it (below).
		if d := connect(t, release, newName); d.Error == "" {
			t.Errorf("%s: the release reached %s, which a NetworkPolicy cannot allow and the amendment's WouldBlock said it would block", backend, newName)
		}
	}

	// No false deny: each connection of the release and of day 1, again and
	// again, from the next whole second on (violation records keep their
	// time to the second), and no new violation of the policy.
	open := []string{serverA, serverB}
	if backend == "cilium" {
		open = append(open, outsideName, newName)
	}
	// Time must pass because violation records keep their time to the
	// second: the attempts start in the next whole second.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	from := time.Now().Truncate(time.Second)
	const attempts = 20
	falseDenies := 0
	for range attempts {
		for _, addr := range open {
			if d := connect(t, release, addr); !d.ok() {
				falseDenies++
				t.Errorf("%s: after the amendment, the release to %s failed: %+v", backend, addr, d)
			}
		}
	}
	// Time must pass because a status sync that has nothing to write leaves no
	// trace: two syncs, either of which would write a false deny's violation.
	time.Sleep(2 * syncInterval)
	var after v1alpha1.WorkloadNetworkPolicy
	if !getJSON(ns, "workloadnetworkpolicy", policy, &after) {
		t.Fatalf("%s: the policy %s is gone", backend, policy)
	}
	var newViolations []string
	for _, v := range after.Status.Violations {
		if !v.Timestamp.Time.Before(from) {
			newViolations = append(newViolations, fmt.Sprintf("%s %s/%d to %s%s at %s", v.Action, v.Protocol, v.DstPort,
				v.Destination.Name, v.Destination.DNSName, v.Timestamp.Format(time.RFC3339)))
		}
	}
	if len(newViolations) > 0 {
		t.Errorf("%s: violations of the connections that the amendment allowed: %v", backend, newViolations)
	}
	if getJSON(ns, "workloadnetworkpolicyproposal", amendment, &am) {
		t.Errorf("%s: %s came back after its promotion, created %s, adding %+v", backend, amendment,
			am.CreationTimestamp.Format(time.RFC3339), am.Status.Amendment)
	}
	t.Logf("%s: from the label to revision 2 %s; to the first connection to port B that opened (after %d refused) %s, opened at %s; then %d of %d connections failed (to %v), %d new violations",
		backend, merged.Round(100*time.Millisecond), refusedTries, began.Round(100*time.Millisecond), opened.Round(100*time.Millisecond),
		falseDenies, attempts*len(open), open, len(newViolations))

	// Rollback to revision 1: port B refused again.
	kubectl(t, "-n", ns, "annotate", "workloadnetworkpolicy", policy, v1alpha1.RollbackToAnnotation+"=1")
	rolledBack := time.Now()
	waitFor(t, "revision 3 of "+policy+", revision 1's rules", time.Minute, func() bool {
		return getJSON(ns, "workloadnetworkpolicy", policy, &pol) && pol.Annotations[v1alpha1.RevisionAnnotation] == "3"
	})
	if got := allowedBy(&pol.Spec.PolicySpec); !slices.Equal(got, day1) || pol.Annotations[v1alpha1.ChangeCauseAnnotation] != "rollback to revision 1" {
		t.Errorf("%s: after the rollback the policy allows %v (%q), want %v", backend, got, pol.Annotations[v1alpha1.ChangeCauseAnnotation], day1)
	}
	var refusedAgain time.Duration
	openedTries := 0
	waitFor(t, "Cilium to refuse server's port B again", time.Minute, func() bool {
		try := time.Now()
		if connect(t, release, serverB).Error != "" {
			refusedAgain = try.Sub(rolledBack)
			return true
		}
		openedTries++
		return false
	})
	if backend == "cilium" {
		if d := connect(t, release, newName); d.Error == "" {
			t.Errorf("%s: after the rollback the release still reaches %s", backend, newName)
		}
	}
	t.Logf("%s: from the rollback's annotation to the first refused connection to port B (after %d that opened) %s; the journey took %s",
		backend, openedTries, refusedAgain.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// dialTimeout is how long the test pods' /connect waits for a connection
// (test/cluster/testpod): a refused one fails after it.
const dialTimeout = 3 * time.Second

// releaseEdge is a connection that the release makes, and its edge in an
// amendment.
type releaseEdge struct {
	what, addr string
	class      v1alpha1.PeerClass
	name, host string
	port       int32
	// peerRevision is the peer's revision, when the peer is a workload.
	peerRevision string
}

func (r releaseEdge) is(e v1alpha1.AmendedEdge) bool {
	return e.Peer.Class == r.class && e.Peer.Name == r.name && e.Peer.DNSName == r.host && e.Protocol == "TCP" && e.Port == r.port
}

// replicaSetOf is the ReplicaSet of a Deployment's pod.
func replicaSetOf(t *testing.T, ns string, p pod) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, "-n", ns, "get", "pod", p.Name, "-o", `jsonpath={.metadata.ownerReferences[?(@.kind=="ReplicaSet")].name}`))
}

// getJSON reads ns/name of resource into obj, a pointer, which it zeroes
// first (a field that the object omits must not keep an earlier read's
// value); false when it cannot.
func getJSON(ns, resource, name string, obj any) bool {
	reflect.ValueOf(obj).Elem().SetZero()
	out, err := kubectlErr("", "-n", ns, "get", resource, name, "-o", "json")
	return err == nil && json.Unmarshal([]byte(out), obj) == nil
}

// allowedBy is what a spec allows, as the journey names it, sorted: each
// protocol and port of its NetworkPolicy rules (PROTO/PORT), and each
// outside DNS name with its ports (NAME PROTO/PORT).
func allowedBy(s *v1alpha1.PolicySpec) []string {
	var out []string
	if s.Kubernetes != nil {
		for _, r := range s.Kubernetes.Egress {
			for _, p := range r.Ports {
				out = append(out, portString(p.Protocol, p.Port.String()))
			}
		}
		for _, r := range s.Kubernetes.Ingress {
			for _, p := range r.Ports {
				out = append(out, portString(p.Protocol, p.Port.String()))
			}
		}
	}
	for _, o := range s.Outside {
		if o.DNSName == "" {
			continue
		}
		for _, p := range o.Ports {
			out = append(out, o.DNSName+" "+portString(p.Protocol, p.Port.String()))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func portString[P ~string](proto *P, port string) string {
	pr := "TCP"
	if proto != nil {
		pr = string(*proto)
	}
	return pr + "/" + port
}
