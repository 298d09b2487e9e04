package integration

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
	"github.com/kubewarden/network-enforcer/internal/workload"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// violationBatch is how many flow records go into the path at once, as a
// receiver hands them on.
const violationBatch = 100

// violationBatches is how many distinct batches each case cycles through. The
// intruder's differ in their ports, so its violations are violationBatches *
// violationBatch distinct records between two status syncs: well below the
// buffer's max_buffered (10000 by default), so that the buffer never drops.
const violationBatches = 10

// BenchmarkViolationPath measures the violation path in process: Cilium flow
// records (the destination's report, ingress) through the learning processor,
// the writer and the violation processor to the event sink, against a real API
// server's cache, with a kubernetes-backend policy in monitor mode on guarded/api
// that allows guarded/client on TCP 8080, and the status sync running every
// second, so that its writes and what they set off are part of the cost.
//
//   - baseline: client to api:8080, candidates that the policy allows: the cost
//     of judging without events.
//   - violations: intruder to api on 1,000 ports, each flow a monitor violation
//     and an event. Its own baseline is measured first in the same run, with as
//     many batches, for x-baseline: ns per flow, violations over baseline.
//
// Both report flows/s (time in ConsumeLogs); violations also reports events/s,
// the latency from a batch entering ConsumeLogs to each of its events reaching
// the sink (p50-ms, p99-ms; the target is a p99 of at most 50 ms, reported, not
// asserted), the status writes made while it ran and the observations that the
// buffer dropped. It needs the test control plane (KUBEBUILDER_ASSETS, as make
// test sets it). The sync runs only every second: give it a -benchtime that
// lasts a few seconds, or status-writes stays 0.
func BenchmarkViolationPath(b *testing.B) {
	controlplanetest.Require(b)
	sink := &arrivalSink{}
	exporter, err := consumer.NewLogs(sink.consume)
	if err != nil {
		b.Fatal(err)
	}
	p := pipelinetest.StartPipeline(b, pipelinetest.Options{Violations: exporter, StatusSyncInterval: time.Second})
	createBenchPolicy(b, p, apiIngressPolicy("bench-api-ingress", v1alpha1.PolicyModeMonitor))
	// The sync runs only while this replica leads.
	if !waitFor(b, "the lease", time.Minute, p.Enforcer.IsLeader) {
		b.FailNow()
	}

	allowed := flowBatches(guardedClient, func(int, int) uint32 { return 8080 })
	intruding := flowBatches(guardedIntruder, func(k, i int) uint32 { return uint32(10000 + k*violationBatch + i) })

	b.Run("baseline", func(b *testing.B) {
		dismissed := p.Counter(violationprocessor.MetricDismissed, map[string]string{"reason": "allowed"})
		sink.reset(0)
		r := newPathRun(p, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			r.feed(b, allowed[i%len(allowed)])
		}
		b.StopTimer()
		flows := int64(b.N * violationBatch)
		if n := p.Counter(violationprocessor.MetricDismissed, map[string]string{"reason": "allowed"}) - dismissed; n != flows {
			b.Errorf("%d candidates dismissed as allowed, want %d", n, flows)
		}
		if n := sink.count(); n != 0 {
			b.Errorf("%d events for allowed flows", n)
		}
		b.ReportMetric(float64(flows)/r.busy.Seconds(), "flows/s")
	})

	b.Run("violations", func(b *testing.B) {
		// The ratio's baseline: in this run, with as many batches.
		base := newPathRun(p, b.N)
		for i := range b.N {
			base.feed(b, allowed[i%len(allowed)])
		}
		sink.reset(b.N)
		observed := p.Counter(violationprocessor.MetricObserved, map[string]string{"action": "monitor"})
		dropped := p.Counter(violationprocessor.MetricBufferDropped, nil)
		writes := p.Counter(violationprocessor.MetricStatusWrites, map[string]string{"result": "ok"})
		r := newPathRun(p, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			r.feed(b, intruding[i%len(intruding)])
		}
		b.StopTimer()

		flows := int64(b.N * violationBatch)
		if n := p.Counter(violationprocessor.MetricObserved, map[string]string{"action": "monitor"}) - observed; n != flows {
			b.Errorf("%d monitor violations observed, want %d", n, flows)
		}
		n := sink.count()
		if n != flows {
			b.Errorf("%d events reached the sink, want %d", n, flows)
		}
		latency := r.latencies(b, sink.taken())
		b.ReportMetric(float64(flows)/r.busy.Seconds(), "flows/s")
		b.ReportMetric(float64(n)/r.busy.Seconds(), "events/s")
		b.ReportMetric(ms(quantile(latency, 0.50)), "p50-ms")
		b.ReportMetric(ms(quantile(latency, 0.99)), "p99-ms")
		b.ReportMetric(r.busy.Seconds()/base.busy.Seconds(), "x-baseline") // same flow count: ns per flow over ns per flow
		b.ReportMetric(float64(p.Counter(violationprocessor.MetricStatusWrites, map[string]string{"result": "ok"})-writes), "status-writes")
		d := p.Counter(violationprocessor.MetricBufferDropped, nil) - dropped
		b.ReportMetric(float64(d), "dropped")
		if d != 0 {
			b.Errorf("the buffer dropped %d observations of %d distinct records", d, violationBatches*violationBatch)
		}
	})
}

