// Package learning is the hand-off between the learning processor and the
// Kubernetes writer: a learned edge, carried as a log record. The processor has
// resolved both ends; the writer turns edges into proposals.
package learning

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// EventName is the event name of a learned edge.
const EventName = "network_enforcer.learning"

// Attribute keys of a learned edge. A workload is one attribute,
// "<namespace>/<Kind>/<name>" (workload.Ref.String): an edge is written and read
// for every flow, and each attribute is an allocation.
const (
	AttrBackend       = "network_enforcer.backend"
	AttrDirection     = "network_enforcer.direction"
	AttrWorkload      = "network_enforcer.workload"
	AttrPeerWorkload  = "network_enforcer.peer.workload"
	AttrPeerPrincipal = "network_enforcer.peer.principal"
	AttrPeerCIDR      = "network_enforcer.peer.cidr"
	AttrPeerEntity    = "network_enforcer.peer.entity"
	AttrPeerName      = "network_enforcer.peer.name"
	AttrProtocol      = "network.transport"
	AttrPort          = "destination.port"
)

// Edge is one learned connection of a workload in one direction: the peer (a
// workload for the kubernetes backend, a principal for istio, or for either an
// address block outside the learning scope), the protocol and the destination
// port.
type Edge struct {
	Backend   v1alpha1.Backend
	Workload  workload.Ref
	Direction v1alpha1.Direction
	// Peer is the workload at the other end (kubernetes backend).
	Peer workload.Ref
	// Principal is the other end's identity, <trust-domain>/ns/<ns>/sa/<sa>
	// (istio backend).
	Principal string
	// PeerCIDR is the other end's address block, e.g. 203.0.113.7/32, when
	// that end is outside the cluster's workloads (the world, a node, a
	// host-network pod) and the processor learns such ends; never a pod's.
	PeerCIDR string
	// PeerEntity is the other end when it is the API server or a node, learned
	// as what it is (outside_peers entities), not as an address.
	PeerEntity v1alpha1.Entity
	// PeerName is the other end's DNS name when it is an outside service that
	// the data plane names (outside_peers entities).
	PeerName string
	// Protocol is tcp, udp or sctp.
	Protocol string
	Port     uint32
}

// AppendTo appends the edge as a log record to sl.
func (e *Edge) AppendTo(sl plog.ScopeLogs) {
	a := e.appendRecord(sl, EventName, 6)
	switch {
	case e.Principal != "":
		a.PutStr(AttrPeerPrincipal, e.Principal)
	case e.PeerCIDR != "":
		a.PutStr(AttrPeerCIDR, e.PeerCIDR)
	case e.PeerEntity != "":
		a.PutStr(AttrPeerEntity, string(e.PeerEntity))
	case e.PeerName != "":
		a.PutStr(AttrPeerName, e.PeerName)
	default:
		a.PutStr(AttrPeerWorkload, e.Peer.String())
	}
	a.PutStr(AttrProtocol, e.Protocol)
	a.PutInt(AttrPort, int64(e.Port))
}

// appendRecord appends a record named event to sl with the edge's workload
// and direction, room for n attributes, and returns its attributes: the
// start that a learned edge and an observation share.
func (e *Edge) appendRecord(sl plog.ScopeLogs, event string, n int) pcommon.Map {
	lr := sl.LogRecords().AppendEmpty()
	lr.SetEventName(event)
	a := lr.Attributes()
	a.EnsureCapacity(n)
	a.PutStr(AttrBackend, string(e.Backend))
	a.PutStr(AttrDirection, string(e.Direction))
	a.PutStr(AttrWorkload, e.Workload.String())
	return a
}

// ReadFrom fills e from a log record that AppendTo wrote; false when lr is not a
// learned edge.
func (e *Edge) ReadFrom(lr plog.LogRecord) bool {
	if lr.EventName() != EventName {
		return false
	}
	e.readAttributes(lr.Attributes())
	return true
}

// readAttributes fills e from the attributes of a learned edge's record, or of
// an observation's, which name the edge alike.
func (e *Edge) readAttributes(a pcommon.Map) {
	*e = Edge{
		Backend:    v1alpha1.Backend(str(a, AttrBackend)),
		Direction:  v1alpha1.Direction(str(a, AttrDirection)),
		Workload:   workload.ParseRef(str(a, AttrWorkload)),
		Peer:       workload.ParseRef(str(a, AttrPeerWorkload)),
		Principal:  str(a, AttrPeerPrincipal),
		PeerCIDR:   str(a, AttrPeerCIDR),
		PeerEntity: v1alpha1.Entity(str(a, AttrPeerEntity)),
		PeerName:   str(a, AttrPeerName),
		Protocol:   str(a, AttrProtocol),
	}
	if v, ok := a.Get(AttrPort); ok {
		e.Port = uint32(v.Int())
	}
}

func str(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.Str()
	}
	return ""
}
