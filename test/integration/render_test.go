package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/rendercmd"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// TestRenderSubcommandPrintsTheRenderedObject: for each backend, a learned
// proposal, printed as kubectl prints it and given to `network-enforcer
// render --mode protect`, is then promoted; the native object that the render
// controller creates is what the subcommand printed, byte for byte as YAML,
// but for what the API server sets (uid, resourceVersion, creationTimestamp,
// managedFields, generation) and the owner reference's UID, which the policy
// has only once created. The policy, printed as kubectl prints it, renders
// with that UID too. The kubernetes and istio proposals allow the nodes, which
// the subcommand reads from the cluster of its kubeconfig, as the controller
// reads them from its cache.
func TestRenderSubcommandPrintsTheRenderedObject(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	createNode(t, "render-node", "172.18.0.3")

	p := startEntitiesPipeline(t)
	prometheus := flow.Endpoint{Address: "10.0.3.40", Namespace: "monitoring", Pod: "prometheus-6b7c8d9e0-lmnop"}
	send(t, p.Learning,
		// Calico: a kubernetes-backend egress proposal to the nodes.
		flow.Record{Time: time.Now(), Provider: flow.ProviderCalico, Outcome: flow.OutcomeAllowed,
			Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1,
			Source: prometheus, Destination: flow.Endpoint{Address: "render-node", Port: 10250, External: flow.ExternalHost}},
		// Istio: an istio-backend ingress proposal from the node.
		flow.Record{Time: time.Now(), Provider: flow.ProviderIstio, Outcome: flow.OutcomeAllowed,
			Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
			Source: flow.Endpoint{Address: "172.18.0.3"}, Destination: flow.Endpoint{Address: prometheus.Address, Namespace: prometheus.Namespace, Pod: prometheus.Pod, Port: 9090}},
		// Cilium: a cilium-backend ingress proposal from a workload.
		cilium(guardedClient, guardedAPI, 8443, flow.OutcomeAllowed),
	)
	p.WaitWritten(t)

	for _, tc := range []struct {
		namespace, name string
		backend         v1alpha1.Backend
		native          schema.GroupVersionKind
	}{
		{"monitoring", "deployment-prometheus-egress", v1alpha1.BackendKubernetes, schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}},
		{"monitoring", "deployment-prometheus-ingress", v1alpha1.BackendIstio, schema.GroupVersionKind{Group: "security.istio.io", Version: "v1", Kind: "AuthorizationPolicy"}},
		{"guarded", "deployment-api-ingress", v1alpha1.BackendCilium, schema.GroupVersionKind{Group: "cilium.io", Version: "v2", Kind: "CiliumNetworkPolicy"}},
	} {
		t.Run(string(tc.backend), func(t *testing.T) {
			var proposal v1alpha1.WorkloadNetworkPolicyProposal
			waitUntil(t, "the proposal "+tc.name, 30*time.Second, func() bool {
				return env.Client.Get(ctx, key(tc.namespace, tc.name), &proposal) == nil
			})
			if proposal.Spec.Backend != tc.backend {
				t.Fatalf("the proposal's backend is %s, want %s", proposal.Spec.Backend, tc.backend)
			}
			printed := renderAsKubectlPrints(t, &proposal, "--mode", "protect")
			if tc.backend != v1alpha1.BackendCilium && !strings.Contains(printed, "172.18.0.3/32") {
				t.Errorf("render printed no rule for the node's address:\n%s", printed)
			}

			promote(t, &proposal, v1alpha1.PolicyModeProtect)
			native := &unstructured.Unstructured{}
			native.SetGroupVersionKind(tc.native)
			waitUntil(t, "the "+tc.native.Kind, 30*time.Second, func() bool {
				return env.Client.Get(ctx, key(tc.namespace, tc.name), native) == nil
			})
			var policy v1alpha1.WorkloadNetworkPolicy
			must(t, env.Client.Get(ctx, key(tc.namespace, tc.name), &policy))

			if want := asCreated(t, native, false); printed != want {
				t.Errorf("render --mode protect printed, for the proposal,\n%s\nthe render controller created\n%s", printed, want)
			}
			if got, want := renderAsKubectlPrints(t, &policy), asCreated(t, native, true); got != want {
				t.Errorf("render printed, for the policy,\n%s\nthe render controller created\n%s", got, want)
			}
			t.Logf("%s: %d bytes of YAML, the same as the %s in the API server", tc.name, len(printed), tc.native.Kind)
		})
	}
}

// startEntitiesPipeline starts the learning path with the entities as
// outside peers and Cilium's flows learned for the cilium backend, and waits
// for its leadership.
func startEntitiesPipeline(t *testing.T) *pipeline {
	t.Helper()
	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{
		OutsidePeers: learningprocessor.OutsidePeersEntities, CiliumBackend: v1alpha1.BackendCilium})}
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	return p
}

// renderAsKubectlPrints runs the render subcommand with args on obj as
// `kubectl get -o yaml` prints it, reading the cluster through the test's
// kubeconfig.
func renderAsKubectlPrints(t *testing.T, obj client.Object, args ...string) string {
	t.Helper()
	gvk, err := env.Client.GroupVersionKindFor(obj)
	must(t, err)
	obj = obj.DeepCopyObject().(client.Object)
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetManagedFields(nil)
	in, err := yaml.Marshal(obj)
	must(t, err)
	var out bytes.Buffer
	args = append(args, "--kubeconfig", os.Getenv("KUBECONFIG"))
	must(t, rendercmd.Run(context.Background(), args, bytes.NewReader(in), &out, io.Discard))
	return out.String()
}

// asCreated is the native object as YAML without what the API server set;
// without the owner reference's UID unless withOwnerUID.
func asCreated(t *testing.T, native *unstructured.Unstructured, withOwnerUID bool) string {
	t.Helper()
	u := native.DeepCopy()
	for _, field := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
		unstructured.RemoveNestedField(u.Object, "metadata", field)
	}
	if !withOwnerUID {
		refs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
		for _, r := range refs {
			delete(r.(map[string]any), "uid")
		}
		must(t, unstructured.SetNestedSlice(u.Object, refs, "metadata", "ownerReferences"))
	}
	b, err := yaml.Marshal(u.Object)
	must(t, err)
	return string(b)
}
