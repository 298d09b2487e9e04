package k8swriterexporter

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

var (
	frontend    = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "frontend"}
	cart        = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"}
	cartIngress = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
)

func startWriter(t *testing.T) (*writer, *enforcerextensiontest.Enforcer) {
	t.Helper()
	fake := enforcerextensiontest.New()
	fake.AddWorkload(frontend, enforcerextensiontest.WorkloadInfo{UID: "frontend-uid",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}})
	fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{UID: "cart-uid",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}})
	f := NewFactory()
	w, err := newWriter(exportertest.NewNopSettings(f.Type()), f.CreateDefaultConfig().(*Config))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background(), fake.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	return w, fake
}

func learn(t *testing.T, w *writer, ports ...uint32) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, port := range ports {
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Protocol: "tcp", Port: port}
		e.AppendTo(sl)
	}
	if err := w.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// TestWritesFollowEdges: a burst of new edges asks for one write of its
// proposal, a writeInterval later; edges already written ask for none.
func TestWritesFollowEdges(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080, 8443, 8080)
	if q := fake.Queued(); len(q) != 1 || q[cartIngress] != writeInterval {
		t.Fatalf("queued %v, want the cart ingress proposal after %s", q, writeInterval)
	}
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := fake.Proposals()
	if len(got) != 1 || got[0].Name != cartIngress.Name || got[0].Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedBy ||
		len(got[0].OwnerReferences) != 1 || got[0].OwnerReferences[0].UID != "cart-uid" {
		t.Fatalf("proposals %+v", got)
	}
	if ports := got[0].Spec.Kubernetes.Ingress[0].Ports; len(ports) != 2 {
		t.Fatalf("ports %+v, want 8080 and 8443", ports)
	}
	learn(t, w, 8443, 8080)
	if q := fake.Queued(); len(q) != 0 {
		t.Fatalf("edges already written queued %v", q)
	}
	if fake.Writes["create"] != 1 || fake.Writes["update"] != 0 {
		t.Fatalf("writes %v, want one create", fake.Writes)
	}
}

// TestNewLeaderChecksEveryProposal: a new term asks for a round of every
// proposal learned so far, which writes nothing that is already there.
func TestNewLeaderChecksEveryProposal(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080)
	fake.Drain()
	fake.Follow()
	fake.Lead()
	if q := fake.Queued(); len(q) != 1 {
		t.Fatalf("a new term queued %v, want the one proposal", q)
	}
	fake.Drain()
	if fake.Writes["create"] != 1 || fake.Writes["update"] != 0 {
		t.Fatalf("writes %v, want the first create only", fake.Writes)
	}
}

// TestRefusedWriteIsAnEventAndRetried: a write that the API server refuses
// is recorded as a Warning Event, and the proposal stays to be written.
func TestRefusedWriteIsAnEventAndRetried(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	fake.Refuse = func(string, metav1.Object) error {
		return apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	learn(t, w, 8080)
	if errs := fake.Drain(); errs[cartIngress] == nil {
		t.Fatal("a refused write reported no error")
	}
	if ev := fake.Events(); len(ev) != 1 || ev[0].Reason != v1alpha1.EventReasonWriteRefused || ev[0].Type != corev1.EventTypeWarning ||
		ev[0].Object != cartIngress {
		t.Fatalf("events %+v", ev)
	}
	fake.Refuse = nil
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(fake.Proposals()) != 1 {
		t.Fatal("the proposal was not written once the API server took it")
	}
}
