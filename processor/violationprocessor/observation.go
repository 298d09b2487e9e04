package violationprocessor

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// recordKey identifies a violation record: a repeat of the same source,
// destination, protocol, port, action and policy only refreshes the record.
type recordKey struct {
	Source, Destination v1alpha1.ViolationEndpoint
	Protocol            corev1.Protocol
	DstPort             int32
	Action              v1alpha1.PolicyMode
	Policy              v1alpha1.PolicyReference
}

// observation is one violation of one WorkloadNetworkPolicy.
type observation struct {
	policy   types.NamespacedName
	key      recordKey
	provider flow.Provider
	time     time.Time
	// count is how many connections the observation stands for.
	count int64
	// amendment is the edge that the observation teaches the policy's
	// amendment; nil when it teaches none (an acknowledged violation, a
	// peer that no spec can name, amendments off).
	amendment *learning.Amendment
}

// record is the status record of the observation, without its id.
func (k recordKey) record(ts time.Time) v1alpha1.ViolationRecord {
	r := v1alpha1.ViolationRecord{
		Source: k.Source, Destination: k.Destination, Protocol: k.Protocol,
		DstPort: k.DstPort, Action: k.Action, Policy: k.Policy,
	}
	r.Timestamp.Time = ts.UTC().Truncate(time.Second)
	return r
}

// keyOf is the key of a status record.
func keyOf(r *v1alpha1.ViolationRecord) recordKey {
	return recordKey{
		Source: r.Source, Destination: r.Destination, Protocol: r.Protocol,
		DstPort: r.DstPort, Action: r.Action, Policy: r.Policy,
	}
}
