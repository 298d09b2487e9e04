package learning

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// ObservationEventName is the event name of an observed edge that was not
// learned: a flow side of a workload and direction that no policy governs,
// whose peer learning leaves out (outside peers with outside_peers drop, bare
// pods, ends without an identity). The writer lists it in the proposal's
// status, where the spec's verdict on it is WouldBlock. A learned edge
// carries its observation on its own record (SetObserved).
const ObservationEventName = "network_enforcer.observation"

// Attribute keys of an observation, on an observation record or on a learned
// edge's.
const (
	AttrPeerClass   = "network_enforcer.peer.class"
	AttrPeerAddress = "network_enforcer.peer.address"
	AttrPeerDNSName = "network_enforcer.peer.dns_name"
	AttrFlows       = "network_enforcer.flows"
)

// Observation is an edge seen in a batch: for how many flows, the newest of
// them at Time, and what kind of end its peer is.
type Observation struct {
	Edge
	Class v1alpha1.PeerClass
	// PeerAddress is the address of a peer that was not learned.
	PeerAddress string
	// PeerDNSName is the name that the data plane gives a peer that was not
	// learned (a Goldmane network set, pub, pvt) instead of an address.
	PeerDNSName string
	Flows       int64
	Time        time.Time
}

// AppendTo appends the observation of an edge that was not learned to sl.
// Its Edge names the workload, direction, protocol and port, and Peer a bare
// pod (kind Pod) where the peer is one.
func (o *Observation) AppendTo(sl plog.ScopeLogs) {
	a := o.appendRecord(sl, ObservationEventName, 9)
	if o.Peer != (workload.Ref{}) {
		a.PutStr(AttrPeerWorkload, o.Peer.String())
	}
	if o.PeerAddress != "" {
		a.PutStr(AttrPeerAddress, o.PeerAddress)
	}
	if o.PeerDNSName != "" {
		a.PutStr(AttrPeerDNSName, o.PeerDNSName)
	}
	a.PutStr(AttrProtocol, o.Protocol)
	a.PutInt(AttrPort, int64(o.Port))
	SetObserved(sl.LogRecords().At(sl.LogRecords().Len()-1), o.Class, o.Flows, o.Time)
}

// SetObserved adds an observation to a record: a learned edge's, which then
// stands for flows flows of a peer of class, the newest seen at t.
func SetObserved(lr plog.LogRecord, class v1alpha1.PeerClass, flows int64, t time.Time) {
	lr.SetTimestamp(pcommon.NewTimestampFromTime(t))
	a := lr.Attributes()
	a.PutStr(AttrPeerClass, string(class))
	a.PutInt(AttrFlows, flows)
}

// ReadFrom fills o from a record that AppendTo wrote, or from a learned
// edge's. learned says that it is a learned edge, whose Edge is then filled
// whether or not it carries an observation; ok says that it carries one.
func (o *Observation) ReadFrom(lr plog.LogRecord) (learned, ok bool) {
	switch lr.EventName() {
	case EventName:
		learned = true
	case ObservationEventName:
	default:
		return false, false
	}
	a := lr.Attributes()
	*o = Observation{
		Class:       v1alpha1.PeerClass(str(a, AttrPeerClass)),
		PeerAddress: str(a, AttrPeerAddress),
		PeerDNSName: str(a, AttrPeerDNSName),
		Time:        lr.Timestamp().AsTime(),
	}
	o.readAttributes(a)
	flows, has := a.Get(AttrFlows)
	if !has {
		return learned, false
	}
	o.Flows = flows.Int()
	return learned, true
}

// putPeer writes the peer of o: each of its edge's peer fields and its
// address and name that is set.
func (o *Observation) putPeer(a pcommon.Map) {
	for _, kv := range [...]struct{ k, v string }{
		{AttrPeerPrincipal, o.Principal}, {AttrPeerCIDR, o.PeerCIDR}, {AttrPeerEntity, string(o.PeerEntity)},
		{AttrPeerName, o.PeerName}, {AttrPeerAddress, o.PeerAddress}, {AttrPeerDNSName, o.PeerDNSName},
	} {
		if kv.v != "" {
			a.PutStr(kv.k, kv.v)
		}
	}
	if o.Peer != (workload.Ref{}) {
		a.PutStr(AttrPeerWorkload, o.Peer.String())
	}
}

// Key is the key of o among an object's observed edges: its peer as
// learning learned it (the workload, the principal, the block, the name
// that the spec allows) or left it out (its class, address and name), its
// protocol and port. It is the one key of an edge: the proposal writer
// counts a proposal's flows under it, and the policy status owner a
// policy's, so that a policy's counts go on from its proposal's. False for
// a protocol that no policy names.
func (o *Observation) Key() (observed.Key, bool) {
	proto, ok := observed.ProtocolOf(o.Protocol)
	if !ok {
		return observed.Key{}, false
	}
	k := observed.Key{Class: o.Class, Principal: o.Principal, Address: o.PeerAddress, DNSName: o.PeerDNSName,
		Protocol: proto, Port: int32(o.Port)}
	if o.PeerCIDR != "" {
		k.Address = o.PeerCIDR // the block it is learned as, which the spec allows
	}
	if o.PeerName != "" {
		k.DNSName = o.PeerName // the name it is learned by, which spec.outside allows
	}
	if o.Peer != (workload.Ref{}) {
		k.Namespace, k.Kind, k.Name = o.Peer.Namespace, string(o.Peer.Kind), o.Peer.Name
	}
	return k, true
}
