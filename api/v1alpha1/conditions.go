package v1alpha1

// Condition types on a WorkloadNetworkPolicy. Each type has one writer, named
// beside it; a writer applies only its own types, under its own field manager
// (server-side apply), so that conditions written by two writers in quick
// succession all survive.
const (
	// ConditionRendered reports whether the native object (NetworkPolicy or
	// AuthorizationPolicy) is as the policy and its mode say. Written by the
	// render controller.
	ConditionRendered = "Rendered"
	// ConditionAttributable is False while another policy targets the same
	// workload and direction: a violation that the data plane does not
	// attribute by name cannot be told apart between them, and is counted in
	// network_enforcer_violations_unattributed instead of recorded. Written by
	// the status sync.
	ConditionAttributable = "Attributable"
	// ConditionAcknowledged is False while an acknowledge annotation names no
	// record; the annotation stays until someone removes or corrects it.
	// Written by the status sync.
	ConditionAcknowledged = "Acknowledged"
	// ConditionUnusedRules is True when some rules of the spec were not used
	// by observed traffic for the enforcer's unused rule age (7 days by
	// default), counted from the policy's creation for a rule never used; the
	// message names them, so that a person can age them out. Written by the
	// status sync.
	ConditionUnusedRules = "UnusedRules"
)

// ConditionWouldBlock is True, on a proposal and on a policy, when protect
// mode with the object's current spec would block some of the observed
// edges; the message says how many, by peer class. Promote a proposal whose
// WouldBlock is False. Written by the proposal writer on a proposal and by the
// status sync on a policy.
const ConditionWouldBlock = "WouldBlock"

// Reasons of ConditionWouldBlock.
const (
	// ReasonObservedWouldBlock: the spec does not allow some observed edges.
	ReasonObservedWouldBlock = "ObservedWouldBlock"
	// ReasonObservedAllowed: the spec allows every observed edge.
	ReasonObservedAllowed = "ObservedAllowed"
)

// ConditionEvidenceComplete is True, on a proposal and on a policy, when the
// writer tracks every observed edge one by one, so that observedEdges and
// wouldBlockEdges are exact; False when they are estimates (status.estimated):
// the tracking limit was reached, or edges seen before the writer started are
// not listed. Written by the writer of the object's observed edges.
const ConditionEvidenceComplete = "EvidenceComplete"

// Reasons of ConditionEvidenceComplete.
const (
	// ReasonAllTracked: every observed edge is tracked; the counts are exact.
	ReasonAllTracked = "AllTracked"
	// ReasonTrackingLimit: more distinct edges were seen than the writer
	// tracks (max_tracked_edges); the counts are estimates.
	ReasonTrackingLimit = "TrackingLimit"
	// ReasonNotTracked: edges seen by an earlier writer and not listed are
	// counted by their estimate until they are seen again.
	ReasonNotTracked = "NotTracked"
)

// Reasons of ConditionUnusedRules.
const (
	// ReasonRulesUnused: some rules were not used for the unused rule age.
	ReasonRulesUnused = "RulesUnused"
	// ReasonRulesUsed: every rule was used within the unused rule age.
	ReasonRulesUsed = "RulesUsed"
)

// Reasons of ConditionRendered.
const (
	// ReasonMonitor: the native object is as monitor mode asks (none for the
	// kubernetes backend, a dry-run AuthorizationPolicy for istio).
	ReasonMonitor = "Monitor"
	// ReasonProtect: the native object is rendered and the data plane enforces
	// it.
	ReasonProtect = "Protect"
	// ReasonNotOwned: an object of the policy's name and kind exists that the
	// policy does not control; it is left as it is, and the policy is not
	// rendered.
	ReasonNotOwned = "NotOwned"
	// ReasonNoAuthorizationPolicyCRD: the policy has the istio backend, and the
	// cluster did not serve AuthorizationPolicies when the collector started.
	ReasonNoAuthorizationPolicyCRD = "NoAuthorizationPolicyCRD"
	// ReasonNoCiliumNetworkPolicyCRD: the policy has the cilium backend, and
	// the cluster did not serve CiliumNetworkPolicies when the collector
	// started.
	ReasonNoCiliumNetworkPolicyCRD = "NoCiliumNetworkPolicyCRD"
	// ReasonRenderFailed: the API server refused to create, change or delete
	// the native object; the message has its answer.
	ReasonRenderFailed = "RenderFailed"
)

// Reasons of ConditionAttributable.
const (
	// ReasonUniqueTarget: no other policy targets this workload and direction.
	ReasonUniqueTarget = "UniqueTarget"
	// ReasonSharedTarget: other policies target this workload and direction.
	ReasonSharedTarget = "SharedTarget"
)

// Reasons of ConditionAcknowledged.
const (
	// ReasonApplied: every acknowledge annotation has been applied.
	ReasonApplied = "Applied"
	// ReasonUnknownViolation: an acknowledge annotation names no active record.
	ReasonUnknownViolation = "UnknownViolation"
)

