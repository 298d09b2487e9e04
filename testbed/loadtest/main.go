// Command loadtest measures the built distribution, bin/network-enforcer, under a
// stream of recorded flows, against a baseline measured in the same run:
//
//   - hubble: a Hubble Relay replays testdata/hubble/flows.jsonl, repeated to
//     the number of flows asked for, over mutual TLS, first to a client that
//     only receives and decodes, then to the enforcer's hubble receiver and
//     flow pipeline (learning, the writer, the violation processor);
//   - goldmane: the same with a Goldmane and testdata/goldmane/flows.jsonl;
//   - ztunnel: the lines of testdata/ztunnel/ztunnel.jsonl, repeated, sent by
//     an OTLP client over mutual TLS, first to the binary with the collector's
//     own otlp receiver and a nop exporter, then to the enforcer's ztunnel
//     receiver and flow pipeline.
//
// The enforcer runs against a local control plane holding the cluster that the
// fixtures describe, so that flows resolve to workloads as in a cluster. A run
// is over when the enforcer's own counters (read from its Prometheus telemetry)
// have counted every flow, or, for OTLP, when every request has been answered:
// the OTLP receiver answers once the pipeline has taken the batch. It prints
// each side's rate, their ratio, the enforcer's CPU time per flow and its peak
// resident memory. Everything listens on 127.0.0.1 only.
//
// `make loadtest` builds what it needs and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	flows := flag.Int("flows", 1_000_000, "flows (or ztunnel lines) per path; the fixture is repeated to at least this many")
	paths := flag.String("paths", "hubble,goldmane,ztunnel", "comma-separated paths to measure: hubble, goldmane, ztunnel, and observe (the hubble path with observations on against off)")
	timeout := flag.Duration("timeout", 5*time.Minute, "the longest one side of one path may take")
	otlpBatch := flag.Int("otlp-batch", 1000, "log records per OTLP request")
	keep := flag.Bool("keep", false, "keep the work directory (configurations, logs, certificates)")
	// The chart's defaults: controller.gc.goGC, and controller.gc.memLimitPercent
	// of controller.resources.limits.memory.
	gogc := flag.String("gogc", "400", "GOGC of the binary, as the chart sets it; empty: Go's default")
	gomemlimit := flag.String("gomemlimit", "512MiB", "GOMEMLIMIT of the binary, as the chart sets it; empty: none")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	opts := options{flows: *flows, timeout: *timeout, otlpBatch: *otlpBatch, keep: *keep, gogc: *gogc, gomemlimit: *gomemlimit}
	for _, p := range strings.Split(*paths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			opts.paths = append(opts.paths, p)
		}
	}
	err := run(ctx, opts)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "loadtest failed: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	flows     int
	paths     []string
	timeout   time.Duration
	otlpBatch int
	keep      bool
	// gogc and gomemlimit are the binary's GOGC and GOMEMLIMIT.
	gogc, gomemlimit string
}

// result is one path's measurement.
type result struct {
	path     string
	title    string
	flows    int
	baseline side
	enforcer side
}

// side is one side of a path: how many flows in how long, and, for a process
// of the binary, its CPU time and peak resident memory.
type side struct {
	name    string
	elapsed time.Duration
	cpu     time.Duration
	peakRSS int64 // bytes; 0 when not measured
}

func (s side) rate(flows int) float64 { return float64(flows) / s.elapsed.Seconds() }

func (r result) print() {
	fmt.Printf("\n%s: %d flows\n", r.title, r.flows)
	for _, s := range []side{r.baseline, r.enforcer} {
		line := fmt.Sprintf("  %-44s %9.0f flows/s  (%s)", s.name, s.rate(r.flows), s.elapsed.Round(time.Millisecond))
		if s.peakRSS > 0 {
			line += fmt.Sprintf("  CPU %.2f µs/flow  peak RSS %d MiB",
				float64(s.cpu.Nanoseconds())/1e3/float64(r.flows), s.peakRSS>>20)
		}
		fmt.Println(line)
	}
	fmt.Printf("  %-44s %9.2f\n", "ratio enforcer/baseline", r.enforcer.rate(r.flows)/r.baseline.rate(r.flows))
}

func run(ctx context.Context, opts options) error {
	lt, err := newLoadtest(ctx, opts)
	if err != nil {
		return err
	}
	defer lt.stop()
	var results []result
	for _, p := range opts.paths {
		var measure func(context.Context) (result, error)
		switch p {
		case "hubble":
			measure = lt.hubble
		case "goldmane":
			measure = lt.goldmane
		case "ztunnel":
			measure = lt.ztunnel
		case "observe":
			measure = lt.observe
		default:
			return fmt.Errorf("unknown path %q: want hubble, goldmane, ztunnel or observe", p)
		}
		fmt.Printf("==> %s (%s)\n", p, time.Since(lt.started).Round(time.Second))
		r, err := measure(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		r.print()
		results = append(results, r)
	}
	fmt.Println("\nsummary:")
	for _, r := range results {
		fmt.Printf("  %-9s ratio %.2f  enforcer %7.0f flows/s  baseline %7.0f flows/s  CPU %.2f µs/flow  peak RSS %d MiB\n",
			r.path, r.enforcer.rate(r.flows)/r.baseline.rate(r.flows), r.enforcer.rate(r.flows), r.baseline.rate(r.flows),
			float64(r.enforcer.cpu.Nanoseconds())/1e3/float64(r.flows), r.enforcer.peakRSS>>20)
	}
	return nil
}
