package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// bothKinds builds a proposal and a policy from the same spec: both kinds share the
// spec schema and its rules, and both are checked.
func bothKinds(ns, name string, spec v1alpha1.PolicySpec) map[string]client.Object {
	return map[string]client.Object{
		"proposal": newProposal(ns, name, spec),
		"policy":   newPolicy(ns, name, spec),
	}
}

func TestSpecRulesRejectInvalidObjects(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	cases := []struct {
		name    string
		spec    func() v1alpha1.PolicySpec
		message string
	}{{
		name: "kubernetes backend without spec.kubernetes",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.Kubernetes = nil
			return s
		},
		message: "backend kubernetes needs spec.kubernetes and no spec.istio",
	}, {
		name: "kubernetes backend with spec.istio too",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.Istio = istioSpec().Istio
			return s
		},
		message: "backend kubernetes needs spec.kubernetes and no spec.istio",
	}, {
		name: "istio backend without spec.istio",
		spec: func() v1alpha1.PolicySpec {
			s := istioSpec()
			s.Istio = nil
			return s
		},
		message: "backend istio needs spec.istio and no spec.kubernetes",
	}, {
		name: "istio backend with spec.kubernetes",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.Backend = v1alpha1.BackendIstio
			return s
		},
		message: "backend istio needs spec.istio and no spec.kubernetes",
	}, {
		name: "empty podSelector",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.Kubernetes.PodSelector = metav1.LabelSelector{}
			return s
		},
		message: "spec.kubernetes.podSelector must not be empty",
	}, {
		name: "empty istio selector",
		spec: func() v1alpha1.PolicySpec {
			s := istioSpec()
			s.Istio.Selector.MatchLabels = nil
			return s
		},
		message: "spec.istio.selector.matchLabels must not be empty",
	}, {
		name: "istio egress",
		spec: func() v1alpha1.PolicySpec {
			s := istioSpec()
			s.Direction = v1alpha1.DirectionEgress
			return s
		},
		message: "backend istio supports direction Ingress only",
	}, {
		name: "unknown backend",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.Backend = "calico"
			return s
		},
		message: `spec.backend: Unsupported value: "calico"`,
	}, {
		name: "cilium backend without spec.kubernetes",
		spec: func() v1alpha1.PolicySpec {
			s := ciliumSpec()
			s.Kubernetes = nil
			return s
		},
		message: "backend cilium needs spec.kubernetes and no spec.istio",
	}, {
		name: "cilium backend with spec.istio too",
		spec: func() v1alpha1.PolicySpec {
			s := ciliumSpec()
			s.Istio = istioSpec().Istio
			return s
		},
		message: "backend cilium needs spec.kubernetes and no spec.istio",
	}, {
		name: "outside peer with an entity and a name",
		spec: func() v1alpha1.PolicySpec {
			s := ciliumSpec()
			s.Outside = []v1alpha1.OutsidePeer{{Entity: v1alpha1.EntityAPIServer, DNSName: "api.example.com"}}
			return s
		},
		message: "an outside peer names exactly one of entity and dnsName",
	}, {
		name: "outside peer with neither",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.Outside = []v1alpha1.OutsidePeer{{}}
			return s
		},
		message: "an outside peer names exactly one of entity and dnsName",
	}, {
		name: "unknown entity",
		spec: func() v1alpha1.PolicySpec {
			s := ciliumSpec()
			s.Outside = []v1alpha1.OutsidePeer{{Entity: "World"}}
			return s
		},
		message: `spec.outside[0].entity: Unsupported value: "World"`,
	}, {
		name: "DNS name in upper case",
		spec: func() v1alpha1.PolicySpec {
			s := ciliumSpec()
			s.Outside = []v1alpha1.OutsidePeer{{DNSName: "API.example.com"}}
			return s
		},
		message: "spec.outside[0].dnsName in body should match",
	}, {
		name: "DNS pattern with * past the first label",
		spec: func() v1alpha1.PolicySpec {
			s := ciliumSpec()
			s.Outside = []v1alpha1.OutsidePeer{{DNSName: "api.*.com"}}
			return s
		},
		message: "spec.outside[0].dnsName in body should match",
	}, {
		name: "unknown target kind",
		spec: func() v1alpha1.PolicySpec {
			s := kubernetesSpec()
			s.TargetRef.Kind = "Pod"
			return s
		},
		message: `spec.targetRef.kind: Unsupported value: "Pod"`,
	}}
	for _, tc := range cases {
		for kind, obj := range bothKinds(ns, "bad", tc.spec()) {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				err := env.Client.Create(context.Background(), obj)
				if !apierrors.IsInvalid(err) {
					t.Fatalf("want Invalid, got %v", err)
				}
				if !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("error %q does not say %q", err, tc.message)
				}
			})
		}
	}
}

