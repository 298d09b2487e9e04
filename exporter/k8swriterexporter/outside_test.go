package k8swriterexporter

import (
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

func outsideEdge(backend v1alpha1.Backend, entity v1alpha1.Entity, name, proto string, port uint32) learning.Edge {
	return learning.Edge{Backend: backend, Workload: frontend, Direction: v1alpha1.DirectionEgress,
		PeerEntity: entity, PeerName: name, Protocol: proto, Port: port}
}

// outsideOf describes spec.outside as "<entity or name> <ports>".
func outsideOf(spec *v1alpha1.PolicySpec) []string {
	var out []string
	for _, o := range spec.Outside {
		var ps []string
		for _, p := range o.Ports {
			s := string(*p.Protocol) + "/" + p.Port.String()
			if p.EndPort != nil {
				s += fmt.Sprint("-", *p.EndPort)
			}
			ps = append(ps, s)
		}
		out = append(out, fmt.Sprint(string(o.Entity)+o.DNSName, " ", ps))
	}
	return out
}

// TestOutsidePeersAreWrittenToSpecOutside: learned entities and DNS names
// are spec.outside, in one canonical order, beside the backend's own rules,
// on backend cilium as on kubernetes; a new port merges; a new leader reads
// them back as they are.
func TestOutsidePeersAreWrittenToSpecOutside(t *testing.T) {
	for _, backend := range []v1alpha1.Backend{v1alpha1.BackendCilium, v1alpha1.BackendKubernetes} {
		t.Run(string(backend), func(t *testing.T) {
			w, fake := startWriter(t)
			fake.Lead()
			block := cidrEdge(v1alpha1.DirectionEgress, "198.51.100.4/32", "tcp", 443)
			block.Backend = backend
			learnEdges(t, w,
				outsideEdge(backend, v1alpha1.EntityAPIServer, "", "tcp", 6443),
				outsideEdge(backend, v1alpha1.EntityNodes, "", "udp", 53),
				outsideEdge(backend, "", "api.example.com", "tcp", 443),
				block,
			)
			if errs := fake.Drain(); len(errs) != 0 {
				t.Fatal(errs)
			}
			got := fake.Proposals()
			if len(got) != 1 || got[0].Spec.Backend != backend {
				t.Fatalf("proposals %+v", got)
			}
			want := "[APIServer [TCP/6443] Nodes [UDP/53] api.example.com [TCP/443]]"
			if o := fmt.Sprint(outsideOf(&got[0].Spec)); o != want {
				t.Fatalf("outside %s, want %s", o, want)
			}
			eg := got[0].Spec.Kubernetes.Egress
			if rules := fmt.Sprint(peersAndPorts(func(i int) []networkingv1.NetworkPolicyPeer { return eg[i].To },
				func(i int) []networkingv1.NetworkPolicyPort { return eg[i].Ports }, len(eg))); rules != "[198.51.100.4/32 [TCP/443]]" {
				t.Fatalf("egress %s: the block is a rule of the backend, the entities are not", rules)
			}

			learnEdges(t, w, outsideEdge(backend, v1alpha1.EntityAPIServer, "", "tcp", 443))
			if errs := fake.Drain(); len(errs) != 0 {
				t.Fatal(errs)
			}
			want = "[APIServer [TCP/443 TCP/6443] Nodes [UDP/53] api.example.com [TCP/443]]"
			if o := fmt.Sprint(outsideOf(&fake.Proposals()[0].Spec)); o != want {
				t.Fatalf("outside %s, want %s", o, want)
			}
			fake.Follow()
			fake.Lead()
			fake.Drain()
			if fake.Writes["create"] != 1 || fake.Writes["update"] != 1 {
				t.Fatalf("writes %v, want one create and one update", fake.Writes)
			}
		})
	}
}

// TestOutsideAnyPortIsKept: an outside peer that a person widened to every
// port stays so when more is learned.
func TestOutsideAnyPortIsKept(t *testing.T) {
	held := rulesOf(&v1alpha1.PolicySpec{Outside: []v1alpha1.OutsidePeer{{Entity: v1alpha1.EntityNodes}}})
	learned := rules{}
	learned.add(outsideRule(v1alpha1.EntityNodes, "", map[portRef]struct{}{{protocol: "tcp", port: 10250}: {}}))
	rs, _ := bounded(v1alpha1.BackendCilium, held, learned, 10, 10)
	spec := specOf(v1alpha1.BackendCilium, v1alpha1.TargetRef{}, v1alpha1.DirectionEgress, &metav1.LabelSelector{}, rs)
	if o := fmt.Sprint(outsideOf(&spec)); o != "[Nodes []]" {
		t.Fatalf("outside %s, want the nodes on every port", o)
	}
}

// TestObservedKeyOfALearnedName: the evidence of an outside peer learned by
// name names it, so that the spec's name is judged to allow it.
func TestObservedKeyOfALearnedName(t *testing.T) {
	o := learning.Observation{Edge: outsideEdge(v1alpha1.BackendCilium, "", "api.example.com", "tcp", 443), Class: v1alpha1.PeerClassExternal}
	k, ok := observedKey(&o)
	if !ok || k.DNSName != "api.example.com" || k.Class != v1alpha1.PeerClassExternal || k.Port != 443 {
		t.Fatalf("key %+v (%v)", k, ok)
	}
	spec := &v1alpha1.PolicySpec{Backend: v1alpha1.BackendCilium, Direction: v1alpha1.DirectionEgress,
		Outside: []v1alpha1.OutsidePeer{{DNSName: "api.example.com"}}}
	if _, allowed := observed.JudgeSpec(nil, spec, "shop", netpolmatch.DataPlaneCilium)(&k); !allowed {
		t.Fatal("the learned name is judged WouldBlock by the spec that names it")
	}
}
