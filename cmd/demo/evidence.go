package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// cartEgress is the proposal whose evidence the demo shows: the cart calls a
// service on the Internet (outsideName, at 198.51.100.20:443 in the recorded
// flows), which learning with outside_peers entities learns by its name.
var cartEgress = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-egress"}

// showEvidence prints the proposals' observed and would-block totals, as
// kubectl get wnpp shows them, and the cart's egress proposal's observed edges
// with their verdicts and its spec.outside, before anything is promoted.
func (d *demo) showEvidence(ctx context.Context) error {
	var p v1alpha1.WorkloadNetworkPolicyProposal
	err := d.poll(ctx, "the cart's egress proposal to show the outside service by name", time.Minute, func() (bool, error) {
		if err := d.env.Client.Get(ctx, cartEgress, &p); err != nil {
			return false, nil //nolint:nilerr // not written yet: poll again.
		}
		for _, e := range p.Status.Observed {
			if e.Peer.DNSName == outsideName {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	if err := d.env.Client.List(ctx, &list); err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	d.info("$ kubectl get wnpp -A   (the Observed and Would Block columns)")
	d.info("  %-12s %-40s %8s %11s", "NAMESPACE", "NAME", "OBSERVED", "WOULD BLOCK")
	for _, item := range list.Items {
		d.info("  %-12s %-40s %8d %11d", item.Namespace, item.Name, item.Status.ObservedEdges, item.Status.WouldBlockEdges)
	}
	d.info("$ kubectl get wnpp -n %s %s -o yaml   (status.observed, spec.outside)", cartEgress.Namespace, cartEgress.Name)
	for _, e := range p.Status.Observed {
		d.info("  %-10s %-10s %-28s %s/%d  flows %d, last seen %s", e.Verdict, e.Peer.Class, peerName(&e.Peer),
			e.Protocol, e.Port, e.Flows, e.LastSeen.UTC().Format(time.RFC3339))
	}
	for _, o := range p.Spec.Outside {
		d.info("  outside: %s%s %s", o.Entity, o.DNSName, portsOf(o.Ports))
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWouldBlock); c != nil {
		d.info("  condition WouldBlock=%s: %s", c.Status, c.Message)
	}
	d.info("The outside service is learned by the name the data plane gave it (learning outside_peers: entities),")
	d.info("not by its address, which may change; backend cilium enforces the name with toFQDNs. With the default")
	d.info("outside_peers drop, the edge would be WouldBlock and protect would cut the cart off from it.")
	return nil
}

// portsOf prints NetworkPolicy ports as protocol/port, or "every port".
func portsOf(ports []networkingv1.NetworkPolicyPort) string {
	if len(ports) == 0 {
		return "every port"
	}
	var out []string
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		out = append(out, fmt.Sprintf("%s/%s", proto, p.Port))
	}
	return strings.Join(out, ", ")
}

// peerName is how the demo names an observed peer.
func peerName(p *v1alpha1.ObservedPeer) string {
	switch {
	case p.Name != "":
		return fmt.Sprintf("%s/%s/%s", p.Namespace, p.Kind, p.Name)
	case p.Principal != "":
		return p.Principal
	case p.DNSName != "":
		return p.DNSName
	}
	return p.Address
}
