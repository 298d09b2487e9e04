package ztunnelreceiver

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// accessLine is an inbound access line from peer to orders:port, logged at at
// after a connection of dur.
func accessLine(peer string, port int, at time.Time, dur time.Duration, errText string) *line {
	return &line{
		Time: at.Format(time.RFC3339Nano), Message: msgConnectionComplete, Direction: "inbound",
		Duration: fmt.Sprintf("%dms", dur.Milliseconds()), Error: errText,
		SrcAddr: peer, SrcWorkload: "web-1", SrcNamespace: "store", SrcIdentity: "spiffe://cluster.local/ns/store/sa/web",
		DstAddr: "10.0.0.2:15008", DstHboneAddr: fmt.Sprintf("10.0.0.2:%d", port), DstWorkload: "orders-1", DstNamespace: "store",
	}
}

func decisionLine(msg, peer, policy string, at time.Time) *line {
	l := &line{Time: at.Format(time.RFC3339Nano), Message: msg, Policy: policy}
	l.Inbound.Peer = peer
	return l
}

// testPeerKey is how the joiner keys peer.
func testPeerKey(peer string) peerKey { return newPeerKey(netip.MustParseAddrPort(peer), peer) }

// peerLines counts the access lines that j holds for peer.
func peerLines(j *joiner, peer string) int {
	n := 0
	for a := j.queue.at(j.accesses[testPeerKey(peer)]); a != nil; a = j.queue.at(a.older) {
		n++
	}
	return n
}

// joinRun feeds lines to a joiner, one each wall-clock step, then lets the window
// pass, and returns the records described and sorted, the drops and unjoined.
func joinRun(t *testing.T, ls ...*line) ([]string, []string, int) {
	t.Helper()
	c := converter{trustDomain: "cluster.local"}
	j := newJoiner(time.Second, DefaultJoinMaxHeld)
	wall := time.Unix(1000, 0)
	var out joined
	for _, l := range ls {
		var ev event
		if reason, ok := c.convert(l, wall, &ev, newInterner()); !ok {
			if reason != DropAllowDecision {
				t.Fatalf("line dropped (%s): %+v", reason, l)
			}
			j.sawDecision(wall)
			continue
		}
		j.add(&ev, wall, &out)
		wall = wall.Add(100 * time.Millisecond)
	}
	j.expire(wall.Add(2*time.Second), &out)
	var got, drops []string
	for _, r := range outRecords(&out) {
		got = append(got, flowsourcetest.Describe(r))
	}
	for _, d := range out.drops {
		drops = append(drops, string(d))
	}
	slices.Sort(got)
	return got, drops, out.unjoined
}

const (
	peerA   = "10.0.0.1:40000"
	allowed = "allowed ingress destination tcp store/web-1(/) -> store/orders-1(/):8080 policy="
	dryRun  = "dry_run_denied ingress destination tcp store/web-1(/) -> store/orders-1(/):8080 policy=AuthorizationPolicy/store/p"
	denied  = "denied ingress destination tcp store/web-1(/) -> store/orders-1(/):8080 policy=AuthorizationPolicy/store/p"
)

