package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// hubble measures the Hubble path: the raw client that decodes every flow
// whole is the baseline; the enforcer runs with its hubble receiver's field
// mask (the default) and without it (field_mask: false), each compared with
// that baseline. For information, a raw client also asks for the mask that
// the enforcer sent, taken from its request to the relay: what the mask alone
// buys a client.
func (lt *loadtest) hubble(ctx context.Context) (result, error) {
	h, err := lt.hubbleRelay()
	if err != nil {
		return result{}, err
	}
	defer h.stop()
	r := result{path: "hubble", title: "hubble (Observer.GetFlows, mutual TLS)", flows: len(h.msgs)}
	raw := rawClientRun{api: "hubble", addr: h.addr, serverName: relayServerName, messages: len(h.msgs), opened: h.relay.Opened}
	full := raw
	full.name, full.label = "raw-client-hubble", "baseline: raw client, receive and decode"
	if r.baseline, err = lt.rawClient(ctx, full); err != nil {
		return result{}, err
	}
	var runs []side
	if lt.opts.hubbleMask != hubbleMaskOff {
		s, err := lt.enforcer(ctx, "hubble", h.receiver(lt, ""), h.relay.Opened, h.want)
		if err != nil {
			return result{}, err
		}
		s.name, s.variant = "enforcer: hubble receiver, field mask, flow pipeline", "field mask"
		runs = append(runs, s)
		// The mask as the enforcer sent it, so that the raw client asks for
		// the same fields whatever the receiver's choice.
		paths := h.relay.LastRequest().GetFieldMask().GetPaths()
		if len(paths) == 0 {
			// A receiver without the field_mask key sends none: say so
			// rather than call the run masked.
			runs[0].name, runs[0].variant = "enforcer: hubble receiver (no mask sent), flow pipeline", "no mask sent"
			r.notes = append(r.notes, "the enforcer sent no field mask: no raw client with its mask")
		} else {
			masked := raw
			masked.name, masked.label = "raw-client-hubble-masked", "raw client, the enforcer's field mask (information)"
			masked.fieldMask = strings.Join(paths, ",")
			info, err := lt.rawClient(ctx, masked)
			if err != nil {
				return result{}, err
			}
			info.variant = "masked raw client"
			r.info = append(r.info, info)
			r.notes = append(r.notes, "the enforcer's field mask: "+masked.fieldMask)
		}
	}
	if lt.opts.hubbleMask != hubbleMaskOn {
		s, err := lt.enforcer(ctx, "hubble-no-mask", h.receiver(lt, "      field_mask: false"), h.relay.Opened, h.want)
		if err != nil {
			return result{}, fmt.Errorf("the enforcer with field_mask: false (-hubble-mask=on skips it): %w", err)
		}
		s.name, s.variant = "enforcer: hubble receiver, no field mask, flow pipeline", "no field mask"
		runs = append(runs, s)
	}
	r.enforcer, r.more = runs[0], runs[1:]
	// The scale-out path's reference, per flow as that path counts (the
	// fixture's other messages are served on both): the run without the
	// mask when there is one, as the readers of nodes mode ask for whole
	// flows by default.
	relay := runs[len(runs)-1]
	lt.relayRun, lt.relayFlows = &relay, int(h.want)
	return r, nil
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
	r.baseline, err = lt.enforcer(ctx, "hubble-unobserved", h.receiver(lt, ""), h.relay.Opened, h.want)
	lt.unobserved = false
	if err != nil {
		return result{}, err
	}
	r.baseline.name = "network-enforcer, observe: false"
	r.enforcer, err = lt.enforcer(ctx, "hubble-observed", h.receiver(lt, ""), h.relay.Opened, h.want)
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

// receiver is the enforcer's hubble receiver in relay mode for the relay;
// extra is YAML lines of further keys of the relay mode (indented under
// relay), empty for none. Only the keys a run changes are written, so that a
// run that keeps a default works with a binary that does not know the key
// yet.
func (h *hubbleSource) receiver(lt *loadtest, extra string) string {
	if extra != "" {
		extra = "\n" + extra
	}
	tls := "  " + strings.ReplaceAll(lt.tlsYAML(relayServerName), "\n", "\n  ")
	return fmt.Sprintf(`  hubble:
    relay:
      endpoint: %s
%s%s
    backfill:
      since: %s
    leader_elector: leader_elector`, h.addr, tls, extra, backfill)
}

func (lt *loadtest) hubbleRelay() (*hubbleSource, error) {
	fixture, flowMsgs, err := lt.hubbleFixture()
	if err != nil {
		return nil, err
	}
	msgs, copies := repeat(fixture, lt.opts.flows)
	relay := dataplanetest.NewHubbleRelay(msgs)
	addr, stop, err := lt.serve("hubble-relay", relayServerName, func(s *grpc.Server) { observer.RegisterObserverServer(s, relay) })
	if err != nil {
		return nil, err
	}
	return &hubbleSource{addr: addr, relay: relay, msgs: msgs, want: int64(copies * flowMsgs), stop: stop}, nil
}

// hubbleFixture is the recorded Hubble responses re-stamped as if they had
// just happened, and how many of them are flows.
func (lt *loadtest) hubbleFixture() ([]*observer.GetFlowsResponse, int, error) {
	fixture, err := dataplanetest.LoadHubble(filepath.Join(lt.root, dataplanetest.HubbleFixture))
	if err != nil {
		return nil, 0, err
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
	return fixture, flowMsgs, nil
}
