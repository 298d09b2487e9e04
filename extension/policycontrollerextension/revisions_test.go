package policycontrollerextension

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

func TestRevisionNames(t *testing.T) {
	short := "deployment-web-ingress"
	if got := revisionName(short, 12); got != short+"-12" {
		t.Errorf("revisionName %q", got)
	}
	if got := revisionLabel(short); got != short {
		t.Errorf("revisionLabel %q", got)
	}
	long := strings.Repeat("a", 250) + ".b"
	other := strings.Repeat("a", 250) + ".c"
	for _, n := range []int64{1, 9999999} {
		name := revisionName(long, n)
		if len(name) > maxObjectName || !strings.HasSuffix(name, "-"+strconv.FormatInt(n, 10)) || name == revisionName(other, n) {
			t.Errorf("revisionName of a long name: %q (%d characters)", name, len(name))
		}
	}
	label := revisionLabel(long)
	if len(label) > maxLabelValue || label == revisionLabel(other) || label != revisionLabel(long) {
		t.Errorf("revisionLabel of a long name: %q (%d characters)", label, len(label))
	}
	if strings.ContainsAny(label[len(label)-1:], "-.") {
		t.Errorf("label value %q ends in a separator", label)
	}
}

func TestCauseOf(t *testing.T) {
	policy := func(gen int64, labels, annotations map[string]string) *v1alpha1.WorkloadNetworkPolicy {
		return &v1alpha1.WorkloadNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Generation: gen, Labels: labels, Annotations: annotations}}
	}
	for _, tc := range []struct {
		name string
		p    *v1alpha1.WorkloadNetworkPolicy
		want string
	}{
		{"the cause of this generation", policy(3, nil, map[string]string{
			v1alpha1.ChangeCauseAnnotation: "amendment a", ChangeCauseGenerationAnnotation: "3"}), "amendment a"},
		{"an edit after the cause's generation", policy(4, nil, map[string]string{
			v1alpha1.ChangeCauseAnnotation: "amendment a", ChangeCauseGenerationAnnotation: "3"}), "edited"},
		{"a cause without its generation", policy(1, nil, map[string]string{v1alpha1.ChangeCauseAnnotation: "amendment a"}), "edited"},
		{"promoted before revisions were kept", policy(1, map[string]string{v1alpha1.PromotedFromLabel: "p"}, nil), "promoted from proposal p"},
		{"promoted, and edited since", policy(2, map[string]string{v1alpha1.PromotedFromLabel: "p"}, nil), "edited"},
		{"made by hand", policy(1, nil, nil), "edited"},
	} {
		if got := causeOf(tc.p); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRollbackRefusals: a rollback to something that is not a kept
// revision removes its annotation, says why in a Warning Event, and ends
// the round with a terminal error (counted, not retried); the policy's
// spec stays.
func TestRollbackRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ to, event string }{
		{"7", "Warning RollbackFailed revision 7 is not kept (kept: 1)"},
		{"latest", `Warning RollbackFailed networkenforcer.kubewarden.io/rollback-to "latest" is not a revision number`},
		{"0", `Warning RollbackFailed networkenforcer.kubewarden.io/rollback-to "0" is not a revision number`},
	} {
		t.Run(tc.to, func(t *testing.T) {
			policy := &v1alpha1.WorkloadNetworkPolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "rollback", UID: types.UID("uid-" + tc.to),
					Annotations: map[string]string{v1alpha1.RollbackToAnnotation: tc.to}},
				Spec: v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec, Mode: v1alpha1.PolicyModeMonitor},
			}
			p, c, rec := newUnitPromoter(t)
			if err := c.Create(ctx, policy); err != nil {
				t.Fatal(err)
			}
			r := &revisionRecorder{logger: zap.NewNop(), client: c, recorder: rec, revisions: p.revisions}
			err := r.reconcile(ctx, policy)
			if !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, errRollbackFailed) {
				t.Fatalf("reconcile: %v, want a terminal rollback failure", err)
			}
			var got v1alpha1.WorkloadNetworkPolicy
			if err := c.Get(ctx, client.ObjectKeyFromObject(policy), &got); err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Annotations[v1alpha1.RollbackToAnnotation]; ok {
				t.Error("the refused rollback-to annotation stayed")
			}
			if got.Annotations[v1alpha1.RevisionAnnotation] != "1" || got.Annotations[v1alpha1.ChangeCauseAnnotation] != "edited" {
				t.Errorf("annotations %v, want revision 1, edited", got.Annotations)
			}
			if e := <-rec.Events; e != tc.event {
				t.Errorf("event %q, want %q", e, tc.event)
			}
			var revs appsv1.ControllerRevisionList
			if err := c.List(ctx, &revs); err != nil {
				t.Fatal(err)
			}
			if len(revs.Items) != 1 || revs.Items[0].Name != "rollback-1" {
				t.Errorf("revisions %+v", revs.Items)
			}
		})
	}
}

// TestAmendmentLogic: an amendment is never promoted into a policy of its
// own name, nor deleted as a leftover; one of a policy that is gone, or of
// an earlier policy of the same name, stays as it is.
func TestAmendmentLogic(t *testing.T) {
	ctx := context.Background()
	owned := func(name string, labels map[string]string, owner types.UID) *v1alpha1.WorkloadNetworkPolicyProposal {
		a := proposal(name, labels)
		a.Annotations = map[string]string{v1alpha1.AmendsGenerationAnnotation: "1"}
		a.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkloadNetworkPolicy",
			Name: "amended", UID: owner}}
		return a
	}
	policy := &v1alpha1.WorkloadNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "amended", UID: "policy",
		Labels: map[string]string{v1alpha1.PromotedFromLabel: "amended"}}}
	protect := map[string]string{v1alpha1.PromoteLabel: "protect"}
	for _, tc := range []struct {
		name      string
		amendment *v1alpha1.WorkloadNetworkPolicyProposal
		existing  []client.Object
	}{
		{name: "its policy gone", amendment: owned("amendment", protect, "policy")},
		{name: "an earlier policy's", amendment: owned("amendment", protect, "earlier"), existing: []client.Object{policy}},
		{name: "named like its policy, not labelled", amendment: owned("amended", nil, "policy"), existing: []client.Object{policy}},
		{name: "labelled as an amendment, owned by none", amendment: proposal("lost", map[string]string{
			v1alpha1.AmendsLabel: "amended", v1alpha1.PromoteLabel: "monitor"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c, rec := newUnitPromoter(t, append([]client.Object{tc.amendment}, tc.existing...)...)
			if err := p.reconcile(ctx, tc.amendment.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.amendment), &v1alpha1.WorkloadNetworkPolicyProposal{}); err != nil {
				t.Fatalf("the amendment: %v", err)
			}
			var policies v1alpha1.WorkloadNetworkPolicyList
			if err := c.List(ctx, &policies); err != nil {
				t.Fatal(err)
			}
			if len(policies.Items) != len(tc.existing) {
				t.Fatalf("policies %+v", policies.Items)
			}
			select {
			case e := <-rec.Events:
				t.Fatalf("event %q", e)
			default:
			}
		})
	}
}
