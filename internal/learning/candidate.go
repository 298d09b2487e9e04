package learning

import (
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// CandidateEventName is the event name of a violation candidate: a flow of a
// workload and direction that a WorkloadNetworkPolicy governs. It keeps every
// attribute of the flow record and adds the target, for the violation processor
// to judge.
const CandidateEventName = "network_enforcer.violation_candidate"

// Attribute keys that a candidate adds to the flow's.
const (
	AttrTargetNamespace = "network_enforcer.target.namespace"
	AttrTargetKind      = "network_enforcer.target.kind"
	AttrTargetName      = "network_enforcer.target.name"
	AttrTargetDirection = "network_enforcer.target.direction"
)

// AppendCandidate appends flow, a flow record, to sl as a violation candidate of
// target in direction d. peer is the flow's other end as the target's
// evidence counts it (the peer part of an observation, as learning would
// learn it or leave it out): the violation processor counts the flow under
// that key, the one that the proposal's evidence had, so that a policy's
// counts go on from its proposal's.
func AppendCandidate(sl plog.ScopeLogs, flow plog.LogRecord, target workload.Ref, d v1alpha1.Direction, peer *Observation) {
	lr := sl.LogRecords().AppendEmpty()
	flow.CopyTo(lr)
	lr.SetEventName(CandidateEventName)
	a := lr.Attributes()
	a.EnsureCapacity(a.Len() + 8) // the copy is sized to the flow's: grown once, not twice
	a.PutStr(AttrTargetNamespace, target.Namespace)
	a.PutStr(AttrTargetKind, string(target.Kind))
	a.PutStr(AttrTargetName, target.Name)
	a.PutStr(AttrTargetDirection, string(d))
	if peer != nil {
		peer.putPeer(a)
		a.PutStr(AttrPeerClass, string(peer.Class))
	}
}

// ReadCandidate returns the target and direction that AppendCandidate added to
// a candidate; false for a record that is not a candidate.
func ReadCandidate(lr plog.LogRecord) (workload.Ref, v1alpha1.Direction, bool) {
	if lr.EventName() != CandidateEventName {
		return workload.Ref{}, "", false
	}
	a := lr.Attributes()
	target := workload.Ref{
		Namespace: str(a, AttrTargetNamespace),
		Kind:      v1alpha1.WorkloadKind(str(a, AttrTargetKind)),
		Name:      str(a, AttrTargetName),
	}
	return target, v1alpha1.Direction(str(a, AttrTargetDirection)), true
}

// ReadCandidatePeer returns the peer that AppendCandidate added to a
// candidate, with the flow's protocol and port; false when it has none.
func ReadCandidatePeer(lr plog.LogRecord) (Observation, bool) {
	a := lr.Attributes()
	class, ok := a.Get(AttrPeerClass)
	if !ok {
		return Observation{}, false
	}
	var o Observation
	o.readAttributes(a)
	o.Class = v1alpha1.PeerClass(class.Str())
	o.PeerAddress, o.PeerDNSName = str(a, AttrPeerAddress), str(a, AttrPeerDNSName)
	return o, true
}
