package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
	"github.com/kubewarden/network-enforcer/testbed/replicas"
)

// monitorPolicies gives a share (-monitored) of the Deployments that serve
// an edge an ingress policy in monitor mode that allows nothing, as a person
// writes one by hand: every connection to them is a violation, which the
// leader reports once as an event (counted by violationCounts).
func (h *harness) monitorPolicies(ctx context.Context) error {
	h.monitored = map[int]bool{}
	if h.opts.monitored <= 0 {
		return nil
	}
	wls := h.traffic.workloads
	served := map[int]bool{}
	for _, e := range h.traffic.edges {
		served[e.dst] = true
	}
	for _, w := range slices.Sorted(maps.Keys(served)) {
		wl := wls[w]
		if wl.Kind != string(v1alpha1.WorkloadKindDeployment) ||
			float64(hash(wl.Namespace+"/"+wl.Name+"/monitored")%10000) >= h.opts.monitored*10000 {
			continue
		}
		policy := &v1alpha1.WorkloadNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: wl.Namespace, Name: "scaletest-" + wl.Name + "-ingress"},
			Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeMonitor, PolicySpec: v1alpha1.PolicySpec{
				Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
				TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: wl.Name},
				Kubernetes: &networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": wl.Name}},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				},
			}},
		}
		if err := h.env.Client.Create(ctx, policy); err != nil {
			return fmt.Errorf("the monitor-mode policy of %s/%s: %w", wl.Namespace, wl.Name, err)
		}
		h.monitored[w] = true
	}
	logf("%d workloads have an ingress policy in monitor mode that allows nothing", len(h.monitored))
	return nil
}

// violationKey is an edge as a violation event names it.
type violationKey struct {
	srcNamespace, srcName, dstNamespace, dstName string
	port                                         int64
}

// violationCounts compares, for each edge into a monitored workload, the
// events that the sink received with the connections sent.
func (h *harness) violationCounts() counts {
	got := map[violationKey]int64{}
	for _, v := range h.sink.Events() {
		str := func(k string) string { s, _ := v.Attrs[k].(string); return s }
		port, _ := v.Attrs[violationevent.AttrDestinationPort].(int64)
		got[violationKey{str(violationevent.AttrSourceNamespace), str(violationevent.AttrSourceName),
			str(violationevent.AttrDestinationNamespace), str(violationevent.AttrDestinationName), port}]++
	}
	wls := h.traffic.workloads
	var samples []sample
	for _, e := range h.traffic.edges {
		conns := e.conns.Load()
		if conns == 0 || !h.monitored[e.dst] {
			continue
		}
		src, dst := wls[e.src], wls[e.dst]
		// No event is a count of 0, less than sent: found.
		samples = append(samples, sample{got: got[violationKey{src.Namespace, src.Name, dst.Namespace, dst.Name, int64(e.port)}], conns: conns, found: true})
	}
	return countsOf(samples)
}

// comparePolicyViolations waits until every monitored workload's policy
// counts the violations sent into it, or its counts stop changing for two
// status syncs, and notes the comparison.
func (h *harness) comparePolicyViolations(ctx context.Context) error {
	err := h.settleCounts(ctx, "the policies' status to count the violations sent", h.opts.timeout, 2*replicas.StatusSyncInterval,
		func() (counts, error) {
			c, err := h.policyViolationCounts(ctx)
			h.rep.policyViolations = c
			return c, err
		})
	if err != nil {
		return fmt.Errorf("policy violations: %w", err)
	}
	return nil
}

// policyViolationCounts compares, for each monitored workload, the
// violations that its policy's status counts (status.violationCount) with
// the connections sent into it: the status is counted from what the leader
// took, so a leader's kill must neither lose nor repeat them.
func (h *harness) policyViolationCounts(ctx context.Context) (counts, error) {
	var list v1alpha1.WorkloadNetworkPolicyList
	if err := h.env.Client.List(ctx, &list); err != nil {
		return counts{}, fmt.Errorf("list the policies: %w", err)
	}
	byName := map[string]int64{}
	for i := range list.Items {
		p := &list.Items[i]
		byName[p.Namespace+"/"+p.Name] = p.Status.ViolationCount
	}
	sent := map[int]int64{}
	for _, e := range h.traffic.edges {
		if h.monitored[e.dst] {
			sent[e.dst] += e.conns.Load()
		}
	}
	var samples []sample
	for _, w := range slices.Sorted(maps.Keys(sent)) {
		if sent[w] == 0 {
			continue
		}
		wl := h.traffic.workloads[w]
		got, found := byName[wl.Namespace+"/scaletest-"+wl.Name+"-ingress"]
		samples = append(samples, sample{got: got, conns: sent[w], found: found})
	}
	return countsOf(samples), nil
}
