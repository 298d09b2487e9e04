package k8swriterexporter

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
)

// frontendEgressPolicy is frontend's egress policy of backend kubernetes,
// in protect, whose spec.outside names peer on TCP/port.
func frontendEgressPolicy(peer v1alpha1.OutsidePeer, port int32) *v1alpha1.WorkloadNetworkPolicy {
	peer.Ports = []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}}
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-frontend-egress", UID: "policy-uid", Generation: 2,
			Annotations: map[string]string{v1alpha1.PromotedAtAnnotation: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeProtect, PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionEgress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "frontend"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			},
			Outside: []v1alpha1.OutsidePeer{peer},
		}},
	}
}

// outsideAmendment is a connection of frontend to an outside peer on
// TCP/port that its egress policy's data plane refused.
func outsideAmendment(entity v1alpha1.Entity, name string, class v1alpha1.PeerClass, port uint32) learning.Amendment {
	return learning.Amendment{Observation: learning.Observation{Edge: outsideEdge(v1alpha1.BackendKubernetes, entity, name, "tcp", port),
		Class: class, Flows: 1, Time: time.Now()}, Policy: "deployment-frontend-egress"}
}

// TestAmendmentLeavesOutWhatThePolicyNames: a policy of backend kubernetes
// names a peer that its NetworkPolicy cannot allow (a DNS name; on Cilium,
// the API server, which no ipBlock selects), so the data plane refuses the
// workload's connections to it, each a violation. That edge is in the
// policy already: its amendment would change nothing for it, and promoting
// the amendment would bring it back at once, again and again. The
// amendment leaves it out; an edge that the policy does not name is
// amended as before.
func TestAmendmentLeavesOutWhatThePolicyNames(t *testing.T) {
	for _, c := range []struct {
		name  string
		plane netpolmatch.DataPlane
		named v1alpha1.OutsidePeer
		edge  learning.Amendment
	}{
		{"dns name", netpolmatch.DataPlaneCilium, v1alpha1.OutsidePeer{DNSName: "shop.example.com"},
			outsideAmendment("", "shop.example.com", v1alpha1.PeerClassExternal, 443)},
		{"api server on cilium", netpolmatch.DataPlaneCilium, v1alpha1.OutsidePeer{Entity: v1alpha1.EntityAPIServer},
			outsideAmendment(v1alpha1.EntityAPIServer, "", v1alpha1.PeerClassAPIServer, 443)},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, fake := startWriter(t)
			fake.Plane = c.plane
			fake.SetPolicy(frontendEgressPolicy(c.named, 443))
			fake.Lead()

			amend(t, w, c.edge)
			if errs := fake.Drain(); len(errs) != 0 {
				t.Fatal(errs)
			}
			if got := fake.Proposals(); len(got) != 0 {
				t.Fatalf("an amendment of an edge that the policy names: %+v", got[0].Status.Amendment)
			}

			amend(t, w, c.edge, outsideAmendment("", "pay.example.com", v1alpha1.PeerClassExternal, 443))
			if errs := fake.Drain(); len(errs) != 0 {
				t.Fatal(errs)
			}
			got := fake.Proposals()
			if len(got) != 1 || got[0].Status.Amendment == nil {
				t.Fatalf("%d proposals, want the amendment of pay.example.com", len(got))
			}
			added := got[0].Status.Amendment.Added
			if len(added) != 1 || added[0].Peer.DNSName != "pay.example.com" || added[0].Port != 443 {
				t.Errorf("added %+v, want pay.example.com TCP/443 alone", added)
			}
		})
	}
}
