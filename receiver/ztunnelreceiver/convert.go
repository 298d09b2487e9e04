package ztunnelreceiver

import (
	"net/netip"
	"strings"
	"time"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// The ztunnel receiver's own drop reasons, beside the shared ones.
const (
	// DropOutbound is the outbound line of a connection: ztunnel logs every
	// connection on both sides, and the inbound side is the one whose policies
	// decide it.
	DropOutbound flowsource.DropReason = "outbound"
	// DropForeignTrustDomain is a source identity outside the configured trust
	// domain.
	DropForeignTrustDomain flowsource.DropReason = "foreign_trust_domain"
	// DropUnknownMessage is a line that is neither an access line nor a
	// policy decision (start-up, xDS and other ztunnel logs).
	DropUnknownMessage flowsource.DropReason = "unknown_message"
	// DropAllowDecision is a policy decision that allowed the connection: its
	// access line already carries the flow.
	DropAllowDecision flowsource.DropReason = "allow_decision"
	// DropConnectionOpened is the debug line at a connection's start: the
	// "connection complete" line of the same connection carries the flow.
	DropConnectionOpened flowsource.DropReason = "connection_opened"
	// DropDuplicateDenial is a deny decision for a connection whose denial was
	// already emitted, joined with another decision line.
	DropDuplicateDenial flowsource.DropReason = "duplicate_denial"
)

// The ztunnel messages the receiver knows.
const (
	msgConnectionComplete   = "connection complete"
	msgConnectionFailed     = "connection failed"
	msgConnectionOpened     = "connection opened"
	msgDenyMatch            = "deny policy match"
	msgNoAllowMatched       = "no allow policies matched"
	msgDryRunDenyMatch      = "dry-run: deny policy match"
	msgDryRunNoAllowMatch   = "dry-run: no allow policies match"
	msgAllowMatch           = "allow policy match"
	msgNoAllowPolicies      = "no allow policies, allow"
	msgDryRunAllowMatch     = "dry-run: allow policy match"
	policyRejection         = "policy rejection"
	policyChange            = "connection closed due to policy change"
	explicitlyDeniedBy      = "explicitly denied by: "
	spiffePrefix            = "spiffe://"
	authorizationPolicyKind = "AuthorizationPolicy"
)

// lineKind says what a line is to the joiner.
type lineKind uint8

const (
	kindAccess lineKind = iota + 1
	kindDecision
	// kindSeen is a decision line that the joiner only notes: it tells that
	// decision logging is on.
	kindSeen
)

// event is one converted line: what the joiner needs to pair a policy decision
// with its connection's access line, and the few fields its flow record is
// made of, in a small struct whose strings are kept once (an interner's), so
// that what the joiner holds for its window is small and holds no line.
type event struct {
	// time is the line's time, the record's.
	time time.Time
	// received is when the line arrived: its window starts then.
	received time.Time
	// duration is an access line's connection duration: ztunnel logs the line
	// when the connection ends.
	duration time.Duration
	policy   *flow.PolicyRef
	src, dst *endpoint
	// peer is the connection's source address: src.addr of an access line,
	// inbound.peer of a decision line.
	peer peerKey
	// srcPort and dstPort are the ends' ports.
	srcPort, dstPort uint16
	kind             lineKind
	outcome          outcome
	// protect is a decision of an enforced policy, as opposed to a dry-run one.
	protect bool
	// in is the input that the line came from.
	in input
}

// outcome is a flow.Outcome in a byte.
type outcome uint8

const (
	outcomeAllowed outcome = iota
	outcomeDenied
	outcomeDryRunDenied
)

var outcomes = [...]flow.Outcome{
	outcomeAllowed: flow.OutcomeAllowed, outcomeDenied: flow.OutcomeDenied, outcomeDryRunDenied: flow.OutcomeDryRunDenied,
}

// outcomeOf is an access line's outcome, allowed or denied, in a byte.
func outcomeOf(o flow.Outcome) outcome {
	if o == flow.OutcomeDenied {
		return outcomeDenied
	}
	return outcomeAllowed
}

// at is when the connection started: an access line's time less its duration,
// a decision line's time.
func (ev *event) at() time.Time { return ev.time.Add(-ev.duration) }

// record is the flow record the line stands for.
func (ev *event) record() flow.Record {
	rec := flow.Record{
		Time: ev.time, Provider: flow.ProviderIstio, Outcome: outcomes[ev.outcome],
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP,
		Count: 1,
	}
	if ev.policy != nil {
		rec.Policy = *ev.policy
	}
	if ev.src != nil {
		rec.Source = ev.src.flowEndpoint(ev.srcPort)
	}
	if ev.dst != nil {
		rec.Destination = ev.dst.flowEndpoint(ev.dstPort)
	}
	return rec
}

func (e *endpoint) flowEndpoint(port uint16) flow.Endpoint {
	return flow.Endpoint{Address: e.Address, Port: uint32(port), Namespace: e.Namespace, Pod: e.Pod, Identity: e.Identity}
}

// converter turns ztunnel lines into events.
type converter struct {
	trustDomain string
	// foreignDomain is called with a source identity's trust domain when it is not
	// trustDomain, so that the receiver can say so in its log.
	foreignDomain func(domain string)
}

// convert turns l into an event, or says why it drops it. now is the time to use
// when the line has none. The event's strings are names' copies.
func (c *converter) convert(l *line, now time.Time, ev *event, names *interner) (flowsource.DropReason, bool) {
	switch l.Message {
	case msgConnectionComplete, msgConnectionFailed:
		return c.access(l, now, ev, names)
	case msgDryRunDenyMatch, msgDryRunNoAllowMatch:
		return c.decision(l, now, false, ev, names)
	case msgDenyMatch, msgNoAllowMatched:
		return c.decision(l, now, true, ev, names)
	case msgAllowMatch, msgNoAllowPolicies, msgDryRunAllowMatch:
		return DropAllowDecision, false
	case msgConnectionOpened:
		return DropConnectionOpened, false
	}
	return DropUnknownMessage, false
}

// access converts an access line: inbound only, the real port from the HBONE
// address, the outcome from the error text.
func (c *converter) access(l *line, now time.Time, ev *event, names *interner) (flowsource.DropReason, bool) {
	switch l.Direction {
	case "inbound":
	case "outbound":
		return DropOutbound, false
	default:
		return flowsource.DropMalformed, false
	}
	src, err := netip.ParseAddrPort(l.SrcAddr)
	if err != nil {
		return flowsource.DropMalformed, false
	}
	dstAddr := l.DstHboneAddr
	if dstAddr == "" { // plaintext passthrough: dst.addr is the real target
		dstAddr = l.DstAddr
	}
	dst, err := netip.ParseAddrPort(dstAddr)
	if err != nil {
		return flowsource.DropMalformed, false
	}
	result, policy := accessOutcome(l.Error)
	srcIdentity, reason, ok := c.sourceIdentity(l.SrcIdentity, result)
	if !ok {
		return reason, false
	}
	dstIdentity, _ := strings.CutPrefix(l.DstIdentity, spiffePrefix)

	t := lineTime(l.Time, now)
	var duration time.Duration
	if d, err := time.ParseDuration(l.Duration); err == nil && d > 0 {
		duration = d
	}
	*ev = event{
		kind: kindAccess, peer: newPeerKey(src, l.SrcAddr), time: t, duration: duration,
		outcome: outcomeOf(result), policy: names.policy(policy),
		src: names.endpoint(endpoint{
			Address: host(l.SrcAddr), Namespace: l.SrcNamespace, Pod: l.SrcWorkload, Identity: srcIdentity,
		}),
		srcPort: src.Port(),
		dst: names.endpoint(endpoint{
			Address: host(dstAddr), Namespace: l.DstNamespace, Pod: l.DstWorkload, Identity: dstIdentity,
		}),
		dstPort: dst.Port(),
	}
	return "", true
}

// sourceIdentity returns the source principal without "spiffe://". A source
// without one is outside the mesh: its record goes on without an identity, and
// the learning processor decides (its outside_peers setting) whether it drops
// it or learns the source's address.
func (c *converter) sourceIdentity(id string, _ flow.Outcome) (string, flowsource.DropReason, bool) {
	if id == "" {
		return "", "", true
	}
	principal, ok := strings.CutPrefix(id, spiffePrefix)
	domain, path, _ := strings.Cut(principal, "/")
	if !ok || !validPrincipalPath(path) {
		return "", flowsource.DropMalformed, false
	}
	if domain != c.trustDomain {
		if c.foreignDomain != nil {
			c.foreignDomain(domain)
		}
		return "", DropForeignTrustDomain, false
	}
	return principal, "", true
}

// validPrincipalPath reports whether p is "ns/<namespace>/sa/<service-account>".
func validPrincipalPath(p string) bool {
	rest, ok := strings.CutPrefix(p, "ns/")
	if !ok {
		return false
	}
	ns, sa, ok := strings.Cut(rest, "/sa/")
	return ok && ns != "" && sa != "" && !strings.Contains(ns, "/") && !strings.Contains(sa, "/")
}

// host is the address part of an "ip:port" that netip.ParseAddrPort accepted,
// taken from the text itself so that it costs no allocation.
func host(addrPort string) string {
	h := addrPort[:strings.LastIndexByte(addrPort, ':')]
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// accessOutcome reads an access line's error: a policy rejection is a denial,
// with the denying policy when ztunnel names one; any other error (a reset, a
// refused connection) happened after policy allowed the connection.
func accessOutcome(errText string) (flow.Outcome, flow.PolicyRef) {
	if !strings.Contains(errText, policyRejection) && !strings.Contains(errText, policyChange) {
		return flow.OutcomeAllowed, flow.PolicyRef{}
	}
	if _, ref, ok := strings.Cut(errText, explicitlyDeniedBy); ok {
		return flow.OutcomeDenied, policyRef(strings.TrimSpace(ref))
	}
	return flow.OutcomeDenied, flow.PolicyRef{}
}

// decision converts a policy-decision line. It has the source address and the
// policy but no destination: the joiner adds that from the access line.
func (c *converter) decision(l *line, now time.Time, protect bool, ev *event, names *interner) (flowsource.DropReason, bool) {
	peer, err := netip.ParseAddrPort(l.Inbound.Peer)
	if err != nil {
		return flowsource.DropMalformed, false
	}
	decided := outcomeDryRunDenied
	if protect {
		decided = outcomeDenied
	}
	*ev = event{
		kind: kindDecision, protect: protect, peer: newPeerKey(peer, l.Inbound.Peer), time: lineTime(l.Time, now),
		outcome: decided, policy: names.policy(policyRef(l.Policy)),
		src: names.endpoint(endpoint{Address: host(l.Inbound.Peer)}), srcPort: peer.Port(),
	}
	return "", true
}

// policyRef reads ztunnel's "<namespace>/<name>"; anything else names no policy.
func policyRef(s string) flow.PolicyRef {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return flow.PolicyRef{}
	}
	return flow.PolicyRef{Kind: authorizationPolicyKind, Namespace: ns, Name: name}
}

// lineTime is the line's own time, or now when it has none that parses.
func lineTime(s string, now time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	return now
}
