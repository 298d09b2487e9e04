package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

func (lt *loadtest) hubble(ctx context.Context) (result, error) {
	h, err := lt.hubbleRelay()
	if err != nil {
		return result{}, err
	}
	defer h.stop()
	r := result{path: "hubble", title: "hubble (Observer.GetFlows, mutual TLS)", flows: len(h.msgs)}
	if r.baseline, err = lt.rawClient(ctx, rawClientRun{name: "raw-client-hubble", label: "baseline: raw client, receive and decode",
		api: "hubble", addr: h.addr, serverName: relayServerName, messages: len(h.msgs), opened: h.relay.Opened}); err != nil {
		return result{}, err
	}
	r.enforcer, err = lt.enforcer(ctx, "hubble", h.receiver(lt), h.relay.Opened, h.want)
	return r, err
}

// observe measures what observations cost learning: the Hubble path through
// the binary with observations on, against the same binary with them off
// (learning and violation observe: false) as the baseline.
func (lt *loadtest) observe(ctx context.Context) (result, error) {
	h, err := lt.hubbleRelay()
	if err != nil {
		return result{}, err
	}
	defer h.stop()
	r := result{path: "observe", title: "observations (hubble through the binary, observe on against observe off)", flows: len(h.msgs)}
	lt.unobserved = true
	r.baseline, err = lt.enforcer(ctx, "hubble-unobserved", h.receiver(lt), h.relay.Opened, h.want)
	lt.unobserved = false
	if err != nil {
		return result{}, err
	}
	r.baseline.name = "network-enforcer, observe: false"
	r.enforcer, err = lt.enforcer(ctx, "hubble-observed", h.receiver(lt), h.relay.Opened, h.want)
	return r, err
}

// hubbleSource is the recorded Hubble flows, re-stamped and repeated, served
// by a relay.
type hubbleSource struct {
	addr  string
	relay *dataplanetest.HubbleRelay
	msgs  []*observer.GetFlowsResponse
	want  int64
	stop  func()
}

func (h *hubbleSource) receiver(lt *loadtest) string {
	return fmt.Sprintf(`  hubble:
    endpoint: %s
%s
    backfill:
      since: %s
    enforcer: enforcer`, h.addr, lt.tlsYAML(relayServerName), backfill)
}

func (lt *loadtest) hubbleRelay() (*hubbleSource, error) {
	fixture, err := dataplanetest.LoadHubble(filepath.Join(lt.root, dataplanetest.HubbleFixture))
	if err != nil {
		return nil, err
	}
	// The recording is of a past day: re-stamp it as if it had just happened,
	// for the relay to serve it to a backfill.
	var last time.Time
	for _, m := range fixture {
		if t := m.GetTime(); t != nil && t.AsTime().After(last) {
			last = t.AsTime()
		}
	}
	shift := time.Since(last)
	flowMsgs := 0
	for _, m := range fixture {
		if m.GetTime() != nil {
			at := timestamppb.New(m.GetTime().AsTime().Add(shift))
			m.Time = at
			if f := m.GetFlow(); f != nil {
				f.Time = at
			}
		}
		if m.GetFlow() != nil {
			flowMsgs++
		}
	}
	msgs, copies := repeat(fixture, lt.opts.flows)
	relay := dataplanetest.NewHubbleRelay(msgs)
	addr, stop, err := lt.serve("hubble-relay", relayServerName, func(s *grpc.Server) { observer.RegisterObserverServer(s, relay) })
	if err != nil {
		return nil, err
	}
	return &hubbleSource{addr: addr, relay: relay, msgs: msgs, want: int64(copies * flowMsgs), stop: stop}, nil
}
