package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// Names in the data planes' server certificates, as in a cluster.
const (
	relayServerName    = "ui.hubble-relay.cilium.io"
	goldmaneServerName = "goldmane.calico-system.svc"
)

// backfill is how far back both sides ask the data plane for flows: far enough
// for the re-stamped fixture, however long the run takes.
const backfill = time.Hour

// repeat returns the fixture repeated until it has at least n messages, and how
// many copies that is. The copies share the fixture's messages.
func repeat[M any](fixture []M, n int) ([]M, int) {
	copies := max(1, (n+len(fixture)-1)/len(fixture))
	out := make([]M, 0, copies*len(fixture))
	for range copies {
		out = append(out, fixture...)
	}
	return out, copies
}

// enforcer runs the binary with the flow pipeline and the receiver given, and
// returns how long it took from the opening of its stream until its receiver
// counted want flows, accepted or dropped.
func (lt *loadtest) enforcer(ctx context.Context, name, receiver string, opened <-chan struct{}, want int64) (side, error) {
	metrics, err := freeAddr()
	if err != nil {
		return side{}, err
	}
	config, err := lt.enforcerConfig(name, receiver, metrics)
	if err != nil {
		return side{}, err
	}
	drain(opened)
	p, err := lt.start("enforcer-"+name, config, metrics)
	if err != nil {
		return side{}, err
	}
	defer p.Stop()
	// The stream opens once the enforcer leads and its cache is synced.
	start, cpu0, err := streamOpened(ctx, p, opened, 2*time.Minute)
	if err != nil {
		return side{}, err
	}
	end, err := lt.waitCounters(ctx, p, want, flowsource.MetricFlowsAccepted, flowsource.MetricFlowsDropped)
	if err != nil {
		return side{}, err
	}
	return measured(p, "enforcer: "+name+" receiver, flow pipeline", start, end, cpu0)
}

// streamOpened waits until the server signals on opened that p opened its
// stream, and returns the time and p's CPU time then: where its measurement
// starts.
func streamOpened(ctx context.Context, p *process, opened <-chan struct{}, wait time.Duration) (time.Time, time.Duration, error) {
	select {
	case <-opened:
	case <-p.Exited:
		return time.Time{}, 0, p.Failed()
	case <-time.After(wait):
		return time.Time{}, 0, fmt.Errorf("%s opened no stream in %s; see %s", p.Name, wait, p.Log)
	case <-ctx.Done():
		return time.Time{}, 0, ctx.Err()
	}
	start := time.Now()
	cpu, err := p.CPU()
	return start, cpu, err
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func (lt *loadtest) goldmane(ctx context.Context) (result, error) {
	fixture, err := dataplanetest.LoadGoldmane(filepath.Join(lt.root, dataplanetest.GoldmaneFixture))
	if err != nil {
		return result{}, err
	}
	// Re-stamped as if just aggregated, for start_time_gte to find.
	var last int64
	for _, m := range fixture {
		last = max(last, m.GetFlow().GetStartTime())
	}
	shift := time.Now().Unix() - last
	for _, m := range fixture {
		if f := m.GetFlow(); f != nil && f.StartTime > 0 {
			f.StartTime += shift
			f.EndTime += shift
		}
	}
	msgs, _ := repeat(fixture, lt.opts.flows)
	g := dataplanetest.NewGoldmane(msgs)
	addr, stop, err := lt.serve("goldmane", goldmaneServerName, func(s *grpc.Server) { pb.RegisterFlowsServer(s, g) })
	if err != nil {
		return result{}, err
	}
	defer stop()
	gte := -int64(backfill / time.Second)
	r := result{path: "goldmane", title: "goldmane (Flows.Stream, mutual TLS)", flows: len(msgs)}
	if r.baseline, err = lt.rawClient(ctx, rawClientRun{name: "raw-client-goldmane", label: "baseline: raw client, receive and decode",
		api: "goldmane", addr: addr, serverName: goldmaneServerName, messages: len(msgs), opened: g.Opened}); err != nil {
		return result{}, err
	}
	r.enforcer, err = lt.enforcer(ctx, "goldmane", fmt.Sprintf(`  goldmane:
    endpoint: %s
%s
    start_time_gte: %d
    leader_elector: leader_elector`, addr, lt.tlsYAML(goldmaneServerName), gte),
		g.Opened, int64(len(msgs)))
	return r, err
}

// tlsYAML is a gRPC receiver's tls section: the test CA, the client certificate
// and the name the server's certificate has.
func (lt *loadtest) tlsYAML(serverName string) string {
	return fmt.Sprintf(`    tls:
      ca_file: %s
      cert_file: %s
      key_file: %s
      server_name_override: %s`, lt.ca.CertFile, lt.client.CertFile, lt.client.KeyFile, serverName)
}
