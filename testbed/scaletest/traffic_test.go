package main

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/testbed/fakecluster"
)

// nodesPushed records what the traffic pushes, node by node.
type nodesPushed struct {
	mu     sync.Mutex
	pushed map[int][]*observer.GetFlowsResponse
}

func (p *nodesPushed) nodeName(i int) string { return "node-" + strconv.Itoa(i) }

func (p *nodesPushed) push(i int, msgs []*observer.GetFlowsResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushed[i] = append(p.pushed[i], msgs...)
}

// TestANodesFlowsComeInTheOrderOfTheirTimes: as a Cilium agent's do, each
// node's flows come in the order of their times, also when a node sends many
// connections in one tick (which, built one after another, overlap in time),
// so that a reader's checkpoint at a flow's time means every flow before it.
func TestANodesFlowsComeInTheOrderOfTheirTimes(t *testing.T) {
	plan := fakecluster.NewPlan(300, 40, 2)
	tr := newTraffic(plan.Workloads(), plan.Nodes, 3, 6, 1)
	to := &nodesPushed{pushed: map[int][]*observer.GetFlowsResponse{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// 100 connections per node per second: 20 in each 200 ms tick.
		tr.run(stop, to, float64(100*tr.flowsPerConn), 2)
	}()
	// Time must pass because the traffic sends on its 200 ms ticker: two ticks.
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-done

	to.mu.Lock()
	defer to.mu.Unlock()
	if len(to.pushed) == 0 {
		t.Fatal("the traffic pushed nothing")
	}
	for n, msgs := range to.pushed {
		if len(msgs) < 2*tr.flowsPerConn {
			t.Errorf("node %d: %d flows pushed, want at least two connections' (%d)", n, len(msgs), 2*tr.flowsPerConn)
		}
		var newest time.Time
		for i, m := range msgs {
			at := m.GetFlow().GetTime().AsTime()
			if !at.After(newest) {
				t.Fatalf("node %d: flow %d of %d at %s, not after the one before it at %s", n, i, len(msgs), at.Format(time.RFC3339Nano), newest.Format(time.RFC3339Nano))
			}
			if !m.GetTime().AsTime().Equal(at) {
				t.Fatalf("node %d: flow %d's response time %s is not its flow's %s", n, i, m.GetTime().AsTime(), at)
			}
			newest = at
		}
	}
}
