package netpolmatch

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// outsideEgress is an egress spec of backend that allows the API server on
// TCP 6443, the nodes on any port, api.example.com and *.storage.example.net,
// and the address block 192.0.2.0/24 on TCP 443.
func outsideEgress(backend v1alpha1.Backend) *v1alpha1.PolicySpec {
	tcp := func(n int32) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(n))}}
	}
	return &v1alpha1.PolicySpec{
		Backend: backend, Direction: v1alpha1.DirectionEgress,
		TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "web"},
		Kubernetes: &networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}},
				Ports: tcp(443),
			}},
		},
		Outside: []v1alpha1.OutsidePeer{
			{Entity: v1alpha1.EntityAPIServer, Ports: tcp(6443)},
			{Entity: v1alpha1.EntityNodes},
			{DNSName: "api.example.com", Ports: tcp(443)},
			{DNSName: "*.storage.example.net", Ports: tcp(443)},
		},
	}
}

// TestMatchSpecOutside: each peer beyond the workloads is judged as the
// backend renders it and the data plane enforces it (docs/data-plane-verdicts.md).
func TestMatchSpecOutside(t *testing.T) {
	apiServer := &Peer{Address: "192.0.2.10", Class: v1alpha1.PeerClassAPIServer}
	remoteNode := &Peer{Address: "192.0.2.11", Class: v1alpha1.PeerClassRemoteNode}
	host := &Peer{Address: "192.0.2.12", Class: v1alpha1.PeerClassHost}
	named := func(names ...string) *Peer {
		return &Peer{Address: "203.0.113.7", Class: v1alpha1.PeerClassExternal, DNSNames: names}
	}
	world := &Peer{Address: "192.0.2.99", Class: v1alpha1.PeerClassExternal}
	cases := []struct {
		name     string
		backend  v1alpha1.Backend
		dp       DataPlane
		peer     *Peer
		port     int32
		wantRule string
		allowed  bool
	}{
		{"cilium: the API server by its entity", v1alpha1.BackendCilium, DataPlaneCilium, apiServer, 6443, "outside[0]", true},
		{"cilium: the API server on another port", v1alpha1.BackendCilium, DataPlaneCilium, apiServer, 443, "", false},
		{"cilium: a remote node, any port", v1alpha1.BackendCilium, DataPlaneCilium, remoteNode, 10250, "outside[1]", true},
		{"cilium: a name", v1alpha1.BackendCilium, DataPlaneCilium, named("api.example.com"), 443, "outside[2]", true},
		{"cilium: one of the names", v1alpha1.BackendCilium, DataPlaneCilium, named("cdn.example.org", "b.storage.example.net"), 443, "outside[3]", true},
		{"cilium: a name the pattern does not reach", v1alpha1.BackendCilium, DataPlaneCilium, named("a.b.storage.example.net"), 443, "", false},
		{"cilium: a new name", v1alpha1.BackendCilium, DataPlaneCilium, named("evil.example.com"), 443, "", false},
		{"cilium: an address in the block", v1alpha1.BackendCilium, DataPlaneCilium, world, 443, "egress[0]", true},
		// The API server's and the nodes' addresses are in 192.0.2.0/24,
		// which Cilium's CIDR rules do not select them by.
		{"kubernetes on Cilium: the API server", v1alpha1.BackendKubernetes, DataPlaneCilium, apiServer, 6443, "", false},
		{"kubernetes on Cilium: the API server, in the block", v1alpha1.BackendKubernetes, DataPlaneCilium, apiServer, 443, "", false},
		{"kubernetes on Calico: the API server", v1alpha1.BackendKubernetes, DataPlaneCalico, apiServer, 6443, "outside[0]", true},
		{"kubernetes on Calico: the API server, in the block", v1alpha1.BackendKubernetes, DataPlaneCalico, apiServer, 443, "egress[0]", true},
		{"kubernetes: a name has no NetworkPolicy form", v1alpha1.BackendKubernetes, DataPlaneCalico, named("api.example.com"), 443, "", false},
		{"kubernetes on Cilium: the host, egress", v1alpha1.BackendKubernetes, DataPlaneCilium, host, 53, "", false},
		{"cilium: the host, egress", v1alpha1.BackendCilium, DataPlaneCilium, host, 53, "outside[1]", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rule, allowed := MatchSpec(outsideEgress(c.backend), "shop", c.dp, c.peer, corev1.ProtocolTCP, c.port, nil)
			if rule != c.wantRule || allowed != c.allowed {
				t.Fatalf("got rule %q allowed %v, want %q %v", rule, allowed, c.wantRule, c.allowed)
			}
		})
	}
}

