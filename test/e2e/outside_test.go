package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// nodeAddress is the node's internal address: kube-proxy's host-network pod of
// the fixtures' cluster has it, and the test's Node reports it.
const nodeAddress = "172.18.0.2"

// The peers beyond the workloads, as the Cilium agent reports them: the API
// server at an address of its own, and an outside service by the name that its
// DNS proxy resolved, then a name that day 1 never used.
const (
	apiServerAddress = "172.18.0.3"
	outsideService   = "api.payments.example.com"
	outsideAddr      = "198.51.100.20"
	newService       = "other.example.com"
	newServiceAddr   = "198.51.100.99"
)

// TestOutsidePeers runs the built binary with outside_peers entities on each
// data plane, fed each plane's own shape of the peers beyond the workloads:
// Hubble's reserved identities and destination_names (backend cilium), a
// Goldmane host endpoint, which Goldmane names and gives no address
// (backend kubernetes), and a ztunnel source without an identity at a node's
// address (backend istio). Each is learned as what it is, the proposal says
// protect blocks none of it, and once promoted the native object allows it in
// the data plane's terms; on Cilium, a name that day 1 never used is refused
// and reported as a violation.
func TestOutsidePeers(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "outside-peers-node"}}
	must(t, env.Client.Create(ctx, node))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeAddress}}
	must(t, env.Client.Status().Update(ctx, node))

	t.Run("cilium", func(t *testing.T) {
		dp := newCilium(t).(*cilium)
		sink := startOutsidePeersBinary(t, dp, "hubble", "cilium")
		egress := types.NamespacedName{Namespace: "guarded", Name: "deployment-client-egress"}
		dp.relay.Push(
			hubbleEgress(caller, worldEnd(2, "reserved:world"), outsideAddr, 443, []string{outsideService}, flowpb.Verdict_FORWARDED),
			hubbleEgress(caller, worldEnd(7, "reserved:kube-apiserver"), apiServerAddress, 6443, nil, flowpb.Verdict_FORWARDED))
		proposal := waitOutside(t, egress, v1alpha1.BackendCilium, "APIServer TCP/6443", outsideService+" TCP/443")

		promote(t, proposal)
		cnp := waitNativeObject(t, egress, ciliumNetworkPolicy(), func(obj client.Object) bool {
			spec := fmt.Sprint(obj.(*unstructured.Unstructured).Object["spec"])
			return strings.Contains(spec, "toEntities:[kube-apiserver]") && strings.Contains(spec, "matchName:"+outsideService)
		})
		t.Logf("CiliumNetworkPolicy spec: %v", cnp.(*unstructured.Unstructured).Object["spec"])

		// A name that day 1 never used: Cilium's DNS proxy gave its address no
		// allowed name, so the policy drops the connection, which the enforcer
		// reports against the client's egress policy.
		dp.relay.Push(hubbleEgress(caller, worldEnd(2, "reserved:world"), newServiceAddr, 443, []string{newService}, flowpb.Verdict_DROPPED))
		event := waitEvent(t, sink, violationevent.Observed, "protect")
		if ref, _ := event.Get(violationevent.AttrPolicyName); ref != egress.Name {
			t.Errorf("the new name's violation names policy %q, want %q", ref, egress.Name)
		}
		policy := &v1alpha1.WorkloadNetworkPolicy{}
		waitFor(t, "the new name's violation record", time.Minute, func() bool {
			return env.Client.Get(ctx, egress, policy) == nil && len(policy.Status.Violations) == 1
		})
		if v := policy.Status.Violations[0]; v.DstPort != 443 || v.Action != v1alpha1.PolicyModeProtect || v.Source.Name != "client" {
			t.Errorf("violation record %+v, want the client's protect violation on 443", v)
		}
	})

	t.Run("calico", func(t *testing.T) {
		dp := newCalico(t).(*calico)
		startOutsidePeersBinary(t, dp, "goldmane", "calico")
		egress := types.NamespacedName{Namespace: "guarded", Name: "deployment-client-egress"}
		dp.goldmane.Push(goldmaneToHost(caller, "node-a", 10250))
		proposal := waitOutside(t, egress, v1alpha1.BackendKubernetes, "Nodes TCP/10250")

		promote(t, proposal)
		waitNativeObject(t, egress, &networkingv1.NetworkPolicy{}, func(obj client.Object) bool {
			return slices.ContainsFunc(obj.(*networkingv1.NetworkPolicy).Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
				return len(r.To) == 1 && r.To[0].IPBlock != nil && r.To[0].IPBlock.CIDR == nodeAddress+"/32" &&
					len(r.Ports) == 1 && r.Ports[0].Port.IntValue() == 10250
			})
		})
	})

	t.Run("istio", func(t *testing.T) {
		dp := newIstio(t).(*istio)
		startOutsidePeersBinary(t, dp, "ztunnel", "istio")
		ingress := types.NamespacedName{Namespace: "guarded", Name: "deployment-client-ingress"}
		dp.send(t, ztunnelFromNode(caller, 8080))
		proposal := waitOutside(t, ingress, v1alpha1.BackendIstio, "Nodes TCP/8080")

		promote(t, proposal)
		waitNativeObject(t, ingress, &securityv1.AuthorizationPolicy{}, func(obj client.Object) bool {
			return slices.ContainsFunc(obj.(*securityv1.AuthorizationPolicy).Spec.Rules, func(r *securityv1beta1.Rule) bool {
				return len(r.From) == 1 && slices.Equal(r.From[0].Source.IpBlocks, []string{nodeAddress + "/32"}) &&
					len(r.To) == 1 && slices.Equal(r.To[0].Operation.Ports, []string{"8080"})
			})
		})
	})
}

