// Command loadtest measures the built distribution, bin/network-enforcer, under a
// stream of recorded flows, against a baseline measured in the same run:
//
//   - hubble: a Hubble Relay replays testdata/hubble/flows.jsonl, repeated to
//     the number of flows asked for, over mutual TLS, first to a raw client
//     that only receives and fully decodes, then to the enforcer's hubble
//     receiver and flow pipeline (learning, the writer, the violation
//     processor), once with the receiver's field mask (its default) and once
//     with field_mask: false (-hubble-mask picks), and for information to a
//     raw client that asks for the enforcer's mask;
//   - goldmane: the same with a Goldmane and testdata/goldmane/flows.jsonl;
//   - ztunnel: the lines of testdata/ztunnel/ztunnel.jsonl, repeated, sent by
//     an OTLP client over mutual TLS, first to the binary with the collector's
//     own otlp receiver and a nop exporter, then to the enforcer's ztunnel
//     receiver and flow pipeline;
//   - scaleout: the same Hubble flows spread over the nodes of a fake Cilium
//     cluster (a Hubble server on each node, found through the Peer service,
//     mutual TLS), read by reader replicas (the hubble receiver in nodes mode,
//     learning, the leader exporter) that send what they learn to a leader
//     replica (the leader receiver, the writer, the violation processor). It
//     prints what the leader receives and spends per cluster flow, each
//     reader's CPU and memory, the cluster's throughput beside the hubble
//     path's relay-mode enforcer, and the latency from a violating connection
//     on a node to its event at an OTLP sink.
//
// The raw clients are this program run again as a process of its own (the
// hidden raw-client command), so that every side of every path is a process
// whose CPU time and peak resident memory are read from /proc alike.
//
// The enforcer runs against a local control plane holding the cluster that the
// fixtures describe, so that flows resolve to workloads as in a cluster. A run
// is over when the enforcer's own counters (read from its Prometheus telemetry)
// have counted every flow, or, for OTLP, when every request has been answered:
// the OTLP receiver answers once the pipeline has taken the batch. It prints
// each side's rate, CPU time per flow and peak resident memory, and the
// enforcer's throughput and CPU time per flow each as a ratio to the
// baseline's. Everything listens on 127.0.0.1 only.
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
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == rawClientCommand {
		if err := rawClient(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", rawClientCommand, err)
			os.Exit(1)
		}
		return
	}
	flows := flag.Int("flows", 1_000_000, "flows (or ztunnel lines) per path; the fixture is repeated to at least this many")
	paths := flag.String("paths", "hubble,goldmane,ztunnel,scaleout", "comma-separated paths to measure: hubble, goldmane, ztunnel, scaleout, and observe (the hubble path with observations on against off)")
	timeout := flag.Duration("timeout", 5*time.Minute, "the longest one side of one path may take")
	otlpBatch := flag.Int("otlp-batch", 1000, "log records per OTLP request")
	keep := flag.Bool("keep", false, "keep the work directory (configurations, logs, certificates)")
	// The chart's defaults: controller.gc.goGC, and controller.gc.memLimitPercent
	// of controller.resources.limits.memory.
	gogc := flag.String("gogc", "400", "GOGC of the binary, as the chart sets it; empty: Go's default")
	gomemlimit := flag.String("gomemlimit", "512MiB", "GOMEMLIMIT of the binary, as the chart sets it; empty: none")
	hubbleMask := flag.String("hubble-mask", hubbleMaskBoth, "the hubble path's enforcer runs: both (with the receiver's field mask and with field_mask: false), on (with it only) or off (without it only)")
	scaleOutReaders := flag.Int("scaleout-readers", 2, "the scaleout path's reader replicas")
	scaleOutNodes := flag.Int("scaleout-nodes", 6, "the scaleout path's Cilium nodes")
	flag.Parse()
	if *scaleOutReaders < 1 || *scaleOutNodes < 1 {
		fmt.Fprintf(os.Stderr, "-scaleout-readers and -scaleout-nodes: want at least 1\n")
		os.Exit(2)
	}
	switch *hubbleMask {
	case hubbleMaskBoth, hubbleMaskOn, hubbleMaskOff:
	default:
		fmt.Fprintf(os.Stderr, "-hubble-mask %q: want both, on or off\n", *hubbleMask)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	opts := options{flows: *flows, timeout: *timeout, otlpBatch: *otlpBatch, keep: *keep, gogc: *gogc, gomemlimit: *gomemlimit,
		hubbleMask: *hubbleMask, scaleOutReaders: *scaleOutReaders, scaleOutNodes: *scaleOutNodes}
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
	// hubbleMask is which of the hubble path's enforcer runs to make.
	hubbleMask string
	// scaleOutReaders and scaleOutNodes size the scaleout path.
	scaleOutReaders, scaleOutNodes int
}

// The values of -hubble-mask.
const (
	hubbleMaskBoth = "both"
	hubbleMaskOn   = "on"
	hubbleMaskOff  = "off"
)

