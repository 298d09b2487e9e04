package dataplanetest

import (
	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// HubbleEnd is a pod end of a Hubble flow.
type HubbleEnd struct {
	Namespace, Pod, IP string
	// Workload names the pod's Deployment; its pods carry app=<Workload>.
	Workload string
	// Identity is the pod's Cilium security identity.
	Identity uint32
}

func (e HubbleEnd) endpoint() *flowpb.Endpoint {
	return &flowpb.Endpoint{ID: e.Identity, Identity: e.Identity, Namespace: e.Namespace, PodName: e.Pod,
		Labels:    []string{"k8s:app=" + e.Workload, "k8s:io.kubernetes.pod.namespace=" + e.Namespace},
		Workloads: []*flowpb.Workload{{Name: e.Workload, Kind: "Deployment"}}}
}

// NewHubbleFlow is the destination node's ingress event of a new TCP connection
// from src to dst's port, now: forwarded, or dropped for reason (a policy drop
// reason for a denial).
func NewHubbleFlow(src, dst HubbleEnd, srcPort, dstPort uint32, verdict flowpb.Verdict, reason flowpb.DropReason) *observer.GetFlowsResponse {
	now := timestamppb.Now()
	f := &flowpb.Flow{
		Time: now, Verdict: verdict, DropReasonDesc: reason,
		IP: &flowpb.IP{Source: src.IP, Destination: dst.IP, IpVersion: flowpb.IPVersion_IPv4},
		L4: &flowpb.Layer4{Protocol: &flowpb.Layer4_TCP{TCP: &flowpb.TCP{SourcePort: srcPort, DestinationPort: dstPort,
			Flags: &flowpb.TCPFlags{SYN: true}}}},
		Source: src.endpoint(), Destination: dst.endpoint(),
		Type: flowpb.FlowType_L3_L4, TrafficDirection: flowpb.TrafficDirection_INGRESS,
		IsReply: wrapperspb.Bool(false), EventType: &flowpb.CiliumEventType{Type: 5},
	}
	if verdict == flowpb.Verdict_DROPPED {
		f.EventType = &flowpb.CiliumEventType{Type: 1, SubType: int32(reason)}
	}
	return &observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: f}, NodeName: "worker-1", Time: now}
}
