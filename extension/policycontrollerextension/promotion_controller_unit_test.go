package policycontrollerextension

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// newUnitPromoter returns a promoter on an in-memory client holding objs, for
// the promotion logic alone; TestPromotion runs it on the API server.
func newUnitPromoter(t *testing.T, objs ...client.Object) (*promoter, client.Client, *record.FakeRecorder) {
	t.Helper()
	scheme, err := render.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.WorkloadNetworkPolicy{}, &v1alpha1.WorkloadNetworkPolicyProposal{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			// A new object's first generation, as the API server gives it
			// and the revisions count on; the in-memory client gives none.
			obj.SetGeneration(1)
			return c.Create(ctx, obj, opts...)
		}}).Build()
	rec := record.NewFakeRecorder(10)
	return &promoter{logger: zap.NewNop(), reader: c, client: c, recorder: rec,
		revisions: &revisions{logger: zap.NewNop(), client: c, limit: defaultRevisionHistoryLimit},
		queue:     termcontroller.New("promotion", nil, nil), now: time.Now}, c, rec
}

func TestPromoteLogic(t *testing.T) {
	ctx := context.Background()
	promotedPolicy := &v1alpha1.WorkloadNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "leftover",
		Labels: map[string]string{v1alpha1.PromotedFromLabel: "leftover"}}}
	handMade := &v1alpha1.WorkloadNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "hand-made"}}
	for _, tc := range []struct {
		name     string
		proposal *v1alpha1.WorkloadNetworkPolicyProposal
		existing []client.Object
		// gone is whether the proposal is deleted; mode, when set, the mode of
		// the policy that must then exist.
		gone  bool
		mode  v1alpha1.PolicyMode
		event string
	}{
		{name: "monitor", proposal: proposal("promote-me", map[string]string{v1alpha1.PromoteLabel: "monitor"}),
			gone: true, mode: v1alpha1.PolicyModeMonitor, event: "Normal Promoted promoted from proposal promote-me in monitor mode"},
		{name: "protect", proposal: proposal("promote-me", map[string]string{v1alpha1.PromoteLabel: "protect"}),
			gone: true, mode: v1alpha1.PolicyModeProtect, event: "Normal Promoted"},
		{name: "not labelled", proposal: proposal("stay", nil)},
		{name: "leftover of a promoted policy", proposal: proposal("leftover", nil), existing: []client.Object{promotedPolicy}, gone: true},
		{name: "named like a hand-made policy", proposal: proposal("hand-made", map[string]string{v1alpha1.PromoteLabel: "protect"}),
			existing: []client.Object{handMade}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c, rec := newUnitPromoter(t, append([]client.Object{tc.proposal}, tc.existing...)...)
			if err := p.reconcile(ctx, tc.proposal.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			err := c.Get(ctx, client.ObjectKeyFromObject(tc.proposal), &v1alpha1.WorkloadNetworkPolicyProposal{})
			if gone := apierrors.IsNotFound(err); gone != tc.gone {
				t.Fatalf("proposal gone: %v, want %v (%v)", gone, tc.gone, err)
			}
			if tc.mode != "" {
				var pol v1alpha1.WorkloadNetworkPolicy
				if err := c.Get(ctx, client.ObjectKeyFromObject(tc.proposal), &pol); err != nil {
					t.Fatal(err)
				}
				if pol.Spec.Mode != tc.mode || pol.Labels[v1alpha1.PromotedFromLabel] != tc.proposal.Name ||
					pol.Spec.TargetRef != tc.proposal.Spec.TargetRef {
					t.Fatalf("policy %+v", pol)
				}
			}
			select {
			case e := <-rec.Events:
				if tc.event == "" || !strings.HasPrefix(e, tc.event) {
					t.Fatalf("event %q, want %q", e, tc.event)
				}
			default:
				if tc.event != "" {
					t.Fatalf("no event, want %q", tc.event)
				}
			}
		})
	}
}