// result is one path's measurement.
type result struct {
	path     string
	title    string
	flows    int
	baseline side
	enforcer side
	// more are further runs of the enforcer on the path (the hubble path
	// without its field mask), each compared with the baseline as enforcer is.
	more []side
	// notes are lines printed under the title (the enforcer's field mask).
	notes []string
	// info are other clients shown for information (the raw client with the
	// enforcer's field mask), compared with the baseline too; their variant
	// names them in the ratio.
	info []side
	// scaleOut is the scaleout path's measurement, which prints itself.
	scaleOut *scaleOutReport
}

// side is one side of a path: how many flows in how long, and, for a process
// of its own, its CPU time and peak resident memory.
type side struct {
	name string
	// variant tells runs of one path apart in the ratios and the summary
	// ("field mask"); empty when the path has one.
	variant string
	elapsed time.Duration
	cpu     time.Duration
	peakRSS int64 // bytes; 0 when not measured
}

func (s side) rate(flows int) float64 { return float64(flows) / s.elapsed.Seconds() }

// cpuPerFlow is the side's CPU time per flow in µs.
func (s side) cpuPerFlow(flows int) float64 {
	return float64(s.cpu.Nanoseconds()) / 1e3 / float64(flows)
}

// enforcers are the enforcer's runs on the path.
func (r result) enforcers() []side { return append([]side{r.enforcer}, r.more...) }

// ratios are s's throughput and CPU time per flow, each divided by the
// baseline's: a throughput ratio under 1 and a CPU ratio over 1 both say
// that s costs more per flow.
func (r result) ratios(s side) (throughput, cpu float64) {
	return s.rate(r.flows) / r.baseline.rate(r.flows), float64(s.cpu) / float64(r.baseline.cpu)
}

// label is what a ratio or summary line calls s: the path, and the variant
// when there is one.
func (r result) label(s side) string {
	if s.variant == "" {
		return r.path
	}
	return r.path + ", " + s.variant
}

func (r result) print() {
	if r.scaleOut != nil {
		r.scaleOut.print(r.title)
		return
	}
	fmt.Printf("\n%s: %d flows\n", r.title, r.flows)
	for _, n := range r.notes {
		fmt.Printf("  %s\n", n)
	}
	sides := append(append([]side{r.baseline}, r.info...), r.enforcers()...)
	for _, s := range sides {
		line := fmt.Sprintf("  %-56s %9.0f flows/s  (%s)", s.name, s.rate(r.flows), s.elapsed.Round(time.Millisecond))
		if s.peakRSS > 0 {
			line += fmt.Sprintf("  CPU %.2f µs/flow  peak RSS %d MiB", s.cpuPerFlow(r.flows), s.peakRSS>>20)
		}
		fmt.Println(line)
	}
	for _, s := range r.enforcers() {
		name := "ratio enforcer/baseline"
		if s.variant != "" {
			name += ", " + s.variant
		}
		r.printRatios(name, s)
	}
	for _, s := range r.info {
		r.printRatios("ratio "+s.variant+"/baseline", s)
	}
}

func (r result) printRatios(name string, s side) {
	throughput, cpu := r.ratios(s)
	fmt.Printf("  %-56s throughput %.2f  CPU %.2f\n", name, throughput, cpu)
}

// printSummary writes one line for each run of the enforcer.
func printSummary(results []result) {
	fmt.Println("\nsummary (ratios are enforcer ÷ baseline; CPU in µs per flow; peak RSS in MiB):")
	if slices.ContainsFunc(results, func(r result) bool { return r.scaleOut == nil }) {
		fmt.Printf("  %-24s %13s %9s  %12s %12s  %12s %12s  %15s %15s\n", "path", "flows/s ratio", "CPU ratio",
			"enforcer CPU", "baseline CPU", "enforcer RSS", "baseline RSS", "enforcer flows/s", "baseline flows/s")
	}
	for _, r := range results {
		if r.scaleOut != nil {
			continue
		}
		for _, s := range r.enforcers() {
			throughput, cpu := r.ratios(s)
			fmt.Printf("  %-24s %13.2f %9.2f  %12.2f %12.2f  %12d %12d  %15.0f %15.0f\n", r.label(s), throughput, cpu,
				s.cpuPerFlow(r.flows), r.baseline.cpuPerFlow(r.flows), s.peakRSS>>20, r.baseline.peakRSS>>20,
				s.rate(r.flows), r.baseline.rate(r.flows))
		}
	}
	for _, r := range results {
		if r.scaleOut != nil {
			fmt.Printf("  %s\n", r.scaleOut.summary())
		}
	}
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
		case "scaleout":
			measure = lt.scaleout
		default:
			return fmt.Errorf("unknown path %q: want hubble, goldmane, ztunnel, scaleout or observe", p)
		}
		fmt.Printf("==> %s (%s)\n", p, time.Since(lt.started).Round(time.Second))
		r, err := measure(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		r.print()
		results = append(results, r)
	}
	printSummary(results)
	return nil
}
