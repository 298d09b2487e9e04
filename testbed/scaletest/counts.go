package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/testbed/replicas"
)

// counts is the comparison, edge by edge, of what the product shows (the
// flows of an edge direction's evidence, the violation events of an edge)
// with the connections that the harness sent on it.
type counts struct {
	// perConn is what the product counts per connection sent: the most
	// common ratio (the receiver counts some of a connection's flow
	// messages).
	perConn int64
	edges   int
	exact   int
	// over and under are the edges counted more (twice) or less (lost) than
	// perConn × connections, missing those the product shows nothing of;
	// overBy and underBy what they differ by in all.
	over, under, missing int
	overBy, underBy      int64
	// underListedPart is how many of under are in evidence that lists only
	// part of its edges (status.observed past max_observed): a new leader
	// does not know the flows of an edge that its predecessor did not list,
	// and counts them again from 0 when the edge comes back.
	underListedPart int
}

// sample is one edge's comparison: got of conns connections sent; found is
// false when the product shows nothing of it; listedPart is set when its
// evidence lists only part of its edges.
type sample struct {
	got, conns        int64
	found, listedPart bool
	// e and dir are the edge and the direction whose evidence it is.
	e   *edge
	dir v1alpha1.Direction
}

// countsOf compares the samples at their most common ratio.
func countsOf(samples []sample) counts {
	ratios := map[int64]int{}
	for _, s := range samples {
		if s.found && s.got%s.conns == 0 {
			ratios[s.got/s.conns]++
		}
	}
	var c counts
	for r, n := range ratios {
		if r > 0 && (n > ratios[c.perConn] || (n == ratios[c.perConn] && r > c.perConn)) {
			c.perConn = r
		}
	}
	for _, s := range samples {
		c.edges++
		want := c.perConn * s.conns
		switch {
		case !s.found:
			c.missing++
			c.underBy += want
		case s.got == want:
			c.exact++
		case s.got > want:
			c.over++
			c.overBy += s.got - want
		default:
			c.under++
			c.underBy += want - s.got
			if s.listedPart {
				c.underListedPart++
			}
		}
	}
	return c
}

// compareCounts waits until the evidence of every edge holds perConn flows
// per connection sent, or stops changing, and notes the comparison.
func (h *harness) compareCounts(ctx context.Context) error {
	wait := 3*max(h.opts.observedInterval, time.Minute) + time.Minute
	if h.opts.settle > 0 {
		wait = h.opts.settle
	}
	var last counts
	// A list of every proposal, status and all, is a load on the API server
	// that the writer shares: one every few seconds.
	err := h.settleCounts(ctx, "the evidence of every edge to count what was sent", wait, 2*max(h.opts.observedInterval, time.Minute),
		func() (counts, error) {
			c, err := h.count(ctx)
			if err != nil {
				return c, err
			}
			h.rep.counts = c
			if c.under != last.under || c.over != last.over {
				logf("counts: %d of %d edge directions exact, %d less, %d twice", c.exact, c.edges, c.under, c.over)
			}
			last = c
			return c, nil
		})
	if err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	h.logMiscounted(10)
	return nil
}

// settleCounts reads counts every few seconds until every sample is exact,
// or they have not changed for stable, within wait.
func (h *harness) settleCounts(ctx context.Context, what string, wait, stable time.Duration, read func() (counts, error)) error {
	var last counts
	var stableSince time.Time
	return replicas.Poll(ctx, what, wait, h.liveAll(), replicas.AtMostEvery(5*time.Second, func() (bool, error) {
		c, err := read()
		if err != nil {
			return false, err
		}
		if c.exact == c.edges {
			return true, nil
		}
		if c != last {
			last, stableSince = c, time.Now()
			return false, nil
		}
		return time.Since(stableSince) > stable, nil
	}))
}

// logMiscounted logs up to n edge directions counted less than sent, and n
// counted more: the node that sent them and the time of each connection, to
// set beside the replicas' logs of that node's hand-offs.
func (h *harness) logMiscounted(n int) {
	c := h.rep.counts
	short, over := 0, 0
	for _, s := range h.rep.miscounted {
		what := &short
		if s.got > c.perConn*s.conns {
			what = &over
		}
		if *what == n {
			continue
		}
		*what++
		wls := h.traffic.workloads
		src, dst := wls[s.e.src], wls[s.e.dst]
		times := make([]string, len(s.e.sent))
		for i, t := range s.e.sent {
			times[i] = t.UTC().Format("15:04:05.000000")
		}
		logf("miscounted: %s/%s -> %s/%s:%d (%s evidence) from node %s: %d flows of %d connections at %d each; connections at %s",
			src.Namespace, src.Name, dst.Namespace, dst.Name, s.e.port, s.dir, h.nodeName(s.e.node), s.got, s.conns, c.perConn, strings.Join(times, ", "))
	}
}

// count reads every proposal and compares each edge's evidence.
func (h *harness) count(ctx context.Context) (counts, error) {
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	if err := h.env.Client.List(ctx, &list); err != nil {
		return counts{}, err
	}
	byName := map[string]*v1alpha1.WorkloadNetworkPolicyProposal{}
	for i := range list.Items {
		p := &list.Items[i]
		byName[p.Namespace+"/"+p.Name] = p
	}
	wls := h.traffic.workloads
	var samples []sample
	lookup := func(e *edge, owner int, dir v1alpha1.Direction, peer int, port uint32, conns int64) {
		w, pw := wls[owner], wls[peer]
		s := sample{conns: conns, e: e, dir: dir}
		if p := byName[w.Namespace+"/"+proposalName(w, dir)]; p != nil {
			s.listedPart = p.Status.OmittedEdges > 0
			for _, e := range p.Status.Observed {
				if e.Peer.Namespace == pw.Namespace && e.Peer.Name == pw.Name && e.Port == int32(port) {
					s.got += e.Flows
					s.found = true
				}
			}
		}
		samples = append(samples, s)
	}
	for _, e := range h.traffic.edges {
		conns := e.conns.Load()
		if conns == 0 {
			continue
		}
		lookup(e, e.src, v1alpha1.DirectionEgress, e.dst, e.port, conns)
		if !h.monitored[e.dst] { // violations, counted by violationCounts
			lookup(e, e.dst, v1alpha1.DirectionIngress, e.src, e.port, conns)
		}
	}
	c := countsOf(samples)
	h.rep.miscounted = h.rep.miscounted[:0]
	for _, s := range samples {
		if s.found && s.got != c.perConn*s.conns {
			h.rep.miscounted = append(h.rep.miscounted, s)
		}
	}
	return c, nil
}
