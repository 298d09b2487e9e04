package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestScaleSmall runs the harness at a small size with few flows, adds a
// reader a third of the way (its share of the nodes moves to it by graceful
// hand-offs) and kills a reader two thirds of the way: every node is read,
// every workload with flows has its proposals, every edge's evidence counts
// each flow once, and every connection into a workload with a monitor-mode
// policy is reported once. It asserts no time: the figures are logged.
func TestScaleSmall(t *testing.T) {
	controlplanetest.Require(t)
	controlplanetest.RequireBinary(t)
	if testing.Short() {
		t.Skip("starts a control plane and four replicas for minutes")
	}
	o := defaultOptions()
	o.nodes, o.readers = 100, 2
	// Few flows: a tenth of the workloads are clients of 3 to 6 others, so
	// that the writer makes the proposals in a minute or two.
	o.clients, o.minPeers, o.maxPeers = 0.1, 3, 6
	o.duration, o.timeout = 45*time.Second, 4*time.Minute
	o.workers = 8
	o.addReader, o.killReader = true, true
	// A fifth of the served Deployments under a monitor-mode policy: a few
	// dozen edges whose connections are violations.
	o.monitored = 0.2
	// The writer fast enough that the proposals and their evidence do not
	// wait for its default rate, so that the run takes a few minutes.
	o.writeQPS, o.writeBurst, o.observedInterval = 50, 100, 5*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	rep, err := run(ctx, o)
	if rep != nil {
		var b strings.Builder
		rep.print(&b)
		t.Log(b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.allRead == 0 {
		t.Errorf("not every node was read")
	}
	if rep.proposalsMissing != 0 || rep.proposalsWanted == 0 {
		t.Errorf("%d of %d proposals of the workloads with flows missing", rep.proposalsMissing, rep.proposalsWanted)
	}
	c := rep.counts
	if c.edges == 0 || c.perConn == 0 || c.under != 0 || c.missing != 0 {
		t.Errorf("flows lost: %d edges counted less than sent (%d flows), %d absent from the evidence (%+v)", c.under, c.underBy, c.missing, c)
	}
	if c.over != 0 {
		t.Errorf("flows counted twice: %d of %d edge directions, %d flows", c.over, c.edges, c.overBy)
	}
	if v := rep.violations; rep.monitored == 0 || v.edges == 0 || v.perConn == 0 || v.exact != v.edges {
		t.Errorf("violations: %d workloads monitored; of %d edges into them %d reported once per connection, %d twice (+%d events), %d less (-%d events)",
			rep.monitored, v.edges, v.exact, v.over, v.overBy, v.under, v.underBy)
	}
	if v := rep.policyViolations; v.edges == 0 || v.perConn != 1 || v.exact != v.edges {
		t.Errorf("violations in the policies' status: of %d monitored workloads %d count one per connection sent, %d more (+%d), %d less (-%d), %d have no policy",
			v.edges, v.exact, v.over, v.overBy, v.under, v.underBy, v.missing)
	}
}