// TestLocalHostPassesOnCilium: Cilium lets its node's own traffic into the
// node's pods whatever the policy says (the kubelet's probes); the remote
// nodes and other data planes' hosts are judged by the spec.
func TestLocalHostPassesOnCilium(t *testing.T) {
	spec := &v1alpha1.PolicySpec{
		Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
		Kubernetes: learnedIngress(),
	}
	host := &Peer{Address: "192.0.2.12", Class: v1alpha1.PeerClassHost}
	if rule, ok := MatchSpec(spec, "shop", DataPlaneCilium, host, corev1.ProtocolTCP, 8080, nil); !ok || rule != DataPlaneRule {
		t.Errorf("the local host on Cilium: rule %q allowed %v, want %q true", rule, ok, DataPlaneRule)
	}
	remote := &Peer{Address: "192.0.2.11", Class: v1alpha1.PeerClassRemoteNode}
	if _, ok := MatchSpec(spec, "shop", DataPlaneCilium, remote, corev1.ProtocolTCP, 8080, nil); ok {
		t.Error("a remote node on Cilium is allowed by a spec that does not name it")
	}
	if _, ok := MatchSpec(spec, "shop", DataPlaneCalico, host, corev1.ProtocolTCP, 8080, nil); ok {
		t.Error("a Calico host endpoint is allowed by a spec that does not name it")
	}
}

func TestNameMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"api.example.com", "api.example.com", true},
		{"api.example.com", "www.api.example.com", false},
		{"*.example.com", "api.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "a.b.example.com", false},
		{"*.example.com", "", false},
	} {
		if got := NameMatches(c.pattern, c.name); got != c.want {
			t.Errorf("NameMatches(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// TestWhyBlocked: the WouldBlock condition's reason for a blocked API server
// names what to choose instead, by backend and data plane.
func TestWhyBlocked(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend v1alpha1.Backend
		dp      DataPlane
		outside []v1alpha1.OutsidePeer
		want    string
	}{
		{"kubernetes on Cilium, entity learned", v1alpha1.BackendKubernetes, DataPlaneCilium,
			[]v1alpha1.OutsidePeer{{Entity: v1alpha1.EntityAPIServer}},
			"Cilium does not select the API server or the nodes by a NetworkPolicy ipBlock: choose backend cilium"},
		{"kubernetes on Cilium, nothing learned", v1alpha1.BackendKubernetes, DataPlaneCilium, nil,
			"Cilium does not select the API server or the nodes by an address block: choose backend cilium and outside_peers entities"},
		{"cilium, nothing learned", v1alpha1.BackendCilium, DataPlaneCilium, nil,
			"not in spec.outside: learn it with outside_peers entities, or add entity APIServer"},
		{"cilium, another port", v1alpha1.BackendCilium, DataPlaneCilium,
			[]v1alpha1.OutsidePeer{{Entity: v1alpha1.EntityAPIServer}},
			"spec.outside allows the APIServer on other ports only"},
	} {
		spec := &v1alpha1.PolicySpec{Backend: c.backend, Outside: c.outside}
		if got := WhyBlocked(spec, c.dp)(v1alpha1.PeerClassAPIServer); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCoversTheClassesOfEachEntity: Nodes stands for every node, Host and
// RemoteNodes for the pod's own node and the others alone, and each is the
// narrowest entity of its class.
func TestCoversTheClassesOfEachEntity(t *testing.T) {
	classes := []v1alpha1.PeerClass{v1alpha1.PeerClassHost, v1alpha1.PeerClassRemoteNode, v1alpha1.PeerClassNode,
		v1alpha1.PeerClassAPIServer, v1alpha1.PeerClassExternal}
	want := map[v1alpha1.Entity][]v1alpha1.PeerClass{
		v1alpha1.EntityNodes:       {v1alpha1.PeerClassHost, v1alpha1.PeerClassRemoteNode, v1alpha1.PeerClassNode},
		v1alpha1.EntityHost:        {v1alpha1.PeerClassHost},
		v1alpha1.EntityRemoteNodes: {v1alpha1.PeerClassRemoteNode},
		v1alpha1.EntityAPIServer:   {v1alpha1.PeerClassAPIServer},
		"":                         nil,
	}
	for e, covered := range want {
		for _, c := range classes {
			if got := Covers(e, c); got != slices.Contains(covered, c) {
				t.Errorf("Covers(%q, %s) = %v", e, c, got)
			}
		}
	}
	for _, c := range []v1alpha1.PeerClass{v1alpha1.PeerClassHost, v1alpha1.PeerClassRemoteNode, v1alpha1.PeerClassNode, v1alpha1.PeerClassAPIServer} {
		if e := EntityOf(c); !Covers(e, c) || (e == v1alpha1.EntityNodes) != (c == v1alpha1.PeerClassNode) {
			t.Errorf("EntityOf(%s) = %s", c, e)
		}
	}
}
