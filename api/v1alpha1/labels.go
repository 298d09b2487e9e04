package v1alpha1

const (
	// PromoteLabel, set on a proposal by a person, asks the enforcer to turn the
	// proposal into a WorkloadNetworkPolicy in the mode the value names
	// (PolicyModeMonitor or PolicyModeProtect).
	PromoteLabel = "networkenforcer.kubewarden.io/promote"

	// PromotedFromLabel is set by the enforcer on a WorkloadNetworkPolicy that it
	// created from a proposal; the value is the proposal's name. Its presence is what
	// lets the enforcer delete a same-named proposal as a leftover.
	PromotedFromLabel = "networkenforcer.kubewarden.io/promoted-from"

	// AcknowledgeAnnotationPrefix, followed by a violation id, is the annotation a
	// person sets on a WorkloadNetworkPolicy to acknowledge that violation; the value
	// is the reason.
	AcknowledgeAnnotationPrefix = "networkenforcer.kubewarden.io/acknowledge-"
)

// AcknowledgeAnnotation returns the annotation key that acknowledges the violation
// with the given id.
func AcknowledgeAnnotation(violationID string) string {
	return AcknowledgeAnnotationPrefix + violationID
}

const (
	// MemberOfLabel marks a replica's membership Lease; the value is the name
	// of the leader Lease (shortened with a hash when longer than a label value
	// may be). The replicas that share the flow sources' keys watch the Leases
	// of their namespace with this label.
	MemberOfLabel = "networkenforcer.kubewarden.io/member-of"

	// CheckpointsAnnotation, on a replica's membership Lease, holds what the
	// replica published of its flow sources' progress: a JSON object from key
	// (a Cilium node) to the RFC 3339 time (nanoseconds) up to which it handed
	// every flow of that key on. The next owner of a key resumes from it.
	CheckpointsAnnotation = "networkenforcer.kubewarden.io/checkpoints"
	// ReleasedAnnotation, on a replica's membership Lease, lists the keys
	// (JSON, sorted) that the replica no longer reads: their checkpoints there
	// are final, and a new owner resumes from them at once.
	ReleasedAnnotation = "networkenforcer.kubewarden.io/released"
	// CountedAnnotation, on the leader's membership Lease, holds a JSON object
	// from key to the RFC 3339 time (nanoseconds) up to which the leader took
	// every record that members learned from that key's flows. The next owner
	// of a key whose reader was killed counts from it.
	CountedAnnotation = "networkenforcer.kubewarden.io/counted"
)
