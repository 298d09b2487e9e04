// Command demo runs Network Enforcer's main job on a machine with no cluster: a
// local control plane with the CRDs and admission policies, the sample workloads
// of testdata/, a Hubble Relay replaying testdata/hubble/flows.jsonl, and the
// built distribution with the configuration that the Helm chart renders for
// Cilium (backend cilium, outside peers learned as entities). It walks through
// learning (an outside service by its DNS name), promotion, the
// CiliumNetworkPolicy and a violation, then leaves everything running for kubectl until Ctrl-C.
//
// `make demo` builds what it needs, builds the demo and runs it. Ctrl-C stops it
// cleanly with exit status 0 (see takeTerminal).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

func main() {
	once := flag.Bool("once", false, "stop after the walk-through instead of waiting for Ctrl-C")
	flag.Parse()
	os.Exit(demoMain(*once))
}

// demoMain runs the demo and returns its exit status: 0 also when Ctrl-C (or
// SIGTERM) stops it.
func demoMain(once bool) int {
	restore := takeTerminal()
	defer restore()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := controlplanetest.RepoRoot()
	if err == nil {
		err = run(ctx, filepath.Join(root, ".cache", "demo"), once)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		return 1
	}
	return 0
}

// run runs the demo with its files (kubeconfig, certificates, configurations,
// logs) in dir, which it empties first.
func run(ctx context.Context, dir string, once bool) error {
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d := &demo{root: root, dir: dir, started: time.Now()}
	defer d.stop()
	for _, s := range []struct {
		title string
		run   func(context.Context) error
	}{
		{"Starting a local control plane (etcd, kube-apiserver, kube-controller-manager) with the CRDs and admission policies", d.startControlPlane},
		{"Creating the sample workloads that the recorded flows describe", d.createWorkloads},
		{"Starting a Hubble Relay that replays testdata/hubble/flows.jsonl over mutual TLS", d.startRelay},
		{"Rendering the Helm chart for Cilium and starting the enforcer and its telemetry collector", d.startCollectors},
		{"Waiting for proposals: learning from the recorded flows", d.waitForProposals},
		{"Reading the evidence: an outside service learned by its name (status.observed, spec.outside)", d.showEvidence},
		{"Promoting the cart's two proposals with kubectl label", d.promote},
		{"Waiting for the CiliumNetworkPolicies that the policies render in protect mode (backend cilium)", d.waitForRendered},
		{"The review page's graph: one arrow per connection, with each end's state", d.showReviewGraph},
		{"A connection the policy does not allow: the data plane drops it, the enforcer reports it", d.violate},
	} {
		if err := ctx.Err(); err != nil {
			return err
		}
		d.step(s.title)
		if err := s.run(ctx); err != nil {
			return err
		}
	}
	d.lookAround()
	d.reviewNote()
	if once {
		return nil
	}
	fmt.Println("\nEverything keeps running. Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Println("\nStopping...")
	return nil
}
