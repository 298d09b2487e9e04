package render

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// blocksOf lists a NetworkPolicy's egress rules as their address blocks and
// ports: "[192.0.2.1/32] [TCP/6443]".
func blocksOf(np *networkingv1.NetworkPolicy) []string {
	var out []string
	for _, r := range np.Spec.Egress {
		var blocks, ports []string
		for _, p := range r.To {
			if p.IPBlock != nil {
				blocks = append(blocks, p.IPBlock.CIDR)
			}
		}
		for _, p := range r.Ports {
			ports = append(ports, string(*p.Protocol)+"/"+p.Port.String())
		}
		out = append(out, "["+join(blocks)+"] ["+join(ports)+"]")
	}
	return out
}

func join(s []string) string { return strings.Join(s, " ") }

// addNode creates a Node with an internal address, and deletes it at the end.
func addNode(t *testing.T, name, address string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: address}, {Type: corev1.NodeHostName, Address: name}}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// TestRenderEntitiesAsAddresses: backend kubernetes renders spec.outside's
// API server as address blocks of the default/kubernetes EndpointSlices on
// their ports and the entity's own, and the nodes as their internal addresses on the entity's
// ports; a new node and a new API server address reach the NetworkPolicy
// without a change to the policy.
func TestRenderEntitiesAsAddresses(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	startRender(t)
	addNode(t, "node-a", "192.0.2.21")

	// The API server's own slice names its address and port.
	var sl discoveryv1.EndpointSliceList
	if err := env.Client.List(ctx, &sl, client.InNamespace("default"), client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"}); err != nil || len(sl.Items) == 0 {
		t.Fatalf("the API server's EndpointSlices: %v (%d)", err, len(sl.Items))
	}
	own := sl.Items[0]
	apiBlock := own.Endpoints[0].Addresses[0] + "/32"
	apiPort := fmt.Sprintf("TCP/%d", *own.Ports[0].Port)

	spec := ciliumEgress()
	spec.Backend = v1alpha1.BackendKubernetes
	spec.Kubernetes.Egress = nil
	spec.Outside = []v1alpha1.OutsidePeer{
		{Entity: v1alpha1.EntityAPIServer, Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(1))}}},
		{Entity: v1alpha1.EntityNodes, Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(10250))}}},
		{DNSName: "api.example.com"},
	}
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web-egress-entities"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: spec, Mode: v1alpha1.PolicyModeProtect},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	// Towards the API server: the port it listens on, and the one that was
	// learned for it.
	want := []string{"[" + apiBlock + "] [" + apiPort + " TCP/1]", "[192.0.2.21/32] [TCP/10250]"}
	waitRules := func(what string, want []string) time.Duration {
		t.Helper()
		began := time.Now()
		var got []string
		deadline := began.Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if np, ok := networkPolicy(t, policy.Name); ok {
				if got = blocksOf(np); slices.Equal(got, want) {
					return time.Since(began)
				}
			}
			// The poll's own interval, short so that the measured time is close
			// to the render's.
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: egress %v, want %v", what, got, want)
		return 0
	}
	waitRules("the NetworkPolicy", want)

	addNode(t, "node-b", "192.0.2.22")
	took := waitRules("a new node", []string{want[0], "[192.0.2.21/32 192.0.2.22/32] [TCP/10250]"})
	t.Logf("from a new Node to the updated NetworkPolicy: %s", took.Round(time.Millisecond))

	extra := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kubernetes-extra", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.50"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       own.Ports,
	}
	if err := env.Client.Create(ctx, extra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), extra) })
	blocks := []string{apiBlock, "192.0.2.50/32"}
	slices.Sort(blocks)
	took = waitRules("a new API server address", []string{"[" + join(blocks) + "] [" + apiPort + " TCP/1]", "[192.0.2.21/32 192.0.2.22/32] [TCP/10250]"})
	t.Logf("from a changed default/kubernetes EndpointSlice to the updated NetworkPolicy: %s", took.Round(time.Millisecond))
}
