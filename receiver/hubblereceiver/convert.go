package hubblereceiver

import (
	"strconv"
	"strings"

	flowpb "github.com/cilium/cilium/api/v1/flow"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Drop reasons of Hubble flows besides the shared ones.
const (
	// dropNoPolicyVerdict is a flow whose verdict says nothing about policy: a
	// drop for another reason than policy, an error, a trace or translation point.
	dropNoPolicyVerdict flowsource.DropReason = "no_policy_verdict"
)

// Cilium's reserved security identities of ends that are not pods.
const (
	identityHost       = 1
	identityWorld      = 2
	identityRemoteNode = 6
	identityKubeAPI    = 7
	identityWorldIPv4  = 9
	identityWorldIPv6  = 10
)

// convertFlow maps one Hubble flow into the flow schema. It keeps the non-reply
// L3/L4 flows that carry a policy verdict, and says why it drops the others.
func convertFlow(f *flowpb.Flow, rec *flow.Record) (flowsource.DropReason, bool) {
	if f == nil || f.GetIP() == nil {
		return flowsource.DropMalformed, false
	}
	if f.GetIsReply().GetValue() {
		return flowsource.DropReply, false
	}
	if f.GetType() != flowpb.FlowType_L3_L4 {
		if _, known := flowpb.FlowType_name[int32(f.GetType())]; !known {
			return flowsource.DropUnknownEnum, false
		}
		return flowsource.DropNotL4, false
	}
	outcome, reason, ok := outcomeOf(f)
	if !ok {
		return reason, false
	}
	transport, srcPort, dstPort, reason, ok := transportOf(f.GetL4())
	if !ok {
		return reason, false
	}
	direction, reporter, reason, ok := directionOf(f.GetTrafficDirection())
	if !ok {
		return reason, false
	}

	*rec = flow.Record{
		Time:        f.GetTime().AsTime(),
		Provider:    flow.ProviderCilium,
		Outcome:     outcome,
		Reporter:    reporter,
		Direction:   direction,
		Transport:   transport,
		Source:      endpointOf(f.GetSource(), f.GetIP().GetSource(), srcPort),
		Destination: endpointOf(f.GetDestination(), f.GetIP().GetDestination(), dstPort),
		Policy:      policyOf(f, outcome, direction),
		Count:       1,
	}
	return "", true
}

// outcomeOf maps the verdict. A drop counts as a policy denial only with a policy
// drop reason (POLICY_DENIED, POLICY_DENY).
func outcomeOf(f *flowpb.Flow) (flow.Outcome, flowsource.DropReason, bool) {
	switch v := f.GetVerdict(); v {
	case flowpb.Verdict_FORWARDED, flowpb.Verdict_REDIRECTED:
		return flow.OutcomeAllowed, "", true
	case flowpb.Verdict_AUDIT:
		return flow.OutcomeAudit, "", true
	case flowpb.Verdict_DROPPED:
		switch r := f.GetDropReasonDesc(); r {
		case flowpb.DropReason_POLICY_DENIED, flowpb.DropReason_POLICY_DENY:
			return flow.OutcomeDenied, "", true
		default:
			if _, known := flowpb.DropReason_name[int32(r)]; !known {
				return "", flowsource.DropUnknownEnum, false
			}
			return "", dropNoPolicyVerdict, false
		}
	case flowpb.Verdict_VERDICT_UNKNOWN, flowpb.Verdict_ERROR, flowpb.Verdict_TRACED, flowpb.Verdict_TRANSLATED:
		return "", dropNoPolicyVerdict, false
	default:
		return "", flowsource.DropUnknownEnum, false
	}
}

func transportOf(l4 *flowpb.Layer4) (flow.Transport, uint32, uint32, flowsource.DropReason, bool) {
	switch {
	case l4 == nil:
		return "", 0, 0, flowsource.DropMalformed, false
	case l4.GetTCP() != nil:
		return flow.TransportTCP, l4.GetTCP().GetSourcePort(), l4.GetTCP().GetDestinationPort(), "", true
	case l4.GetUDP() != nil:
		return flow.TransportUDP, l4.GetUDP().GetSourcePort(), l4.GetUDP().GetDestinationPort(), "", true
	case l4.GetSCTP() != nil:
		return flow.TransportSCTP, l4.GetSCTP().GetSourcePort(), l4.GetSCTP().GetDestinationPort(), "", true
	default:
		return "", 0, 0, flowsource.DropUnsupportedProto, false
	}
}

// directionOf maps the traffic direction, and from it the reporting end: Cilium
// observes ingress at the destination and egress at the source.
func directionOf(d flowpb.TrafficDirection) (flow.Direction, flow.Reporter, flowsource.DropReason, bool) {
	switch d {
	case flowpb.TrafficDirection_INGRESS:
		return flow.DirectionIngress, flow.ReporterDestination, "", true
	case flowpb.TrafficDirection_EGRESS:
		return flow.DirectionEgress, flow.ReporterSource, "", true
	case flowpb.TrafficDirection_TRAFFIC_DIRECTION_UNKNOWN:
		return "", "", "", true
	default:
		return "", "", flowsource.DropUnknownEnum, false
	}
}

func endpointOf(ep *flowpb.Endpoint, addr string, port uint32) flow.Endpoint {
	e := flow.Endpoint{
		Address:   addr,
		Port:      port,
		Namespace: ep.GetNamespace(),
		Pod:       ep.GetPodName(),
	}
	if id := ep.GetIdentity(); id != 0 {
		e.Identity = strconv.FormatUint(uint64(id), 10)
	}
	if w := ep.GetWorkloads(); len(w) > 0 {
		e.WorkloadKind, e.WorkloadName = w[0].GetKind(), w[0].GetName()
	}
	for _, l := range ep.GetLabels() {
		if kv, ok := strings.CutPrefix(l, "k8s:"); ok && !strings.HasPrefix(kv, "io.kubernetes.pod.namespace=") && !strings.HasPrefix(kv, "io.cilium.k8s.") {
			e.Labels = append(e.Labels, kv)
		}
	}
	if e.Pod == "" {
		e.External = externalOf(ep)
	}
	return e
}

// externalOf classifies an end with no pod by its reserved identity or labels.
func externalOf(ep *flowpb.Endpoint) flow.External {
	switch ep.GetIdentity() {
	case identityWorld, identityWorldIPv4, identityWorldIPv6:
		return flow.ExternalWorld
	case identityHost, identityRemoteNode:
		return flow.ExternalHost
	case identityKubeAPI:
		return flow.ExternalAPIServer
	}
	for _, l := range ep.GetLabels() {
		switch {
		case strings.HasPrefix(l, "reserved:world"):
			return flow.ExternalWorld
		case l == "reserved:host", l == "reserved:remote-node":
			return flow.ExternalHost
		case l == "reserved:kube-apiserver":
			return flow.ExternalAPIServer
		}
	}
	return flow.ExternalUnknown
}

// policyOf names the policy behind the verdict: the first denying policy of the
// flow's direction for a denial, else the first allowing one.
func policyOf(f *flowpb.Flow, outcome flow.Outcome, direction flow.Direction) flow.PolicyRef {
	var policies []*flowpb.Policy
	switch {
	case outcome != flow.OutcomeAllowed && direction == flow.DirectionEgress:
		policies = f.GetEgressDeniedBy()
	case outcome != flow.OutcomeAllowed:
		policies = f.GetIngressDeniedBy()
	case direction == flow.DirectionEgress:
		policies = f.GetEgressAllowedBy()
	default:
		policies = f.GetIngressAllowedBy()
	}
	if len(policies) == 0 {
		return flow.PolicyRef{}
	}
	p := policies[0]
	return flow.PolicyRef{Kind: p.GetKind(), Namespace: p.GetNamespace(), Name: p.GetName()}
}
