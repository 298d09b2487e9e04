package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// The proposal that the demo promotes, and the connection that then violates
// it: the probe in default was never seen talking to the cart.
var (
	promoted = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
	cart     = dataplanetest.End{Namespace: "shop", Pod: "cart-7f8e9d0c1-fghij", IP: "10.0.1.11", Workload: "cart", Identity: 51235}
	probe    = dataplanetest.End{Namespace: "default", Pod: "probe-6f8d9c7b5-vwxyz", IP: "10.0.1.31", Workload: "probe", Identity: 51300}
)

func (d *demo) waitForProposals(ctx context.Context) error {
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	var first time.Duration
	last, stable := -1, time.Now()
	err := d.poll(ctx, "the proposals", 2*time.Minute, func() (bool, error) {
		if err := d.env.Client.List(ctx, &list); err != nil {
			return false, err
		}
		if len(list.Items) > 0 && first == 0 {
			first = time.Since(d.started)
			d.info("first proposal %s after the demo started", first.Round(100*time.Millisecond))
		}
		if len(list.Items) != last {
			last, stable = len(list.Items), time.Now()
		}
		return last > 0 && time.Since(stable) > 3*time.Second, nil
	})
	if err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	d.info("%d proposals (kubectl get wnpp -A):", len(list.Items))
	for _, p := range list.Items {
		d.info("  %-12s %-40s %s", p.Namespace, p.Name, peersOf(&p.Spec))
	}
	return nil
}

// peersOf summarises a learned kubernetes spec: its peers and ports.
func peersOf(s *v1alpha1.PolicySpec) string {
	if s.Kubernetes == nil {
		return ""
	}
	var out []string
	add := func(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) {
		for _, p := range peers {
			ns, app := "", ""
			if p.IPBlock != nil {
				app = p.IPBlock.CIDR
			}
			if p.NamespaceSelector != nil {
				ns = p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			}
			if p.PodSelector != nil {
				app = fmt.Sprint(p.PodSelector.MatchLabels)
			}
			for _, port := range ports {
				out = append(out, fmt.Sprintf("%s %s %s/%s", ns, app, *port.Protocol, port.Port))
			}
		}
	}
	for _, r := range s.Kubernetes.Ingress {
		add(r.From, r.Ports)
	}
	for _, r := range s.Kubernetes.Egress {
		add(r.To, r.Ports)
	}
	for _, o := range s.Outside {
		out = append(out, fmt.Sprintf("%s%s %s", o.Entity, o.DNSName, portsOf(o.Ports)))
	}
	return strings.Join(out, "; ")
}

// promote labels the cart's two proposals for protect: its ingress, which the
// violation step then breaks, and its egress, which holds the outside service
// by name.
func (d *demo) promote(ctx context.Context) error {
	names := []types.NamespacedName{promoted, cartEgress}
	args := []string{"label", "wnpp", "-n", promoted.Namespace}
	for _, n := range names {
		args = append(args, n.Name)
	}
	args = append(args, v1alpha1.PromoteLabel+"=protect")
	d.info("$ kubectl %s", strings.Join(args, " "))
	if _, err := exec.LookPath("kubectl"); err != nil {
		d.info("kubectl is not installed; setting the same label through the API")
		for _, n := range names {
			var p v1alpha1.WorkloadNetworkPolicyProposal
			if err := d.env.Client.Get(ctx, n, &p); err != nil {
				return err
			}
			patch := client.MergeFrom(p.DeepCopy())
			p.Labels = map[string]string{v1alpha1.PromoteLabel: "protect"}
			if err := d.env.Client.Patch(ctx, &p, patch); err != nil {
				return err
			}
		}
		return nil
	}
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		d.info("%s", line)
	}
	return err
}

// ciliumNetworkPolicy is an empty cilium.io/v2 CiliumNetworkPolicy to read into.
func ciliumNetworkPolicy() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cilium.io", Version: "v2", Kind: "CiliumNetworkPolicy"})
	return u
}

