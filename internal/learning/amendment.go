package learning

import (
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/observed"

	"github.com/kubewarden/network-enforcer/internal/workload"
)

// AmendmentEventName is the event name of an amendment edge: an edge of a
// workload and direction that a WorkloadNetworkPolicy governs and does not
// allow, which the workload made (a monitor violation, or a connection that
// the data plane refused in protect). The violation processor hands it to
// the writer, which learns it into the policy's amendment as learning
// learns an edge into a proposal: learning goes on after promotion.
const AmendmentEventName = "network_enforcer.amendment"

// Attribute keys that an amendment edge adds to an observation's.
const (
	AttrAmends         = "network_enforcer.amends"
	AttrTargetRevision = "network_enforcer.target.revision"
	AttrPeerRevision   = "network_enforcer.peer.revision"
)

// Amendment is an edge that policy Policy does not allow, observed: its
// flows in a batch, the newest at Time, with the revisions of the pods at
// its ends (workload.Revision.Name) where they are workloads' pods.
type Amendment struct {
	Observation
	// Policy is the name of the policy, in the workload's namespace.
	Policy string
	// TargetRevision is the revision of the policy's workload whose pod
	// made the edge; PeerRevision the peer's, when the peer is a workload.
	TargetRevision, PeerRevision string
}

// AppendTo appends the amendment edge to sl.
func (am *Amendment) AppendTo(sl plog.ScopeLogs) {
	a := am.appendRecord(sl, AmendmentEventName, 12)
	am.putPeer(a)
	a.PutStr(AttrProtocol, am.Protocol)
	a.PutInt(AttrPort, int64(am.Port))
	a.PutStr(AttrAmends, am.Policy)
	if am.TargetRevision != "" {
		a.PutStr(AttrTargetRevision, am.TargetRevision)
	}
	if am.PeerRevision != "" {
		a.PutStr(AttrPeerRevision, am.PeerRevision)
	}
	SetObserved(sl.LogRecords().At(sl.LogRecords().Len()-1), am.Class, am.Flows, am.Time)
}

// ReadFrom fills am from a record that AppendTo wrote; false for any other
// record.
func (am *Amendment) ReadFrom(lr plog.LogRecord) bool {
	if lr.EventName() != AmendmentEventName {
		return false
	}
	a := lr.Attributes()
	*am = Amendment{Policy: str(a, AttrAmends), TargetRevision: str(a, AttrTargetRevision), PeerRevision: str(a, AttrPeerRevision)}
	am.Class = v1alpha1.PeerClass(str(a, AttrPeerClass))
	am.PeerAddress, am.PeerDNSName = str(a, AttrPeerAddress), str(a, AttrPeerDNSName)
	am.Time = lr.Timestamp().AsTime()
	am.readAttributes(a)
	if v, ok := a.Get(AttrFlows); ok {
		am.Flows = v.Int()
	}
	return true
}

// Learnable reports whether e names a peer that a spec can allow: a
// workload, a principal, an address block, an entity or a DNS name. An
// observation of a peer that learning leaves out (a bare pod, an end that
// could not be told) names none, and teaches nothing.
func (e *Edge) Learnable() bool {
	return e.Peer != (workload.Ref{}) && string(e.Peer.Kind) != observed.KindPod || e.Principal != "" || e.PeerCIDR != "" ||
		e.PeerEntity != "" || e.PeerName != ""
}