func TestJoin(t *testing.T) {
	conn := 40 * time.Millisecond
	rejected := "connection closed due to policy rejection: allow policies exist, but none allowed"
	tests := []struct {
		name     string
		lines    []*line
		want     []string
		drops    []string
		unjoined int
	}{
		{
			name: "decision before its access line",
			lines: []*line{
				decisionLine(msgDryRunNoAllowMatch, peerA, "store/p", t0),
				accessLine(peerA, 8080, t0.Add(conn), conn, ""),
			},
			want: []string{allowed, dryRun},
		},
		{
			name: "decision after its access line, decision logging on",
			lines: []*line{
				decisionLine(msgAllowMatch, "10.0.0.7:1", "store/allow", t0),
				accessLine(peerA, 8080, t0.Add(conn), conn, ""),
				decisionLine(msgDryRunDenyMatch, peerA, "store/p", t0),
			},
			want: []string{allowed, dryRun},
		},
		{
			name: "decision after its access line, the first decision seen: unjoined",
			lines: []*line{
				accessLine(peerA, 8080, t0.Add(conn), conn, ""),
				decisionLine(msgDryRunDenyMatch, peerA, "store/p", t0),
			},
			want:     []string{allowed, "dry_run_denied ingress destination tcp /(/) -> /(/):0 policy=AuthorizationPolicy/store/p"},
			unjoined: 1,
		},
		{
			name:     "no access line: port 0, counted",
			lines:    []*line{decisionLine(msgDryRunNoAllowMatch, peerA, "store/p", t0)},
			want:     []string{"dry_run_denied ingress destination tcp /(/) -> /(/):0 policy=AuthorizationPolicy/store/p"},
			unjoined: 1,
		},
		{
			name: "a long connection's access line starts within the window",
			lines: []*line{
				decisionLine(msgDryRunNoAllowMatch, peerA, "store/p", t0),
				accessLine(peerA, 8080, t0.Add(10*time.Minute), 10*time.Minute, ""),
			},
			want: []string{allowed, dryRun},
		},
		{
			name: "two connections from one peer address at different times",
			lines: []*line{
				decisionLine(msgNoAllowPolicies, "10.0.0.7:1", "", t0),
				decisionLine(msgDryRunNoAllowMatch, peerA, "store/p", t0),
				decisionLine(msgDryRunNoAllowMatch, peerA, "store/p", t0.Add(time.Minute)),
				accessLine(peerA, 9090, t0.Add(time.Minute+conn), conn, ""),
				accessLine(peerA, 8080, t0.Add(conn), conn, ""),
			},
			want: []string{
				allowed, "allowed ingress destination tcp store/web-1(/) -> store/orders-1(/):9090 policy=",
				dryRun, "dry_run_denied ingress destination tcp store/web-1(/) -> store/orders-1(/):9090 policy=AuthorizationPolicy/store/p",
			},
		},
		{
			name: "an enforced denial and its decision are one denial, in either order",
			lines: []*line{
				accessLine(peerA, 8080, t0, 0, rejected),
				decisionLine(msgNoAllowMatched, peerA, "store/p", t0),
				decisionLine(msgDenyMatch, "10.0.0.9:1", "store/q", t0),
				accessLine("10.0.0.9:1", 8080, t0, 0, rejected),
			},
			want: []string{denied, "denied ingress destination tcp store/web-1(/) -> store/orders-1(/):8080 policy=AuthorizationPolicy/store/q"},
		},
		{
			name: "a second deny decision for one denial is a duplicate",
			lines: []*line{
				accessLine(peerA, 8080, t0, 0, rejected),
				decisionLine(msgNoAllowMatched, peerA, "store/p", t0),
				decisionLine(msgDenyMatch, peerA, "store/q", t0),
			},
			want:  []string{denied},
			drops: []string{"duplicate_denial"},
		},
		{
			name:  "a denial without a decision goes out after the window",
			lines: []*line{accessLine(peerA, 8080, t0, 0, "connection closed due to policy rejection: explicitly denied by: store/p")},
			want:  []string{denied},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, drops, unjoined := joinRun(t, tt.lines...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("records:\n%s\nwant:\n%s", lines(got), lines(tt.want))
			}
			if !slices.Equal(drops, tt.drops) || unjoined != tt.unjoined {
				t.Errorf("drops %v unjoined %d, want %v and %d", drops, unjoined, tt.drops, tt.unjoined)
			}
		})
	}
}

// TestJoinHoldsNothingPastTheWindow: after the window the joiner is empty, so its
// memory follows the connection rate, not the uptime.
func TestJoinHoldsNothingPastTheWindow(t *testing.T) {
	c := converter{trustDomain: "cluster.local"}
	j := newJoiner(time.Second, DefaultJoinMaxHeld)
	wall := time.Unix(1000, 0)
	var out joined
	for i := range 100 {
		var ev event
		if _, ok := c.convert(accessLine(fmt.Sprintf("10.0.0.1:%d", 1000+i), 8080, t0, 0, ""), wall, &ev, newInterner()); !ok {
			t.Fatal("dropped")
		}
		j.add(&ev, wall, &out)
	}
	j.expire(wall.Add(time.Second), &out)
	if len(j.accesses) != 0 || len(j.decisions) != 0 || j.queue.len() != 0 {
		t.Fatalf("held %d peers, %d access lines, %d decisions", len(j.accesses), j.queue.len(), len(j.decisions))
	}
	if out.n != 100 {
		t.Fatalf("%d records", out.n)
	}
}