func TestSpecRulesAcceptValidObjects(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	egress := kubernetesSpec()
	egress.Direction = v1alpha1.DirectionEgress
	expressionsOnly := kubernetesSpec()
	expressionsOnly.Kubernetes.PodSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"},
	}}}
	statefulSet := istioSpec()
	statefulSet.TargetRef = v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindStatefulSet, Name: "db"}
	for name, spec := range map[string]v1alpha1.PolicySpec{
		"kubernetes-ingress":          kubernetesSpec(),
		"kubernetes-egress":           egress,
		"kubernetes-expressions-only": expressionsOnly,
		"istio-ingress":               istioSpec(),
		"istio-statefulset":           statefulSet,
		"cilium-egress-outside":       ciliumSpec(),
		"kubernetes-outside":          withOutside(kubernetesSpec()),
	} {
		for kind, obj := range bothKinds(ns, name, spec) {
			t.Run(name+"/"+kind, func(t *testing.T) {
				if err := env.Client.Create(context.Background(), obj); err != nil {
					t.Fatalf("valid object rejected: %v", err)
				}
			})
		}
	}
}

// ciliumSpec is an egress spec of backend cilium that allows, beyond a workload,
// each kind of outside peer.
func ciliumSpec() v1alpha1.PolicySpec {
	s := withOutside(kubernetesSpec())
	s.Backend = v1alpha1.BackendCilium
	s.Direction = v1alpha1.DirectionEgress
	return s
}

// withOutside adds to spec the API server on 6443, the nodes on every port and
// two outside services by name.
func withOutside(spec v1alpha1.PolicySpec) v1alpha1.PolicySpec {
	tcp, port := corev1.ProtocolTCP, intstr.FromInt32(6443)
	spec.Outside = []v1alpha1.OutsidePeer{
		{Entity: v1alpha1.EntityAPIServer, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}},
		{Entity: v1alpha1.EntityNodes},
		{DNSName: "api.example.com"},
		{DNSName: "*.storage.example.net"},
	}
	return spec
}

func TestBackendIsImmutable(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()
	for kind, obj := range bothKinds(ns, "web", kubernetesSpec()) {
		t.Run(kind, func(t *testing.T) {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			switch o := obj.(type) {
			case *v1alpha1.WorkloadNetworkPolicyProposal:
				o.Spec = istioSpec()
			case *v1alpha1.WorkloadNetworkPolicy:
				o.Spec.PolicySpec = istioSpec()
			}
			err := env.Client.Update(ctx, obj)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "backend is immutable") {
				t.Fatalf("want Invalid saying backend is immutable, got %v", err)
			}
		})
	}
}

func TestPolicyModeDefaultsToMonitor(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()
	policy := newPolicy(ns, "web", kubernetesSpec())
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.WorkloadNetworkPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Mode != v1alpha1.PolicyModeMonitor {
		t.Fatalf("mode = %q, want %q", got.Spec.Mode, v1alpha1.PolicyModeMonitor)
	}

	bad := newPolicy(ns, "bad-mode", kubernetesSpec())
	bad.Spec.Mode = "enforce"
	err := env.Client.Create(ctx, bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.mode: Unsupported value: "enforce"`) {
		t.Fatalf("want Invalid for mode enforce, got %v", err)
	}
}

func TestStatusKeepsAtMostOneHundredRecords(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()
	policy := newPolicy(ns, "web", istioSpec())
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	record := func(id string) v1alpha1.ViolationRecord {
		return v1alpha1.ViolationRecord{
			ID:          id,
			Timestamp:   metav1.Now(),
			Source:      v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "Deployment", Name: "frontend", Identity: "cluster.local/ns/shop/sa/frontend"},
			Destination: v1alpha1.ViolationEndpoint{Namespace: ns, Kind: "Deployment", Name: "web"},
			Protocol:    "TCP",
			DstPort:     8080,
			Action:      v1alpha1.PolicyModeMonitor,
			Policy:      v1alpha1.PolicyReference{Namespace: ns, Name: "web"},
		}
	}
	for i := range v1alpha1.MaxViolationRecords + 1 {
		policy.Status.Violations = append(policy.Status.Violations, record(strings.Repeat("a", 1+i%60)))
	}
	err := env.Client.Status().Update(ctx, policy)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must have at most 100 items") {
		t.Fatalf("101 records: want Invalid, got %v", err)
	}

	policy.Status.Violations = policy.Status.Violations[:v1alpha1.MaxViolationRecords]
	policy.Status.ActiveViolationCount = v1alpha1.MaxViolationRecords
	policy.Status.ViolationCount = 250
	if err := env.Client.Status().Update(ctx, policy); err != nil {
		t.Fatalf("100 records rejected: %v", err)
	}
}
