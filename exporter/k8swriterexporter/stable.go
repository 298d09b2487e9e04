package k8swriterexporter

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// newEdge is the edge that a write of p's spec, grown from was (nil for a
// proposal made now), learned: of the edges p's observed edges track, the
// one last seen that was did not allow and p's spec does; else (an edge
// learned without evidence of its own, such as a peer's further DNS name,
// or one past the tracking limit) the first such edge of those the write
// learned. It has no peer only when neither names one.
func (w *writer) newEdge(p *v1alpha1.WorkloadNetworkPolicyProposal, was *v1alpha1.PolicySpec, learned edgeSet) *v1alpha1.NewEdge {
	e := &v1alpha1.NewEdge{Time: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	var before observed.Judge
	if was != nil {
		before = w.judgeSpec(was, p.Namespace)
	}
	now := w.judge(p)
	k, ok := w.observed.Newly(client.ObjectKeyFromObject(p), before, now)
	if !ok {
		k, ok = newlyLearned(learned, before, now)
	}
	if ok {
		peer := k.Peer()
		e.Peer, e.Protocol, e.Port = &peer, k.Protocol, k.Port
	}
	return e
}

// newlyLearned is the first, by peer, protocol and port, of the learned
// edges that was did not allow (nil: none) and now does.
func newlyLearned(learned edgeSet, was, now observed.Judge) (observed.Key, bool) {
	var keys []observed.Key
	for peer, ports := range learned {
		for port := range ports {
			if k, ok := learnedKey(peer, port); ok {
				keys = append(keys, k)
			}
		}
	}
	slices.SortFunc(keys, func(a, b observed.Key) int {
		return cmp.Or(strings.Compare(a.Peer().String(), b.Peer().String()),
			strings.Compare(string(a.Protocol), string(b.Protocol)), cmp.Compare(a.Port, b.Port))
	})
	for i := range keys {
		if _, allowed := now(&keys[i]); !allowed {
			continue
		}
		if was != nil {
			if _, allowed := was(&keys[i]); allowed {
				continue
			}
		}
		return keys[i], true
	}
	return observed.Key{}, false
}

// learnedKey is the observed-edge key of a learned edge: its peer as the
// spec allows it, its protocol and port.
func learnedKey(peer peerRef, port portRef) (observed.Key, bool) {
	o := learning.Observation{Edge: learning.Edge{Peer: peer.workload, Principal: peer.principal, PeerCIDR: peer.cidr,
		PeerEntity: peer.entity, PeerName: peer.dnsName, Protocol: port.protocol, Port: port.port}}
	switch {
	case peer.entity != "":
		o.Class = entityClass[peer.entity]
	case peer.dnsName != "", peer.cidr != "":
		o.Class = v1alpha1.PeerClassExternal
	default:
		o.Class = v1alpha1.PeerClassWorkload
	}
	return o.Key()
}

// entityClass is the class of the peer that an entity of spec.outside was
// learned from.
var entityClass = map[v1alpha1.Entity]v1alpha1.PeerClass{
	v1alpha1.EntityAPIServer:   v1alpha1.PeerClassAPIServer,
	v1alpha1.EntityHost:        v1alpha1.PeerClassHost,
	v1alpha1.EntityRemoteNodes: v1alpha1.PeerClassRemoteNode,
	v1alpha1.EntityNodes:       v1alpha1.PeerClassNode,
}

// stableCondition is p's Stable condition at now: False while its last new
// edge (last; its creation when it has none) is more recent than after, True
// once it is not. recheck is how long until a False one turns True, when
// nothing new is learned meanwhile: the writer looks at it again then.
func stableCondition(p *v1alpha1.WorkloadNetworkPolicyProposal, last *v1alpha1.NewEdge, after time.Duration,
	now time.Time) (c metav1.Condition, recheck time.Duration) {
	at, what := p.CreationTimestamp.Time, "the proposal was made"
	if last != nil {
		at, what = last.Time.Time, "the last new edge, "+edgeText(last)+", was learned"
	}
	c = metav1.Condition{Type: v1alpha1.ConditionStable, ObservedGeneration: p.Generation}
	if remaining := at.Add(after).Sub(now); remaining > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonLearning
		c.Message = fmt.Sprintf("%s at %s: stable once no new edge is learned for %s, at %s",
			what, at.UTC().Format(time.RFC3339), after, at.Add(after).UTC().Format(time.RFC3339))
		// A second late, so that the look finds the window passed.
		return c, remaining + time.Second
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonNoNewEdges
	c.Message = fmt.Sprintf("no new edge learned for %s: %s at %s", after, what, at.UTC().Format(time.RFC3339))
	return c, 0
}

// edgeText says what a new edge is: its protocol and port, and its peer.
func edgeText(e *v1alpha1.NewEdge) string {
	s := "an edge not tracked one by one"
	if e.Peer != nil {
		s = e.Peer.String()
	}
	if e.Protocol == "" {
		return s
	}
	return fmt.Sprintf("%s/%d with %s", e.Protocol, e.Port, s)
}