// Condition types on a WorkloadNetworkPolicyProposal, all written by the
// proposal writer (the k8swriter exporter), the one owner of proposals.
const (
	// ConditionBounded is True when the writer kept the proposal within its
	// limits: the ports of a peer over max_ports_per_peer were collapsed (into
	// one range per protocol for the kubernetes backend, into any port for
	// istio), or peers over max_peers were left out. The message says how many.
	ConditionBounded = "Bounded"
	// ConditionWritten is False when the API server refused the writer's last
	// write of the proposal for what it holds (too large, invalid); the message
	// has the API server's answer. The writer tries again once it learns
	// something that changes what it would write.
	ConditionWritten = "Written"
	// ConditionStable is True once no new edge (a new peer, or a new port of
	// a peer) has been learned into the proposal's spec for the writer's
	// stable_after; False, with the time and the edge of the last new one
	// (status.lastNewEdge), while one is more recent. Flows on edges the spec
	// has do not change it.
	ConditionStable = "Stable"
)

// ConditionCoverage is on a proposal: True when nothing says that learning
// missed flows of the workload within the writer's stable_after; False, with
// the cause, counts and times (status.coverageGaps), while the data plane
// reported a gap more recent than that for a node where the workload's pods
// ran, or flows of its pods could not be attributed.
const ConditionCoverage = "Coverage"

// Reasons of ConditionCoverage: a CoverageGapCause when False, or NoGaps.
const (
	// ReasonNoGaps: no gap was reported within stable_after.
	ReasonNoGaps = "NoGaps"
)

// ConditionReady is on a proposal: True when it is ready to promote, that is
// Stable, Coverage and EvidenceComplete are True and WouldBlock is False;
// False otherwise, its reason the first of them that is not as asked and its
// message each of them with its own message. Nothing promotes on its own:
// `kubectl wait --for=condition=Ready wnpp/<name>` waits for it.
const ConditionReady = "Ready"

// Reasons of ConditionReady.
const (
	// ReasonReadyToPromote: every condition is as promotion asks.
	ReasonReadyToPromote = "ReadyToPromote"
	// ReasonNotStable: Stable is not True.
	ReasonNotStable = "NotStable"
	// ReasonNotCovered: Coverage is not True.
	ReasonNotCovered = "NotCovered"
	// ReasonEvidenceIncomplete: EvidenceComplete is not True.
	ReasonEvidenceIncomplete = "EvidenceIncomplete"
	// ReasonBlocksObserved: WouldBlock is not False.
	ReasonBlocksObserved = "BlocksObserved"
)

// Reasons of ConditionStable.
const (
	// ReasonLearning: an edge was learned within stable_after.
	ReasonLearning = "Learning"
	// ReasonNoNewEdges: no edge was learned for stable_after.
	ReasonNoNewEdges = "NoNewEdges"
)

// Reasons of ConditionBounded.
const (
	// ReasonOverLimits: ports were collapsed or peers left out.
	ReasonOverLimits = "OverLimits"
	// ReasonWithinBounds: every learned peer and port is in the spec as it is.
	ReasonWithinBounds = "WithinBounds"
)

// Reasons of ConditionWritten.
const (
	// ReasonAccepted: the API server took the writer's last write.
	ReasonAccepted = "Accepted"
	// ReasonRefused: the API server refused the writer's last write.
	ReasonRefused = "Refused"
)

// ConditionRevisions is, on an amendment, which releases made its edges:
// True (NewRevisionsOnly) when every added edge was made by a revision that
// appeared after the policy's last promotion or amendment; False
// (LearnedRevision) when a revision that was live while the policy was
// learned made one. Ready is False while one did.
const ConditionRevisions = "Revisions"

// Reasons of the Revisions condition, and of Ready for an amendment.
const (
	// ReasonNewRevisionsOnly: every added edge came with a new release.
	ReasonNewRevisionsOnly = "NewRevisionsOnly"
	// ReasonLearnedRevision: a revision that learning saw made an added edge.
	ReasonLearnedRevision = "LearnedRevision"
)

// ConditionPromoted is, on an amendment, False when promotion could not
// merge it (reason Stale: the policy's spec changed after the amendment was
// built on it; the writer builds it again). On a policy, it is False when a
// rollback could not be done (reason RollbackFailed), with why.
const ConditionPromoted = "Promoted"

// Reasons of the Promoted condition.
const (
	// ReasonStale: the amended policy changed since the amendment's spec was
	// built on it.
	ReasonStale = "Stale"
	// ReasonRollbackFailed: the revision that a rollback names does not
	// exist, or its spec could not be applied.
	ReasonRollbackFailed = "RollbackFailed"
	// ReasonRolledBack: the last rollback was done.
	ReasonRolledBack = "RolledBack"
)