// outsidePeersConfig is the journey's configuration with learning's
// outside_peers entities (and backend cilium for Cilium) and the enforcer's
// data plane set, as the chart sets them.
func startOutsidePeersBinary(t *testing.T, dp plane, receiver, dataPlane string) *otlpSink {
	t.Helper()
	resetGuarded(t)
	t.Cleanup(func() { resetGuarded(t) })
	sink := startOTLPSink(t)
	telemetry := freeAddr(t)
	host, port, _ := strings.Cut(telemetry, ":")
	cfg := fmt.Sprintf(journeyConfig, dataPlane, dp.receiver(), syncInterval, sink.Addr, freeAddr(t), receiver,
		"default", "outside-peers-"+dataPlane, host, port)
	cfg = strings.Replace(cfg, "  enforcer:\n    auth_type: kubeConfig\n", "  enforcer:\n    auth_type: kubeConfig\n    data_plane: "+dataPlane+"\n", 1)
	cfg = strings.Replace(cfg, "  learning:\n", "  learning:\n    outside_peers: entities\n    cilium_backend: cilium\n", 1)
	startLeading(t, writeConfig(t, "outside-peers.yaml", cfg), telemetry, "KUBECONFIG="+kubeconfig)
	return sink
}

// waitOutside waits for the proposal to hold exactly the outside peers want
// (each "<entity or name> <protocol>/<port>"), on backend, with nothing that
// protect would block, and returns it.
func waitOutside(t *testing.T, key types.NamespacedName, backend v1alpha1.Backend, want ...string) *v1alpha1.WorkloadNetworkPolicyProposal {
	t.Helper()
	proposal := &v1alpha1.WorkloadNetworkPolicyProposal{}
	var got []string
	waitFor(t, fmt.Sprintf("%s to hold %q", key, want), time.Minute, func() bool {
		if env.Client.Get(context.Background(), key, proposal) != nil {
			return false
		}
		got = got[:0]
		for _, o := range proposal.Spec.Outside {
			for _, p := range o.Ports {
				got = append(got, string(o.Entity)+o.DNSName+" "+string(*p.Protocol)+"/"+p.Port.String())
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want) && proposal.Spec.Backend == backend &&
			proposal.Status.ObservedEdges == int32(len(want)) && proposal.Status.WouldBlockEdges == 0
	})
	return proposal
}

// promote labels the proposal for protect.
func promote(t *testing.T, proposal *v1alpha1.WorkloadNetworkPolicyProposal) {
	t.Helper()
	patchLabels(t, proposal, map[string]string{v1alpha1.PromoteLabel: string(v1alpha1.PolicyModeProtect)})
}

// waitNativeObject waits for the policy's native object to exist and satisfy ok.
func waitNativeObject(t *testing.T, key types.NamespacedName, obj client.Object, ok func(client.Object) bool) client.Object {
	t.Helper()
	waitFor(t, fmt.Sprintf("the %T %s", obj, key), time.Minute, func() bool {
		return env.Client.Get(context.Background(), key, obj) == nil && ok(obj)
	})
	return obj
}

// ciliumNetworkPolicy is an empty cilium.io/v2 CiliumNetworkPolicy to read into.
func ciliumNetworkPolicy() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cilium.io", Version: "v2", Kind: "CiliumNetworkPolicy"})
	return u
}

