// Command realnode runs the real single-node cluster of
// internal/realnodetest on this machine (root), for a person: `make cluster`.
//
// Usage:
//
//	realnode [-cni cilium|bridge] run   start it, print its kubeconfig, keep it up until
//	                                    SIGINT or SIGTERM, then clean the host
//	realnode down                       clean up what a killed run left behind
//	realnode import TAR                 import a docker tarball into the node's containerd
//	                                    (pods use it with imagePullPolicy: Never)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/realnodetest"
)

func main() {
	cni := flag.String("cni", realnodetest.CNICilium, "the node's CNI: cilium (the Cilium agent, Hubble and hubble-relay) or bridge (a bridge and kube-router's NetworkPolicy firewall)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: realnode [-cni cilium|bridge] run | down | import TAR")
		flag.PrintDefaults()
	}
	flag.Parse()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		fail(err)
	}
	cfg := realnodetest.Config{Root: root, CNI: *cni, MonitorAggregation: os.Getenv("CILIUM_MONITOR_AGGREGATION")}
	switch flag.Arg(0) {
	case "run":
		fail(run(cfg))
	case "down":
		fail(realnodetest.Down(cfg))
	case "import":
		if flag.NArg() != 2 {
			flag.Usage()
			os.Exit(2)
		}
		fail(realnodetest.Import(cfg, flag.Arg(1)))
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func run(cfg realnodetest.Config) error {
	// Caught from the start: a signal while the node comes up ends the run
	// once Start returns, with the host cleaned.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	c, err := realnodetest.Start(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("cluster ready: KUBECONFIG=%s\n", c.Kubeconfig())
	if c.CNI() == realnodetest.CNICilium {
		fmt.Printf("outside host: netns %s at %s\n", realnodetest.OutsideNS, realnodetest.OutsideIP)
		fmt.Fprintf(os.Stderr, "cluster: Cilium: %[1]s/cilium-dbg status; %[1]s/cilium-dbg monitor\n", c.Bin())
	}
	fmt.Fprintf(os.Stderr, "cluster: kubectl at the node's version: %s/kubectl; import an image: realnode import TAR; Ctrl-C stops the cluster and cleans the host\n", c.Bin())
	<-sigs
	// Signals that come while the host is cleaned (an interrupted run sends
	// SIGTERM twice) stay caught: an exit now would leave it half clean.
	return c.Stop()
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		os.Exit(1)
	}
}
