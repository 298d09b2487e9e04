package dataplanetest

import (
	"strings"
	"time"

	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// NewGoldmaneFlow is the destination's Goldmane report of one TCP connection
// from src to dst's port: allowed by the namespace's profile when no policy
// selects dst (ConnectionUnenforced, ConnectionDryRunDenied), allowed by dst's
// ingress policy (ConnectionAllowed), or denied at the end of the default tier,
// whose trigger is that policy (ConnectionDenied).
func NewGoldmaneFlow(src, dst End, dstPort uint32, c Connection) *pb.FlowResult {
	action := pb.Action_Allow
	hit := &pb.PolicyHit{Kind: pb.PolicyKind_Profile, Name: "kns." + dst.Namespace, Tier: "__PROFILE__", Action: pb.Action_Allow}
	policy := &pb.PolicyHit{Kind: pb.PolicyKind_NetworkPolicy, Namespace: dst.Namespace, Name: ingressPolicy(dst), Tier: "default"}
	switch c {
	case ConnectionAllowed:
		policy.Action = pb.Action_Allow
		hit = policy
	case ConnectionDenied:
		action = pb.Action_Deny
		hit = &pb.PolicyHit{Kind: pb.PolicyKind_EndOfTier, Tier: "default", Action: pb.Action_Deny, Trigger: policy}
	case ConnectionUnenforced, ConnectionDryRunDenied:
		// The namespace's profile allows it: the hit above.
	}
	now := time.Now().Unix()
	return &pb.FlowResult{Flow: &pb.Flow{
		Key: &pb.FlowKey{
			SourceName: aggregate(src), SourceNamespace: src.Namespace, SourceType: pb.EndpointType_WorkloadEndpoint,
			DestName: aggregate(dst), DestNamespace: dst.Namespace, DestType: pb.EndpointType_WorkloadEndpoint,
			DestPort: int64(dstPort), Proto: "tcp", Reporter: pb.Reporter_Dst, Action: action,
			Policies: &pb.PolicyTrace{EnforcedPolicies: []*pb.PolicyHit{hit}},
		},
		StartTime: now, EndTime: now + 1, NumConnectionsStarted: 1, NumConnectionsCompleted: 1,
		SourceLabels: []string{"app=" + src.Workload}, DestLabels: []string{"app=" + dst.Workload},
	}}
}

// aggregate is Goldmane's name for a pod of a ReplicaSet: the pod's
// generateName and "*".
func aggregate(e End) string { return e.Pod[:strings.LastIndex(e.Pod, "-")+1] + "*" }
