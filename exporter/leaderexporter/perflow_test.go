package leaderexporter

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

// TestTheLeaderPaysPerEdgeNotPerFlow: a reader's whole pipeline after its
// receiver (the learning processor, then this exporter) sends the leader one
// record per distinct edge, observation, coverage gap and node progress of
// its interval, however many flows and batches they stand for. Every batch
// here carries a Hubble lost-event notice of the node, as a busy node's
// stream does, and flows of a pod that the cache does not know: each is a
// coverage gap of every workload concerned, which must be merged as edges
// are, not sent once a notice or a batch. The counts that the leader gets
// add up to what the reader learned, and the batch kept for a new leader
// holds no gap (the writer does not count gaps by batch, so a new leader
// would count them twice).
func TestTheLeaderPaysPerEdgeNotPerFlow(t *testing.T) {
	const (
		node            = "worker-1"
		batches         = 200
		flowsPerBatch   = 1000
		lostPerNotice   = 17
		goalPer1000     = 10.0
		unknownPodFlows = 10 // of each batch's flows
	)
	ref := func(ns, name string) workload.Ref {
		return workload.Ref{Namespace: ns, Kind: v1alpha1.WorkloadKindDeployment, Name: name}
	}
	type pod struct {
		w        workload.Ref
		name, ip string
	}
	web, api, db := pod{ref("shop", "web"), "web-1", "10.0.0.1"}, pod{ref("shop", "api"), "api-1", "10.0.0.2"}, pod{ref("data", "db"), "db-1", "10.0.0.3"}
	// cache's pod is not in the cache: its flows cannot be attributed.
	cache := pod{ref("shop", "cache"), "cache-1", "10.0.0.4"}
	replica := enforcerextensiontest.New()
	for _, p := range []pod{web, api, db} {
		replica.AddWorkload(p.w, enforcerextensiontest.WorkloadInfo{}, p.ip)
		replica.AddPod(p.w, p.name)
	}
	replica.PlaceOn(node, web.w, api.w, db.w)
	learner, learned := replica.StartLogsProcessor(t, learningprocessor.NewFactory())

	env := startLeaderReceiver(t)
	env.replica.Lead()
	e, readerTel := startReader(t, env, time.Hour) // one interval: it ends at the shutdown
	shutDown := false
	t.Cleanup(func() {
		if !shutDown {
			_ = e.Shutdown(context.Background())
		}
	})

	end := func(p pod, port uint32) flow.Endpoint {
		return flow.Endpoint{Address: p.ip, Port: port, Namespace: p.w.Namespace, Pod: p.name,
			WorkloadKind: string(p.w.Kind), WorkloadName: p.w.Name}
	}
	conns := []struct {
		src, dst pod
		port     uint32
	}{{web, api, 8080}, {api, db, 5432}, {web, db, 5432}, {web, cache, 6379}}
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	var flows int64
	for b := range batches {
		ld, sl := newScope()
		at := start.Add(time.Duration(b) * time.Second)
		for i := range flowsPerBatch {
			c := conns[i%(len(conns)-1)]
			if i < unknownPodFlows {
				c = conns[len(conns)-1]
			}
			rec := flow.Record{Time: at.Add(time.Duration(i) * time.Millisecond), Provider: flow.ProviderCilium,
				Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterSource, Direction: flow.DirectionEgress,
				Transport: flow.TransportTCP, Source: end(c.src, 40000+uint32(i)), Destination: end(c.dst, c.port), Count: 1}
			rec.WriteTo(sl.LogRecords().AppendEmpty())
			flows++
		}
		(&flow.Gap{Time: at, Provider: flow.ProviderCilium, Cause: flow.GapLostEvents, Node: node, Lost: lostPerNotice}).AppendTo(sl)
		flowsource.WriteProgress(sl.LogRecords().AppendEmpty(), flowsource.Mark{Key: node, Time: at.Add(time.Second)})
		if err := learner.ConsumeLogs(context.Background(), ld); err != nil {
			t.Fatal(err)
		}
	}

	// What the reader's learning handed the exporter, and the distinct
	// records of it: what the leader may receive.
	var out []plog.LogRecord
	for _, ld := range learned.AllLogs() {
		out = append(out, records(ld)...)
		if err := e.ConsumeLogs(context.Background(), ld); err != nil {
			t.Fatal(err)
		}
	}
	agg := newAggregator()
	distinct := map[string]bool{}
	want := map[string]int64{}
	for _, lr := range out {
		distinct[string(agg.keyOf(nil, lr))] = true
		want[lr.EventName()+" flows"] += attrInt(lr, learning.AttrFlows, 0)
		want[lr.EventName()+" events"] += attrInt(lr, learning.AttrGapEvents, 0)
		want[lr.EventName()+" reports"] += attrInt(lr, learning.AttrGapReports, 1)
	}
	if n := len(distinct); n < 10 || n > 20 {
		t.Fatalf("learning handed on %d distinct records in %d: the test's flows should give a dozen or so", n, len(out))
	}

	shutDown = true
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The leader receiver takes the progress records out; the rest it
	// hands on.
	got := records(env.sink.AllLogs()...)
	sent := counter(readerTel, MetricRecordsSent, "")
	per1000 := float64(sent) * 1000 / float64(flows)
	t.Logf("%d flows in %d batches: learning handed on %d records, %d distinct; the reader sent the leader %d, %.3f per 1,000 flows",
		flows, batches, len(out), len(distinct), sent, per1000)
	if sent != int64(len(distinct)) || len(got) != len(distinct)-1 {
		byEvent := map[string]int{}
		for _, lr := range got {
			byEvent[lr.EventName()]++
		}
		t.Fatalf("the reader sent %d records, the leader handed on %d (%v); want one per distinct record of the interval, %d, the node's progress taken out",
			sent, len(got), byEvent, len(distinct))
	}
	if per1000 > goalPer1000 {
		t.Fatalf("the leader received %.3f records per 1,000 flows, want at most %.0f", per1000, goalPer1000)
	}
	have := map[string]int64{}
	for _, lr := range got {
		have[lr.EventName()+" flows"] += attrInt(lr, learning.AttrFlows, 0)
		have[lr.EventName()+" events"] += attrInt(lr, learning.AttrGapEvents, 0)
		have[lr.EventName()+" reports"] += attrInt(lr, learning.AttrGapReports, 1)
	}
	for k, n := range want {
		if have[k] != n {
			t.Errorf("%s: the leader has %d, the reader handed on %d", k, have[k], n)
		}
	}
	var g learning.Gap
	for _, lr := range got {
		if g.ReadFrom(lr) && g.Cause == v1alpha1.CoverageLostEvents &&
			(g.ReportCount() != batches || g.Events != batches*lostPerNotice || !g.FirstTime().Equal(start) || !g.Time.Equal(start.Add((batches-1)*time.Second))) {
			t.Errorf("lost events of %s: %d reports of %d events, %s to %s; want %d of %d, %s to %s", g.Workload, g.ReportCount(), g.Events,
				g.FirstTime(), g.Time, batches, batches*lostPerNotice, start, start.Add((batches-1)*time.Second))
		}
	}

	// The batch kept for a new leader: numbered, with its edges,
	// observations and progress, without its gaps.
	s := e.(*leaderExporter).sender
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if len(s.batches.kept) != 1 {
		t.Fatalf("%d batches kept, want the interval's one", len(s.batches.kept))
	}
	kept := records(s.batches.kept[0].ld)
	for _, lr := range kept {
		if lr.EventName() == learning.GapEventName {
			t.Fatalf("the kept batch holds a coverage gap: a new leader would count it twice")
		}
	}
	if gaps := have[learning.GapEventName+" reports"]; len(kept) == 0 || gaps == 0 || len(kept) >= len(got) {
		t.Fatalf("kept %d records of the %d sent (%d gap reports)", len(kept), len(got), gaps)
	}
}

// attrInt is lr's integer attribute k, or missing when it has none.
func attrInt(lr plog.LogRecord, k string, missing int64) int64 {
	if v, ok := lr.Attributes().Get(k); ok {
		return v.Int()
	}
	if lr.EventName() != learning.GapEventName && k == learning.AttrGapReports {
		return 0
	}
	return missing
}
