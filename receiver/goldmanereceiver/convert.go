package goldmanereceiver

import (
	"strconv"
	"time"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// convertFlow maps one Goldmane flow into the flow schema, or says why it drops it.
//
// Goldmane aggregates: a record stands for num_connections_started connections of
// one 15-second bucket, and names ends as "<generateName>*", resolved to workloads
// after the receiver. The reporter is the end whose node saw the flow, so Src is
// the source's egress and Dst the destination's ingress.
func convertFlow(f *pb.Flow, rec *flow.Record) (flowsource.DropReason, bool) {
	key := f.GetKey()
	if key == nil {
		return flowsource.DropMalformed, false
	}
	reporter, direction, reason, ok := reporterOf(key.GetReporter())
	if !ok {
		return reason, false
	}
	outcome, reason, ok := outcomeOf(key.GetAction())
	if !ok {
		return reason, false
	}
	transport, reason, ok := transportOf(key.GetProto())
	if !ok {
		return reason, false
	}
	port := key.GetDestPort()
	if port < 0 || port > 65535 {
		return flowsource.DropMalformed, false
	}
	src, reason, ok := endpointOf(key.GetSourceType(), key.GetSourceNamespace(), key.GetSourceName(), f.GetSourceLabels(), 0)
	if !ok {
		return reason, false
	}
	dst, reason, ok := endpointOf(key.GetDestType(), key.GetDestNamespace(), key.GetDestName(), f.GetDestLabels(), uint32(port))
	if !ok {
		return reason, false
	}
	*rec = flow.Record{
		Time:        time.Unix(f.GetStartTime(), 0).UTC(),
		Provider:    flow.ProviderCalico,
		Outcome:     outcome,
		Reporter:    reporter,
		Direction:   direction,
		Transport:   transport,
		Source:      src,
		Destination: dst,
		Count:       max(f.GetNumConnectionsStarted(), 1),
	}
	rec.Policy, _ = decidingPolicy(key.GetPolicies().GetEnforcedPolicies(), outcome)
	if pending := key.GetPolicies().GetPendingPolicies(); len(pending) > 0 {
		rec.PendingPolicy, rec.PendingOutcome = decidingPolicy(pending, "")
	}
	return "", true
}

func reporterOf(r pb.Reporter) (flow.Reporter, flow.Direction, flowsource.DropReason, bool) {
	switch r {
	case pb.Reporter_Src:
		return flow.ReporterSource, flow.DirectionEgress, "", true
	case pb.Reporter_Dst:
		return flow.ReporterDestination, flow.DirectionIngress, "", true
	case pb.Reporter_ReporterUnspecified:
		return "", "", flowsource.DropMalformed, false
	default:
		return "", "", flowsource.DropUnknownEnum, false
	}
}

// outcomeOf maps the flow's action. Pass at the flow level means no tier denied
// it: the traffic went through.
func outcomeOf(a pb.Action) (flow.Outcome, flowsource.DropReason, bool) {
	switch a {
	case pb.Action_Allow, pb.Action_Pass:
		return flow.OutcomeAllowed, "", true
	case pb.Action_Deny:
		return flow.OutcomeDenied, "", true
	case pb.Action_ActionUnspecified:
		return "", flowsource.DropMalformed, false
	default:
		return "", flowsource.DropUnknownEnum, false
	}
}

func transportOf(proto string) (flow.Transport, flowsource.DropReason, bool) {
	switch proto {
	case "tcp":
		return flow.TransportTCP, "", true
	case "udp":
		return flow.TransportUDP, "", true
	case "sctp":
		return flow.TransportSCTP, "", true
	case "":
		return "", flowsource.DropMalformed, false
	default:
		return "", flowsource.DropUnsupportedProto, false
	}
}

// endpointOf maps one end. Only a WorkloadEndpoint is a pod; host endpoints,
// network sets and networks ("pub", "pvt") are outside the workloads.
func endpointOf(t pb.EndpointType, namespace, name string, labels []string, port uint32) (flow.Endpoint, flowsource.DropReason, bool) {
	e := flow.Endpoint{Port: port, Labels: labels}
	switch t {
	case pb.EndpointType_WorkloadEndpoint:
		if name == "" || namespace == "" {
			return e, flowsource.DropMalformed, false
		}
		e.Namespace, e.Pod = namespace, name
		return e, "", true
	case pb.EndpointType_HostEndpoint:
		e.External = flow.ExternalHost
	case pb.EndpointType_NetworkSet:
		e.External = flow.ExternalNetworkSet
	case pb.EndpointType_Network:
		e.External = flow.ExternalNetwork
	case pb.EndpointType_EndpointTypeUnspecified:
		e.External = flow.ExternalUnknown
	default:
		return e, flowsource.DropUnknownEnum, false
	}
	// An external end keeps its Goldmane name ("pub", a network set's name) as
	// the address, and its namespace when it has one ("-" means none).
	e.Address = name
	if namespace != "-" {
		e.Namespace = namespace
	}
	return e, "", true
}

// decidingPolicy finds the policy behind an outcome in a trace: for a denial the
// first Deny hit (an EndOfTier hit stands for its trigger, the policy whose tier
// ended without allowing), else the first Allow hit. With an empty outcome it also
// decides the outcome: denied when any hit denies, allowed when one allows.
func decidingPolicy(hits []*pb.PolicyHit, outcome flow.Outcome) (flow.PolicyRef, flow.Outcome) {
	find := func(action pb.Action) *pb.PolicyHit {
		for _, h := range hits {
			if h.GetAction() != action {
				continue
			}
			if h.GetKind() == pb.PolicyKind_EndOfTier && h.GetTrigger() != nil {
				return h.GetTrigger()
			}
			return h
		}
		return nil
	}
	var hit *pb.PolicyHit
	switch outcome {
	case flow.OutcomeDenied:
		hit = find(pb.Action_Deny)
	case flow.OutcomeAllowed:
		hit = find(pb.Action_Allow)
	default:
		if hit, outcome = find(pb.Action_Deny), flow.OutcomeDenied; hit == nil {
			hit, outcome = find(pb.Action_Allow), flow.OutcomeAllowed
		}
		if hit == nil {
			return flow.PolicyRef{}, ""
		}
	}
	if hit == nil {
		return flow.PolicyRef{}, outcome
	}
	return flow.PolicyRef{Kind: policyKindName(hit.GetKind()), Namespace: hit.GetNamespace(), Name: hit.GetName()}, outcome
}

// policyKindName names a policy kind through the generated name table: the enum's
// String goes through protobuf reflection, a cost on every record. An unknown value
// keeps its number.
func policyKindName(k pb.PolicyKind) string {
	if name, ok := pb.PolicyKind_name[int32(k)]; ok {
		return name
	}
	return strconv.Itoa(int(k))
}
