// Command cachemem measures what the enforcer extension's shared cache costs in
// resident memory. It starts a real control plane, fills it with a cluster of the
// given size, then runs the built collector twice with the same pipeline: once
// without the enforcer extension (the baseline) and once with it, and compares the
// resident set sizes of the two processes.
//
// The cluster's objects are production-sized on purpose: the cache keeps only a
// slim copy of each pod and workload, but every full object still crosses the
// collector's memory while it lists and decodes, so empty objects would flatter
// the result.
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
	"text/tabwriter"
	"time"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/testbed/fakecluster"
)

const mib = 1 << 20

// options are the command-line flags.
type options struct {
	pods, workloads, namespaces, workers int
	binary                               string
	limitMiB                             float64
	settle, sample                       time.Duration
	godebug                              string
	verbose, hold                        bool
}

func main() {
	var o options
	flag.IntVar(&o.pods, "pods", 50000, "pods to create, owned by the workloads")
	flag.IntVar(&o.workloads, "workloads", 10000, "workloads to create: Deployments (each with a ReplicaSet), StatefulSets, DaemonSets and CronJobs (each with a Job)")
	flag.IntVar(&o.namespaces, "namespaces", 100, "namespaces to spread the workloads over")
	flag.IntVar(&o.workers, "workers", 32, "concurrent requests while creating the cluster")
	flag.StringVar(&o.binary, "binary", "bin/network-enforcer", "the collector binary to measure")
	flag.Float64Var(&o.limitMiB, "limit-mib", 300, "the enforcer run passes when its RSS is at most this many MiB")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "wait after the collector is healthy before sampling its RSS")
	flag.DurationVar(&o.sample, "sample", 10*time.Second, "how long to sample RSS (once a second); the maximum counts")
	flag.StringVar(&o.godebug, "godebug", "", "GODEBUG for both collector runs, such as gctrace=1 to see the heap at each GC (use with -v)")
	flag.BoolVar(&o.verbose, "v", false, "copy the collectors' output to stderr")
	flag.BoolVar(&o.hold, "hold", false, "after measuring, keep the control plane up, with a kubeconfig for it, until interrupted")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "cachemem: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachemem:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	if o.pods < 0 || o.workloads < 0 || o.namespaces < 1 || o.workers < 1 {
		return errors.New("-pods and -workloads must not be negative, -namespaces and -workers must be positive")
	}
	binary, err := filepath.Abs(o.binary)
	if err != nil {
		return err
	}
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("%w: run `make build` first", err)
	}
	dir, err := os.MkdirTemp("", "cachemem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	start := time.Now()
	logf("starting the control plane")
	env, err := controlplanetest.New(controlplanetest.Options{})
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() {
		logf("stopping the control plane")
		err = errors.Join(err, env.Stop())
	}()

	cs, err := fakecluster.CreatingClient(env.Config, "cachemem")
	if err != nil {
		return err
	}
	p := fakecluster.NewPlan(o.pods, o.workloads, o.namespaces)
	created := time.Now()
	if err := p.Create(ctx, cs, o.workers); err != nil {
		return fmt.Errorf("creating the cluster: %w", err)
	}
	logf("created the cluster in %s", time.Since(created).Round(time.Second))
	if err := report(ctx, cs); err != nil {
		return err
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	c := collector{binary: binary, kubeconfig: kubeconfig, dir: dir, opts: o}
	logf("measuring the baseline: the pipeline without the enforcer extension")
	base, err := c.measure(ctx, false)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	logf("measuring the pipeline with the enforcer extension")
	enf, err := c.measure(ctx, true)
	if err != nil {
		return fmt.Errorf("enforcer: %w", err)
	}

	printTable(o, p, base, enf)
	logf("total run time %s", time.Since(start).Round(time.Second))
	if o.hold {
		// Filling a large cluster takes minutes; keeping it lets one run the
		// collector again by hand, with other settings or a profiler.
		logf("holding the control plane until interrupted; KUBECONFIG=%s", kubeconfig)
		<-ctx.Done()
	}
	return nil
}

func printTable(o options, p *fakecluster.Plan, base, enf measurement) {
	diff := enf.rss - base.rss
	verdict := "PASS"
	if float64(enf.rss)/mib > o.limitMiB {
		verdict = "FAIL"
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "pods\tworkloads\tbaseline RSS MiB\tenforcer RSS MiB\tdifference MiB\tratio\ttarget ≤ %.0f MiB\t\n", o.limitMiB)
	fmt.Fprintf(w, "%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t\n",
		p.PodCount(), p.WorkloadCount(), float64(base.rss)/mib, float64(enf.rss)/mib, float64(diff)/mib,
		float64(enf.rss)/float64(base.rss), verdict)
	w.Flush()
	fmt.Println()
	fmt.Printf("peak RSS (VmHWM): baseline %.1f MiB, enforcer %.1f MiB\n", float64(base.hwm)/mib, float64(enf.hwm)/mib)
	fmt.Printf("time to healthy:  baseline %s, enforcer %s (the enforcer is healthy once its cache has synced)\n",
		base.healthy.Round(10*time.Millisecond), enf.healthy.Round(10*time.Millisecond))
	fmt.Println()
}

func logf(format string, args ...any) { fakecluster.Logf(format, args...) }
