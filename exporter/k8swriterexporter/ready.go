package k8swriterexporter

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// maxReadyMessage bounds Ready's message, which repeats the messages of the
// conditions that it waits for.
const maxReadyMessage = 4096

// readiness is one condition that Ready asks for, and the reason Ready gives
// when it is not as asked.
type readiness struct {
	condition string
	want      metav1.ConditionStatus
	reason    string
	// optional: a proposal without the condition does not wait for it
	// (Revisions is an amendment's only).
	optional bool
}

// readyNeeds are the conditions of a proposal ready to promote, in the order
// that Ready's reason names the first one missing: learning settled, nothing
// says it missed flows, its evidence is exact, protect would block none of
// what it saw, and for an amendment, a person looked at the edges that a
// learned revision made.
var readyNeeds = []readiness{
	{v1alpha1.ConditionStable, metav1.ConditionTrue, v1alpha1.ReasonNotStable, false},
	{v1alpha1.ConditionCoverage, metav1.ConditionTrue, v1alpha1.ReasonNotCovered, false},
	{v1alpha1.ConditionEvidenceComplete, metav1.ConditionTrue, v1alpha1.ReasonEvidenceIncomplete, false},
	{v1alpha1.ConditionWouldBlock, metav1.ConditionFalse, v1alpha1.ReasonBlocksObserved, false},
	{v1alpha1.ConditionRevisions, metav1.ConditionTrue, v1alpha1.ReasonLearnedRevision, true},
}

// readyCondition is the Ready condition of a proposal whose other conditions
// are conds: True when each of readyNeeds is as it asks; False otherwise,
// its reason the first that is not and its message every one that is not,
// with that condition's own message. A condition not set yet is not as asked.
func readyCondition(generation int64, conds []metav1.Condition) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: generation}
	var missing []string
	for _, n := range readyNeeds {
		have := meta.FindStatusCondition(conds, n.condition)
		if have != nil && have.Status == n.want || have == nil && n.optional {
			continue
		}
		if c.Reason == "" {
			c.Reason = n.reason
		}
		if have == nil {
			missing = append(missing, n.condition+" is not known yet")
			continue
		}
		missing = append(missing, fmt.Sprintf("%s is %s (%s: %s)", n.condition, have.Status, have.Reason, have.Message))
	}
	if len(missing) == 0 {
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonReadyToPromote
		c.Message = "stable, covered, with complete evidence, and protect would block nothing observed: " +
			"review the spec, then set the label " + v1alpha1.PromoteLabel + "=monitor or protect"
		return c
	}
	c.Status = metav1.ConditionFalse
	c.Message = truncate(strings.Join(missing, "; "), maxReadyMessage)
	return c
}
