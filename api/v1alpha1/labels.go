package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

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

	// CheckpointsAnnotation, on a replica's checkpoint shards (ShardOfLabel),
	// holds what the replica published of its flow sources' progress: a JSON object from key
	// (a Cilium node) to the RFC 3339 time (nanoseconds) up to which it handed
	// every flow of that key on. The next owner of a key resumes from it.
	CheckpointsAnnotation = "networkenforcer.kubewarden.io/checkpoints"
	// ReleasedAnnotation, on a replica's checkpoint shards, lists the keys
	// (JSON, sorted) that the replica no longer reads: their checkpoints there
	// are final, and a new owner resumes from them at once.
	ReleasedAnnotation = "networkenforcer.kubewarden.io/released"
	// CountedAnnotation, on the leader's checkpoint shards, holds a JSON object
	// from key to the RFC 3339 time (nanoseconds) up to which the leader took
	// every record that members learned from that key's flows. The next owner
	// of a key whose reader was killed counts from it.
	CountedAnnotation = "networkenforcer.kubewarden.io/counted"
	// WrittenThroughAnnotation, on the leader's membership Lease, holds a
	// JSON object from a reader's sender name (new with each start of its
	// process) to the last of its batches up to which the leader wrote every
	// record: the reader keeps the later ones to send again to a next leader.
	WrittenThroughAnnotation = "networkenforcer.kubewarden.io/written-through"

	// ShardOfLabel marks a checkpoint shard: a Lease, beside a replica's
	// membership Lease and labelled as a member of the same group, that holds
	// the checkpoints, released keys and counts of the keys that hash to it
	// (the three annotations above), so that they hold for every key however
	// many there are, and so that the membership Lease, renewed every retry
	// period, carries none of them. The value is the membership Lease's name;
	// ShardLabel is the shard's index, from 0. A membership Lease written by
	// an earlier release may carry the three annotations itself: they are
	// read as one more shard.
	ShardOfLabel = "networkenforcer.kubewarden.io/shard-of"
	// ShardLabel is a checkpoint shard's index (ShardOfLabel).
	ShardLabel = "networkenforcer.kubewarden.io/shard"
	// ShardsAnnotation, on a membership Lease, is how many shards its
	// checkpoints take; absent for one. A shard
	// whose index is not below it is stale and read as nothing.
	ShardsAnnotation = "networkenforcer.kubewarden.io/shards"
)

// After promotion: amendments, a policy's revisions and rollback
// (docs/architecture.md, "After promotion").
const (
	// AmendsLabel, set by the writer on a proposal that amends a
	// WorkloadNetworkPolicy, is the policy's name (cut and hashed as a
	// proposal's name when longer than a label value may be). The proposal
	// is owned by that policy, which is the link the enforcer follows; the
	// label lets `kubectl get wnpp` tell an amendment from a first proposal,
	// and `-l networkenforcer.kubewarden.io/amends` list them.
	AmendsLabel = "networkenforcer.kubewarden.io/amends"

	// AmendsGenerationAnnotation, on an amendment, is the generation of the
	// policy's spec that the amendment's spec was built on. Promotion
	// merges an amendment only onto that generation: a policy changed since
	// (by hand, by a rollback) is never overwritten; the writer builds the
	// amendment again on the policy as it is.
	AmendsGenerationAnnotation = "networkenforcer.kubewarden.io/amends-generation"

	// RevisionAnnotation, on a WorkloadNetworkPolicy, is the number of the
	// policy's current revision: every change of its spec (a promotion, an
	// amendment, a rollback, an edit by hand) is kept as a numbered
	// revision, a ControllerRevision that the policy owns.
	RevisionAnnotation = "networkenforcer.kubewarden.io/revision"

	// ChangeCauseAnnotation, on a WorkloadNetworkPolicy's revision (and on
	// the policy for its current one), says where the change came from:
	// "promoted from proposal <name>", "amendment <name>", "rollback to
	// revision <n>", or "edited".
	ChangeCauseAnnotation = "networkenforcer.kubewarden.io/change-cause"

	// PromotedAtAnnotation, on a WorkloadNetworkPolicy, is when the policy
	// was last promoted or amended (RFC 3339). A workload revision that
	// appeared after it is a new release (EdgeOriginNewRevision); one that
	// was live before it was learned (EdgeOriginLearnedRevision). A policy
	// written by hand counts from its creation.
	PromotedAtAnnotation = "networkenforcer.kubewarden.io/promoted-at"

	// RollbackToAnnotation, set on a WorkloadNetworkPolicy by a person, asks
	// the enforcer to restore the spec of the revision it names (a number),
	// as `kubectl rollout undo --to-revision` does for a Deployment. The
	// rollback is itself a new revision; the enforcer removes the
	// annotation once done, or says on the policy why it could not.
	RollbackToAnnotation = "networkenforcer.kubewarden.io/rollback-to"

	// PolicyRevisionLabel, on a policy's ControllerRevision, is the policy's
	// name: the revisions of one policy are listed by it.
	PolicyRevisionLabel = "networkenforcer.kubewarden.io/policy"
)

// PromotedAt is when policy p was last promoted or amended: its
// PromotedAtAnnotation, else (a policy written by hand, or one of an earlier
// version) its creation.
func PromotedAt(p *WorkloadNetworkPolicy) time.Time {
	if t, err := time.Parse(time.RFC3339, p.Annotations[PromotedAtAnnotation]); err == nil {
		return t
	}
	return p.CreationTimestamp.Time
}

// HashCut returns s when it has at most limit characters; else its beginning,
// cut to make room, followed by "-" and the first 8 hex digits of the
// SHA-256 of s, so that two long names that share a beginning stay apart:
// how the enforcer fits a name it derives into an object name or a label
// value.
func HashCut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	hash := hex.EncodeToString(sum[:4])
	return strings.TrimRight(s[:limit-len(hash)-1], "-.") + "-" + hash
}