// TestJoinKeepsABusyPeerShort: a peer address in constant use holds only its
// lines within the window, not its history.
func TestJoinKeepsABusyPeerShort(t *testing.T) {
	c := converter{trustDomain: "cluster.local"}
	j := newJoiner(time.Second, DefaultJoinMaxHeld)
	wall := time.Unix(1000, 0)
	j.sawDecision(wall)
	var out joined
	for i := range 100 {
		var ev event
		if _, ok := c.convert(accessLine(peerA, 8080, t0.Add(time.Duration(i)*100*time.Millisecond), 0, ""), wall, &ev, newInterner()); !ok {
			t.Fatal("dropped")
		}
		j.add(&ev, wall, &out)
		j.expire(wall, &out)
		wall = wall.Add(100 * time.Millisecond)
	}
	n := peerLines(j, peerA)
	if n > 12 || j.queue.len() > 11 {
		t.Fatalf("a busy peer holds %d lines (%d queued)", n, j.queue.len())
	}
}

// TestJoinHoldsAtMostMaxHeld: a burst of connections within the window holds
// join_max_held access lines; the older ones leave early and are counted, and a
// held denial among them still goes out.
func TestJoinHoldsAtMostMaxHeld(t *testing.T) {
	c := converter{trustDomain: "cluster.local"}
	j := newJoiner(time.Second, 10)
	wall := time.Unix(1000, 0)
	j.sawDecision(wall)
	var out joined
	for i := range 100 {
		errText := ""
		if i == 0 {
			errText = "connection closed due to policy rejection: explicitly denied by: store/p"
		}
		var ev event
		if _, ok := c.convert(accessLine(fmt.Sprintf("10.0.0.1:%d", 1000+i), 8080, t0, 0, errText), wall, &ev, newInterner()); !ok {
			t.Fatal("dropped")
		}
		j.add(&ev, wall, &out)
	}
	if j.queue.len() != 10 || len(j.accesses) != 10 {
		t.Fatalf("held %d access lines of %d peers, want 10", j.queue.len(), len(j.accesses))
	}
	if out.evicted != 90 || out.n != 100 {
		t.Fatalf("evicted %d, records %d; want 90 and 100 (99 allowed, the evicted denial)", out.evicted, out.n)
	}
	for i := range 100 {
		var ev event
		if _, ok := c.convert(decisionLine(msgDryRunNoAllowMatch, fmt.Sprintf("10.9.0.1:%d", i), "store/p", t0), wall, &ev, newInterner()); !ok {
			t.Fatal("dropped")
		}
		j.add(&ev, wall, &out)
	}
	if j.waiting != 10 || out.unjoined != 90 {
		t.Fatalf("%d decisions wait, %d went out unjoined; want 10 and 90", j.waiting, out.unjoined)
	}
}

// TestJoinBoundsAPeer: one peer address with many decisions and access lines
// within the window holds maxPerPeer of each, so that each line's search for its
// partner is short.
func TestJoinBoundsAPeer(t *testing.T) {
	c := converter{trustDomain: "cluster.local"}
	j := newJoiner(time.Second, DefaultJoinMaxHeld)
	wall := time.Unix(1000, 0)
	var out joined
	for range 100 {
		var ev event
		if _, ok := c.convert(decisionLine(msgDryRunNoAllowMatch, peerA, "store/p", t0.Add(-time.Hour)), wall, &ev, newInterner()); !ok {
			t.Fatal("dropped")
		}
		j.add(&ev, wall, &out)
	}
	if n := len(j.decisions[testPeerKey(peerA)]); n != maxPerPeer || j.waiting != maxPerPeer {
		t.Fatalf("a peer holds %d decisions (%d in all), want %d", n, j.waiting, maxPerPeer)
	}
	if out.unjoined != 100-maxPerPeer {
		t.Fatalf("unjoined %d", out.unjoined)
	}
	for range 100 {
		var ev event
		if _, ok := c.convert(accessLine(peerA, 8080, t0, 0, ""), wall, &ev, newInterner()); !ok {
			t.Fatal("dropped")
		}
		j.add(&ev, wall, &out)
	}
	n := peerLines(j, peerA)
	if n != maxPerPeer {
		t.Fatalf("a peer holds %d access lines, want %d", n, maxPerPeer)
	}
	j.expire(wall.Add(2*time.Second), &out)
	if len(j.accesses) != 0 || len(j.decisions) != 0 || j.queue.len() != 0 || j.waiting != 0 {
		t.Fatalf("held %d peers, %d access lines, %d decisions after the window", len(j.accesses), j.queue.len(), j.waiting)
	}
}