// worldEnd is a Cilium endpoint beyond the pods: a reserved identity.
func worldEnd(identity uint32, label string) *flowpb.Endpoint {
	return &flowpb.Endpoint{Identity: identity, Labels: []string{label}}
}

// hubbleEgress is the agent's policy verdict of a new egress connection from
// the pod to a peer beyond the pods at addr, with the names that its FQDN cache
// gives the address: forwarded, or dropped by the pod's egress policy.
func hubbleEgress(src dataplanetest.End, dst *flowpb.Endpoint, addr string, port uint32, names []string, verdict flowpb.Verdict) *observer.GetFlowsResponse {
	now := timestamppb.Now()
	f := &flowpb.Flow{
		Time: now, Verdict: verdict, NodeName: "worker-1", Type: flowpb.FlowType_L3_L4,
		IP: &flowpb.IP{Source: src.IP, Destination: addr, IpVersion: flowpb.IPVersion_IPv4},
		L4: &flowpb.Layer4{Protocol: &flowpb.Layer4_TCP{TCP: &flowpb.TCP{SourcePort: 40000 + port%1000, DestinationPort: port,
			Flags: &flowpb.TCPFlags{SYN: true}}}},
		Source: &flowpb.Endpoint{ID: src.Identity, Identity: src.Identity, Namespace: src.Namespace, PodName: src.Pod,
			Labels:    []string{"k8s:app=" + src.Workload, "k8s:io.kubernetes.pod.namespace=" + src.Namespace},
			Workloads: []*flowpb.Workload{{Name: src.Workload, Kind: "Deployment"}}},
		Destination: dst, DestinationNames: names,
		EventType: &flowpb.CiliumEventType{Type: 5}, TrafficDirection: flowpb.TrafficDirection_EGRESS,
		IsReply: wrapperspb.Bool(false),
	}
	if verdict == flowpb.Verdict_DROPPED {
		f.DropReasonDesc = flowpb.DropReason_POLICY_DENIED
	}
	return &observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: f}, NodeName: f.NodeName, Time: now}
}

// goldmaneToHost is the source's Goldmane report of a connection to a host
// endpoint: Goldmane names the host endpoint and gives no address.
func goldmaneToHost(src dataplanetest.End, hostEndpoint string, port uint32) *pb.FlowResult {
	r := dataplanetest.NewGoldmaneFlow(src, src, port, dataplanetest.ConnectionUnenforced)
	k := r.Flow.Key
	k.DestName, k.DestNamespace, k.DestType, k.Reporter = hostEndpoint, "-", pb.EndpointType_HostEndpoint, pb.Reporter_Src
	r.Flow.DestLabels = nil
	return r
}

// ztunnelFromNode is the destination ztunnel's access line of a connection
// from the node's address, which has no Istio identity (a kubelet probe, a
// host-network agent): no policy selects the pod yet.
func ztunnelFromNode(dst dataplanetest.End, port uint32) string {
	now := time.Now().UTC()
	return fmt.Sprintf(`{"bytes_recv":10,"bytes_sent":10,"direction":"inbound","dst.addr":"%[1]s:15008","dst.hbone_addr":"%[1]s:%[2]d",`+
		`"dst.identity":"spiffe://cluster.local/ns/%[3]s/sa/%[4]s","dst.namespace":"%[3]s","dst.workload":"%[5]s","duration":"1ms",`+
		`"level":"info","message":"connection complete","scope":"access","src.addr":"%[6]s:%[7]s","time":"%[8]s"}`,
		dst.IP, port, dst.Namespace, dst.ServiceAccount, dst.Pod, nodeAddress, strconv.Itoa(50000+int(port)%1000), now.Format(time.RFC3339Nano))
}
