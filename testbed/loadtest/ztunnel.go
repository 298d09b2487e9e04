package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// otlpServerName is the name in the OTLP listener's certificate.
const otlpServerName = "network-enforcer.network-enforcer.svc"

// otlpInFlight is how many OTLP requests the client keeps in flight, as a few
// node agents sending at once.
const otlpInFlight = 4

func (lt *loadtest) ztunnel(ctx context.Context) (result, error) {
	lines, err := dataplanetest.LoadZtunnel(filepath.Join(lt.root, dataplanetest.ZtunnelFixture))
	if err != nil {
		return result{}, err
	}
	all, _ := repeat(lines, lt.opts.flows)
	// Each copy is other connections: ztunnel joins a decision to its access
	// line by the peer's address and port, and a peer port is not reused
	// within the join window.
	for i := range all {
		all[i] = restampPorts(all[i], i/len(lines))
	}
	// The payload, as a node agent sends ztunnel's lines: one log record per
	// line, its body the line. Both sides get the same requests.
	var requests []plogotlp.ExportRequest
	for i := 0; i < len(all); i += lt.opts.otlpBatch {
		ld := plog.NewLogs()
		recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for _, l := range all[i:min(i+lt.opts.otlpBatch, len(all))] {
			recs.AppendEmpty().Body().SetStr(l)
		}
		requests = append(requests, plogotlp.NewExportRequestFromLogs(ld))
	}
	server, err := lt.ca.IssueServer("otlp", otlpServerName)
	if err != nil {
		return result{}, err
	}
	listener := func(addr string) string {
		return fmt.Sprintf(`    protocols:
      grpc:
        endpoint: %s
        tls:
          cert_file: %s
          key_file: %s
          client_ca_file: %s`, addr, server.CertFile, server.KeyFile, lt.ca.CertFile)
	}
	r := result{path: "ztunnel", title: "ztunnel (OTLP logs, mutual TLS)", flows: len(all)}

	// The baseline: the same binary with the collector's own otlp receiver and a
	// nop exporter.
	addr, metrics, err := freeAddr2()
	if err != nil {
		return result{}, err
	}
	config, err := lt.writeConfig("otlp-nop", fmt.Sprintf(`receivers:
  otlp:
%s
exporters:
  nop: {}
service:
%s
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [nop]
`, listener(addr), telemetry(metrics)))
	if err != nil {
		return result{}, err
	}
	if r.baseline, err = lt.sendOTLP(ctx, "otlp-nop", "baseline: otlp receiver -> nop", config, addr, metrics, requests); err != nil {
		return result{}, err
	}
	if addr, metrics, err = freeAddr2(); err != nil {
		return result{}, err
	}
	if config, err = lt.enforcerConfig("ztunnel", fmt.Sprintf(`  ztunnel:
%s
    leader_elector: leader_elector`, listener(addr)), metrics); err != nil {
		return result{}, err
	}
	r.enforcer, err = lt.sendOTLP(ctx, "enforcer-ztunnel", "enforcer: ztunnel receiver, flow pipeline", config, addr, metrics, requests)
	return r, err
}

// peerAddr is the source address of an access line, or the peer of a decision.
var peerAddr = regexp.MustCompile(`"(src\.addr|peer)":"([0-9.]+):(\d+)"`)

// restampPorts moves the peer ports of a line of the k-th copy, the same way
// in every line of one copy.
func restampPorts(line string, k int) string {
	return peerAddr.ReplaceAllStringFunc(line, func(m string) string {
		sub := peerAddr.FindStringSubmatch(m)
		port, _ := strconv.Atoi(sub[3])
		return fmt.Sprintf(`%q:"%s:%d"`, sub[1], sub[2], 1024+(port+k)%64000)
	})
}

func freeAddr2() (string, string, error) {
	a, err := freeAddr()
	if err != nil {
		return "", "", err
	}
	b, err := freeAddr()
	return a, b, err
}

// sendOTLP runs the binary with config and sends it every request, a few in
// flight at once. The OTLP listener answers a request once the pipeline has
// taken it, so the last answer is the end of the run.
func (lt *loadtest) sendOTLP(ctx context.Context, name, label, config, addr, metrics string, requests []plogotlp.ExportRequest) (side, error) {
	p, err := lt.start(name, config, metrics)
	if err != nil {
		return side{}, err
	}
	defer p.Stop()
	if err := lt.waitMetrics(ctx, p); err != nil {
		return side{}, err
	}
	conn, err := grpc.NewClient(addr, lt.clientTLS(otlpServerName))
	if err != nil {
		return side{}, err
	}
	defer conn.Close()
	client := plogotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(ctx, lt.opts.timeout)
	defer cancel()
	// Ready when a request is taken: the enforcer's standby refuses them until
	// it leads.
	for {
		_, err := client.Export(ctx, plogotlp.NewExportRequest())
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return side{}, fmt.Errorf("%s never took a request: %w", name, err)
		case <-p.Exited:
			return side{}, p.Failed()
		case <-time.After(50 * time.Millisecond):
		}
	}
	start := time.Now()
	cpu0, err := p.CPU()
	if err != nil {
		return side{}, err
	}
	next := make(chan plogotlp.ExportRequest)
	errs := make(chan error, otlpInFlight)
	var wg sync.WaitGroup
	for range otlpInFlight {
		wg.Go(func() {
			for req := range next {
				if _, err := client.Export(ctx, req); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var sendErr error
feed:
	for _, req := range requests {
		select {
		case next <- req:
		case sendErr = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	end := time.Now()
	if sendErr == nil {
		select {
		case sendErr = <-errs:
		default:
		}
	}
	if sendErr != nil {
		return side{}, fmt.Errorf("%s: %w", name, sendErr)
	}
	s, err := measured(p, label, start, end, cpu0)
	if err != nil {
		return side{}, err
	}
	// What the binary counted, to show that it took every line.
	lines := 0
	for _, req := range requests {
		lines += req.Logs().LogRecordCount()
	}
	if name == "otlp-nop" {
		n, err := p.Counter("otelcol_receiver_accepted_log_records")
		if err != nil || n < int64(lines) {
			return side{}, errors.Join(err, fmt.Errorf("%s counted %d of %d log records", name, n, lines))
		}
		return s, nil
	}
	accepted, err1 := p.Counter(flowsource.MetricFlowsAccepted)
	dropped, err2 := p.Counter(flowsource.MetricFlowsDropped)
	if err := errors.Join(err1, err2); err != nil {
		return side{}, err
	}
	fmt.Printf("  %s counted %d flow records and %d dropped lines of %d lines\n", name, accepted, dropped, lines)
	return s, nil
}
