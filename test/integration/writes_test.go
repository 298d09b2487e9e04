package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

// Figures of the write test: a million flows over a thousand distinct edges.
const (
	manyFlows = 1_000_000
	portsEach = 100
	batchSize = 1000
)

// edgePairs are source and destination pods of the fixtures' cluster that no
// other test learns about.
var edgePairs = [][2]flow.Endpoint{
	{{Address: "10.0.1.31"}, {Address: "10.244.1.15"}},  // default/probe -> analytics/reports
	{{Address: "10.0.9.20"}, {Address: "10.244.1.15"}},  // batch/migrate-db -> analytics/reports
	{{Address: "10.244.5.40"}, {Address: "10.244.6.2"}}, // store/batch -> web/frontend
	{{Address: "10.244.1.15"}, {Address: "10.0.1.31"}},  // analytics/reports -> default/probe
	{{Address: "10.244.6.2"}, {Address: "10.0.9.20"}},   // web/frontend -> batch/migrate-db
}

// TestWritesFollowEdgesNotFlows sends a million Cilium flows over 1,000 distinct
// edges (5 pairs of workloads, 100 ports, both sides) through the learning path:
// each proposal's spec is written at most twice, and its status once with each;
// the same flows again, through a fresh pipeline as after a restart, write no
// spec, and each status (the observed edges' flows) at most once.
func TestWritesFollowEdgesNotFlows(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	first := startPipeline(t, sources{})
	start := time.Now()
	sendFlows(t, first)
	elapsed := time.Since(start)
	first.WaitWritten(t)
	writes, statusWrites := first.SpecWrites(), first.StatusWrites()
	edges := first.Counter(learningprocessor.MetricEdges, nil)
	if edges != 2*manyFlows {
		t.Fatalf("%d edges handed on for %d flows", edges, manyFlows)
	}
	proposalsMade := len(proposalsOf(t, "default", "batch", "store", "analytics", "web"))
	if writes == 0 || writes > int64(2*proposalsMade) {
		t.Errorf("%d spec writes for %d proposals", writes, proposalsMade)
	}
	// A spec write carries the status that describes it (its generation,
	// Bounded, Written), so a proposal whose spec a busy machine writes in two
	// rounds has two status writes; the observed edges' flows add none.
	if statusWrites > writes {
		t.Errorf("%d status writes for %d spec writes of %d proposals", statusWrites, writes, proposalsMade)
	}
	first.Stop(t)

	replay := startPipeline(t, sources{})
	sendFlows(t, replay)
	replay.WaitWritten(t) // every proposal's round, in which it finds no spec to write
	if n := replay.SpecWrites(); n != 0 {
		t.Errorf("the replay wrote %d specs", n)
	}
	replayStatus := replay.StatusWrites()
	if replayStatus > int64(proposalsMade) {
		t.Errorf("the replay wrote %d statuses for %d proposals", replayStatus, proposalsMade)
	}
	t.Logf("%d flows, 1000 distinct edges: %d proposals, %d spec writes (%.2f per proposal), %d status writes, replay 0 spec writes and %d status writes; learning path %.0f flows/s",
		manyFlows, proposalsMade, writes, float64(writes)/float64(proposalsMade), statusWrites, replayStatus, float64(manyFlows)/elapsed.Seconds())
}

// sendFlows hands the million flows to the pipeline's processor in batches.
func sendFlows(t *testing.T, p *pipeline) {
	t.Helper()
	rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1}
	for sent := 0; sent < manyFlows; {
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		for range batchSize {
			pair := edgePairs[sent%len(edgePairs)]
			rec.Source, rec.Destination = pair[0], pair[1]
			rec.Destination.Port = uint32(8000 + (sent/len(edgePairs))%portsEach)
			rec.AppendTo(sl)
			sent++
		}
		must(t, p.Processor.ConsumeLogs(context.Background(), ld))
	}
}

// proposalsOf lists the proposals in the namespaces given.
func proposalsOf(t *testing.T, namespaces ...string) []string {
	_, versions := proposals(t)
	var out []string
	for k := range versions {
		for _, ns := range namespaces {
			if len(k) > len(ns) && k[:len(ns)+1] == ns+"/" {
				out = append(out, k)
			}
		}
	}
	return out
}

// TestPortScanIsBounded scans every port from one workload to another while
// learning: the scanned pair's proposals stay small (one port range) and say
// they are Bounded, and every proposal of the run (the fixtures', the other
// tests') is written, none refused.
func TestPortScanIsBounded(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	p := startPipeline(t, sources{})
	scan := edgePairs[0] // default/probe -> analytics/reports
	rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1}
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for port := uint32(1); port <= 65535; port++ {
		rec.Source, rec.Destination = scan[0], scan[1]
		rec.Destination.Port = port
		rec.AppendTo(sl)
		if port%1000 == 0 {
			must(t, p.Processor.ConsumeLogs(ctx, ld))
			ld = plog.NewLogs()
			sl = ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		}
	}
	// An ordinary edge in the same run, whose proposals stay within bounds.
	rec.Source, rec.Destination = edgePairs[2][0], edgePairs[2][1] // store/batch -> web/frontend
	rec.Destination.Port = 7000
	rec.AppendTo(sl)
	must(t, p.Processor.ConsumeLogs(ctx, ld))
	p.WaitWritten(t)
	if n := p.Counter(k8swriterexporter.MetricWrites, map[string]string{"result": "refused"}); n != 0 {
		t.Errorf("%d writes refused", n)
	}

	for _, name := range []types.NamespacedName{key("default", "deployment-probe-egress"), key("analytics", "deployment-reports-ingress")} {
		var prop v1alpha1.WorkloadNetworkPolicyProposal
		must(t, env.Client.Get(ctx, name, &prop))
		b, err := json.Marshal(&prop)
		must(t, err)
		if len(b) >= 64<<10 {
			t.Errorf("%s: %d bytes of JSON", name, len(b))
		}
		t.Logf("%s after a 65,535-port scan: %d bytes of JSON", name, len(b))
		c := meta.FindStatusCondition(prop.Status.Conditions, v1alpha1.ConditionBounded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonOverLimits {
			t.Errorf("%s: Bounded condition %+v", name, c)
		}
		// The scanned peer's ports are one range; the peers that other tests
		// teach about are there as they were.
		k := prop.Spec.Kubernetes
		scanned := false
		for _, np := range append(ingressPorts(k), egressPorts(k)...) {
			scanned = scanned || (np.Port.IntVal == 1 && np.EndPort != nil && *np.EndPort == 65535)
		}
		if !scanned || len(k.Ingress)+len(k.Egress) > 2 {
			t.Errorf("%s: %+v, want the scan as one range 1-65535", name, k)
		}
	}
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	must(t, env.Client.List(ctx, &list))
	within := 0
	for _, prop := range list.Items {
		if c := meta.FindStatusCondition(prop.Status.Conditions, v1alpha1.ConditionWritten); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s/%s: Written condition %+v", prop.Namespace, prop.Name, c)
		}
		if meta.IsStatusConditionFalse(prop.Status.Conditions, v1alpha1.ConditionBounded) {
			within++
		}
	}
	if within == 0 {
		t.Error("no proposal of the run is within bounds")
	}
}

func ingressPorts(k *networkingv1.NetworkPolicySpec) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, r := range k.Ingress {
		out = append(out, r.Ports...)
	}
	return out
}

func egressPorts(k *networkingv1.NetworkPolicySpec) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, r := range k.Egress {
		out = append(out, r.Ports...)
	}
	return out
}
