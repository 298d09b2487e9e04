package v1alpha1

// Reasons of the Kubernetes Events that the enforcer records on proposals and
// policies, for `kubectl describe` (and `kubectl get events`). Repeated events
// are aggregated by the API client's event correlator.
const (
	// EventReasonPromoted (Normal, on the policy): a proposal was promoted into
	// this policy.
	EventReasonPromoted = "Promoted"
	// EventReasonRendered (Normal, on the policy): the native object was
	// created, changed back from drift, or deleted as the mode asks.
	EventReasonRendered = "Rendered"
	// EventReasonModeChanged (Normal, on the policy): the native object now
	// follows a new spec.mode.
	EventReasonModeChanged = "ModeChanged"
	// EventReasonRenderFailed (Warning, on the policy): the native object could
	// not be written; the render controller retries with backoff.
	EventReasonRenderFailed = "RenderFailed"
	// EventReasonNotOwned (Warning, on the policy): an object of the policy's
	// name exists that the policy does not control.
	EventReasonNotOwned = "NotOwned"
	// EventReasonWriteRefused (Warning, on the proposal or policy): the API
	// server refused a write of it (too large, invalid).
	EventReasonWriteRefused = "WriteRefused"
)

// Labels that the enforcer sets on what it writes.
const (
	// ManagedByLabel with the value ManagedBy marks the proposals that the
	// enforcer made; a proposal without it was made by someone else and is
	// never changed.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of ManagedByLabel on what the enforcer made.
	ManagedBy = "network-enforcer"
)