// flowBatches builds violationBatches batches of Cilium flows from src to
// guarded/api, as api's node reports them: flow i of batch k on port(k, i).
func flowBatches(src flow.Endpoint, port func(k, i int) uint32) []plog.Logs {
	out := make([]plog.Logs, violationBatches)
	for k := range out {
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		for i := range violationBatch {
			rec := cilium(src, guardedAPI, port(k, i), flow.OutcomeAllowed)
			rec.Source.Port = uint32(40000 + i)
			rec.AppendTo(sl)
		}
		out[k] = ld
	}
	return out
}

// pathRun feeds batches to the path and keeps when each entered it. Every batch
// gets its own timestamp, start plus its sequence number in nanoseconds, which
// the violation processor gives the batch's events: the sink's arrivals name the
// batch they came from.
type pathRun struct {
	p       *pipelinetest.Learning
	start   time.Time
	entered []time.Time
	busy    time.Duration // in ConsumeLogs
}

func newPathRun(p *pipelinetest.Learning, n int) *pathRun {
	return &pathRun{p: p, start: time.Now(), entered: make([]time.Time, 0, n)}
}

// feed sends one batch. The batches are reused: the path reads its input and
// keeps none of it, and building them is the receiver's cost, not the path's.
func (r *pathRun) feed(b *testing.B, ld plog.Logs) {
	ts := pcommon.NewTimestampFromTime(r.start.Add(time.Duration(len(r.entered))))
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := range lrs.Len() {
		lrs.At(i).SetTimestamp(ts)
	}
	t0 := time.Now()
	r.entered = append(r.entered, t0)
	if err := r.p.Processor.ConsumeLogs(context.Background(), ld); err != nil {
		b.Fatal(err)
	}
	r.busy += time.Since(t0)
}

// latencies are, for each arrival, how long after its batch entered the path
// its events reached the sink, with how many events it had.
func (r *pathRun) latencies(b *testing.B, arrivals []arrival) []weighted {
	out := make([]weighted, 0, len(arrivals))
	origin := r.start.UnixNano()
	for _, a := range arrivals {
		seq := int64(a.ts) - origin
		if seq < 0 || seq >= int64(len(r.entered)) {
			b.Errorf("an event with timestamp %v names no batch of this run", a.ts)
			continue
		}
		out = append(out, weighted{a.at.Sub(r.entered[seq]), a.n})
	}
	return out
}

type weighted struct {
	d time.Duration
	n int
}

// quantile is the q quantile of the durations, each counted n times.
func quantile(ds []weighted, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.SortFunc(ds, func(a, b weighted) int { return cmp.Compare(a.d, b.d) })
	total := 0
	for _, d := range ds {
		total += d.n
	}
	rank, seen := q*float64(total), 0
	for _, d := range ds {
		if seen += d.n; float64(seen) >= rank {
			return d.d
		}
	}
	return ds[len(ds)-1].d
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// arrivalSink is the benchmark's event exporter. For the
// policy_violation_observed events of each call, it keeps when they arrived,
// their timestamp and how many there were: one entry per batch, not per event,
// so that it costs the path little.
type arrivalSink struct {
	mu       sync.Mutex
	arrivals []arrival
	events   int64
}

type arrival struct {
	ts pcommon.Timestamp
	at time.Time
	n  int
}

func (s *arrivalSink) consume(_ context.Context, ld plog.Logs) error {
	at := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	first := len(s.arrivals)
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		if lr.EventName() != violationevent.Observed {
			return
		}
		s.events++
		ts := lr.Timestamp()
		for i := first; i < len(s.arrivals); i++ {
			if s.arrivals[i].ts == ts {
				s.arrivals[i].n++
				return
			}
		}
		s.arrivals = append(s.arrivals, arrival{ts: ts, at: at, n: 1})
	})
	return nil
}

// reset forgets what arrived, with room for n arrivals.
func (s *arrivalSink) reset(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrivals, s.events = make([]arrival, 0, n), 0
}

func (s *arrivalSink) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

func (s *arrivalSink) taken() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.arrivals)
}

// createBenchPolicy is createPolicy for a benchmark: it creates pol, waits until
// the cache has it as the only policy of its target and direction (another
// would make every violation unattributable), and deletes it at the end, waiting
// until it is gone so that what runs next does not see it.
func createBenchPolicy(b *testing.B, p *pipelinetest.Learning, pol *v1alpha1.WorkloadNetworkPolicy) {
	b.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, pol); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := env.Client.Delete(ctx, pol); err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("deleting %s: %v", pol.Name, err)
			return
		}
		waitFor(b, "the deletion of "+pol.Name, 30*time.Second, func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(pol), &v1alpha1.WorkloadNetworkPolicy{}))
		})
	})
	target := workload.Ref{Namespace: pol.Namespace, Kind: pol.Spec.TargetRef.Kind, Name: pol.Spec.TargetRef.Name}
	if !waitFor(b, "the cache to see "+pol.Name+" as the only policy of its target", 30*time.Second, func() bool {
		got := p.Enforcer.Policies(target, pol.Spec.Direction)
		return len(got) == 1 && got[0].Name == pol.Name && got[0].Spec.Mode == pol.Spec.Mode
	}) {
		b.FailNow()
	}
}

// waitFor waits for cond, and reports an error and returns false when it
// does not hold in time (testwait.Try).
var waitFor = testwait.Try
