// Package observed keeps the evidence of a proposal or policy: the distinct
// edges seen for its workload and direction, each with its flow count, when
// it was first and last seen, and the verdict of the object's current spec on
// it. The proposal writer and the policy status sync each keep a Store and
// write what it holds into the status of the objects they own, through
// Status: one code path for both, and one matcher (internal/netpolmatch) for
// the verdicts and for monitor-mode violations.
package observed

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// KindPod is the kind that an observed edge names a bare pod peer with.
const KindPod = "Pod"

// Key identifies an observed edge of one object: the peer, the protocol and
// the destination port. It is comparable, so that a batch counts its repeats
// in a map.
type Key struct {
	Class v1alpha1.PeerClass
	// Namespace, Kind and Name name a workload peer, or a bare pod (kind Pod).
	Namespace, Kind, Name string
	// Principal is the peer's Istio identity.
	Principal string
	// Address is the peer's address, or the block it is learned as.
	Address string
	// DNSName is the peer's DNS or network set name, where the data plane
	// gives one.
	DNSName  string
	Protocol corev1.Protocol
	Port     int32
}

// Peer is the key's peer as status.observed lists it.
func (k *Key) Peer() v1alpha1.ObservedPeer {
	return v1alpha1.ObservedPeer{Class: k.Class, Namespace: k.Namespace, Kind: k.Kind, Name: k.Name,
		Principal: k.Principal, Address: k.Address, DNSName: k.DNSName}
}

// KeyOf is the key of a listed edge.
func KeyOf(e *v1alpha1.ObservedEdge) Key {
	p := &e.Peer
	return Key{Class: p.Class, Namespace: p.Namespace, Kind: p.Kind, Name: p.Name, Principal: p.Principal,
		Address: p.Address, DNSName: p.DNSName, Protocol: e.Protocol, Port: e.Port}
}

// SetAddress names a peer that is not a workload by what the data plane gives
// for it: an IP address, or a name (a Goldmane network set's, pub, pvt).
func (k *Key) SetAddress(address string) {
	if _, err := netip.ParseAddr(address); err == nil {
		k.Address = address
		return
	}
	k.DNSName = address
}

// ProtocolOf turns a flow's network.transport (tcp, udp, sctp) into the
// protocol a policy names; false for one that no policy can name.
func ProtocolOf(transport string) (corev1.Protocol, bool) {
	switch transport {
	case "tcp":
		return corev1.ProtocolTCP, true
	case "udp":
		return corev1.ProtocolUDP, true
	case "sctp":
		return corev1.ProtocolSCTP, true
	}
	return "", false
}