// waitForRendered waits for the CiliumNetworkPolicies that the two promoted
// policies render in protect mode and for their proposals to go, and prints
// the egress one: the outside service as toFQDNs.
func (d *demo) waitForRendered(ctx context.Context) error {
	cnp := ciliumNetworkPolicy()
	for _, n := range []types.NamespacedName{promoted, cartEgress} {
		err := d.poll(ctx, "the CiliumNetworkPolicy "+n.String(), time.Minute, func() (bool, error) {
			err := d.env.Client.Get(ctx, n, cnp)
			return err == nil, client.IgnoreNotFound(err)
		})
		if err != nil {
			return err
		}
		// The proposal goes once the policy's status carries on its observed
		// edges: the policy's first status sync, right after its creation.
		var p v1alpha1.WorkloadNetworkPolicyProposal
		if err := d.poll(ctx, "the promoted proposal "+n.String()+" to go", 30*time.Second, func() (bool, error) {
			err := d.env.Client.Get(ctx, n, &p)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			return fmt.Errorf("the promoted proposal is still there: %w", err)
		}
		d.info("WorkloadNetworkPolicy %s (mode protect) renders CiliumNetworkPolicy %s, owned by it; the proposal is gone", n, n)
	}
	d.info("$ kubectl get cnp -n %s %s -o yaml   (spec)", cartEgress.Namespace, cartEgress.Name)
	spec, err := yaml.Marshal(cnp.Object["spec"])
	if err != nil {
		return err
	}
	if !strings.Contains(string(spec), "matchName: "+outsideName) {
		return fmt.Errorf("the CiliumNetworkPolicy %s does not allow %s by name:\n%s", cartEgress, outsideName, spec)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(spec)), "\n") {
		d.info("  %s", line)
	}
	return nil
}

func (d *demo) violate(ctx context.Context) error {
	d.info("default/probe connects to shop/cart on 8080; Cilium drops it (POLICY_DENIED)")
	d.relay.Push(dataplanetest.NewHubbleConnection(probe, cart, 40123, 8080, dataplanetest.ConnectionDenied)...)
	if err := d.waitLog(ctx, d.collector, "policy_violation_observed", 30*time.Second); err != nil {
		return err
	}
	d.info("the telemetry collector printed the event at once (%s):", d.collector.log)
	for _, line := range eventLines(d.collector.log) {
		d.info("  %s", line)
	}
	var p v1alpha1.WorkloadNetworkPolicy
	err := d.poll(ctx, "the violation record in the policy status", 2*time.Minute, func() (bool, error) {
		if err := d.env.Client.Get(ctx, promoted, &p); err != nil {
			return false, err
		}
		return len(p.Status.Violations) > 0, nil
	})
	if err != nil {
		return err
	}
	d.info("after the status sync, the policy status (kubectl get wnp -n %s %s -o yaml):", promoted.Namespace, promoted.Name)
	status, err := yaml.Marshal(map[string]any{"violationCount": p.Status.ViolationCount,
		"activeViolationCount": p.Status.ActiveViolationCount, "violations": p.Status.Violations})
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(status)), "\n") {
		d.info("  %s", line)
	}
	return nil
}

// eventLines are the debug exporter's lines about the violation event.
func eventLines(path string) []string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, "policy_violation_observed") {
			start := max(i-2, 0)
			end := min(i+22, len(lines))
			return lines[start:end]
		}
	}
	return nil
}

func (d *demo) lookAround() {
	fmt.Printf(`
==> Done in %s. Look around:

    export KUBECONFIG=%s
    kubectl get wnpp,wnp -A
    kubectl get cnp -A
    kubectl get wnp -n %s %s -o yaml
    kubectl annotate wnp -n %s %s %s="expected"   # acknowledge violation 1
    curl -s http://%s/metrics | grep network_enforcer_policy_denies

    enforcer log:  %s
    collector log: %s (each violation event)
`, time.Since(d.started).Round(time.Second), d.kubeconfig, promoted.Namespace, promoted.Name,
		promoted.Namespace, promoted.Name, v1alpha1.AcknowledgeAnnotation("1"), d.metrics, d.enforcer.log, d.collector.log)
}
