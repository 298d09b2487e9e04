package violationprocessor

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// setAttributable sets v1alpha1.ConditionAttributable from the other policies that
// share the policy's target and direction.
func setAttributable(p *v1alpha1.WorkloadNetworkPolicy, st *v1alpha1.WorkloadNetworkPolicyStatus, others []string) {
	c := metav1.Condition{Type: v1alpha1.ConditionAttributable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUniqueTarget,
		Message: "no other policy targets this workload and direction", ObservedGeneration: p.Generation}
	if len(others) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonSharedTarget
		c.Message = fmt.Sprintf("policies %s also target %s %s in direction %s: violations that the data plane does not attribute by name are counted, not recorded",
			strings.Join(others, ", "), p.Spec.TargetRef.Kind, p.Spec.TargetRef.Name, p.Spec.Direction)
	}
	setCondition(st, c)
}

// setAcknowledged reports acknowledge annotations that name no record. A
// policy that never had one gets no condition.
func setAcknowledged(p *v1alpha1.WorkloadNetworkPolicy, st *v1alpha1.WorkloadNetworkPolicyStatus, unknown []string) {
	if len(unknown) == 0 && meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAcknowledged) == nil {
		return
	}
	c := metav1.Condition{Type: v1alpha1.ConditionAcknowledged, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonApplied,
		Message: "every acknowledge annotation has been applied", ObservedGeneration: p.Generation}
	if len(unknown) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonUnknownViolation
		c.Message = fmt.Sprintf("no violation record has id %s: the annotation stays until it is removed or names an active record",
			strings.Join(unknown, ", "))
	}
	setCondition(st, c)
}

func setCondition(st *v1alpha1.WorkloadNetworkPolicyStatus, c metav1.Condition) {
	c.LastTransitionTime = metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	meta.SetStatusCondition(&st.Conditions, c)
}
