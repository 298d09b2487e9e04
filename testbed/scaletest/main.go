// Command scaletest drives nodes mode at the size of a large Cilium cluster
// on one machine (issue 54): N fake Cilium nodes, each a Hubble server over
// mutual TLS on a loopback address of its own (127.1.0.1 and on) announced
// by one Peer service, all in this process; a real kube-apiserver filled
// with the workloads and pods that the nodes' flows name (fakecluster, about
// 4 workloads and 10 pods a node); a leader and R readers of the built
// binary, every one configured alike, as the chart runs them
// (replicas.Replica). Flows come at a steady rate per node, each workload a
// client of a few to a few dozen others; a share of the Deployments have a
// monitor-mode policy that allows nothing, so that every connection to them
// is a violation. Faults on request: a reader SIGKILLed, the leader SIGKILLed
// (and restarted), a share of the nodes replaced by nodes of new names.
//
// It prints issue 54's figures with their goals, read through the replicas'
// telemetry, /proc and the API server.
//
// `make scaletest SCALETEST_ARGS='-nodes 1000'` builds what it needs and
// runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func defaultOptions() options {
	return options{nodes: 500, readers: 4, workloadsPerNode: 4, podsPerNode: 10, minPeers: 3, maxPeers: 30,
		clients: 1, rate: 20, monitored: 0.05, duration: 3 * time.Minute, retain: 4095, timeout: 15 * time.Minute, workers: 32,
		gogc: "400", gomemlimit: "512MiB"}
}

func main() {
	o := defaultOptions()
	flag.IntVar(&o.nodes, "nodes", o.nodes, "Cilium nodes (500, 1000, 5000)")
	flag.IntVar(&o.readers, "readers", o.readers, "reader replicas, beside the leader")
	flag.IntVar(&o.workloadsPerNode, "workloads-per-node", o.workloadsPerNode, "workloads per node")
	flag.IntVar(&o.podsPerNode, "pods-per-node", o.podsPerNode, "pods per node")
	flag.IntVar(&o.minPeers, "min-peers", o.minPeers, "fewest servers of a workload")
	flag.IntVar(&o.maxPeers, "max-peers", o.maxPeers, "most servers of a workload")
	flag.Float64Var(&o.clients, "clients", o.clients, "the share of workloads that are clients (1: every workload)")
	flag.Float64Var(&o.rate, "rate", o.rate, "flows per node per second (Hubble flow messages; a connection is 17)")
	flag.DurationVar(&o.duration, "duration", o.duration, "how long the flows come")
	flag.Float64Var(&o.writeQPS, "write-qps", 0, "the writer's write_qps; 0: its default")
	flag.IntVar(&o.writeBurst, "write-burst", 0, "the writer's write_burst, with -write-qps")
	flag.DurationVar(&o.observedInterval, "observed-interval", 0, "the writer's observed_interval; 0: its default")
	flag.DurationVar(&o.aggregation, "aggregation-interval", 0, "the readers' aggregation interval (controller.scaleOut.aggregationInterval); 0: its default, 1s")
	flag.BoolVar(&o.addReader, "add-reader", false, "start one more reader during the flows (its nodes move to it by graceful hand-offs)")
	flag.BoolVar(&o.killReader, "kill-reader", false, "SIGKILL a reader during the flows")
	flag.BoolVar(&o.killLeader, "kill-leader", false, "SIGKILL the leader during the flows (and start it again)")
	flag.Float64Var(&o.monitored, "monitored", o.monitored, "the share of the Deployments that serve an edge whose ingress gets a monitor-mode policy that allows nothing (each connection to them a violation)")
	flag.Float64Var(&o.replace, "replace", 0, "the share of nodes to replace during the flows (0.1: 10%)")
	flag.IntVar(&o.retain, "buffer", o.retain, "each node's ring buffer (hubble.eventBufferCapacity)")
	flag.DurationVar(&o.settle, "settle", 0, "the longest wait for every edge's evidence to count what was sent; 0: three observed intervals and a minute")
	flag.DurationVar(&o.timeout, "timeout", o.timeout, "the longest wait of each phase")
	flag.IntVar(&o.workers, "workers", o.workers, "concurrent requests while creating the cluster")
	flag.StringVar(&o.gogc, "gogc", o.gogc, "GOGC of the binary, as the chart sets it")
	flag.StringVar(&o.gomemlimit, "gomemlimit", o.gomemlimit, "GOMEMLIMIT of the binary, as the chart sets it")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations, logs, certificates)")
	flag.Parse()
	if o.nodes < 1 || o.readers < 1 || o.workloadsPerNode < 1 || o.podsPerNode < 1 || o.minPeers < 1 || o.maxPeers < o.minPeers {
		fmt.Fprintln(os.Stderr, "scaletest: -nodes, -readers, -workloads-per-node, -pods-per-node and -min-peers must be positive, -max-peers at least -min-peers")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rep, err := run(ctx, o)
	stop()
	if rep != nil {
		rep.print(os.Stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "scaletest failed: %v\n", err)
		os.Exit(1)
	}
}
