package k8swriterexporter

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// TestStableCondition: False with the edge and the end of the window while
// the last new edge is recent, and a look due when the window ends; True
// after; a proposal without a last new edge counts from its creation.
func TestStableCondition(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	p := &v1alpha1.WorkloadNetworkPolicyProposal{ObjectMeta: metav1.ObjectMeta{Generation: 3, CreationTimestamp: metav1.NewTime(t0)}}
	edge := &v1alpha1.NewEdge{Time: metav1.NewTime(t0.Add(time.Hour)), Protocol: "TCP", Port: 5432,
		Peer: &v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassWorkload, Namespace: "data", Kind: "StatefulSet", Name: "postgres"}}

	c, recheck := stableCondition(p, edge, 24*time.Hour, t0.Add(2*time.Hour))
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonLearning || c.ObservedGeneration != 3 ||
		c.Message != "the last new edge, TCP/5432 with Workload data/StatefulSet/postgres, was learned at 2026-12-04T11:00:00Z: "+
			"stable once no new edge is learned for 24h0m0s, at 2026-12-05T11:00:00Z" {
		t.Errorf("within the window: %+v", c)
	}
	if recheck != 23*time.Hour+time.Second {
		t.Errorf("look again in %s, want when the window ends, a second late", recheck)
	}
	c, recheck = stableCondition(p, edge, 24*time.Hour, t0.Add(26*time.Hour))
	if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonNoNewEdges || recheck != 0 {
		t.Errorf("after the window: %+v, look again in %s", c, recheck)
	}
	c, _ = stableCondition(p, nil, time.Hour, t0.Add(30*time.Minute))
	if c.Status != metav1.ConditionFalse || !strings.HasPrefix(c.Message, "the proposal was made at 2026-12-04T10:00:00Z") {
		t.Errorf("without a last new edge: %+v", c)
	}
	untracked := &v1alpha1.NewEdge{Time: metav1.NewTime(t0)}
	if c, _ = stableCondition(p, untracked, time.Hour, t0.Add(2*time.Hour)); !strings.Contains(c.Message, "an edge not tracked one by one") {
		t.Errorf("an edge past the tracking limit: %+v", c)
	}
}

// TestNewlyLearnedNamesTheEdge: an edge that a write learned without
// evidence of its own (a peer's further DNS name) is still named as the last
// new edge: the first of the learned edges that the spec did not allow before
// and allows now, never one it allowed already.
func TestNewlyLearnedNamesTheEdge(t *testing.T) {
	web := workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}
	learned := edgeSet{}
	learned.add(peerRef{workload: web}, portRef{protocol: "tcp", port: 8080})
	learned.add(peerRef{dnsName: "models.vendor.example"}, portRef{protocol: "tcp", port: 443})
	learned.add(peerRef{dnsName: "cdn.vendor.example"}, portRef{protocol: "tcp", port: 443})
	learned.add(peerRef{entity: v1alpha1.EntityHost}, portRef{protocol: "tcp", port: 10250})
	allowedBefore := func(k *observed.Key) (string, bool) { return "", k.Name == "web" || k.Class == v1alpha1.PeerClassHost }
	allowedNow := func(*observed.Key) (string, bool) { return "", true }
	k, ok := newlyLearned(learned, allowedBefore, allowedNow)
	if !ok || k.Class != v1alpha1.PeerClassExternal || k.DNSName != "cdn.vendor.example" || k.Port != 443 {
		t.Fatalf("newly learned %+v (%v), want the first new name on 443", k, ok)
	}
	if _, ok := newlyLearned(learned, allowedNow, allowedNow); ok {
		t.Fatal("an edge named new that the spec allowed before")
	}
	if e := (&v1alpha1.NewEdge{Peer: ptr.To(k.Peer()), Protocol: k.Protocol, Port: k.Port}); edgeText(e) != "TCP/443 with External cdn.vendor.example" {
		t.Fatalf("edge text %q", edgeText(e))
	}
}
