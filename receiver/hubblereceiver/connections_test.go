package hubblereceiver

import (
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// TestConnectionsForgetAfterTwoPeriods: the same five-tuple counts once
// within a connection period, and again once two periods have passed without
// a record (a port used again long after), however the generations turned.
func TestConnectionsForgetAfterTwoPeriods(t *testing.T) {
	t0 := time.Unix(1764635000, 0)
	rec := func(at time.Duration) *flow.Record {
		return &flow.Record{Time: t0.Add(at), Outcome: flow.OutcomeAllowed, Transport: flow.TransportTCP,
			Source: flow.Endpoint{Address: "10.0.0.1", Port: 40001}, Destination: flow.Endpoint{Address: "10.0.0.2", Port: 8080}}
	}
	type step struct {
		at   time.Duration
		seen bool
	}
	for name, steps := range map[string][]step{
		"within a period, and in the previous generation": {
			{0, false}, {time.Second, true}, {connectionPeriod + time.Second, true},
		},
		"two periods later": {
			{0, false}, {3 * connectionPeriod, false}, {3*connectionPeriod + time.Second, true},
		},
	} {
		c := newConnections()
		for _, s := range steps {
			if got := c.seen(rec(s.at)); got != s.seen {
				t.Errorf("%s: at +%s seen %v, want %v", name, s.at, got, s.seen)
			}
		}
	}
}
