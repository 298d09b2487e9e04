package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// wouldBlock is the proposal whose evidence the demo shows: the cart calls an
// address on the Internet (198.51.100.20:443 in the recorded flows), which
// learning leaves out with outside_peers drop, so protect would block it.
var wouldBlock = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-egress"}

// showWouldBlock prints the proposals' observed and would-block totals, as
// kubectl get wnpp shows them, and the observed edges of the cart's egress
// proposal with their verdicts, before anything is promoted.
func (d *demo) showWouldBlock(ctx context.Context) error {
	var p v1alpha1.WorkloadNetworkPolicyProposal
	err := d.poll(ctx, "the cart's egress proposal to show its observed edges", time.Minute, func() (bool, error) {
		if err := d.env.Client.Get(ctx, wouldBlock, &p); err != nil {
			return false, nil //nolint:nilerr // not written yet: poll again.
		}
		return p.Status.WouldBlockEdges > 0, nil
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
	d.info("$ kubectl get wnpp -n %s %s -o yaml   (status.observed)", wouldBlock.Namespace, wouldBlock.Name)
	for _, e := range p.Status.Observed {
		d.info("  %-10s %-10s %-28s %s/%d  flows %d, last seen %s", e.Verdict, e.Peer.Class, peerName(&e.Peer),
			e.Protocol, e.Port, e.Flows, e.LastSeen.UTC().Format(time.RFC3339))
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWouldBlock); c != nil {
		d.info("  condition WouldBlock=%s: %s", c.Status, c.Message)
	}
	d.info("Not safe to protect as it is: allow the address in the spec, or learn outside peers as ipBlocks")
	d.info("(learning outside_peers: ip_blocks), before promoting. The demo promotes the cart's ingress, which is safe.")
	return nil
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
