package violationprocessor

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// Reasons that a violation candidate is not a violation observation. Only
// reasonAmbiguous hides a violation; the others are not violations of a policy
// that Network Enforcer rendered.
const (
	// reasonAllowed: the flow is one that the policy allows.
	reasonAllowed = "allowed"
	// reasonOtherSide: the data plane reported the flow where the other end's
	// policy applies; the report from this end judges this end's policy.
	reasonOtherSide = "other_side"
	// reasonNoPolicy: the policy went away between learning and judging.
	reasonNoPolicy = "no_policy"
	// reasonAmbiguous: several policies target the workload and direction, and
	// the data plane does not say which one the flow violated.
	reasonAmbiguous = "ambiguous"
	// reasonProtocol: a transport that no policy can name.
	reasonProtocol = "protocol"
	// reasonCounted: a reader sent the flow's batch again to a new leader,
	// and the policy's status counts it already.
	reasonCounted = "counted_already"
)

// candidate is a flow that a policy governs, as the learning processor hands it
// on: the flow and the side of it that the policy targets.
type candidate struct {
	rec       *flow.Record
	target    workload.Ref
	direction v1alpha1.Direction
	// peer is the flow's other end as learning names it in the target's
	// evidence; nil for a candidate that carries none.
	peer *learning.Observation
}

// judgedHere reports whether the flow was reported where the candidate's side
// is enforced: a source's egress where the source is, a destination's ingress
// where the destination is. A connection that both ends report is then judged
// once per side, and a denial at one end is not blamed on the other's policy.
func (c *candidate) judgedHere() bool {
	switch c.rec.Direction {
	case flow.DirectionIngress:
		return c.direction == v1alpha1.DirectionIngress
	case flow.DirectionEgress:
		return c.direction == v1alpha1.DirectionEgress
	}
	switch c.rec.Reporter {
	case flow.ReporterSource:
		return c.direction == v1alpha1.DirectionEgress
	case flow.ReporterDestination:
		return c.direction == v1alpha1.DirectionIngress
	case flow.ReporterBoth:
	}
	return true
}

// owner finds the policy that the candidate concerns: the one the data
// plane names, when it names one of the policies of the target and direction,
// else the only policy of the target and direction. With several and no name,
// the candidate is ambiguous, and the policies involved are returned so that
// their status can say so.
func owner(c *candidate, policies []v1alpha1.WorkloadNetworkPolicy) (*v1alpha1.WorkloadNetworkPolicy, string) {
	if ref := c.rec.Policy; !ref.IsZero() {
		for i := range policies {
			if policies[i].Name == ref.Name && policies[i].Namespace == ref.Namespace {
				return &policies[i], ""
			}
		}
	}
	switch len(policies) {
	case 0:
		return nil, reasonNoPolicy
	case 1:
		return &policies[0], ""
	}
	return nil, reasonAmbiguous
}

// actionOf decides whether a flow violates policy p, and how. The data plane's
// verdict decides for what it enforces or dry-runs: ztunnel's dry-run matches
// are monitor violations, its denials and a CNI's policy drops protect ones. A
// policy that has no object in the data plane in its mode (monitor on the
// kubernetes and cilium backends: render.JudgedInSoftware) is judged here:
// allowed is the verdict that the policy's observed edges show for the flow's
// edge (observed.MatchKey), so that its evidence and its violations cannot
// disagree.
func actionOf(c *candidate, p *v1alpha1.WorkloadNetworkPolicy, allowed bool) (v1alpha1.PolicyMode, bool) {
	switch c.rec.Outcome {
	case flow.OutcomeDryRunDenied:
		return v1alpha1.PolicyModeMonitor, true
	case flow.OutcomeDenied:
		if p.Spec.Backend == v1alpha1.BackendIstio || p.Spec.Mode == v1alpha1.PolicyModeProtect {
			return v1alpha1.PolicyModeProtect, true
		}
	case flow.OutcomeAllowed, flow.OutcomeAudit: // judged by spec below
	}
	if allowed || !render.JudgedInSoftware(p) {
		return "", false
	}
	return v1alpha1.PolicyModeMonitor, true
}

// policyName is the namespaced name of a policy.
func policyName(p *v1alpha1.WorkloadNetworkPolicy) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}
