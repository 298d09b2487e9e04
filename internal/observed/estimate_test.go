package observed

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// floodPeers is the flood of the tests: distinct outside addresses.
const floodPeers = 200_000

// floodKey is the edge of the i-th outside address to port 8080.
func floodKey(i int) Key {
	a := netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)})
	return Key{Class: v1alpha1.PeerClassExternal, Address: a.String(), Protocol: corev1.ProtocolTCP, Port: 8080}
}

// within reports whether got is within three standard errors of want.
func within(got, want int) bool {
	return math.Abs(float64(got-want)) <= 3*StandardError*float64(want)
}

// flood adds one flow of each flood peer, and of a few workload and host
// peers, to obj, writing the status every 10,000 flows as a writer would.
func flood(t *testing.T, s *Store, judge Judge, cur *v1alpha1.ObservedTraffic) *Update {
	t.Helper()
	var u *Update
	for i := range floodPeers {
		k := floodKey(i)
		s.Add(obj, &k, 1, t0.Add(time.Duration(i)*time.Millisecond))
		if i == 10 {
			s.Add(obj, &db, 1, t0)
			host := Key{Class: v1alpha1.PeerClassHost, Address: "10.0.0.1", Protocol: corev1.ProtocolTCP, Port: 8080}
			s.Add(obj, &host, 1, t0)
		}
		if i%10_000 == 9_999 {
			u = s.Status(obj, cur, judge, 32)
			u.Written(t0)
			*cur = u.Traffic
		}
	}
	return u
}

// TestFloodIsCountedPastTheTrackingLimit: 200,000 distinct outside peers
// against a tracking limit of 1,024. The counts are estimates within their
// stated error, say so, and the condition says the tracking is full.
func TestFloodIsCountedPastTheTrackingLimit(t *testing.T) {
	s := NewStore(1024, nil, nil)
	cur := &v1alpha1.ObservedTraffic{}
	u := flood(t, s, allowWorkloads, cur)
	tr := u.Traffic
	t.Logf("observedEdges %d, wouldBlockEdges %d for %d distinct edges", tr.ObservedEdges, tr.WouldBlockEdges, floodPeers+2)
	if !tr.Estimated || !within(int(tr.ObservedEdges), floodPeers+2) || !within(int(tr.WouldBlockEdges), floodPeers+1) {
		t.Fatalf("traffic: estimated %v, %d observed, %d would block", tr.Estimated, tr.ObservedEdges, tr.WouldBlockEdges)
	}
	if len(tr.Observed) != 32 || tr.OmittedEdges != tr.ObservedEdges-32 || tr.Estimators == nil || !tr.Estimators.TrackingLimitReached {
		t.Fatalf("listing: %d listed, %d omitted, estimators %+v", len(tr.Observed), tr.OmittedEdges, tr.Estimators)
	}
	if s.NotTracked() != int(tr.ObservedEdges)-1024 {
		t.Fatalf("not tracked: %d, want %d", s.NotTracked(), tr.ObservedEdges-1024)
	}
	c := u.WouldBlockCondition(1, nil)
	want := fmt.Sprintf("protect would block about %s observed edges: about %s External, 1 Host; 1,023 of them tracked; tracking limit 1,024 reached",
		round(int(tr.WouldBlockEdges)), round(u.WouldBlock[v1alpha1.PeerClassExternal]))
	if c.Status != metav1.ConditionTrue || c.Message != want {
		t.Fatalf("WouldBlock %s: %q, want %q", c.Status, c.Message, want)
	}
	e := u.EvidenceCompleteCondition(1)
	if e.Status != metav1.ConditionFalse || e.Reason != v1alpha1.ReasonTrackingLimit ||
		e.Message != fmt.Sprintf("tracking limit 1,024 reached: about %s observed edges are counted by estimate only (within about 3.25 %%)", round(int(tr.ObservedEdges)-1024)) {
		t.Fatalf("EvidenceComplete %s %s: %q", e.Status, e.Reason, e.Message)
	}
}

// TestFloodAllowedByABlock: the spec allows the flood's addresses (an
// ip_blocks rule). The edges past the limit are judged when they are seen:
// none would be blocked, and the rule's use counts every flow.
func TestFloodAllowedByABlock(t *testing.T) {
	block := netip.MustParsePrefix("100.64.0.0/10")
	judge := func(k *Key) (string, bool) {
		if a, err := netip.ParseAddr(k.Address); err == nil && block.Contains(a) {
			return "ingress[1]", true
		}
		return allowWorkloads(k)
	}
	// The writer's judge of the object's spec, for the edges past the limit
	// that come before its first status.
	s := NewStore(1024, func(types.NamespacedName) Judge { return judge }, nil)
	cur := &v1alpha1.ObservedTraffic{}
	var flows int64
	for i := range floodPeers {
		k := floodKey(i)
		s.Add(obj, &k, 1, t0)
		if i%10_000 == 9_999 {
			u := s.Status(obj, cur, judge, 32)
			flows += u.Rules["ingress[1]"].Flows
			u.Written(t0)
			*cur = u.Traffic
		}
	}
	if !within(int(cur.ObservedEdges), floodPeers) || cur.WouldBlockEdges != 0 || !cur.Estimated {
		t.Fatalf("traffic: estimated %v, %d observed, %d would block", cur.Estimated, cur.ObservedEdges, cur.WouldBlockEdges)
	}
	if flows != floodPeers {
		t.Fatalf("the rule's use counts %d flows, want %d", flows, floodPeers)
	}
}

// TestANewWriterKeepsTheCounts: a restart or a new leader reads the status
// and counts on from it, with the same estimate, and goes on counting.
func TestANewWriterKeepsTheCounts(t *testing.T) {
	s := NewStore(1024, nil, nil)
	cur := &v1alpha1.ObservedTraffic{}
	before := flood(t, s, allowWorkloads, cur).Traffic

	next := NewStore(1024, nil, nil)
	u := next.Status(obj, cur, allowWorkloads, 32)
	if u.Err != nil {
		t.Fatal(u.Err)
	}
	if tr := u.Traffic; tr.ObservedEdges != before.ObservedEdges || tr.WouldBlockEdges != before.WouldBlockEdges || !tr.Estimated {
		t.Fatalf("the next writer counts %d observed, %d would block; the last wrote %d, %d",
			tr.ObservedEdges, tr.WouldBlockEdges, before.ObservedEdges, before.WouldBlockEdges)
	}
	if e := u.EvidenceCompleteCondition(1); e.Reason != v1alpha1.ReasonTrackingLimit {
		t.Fatalf("EvidenceComplete after a restart: %s %q", e.Reason, e.Message)
	}
	u.Written(t0)
	*cur = u.Traffic
	// 100,000 more peers: the count goes on from the last writer's.
	for i := floodPeers; i < floodPeers+100_000; i++ {
		k := floodKey(i)
		next.Add(obj, &k, 1, t0)
	}
	u = next.Status(obj, cur, allowWorkloads, 32)
	if !within(int(u.Traffic.ObservedEdges), floodPeers+100_002) {
		t.Fatalf("after 100,000 more: %d observed", u.Traffic.ObservedEdges)
	}
}

// TestCountsAreExactAgainOnceSeenAgain: a status lists 32 of 100 edges; the
// next writer counts the 68 others by estimate, says so, and once it has
// seen them all again its counts are exact again.
func TestCountsAreExactAgainOnceSeenAgain(t *testing.T) {
	s := NewStore(1024, nil, nil)
	keys := make([]Key, 100)
	for i := range keys {
		keys[i] = floodKey(i)
		s.Add(obj, &keys[i], 1, t0.Add(time.Duration(i)*time.Second))
	}
	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 32)
	if tr := u.Traffic; tr.ObservedEdges != 100 || tr.WouldBlockEdges != 100 || tr.Estimated || tr.Estimators == nil {
		t.Fatalf("first writer: %+v", tr)
	}
	if e := u.EvidenceCompleteCondition(1); e.Status != metav1.ConditionTrue || e.Reason != v1alpha1.ReasonAllTracked {
		t.Fatalf("EvidenceComplete: %s %s", e.Status, e.Reason)
	}
	cur := u.Traffic

	next := NewStore(1024, nil, nil)
	u = next.Status(obj, &cur, allowWorkloads, 32)
	if tr := u.Traffic; tr.ObservedEdges != 100 || tr.WouldBlockEdges != 100 || !tr.Estimated {
		t.Fatalf("next writer: %d observed, %d would block, estimated %v", tr.ObservedEdges, tr.WouldBlockEdges, tr.Estimated)
	}
	e := u.EvidenceCompleteCondition(1)
	if e.Status != metav1.ConditionFalse || e.Reason != v1alpha1.ReasonNotTracked || !strings.HasPrefix(e.Message, "about 68 observed edges") {
		t.Fatalf("EvidenceComplete: %s %s %q", e.Status, e.Reason, e.Message)
	}
	cur = u.Traffic
	for i := range keys {
		next.Add(obj, &keys[i], 1, t0.Add(time.Hour))
	}
	u = next.Status(obj, &cur, allowWorkloads, 32)
	if tr := u.Traffic; tr.ObservedEdges != 100 || tr.WouldBlockEdges != 100 || tr.Estimated {
		t.Fatalf("all seen again: %d observed, %d would block, estimated %v", tr.ObservedEdges, tr.WouldBlockEdges, tr.Estimated)
	}
	if e := u.EvidenceCompleteCondition(1); e.Reason != v1alpha1.ReasonAllTracked {
		t.Fatalf("EvidenceComplete once all are seen again: %s", e.Reason)
	}
}

// TestFewEdgesCarryNoEstimators: a status that lists every edge needs no
// estimators, and its counts are exact.
func TestFewEdgesCarryNoEstimators(t *testing.T) {
	s := NewStore(1024, nil, nil)
	s.Add(obj, &db, 1, t0)
	s.Add(obj, &stripe, 1, t0)
	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 32)
	if tr := u.Traffic; tr.Estimators != nil || tr.Estimated || tr.ObservedEdges != 2 {
		t.Fatalf("traffic %+v", tr)
	}
	st := struct{ Conditions []metav1.Condition }{}
	meta.SetStatusCondition(&st.Conditions, u.EvidenceCompleteCondition(1))
	if !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionEvidenceComplete) {
		t.Fatal("EvidenceComplete is not True")
	}
}

// TestUnreadableEstimators: estimators that do not decode are an error of
// the update, and the counts start again from the listing.
func TestUnreadableEstimators(t *testing.T) {
	cur := &v1alpha1.ObservedTraffic{Estimators: &v1alpha1.EdgeEstimators{Classes: []v1alpha1.ClassEstimators{
		{Class: v1alpha1.PeerClassExternal, Seen: []byte{2, 10, 0, 1, 0xff}},
	}}}
	s := NewStore(1024, nil, nil)
	s.Add(obj, &stripe, 1, t0)
	u := s.Status(obj, cur, allowWorkloads, 32)
	if u.Err == nil || !strings.Contains(u.Err.Error(), "the External estimator of seen edges") {
		t.Fatalf("error %v", u.Err)
	}
	if u.Traffic.ObservedEdges != 1 || s.BadEstimators() != 1 {
		t.Fatalf("%d observed, %d bad estimators", u.Traffic.ObservedEdges, s.BadEstimators())
	}
}

// TestEstimatorMemory measures the heap that the estimators of one object
// take under the flood: the goal is under 16 KiB.
func TestEstimatorMemory(t *testing.T) {
	const objects = 20
	ests := make([]estimators, objects)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for o := range ests {
		for i := range floodPeers / 10 {
			k := floodKey(i)
			ests[o].see(&k, true)
		}
		// The other classes, a few edges each.
		for _, c := range classOrder[2:] {
			k := Key{Class: c, Address: "10.0.0.1", Protocol: corev1.ProtocolTCP, Port: 80}
			ests[o].see(&k, false)
		}
		ests[o].buf = nil
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int(after.HeapAlloc-before.HeapAlloc) / objects
	runtime.KeepAlive(ests)
	t.Logf("estimators of one flooded object: %d bytes", per)
	if per > 16<<10 {
		t.Fatalf("estimators of one object take %d bytes, over 16 KiB", per)
	}
}

// FuzzUnmarshal: a status's estimator, whatever its bytes, decodes or is an
// error, and a decoded one counts.
func FuzzUnmarshal(f *testing.F) {
	es := estimators{}
	for i := range 2000 {
		k := floodKey(i)
		es.see(&k, false)
		if i == 5 {
			f.Add(marshal(es.class(v1alpha1.PeerClassExternal).seen))
		}
	}
	f.Add(marshal(es.class(v1alpha1.PeerClassExternal).seen))
	f.Add([]byte{})
	f.Add([]byte{2, 10, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		sk, err := unmarshal(b)
		if err != nil {
			return
		}
		k := floodKey(1)
		es := estimators{}
		es.see(&k, false)
		if err := es.class(v1alpha1.PeerClassExternal).seen.Merge(sk); err != nil {
			t.Fatal(err)
		}
		_ = marshal(sk)
	})
}

// TestMetricsReportTheEdgesNotTracked: the store's metrics, as a writer
// registers them.
func TestMetricsReportTheEdgesNotTracked(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	s := NewStore(1024, nil, nil)
	if err := s.RegisterMetrics(testInstruments(provider.Meter("test")), attribute.String("exporter", "k8swriter")); err != nil {
		t.Fatal(err)
	}
	flood(t, s, allowWorkloads, &v1alpha1.ObservedTraffic{})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Sum[int64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	if got["tracked"] != 1024 || got["untracked"] != floodPeers+2-1024 || got["not_tracked"] != int64(s.NotTracked()) ||
		!within(int(got["not_tracked"]), floodPeers+2-1024) || got["bad_estimators"] != 0 {
		t.Fatalf("metrics %v", got)
	}
}

// testInstruments creates a store's instruments on m, named by their figure,
// as a writer's telemetry builder does.
func testInstruments(m metric.Meter) Instruments {
	gauge := func(name string) func(metric.Int64Callback) error {
		return func(cb metric.Int64Callback) error {
			_, err := m.Int64ObservableGauge(name, metric.WithInt64Callback(cb))
			return err
		}
	}
	counter := func(name string) func(metric.Int64Callback) error {
		return func(cb metric.Int64Callback) error {
			_, err := m.Int64ObservableCounter(name, metric.WithInt64Callback(cb))
			return err
		}
	}
	return Instruments{Tracked: gauge("tracked"), NotTracked: gauge("not_tracked"), Untracked: counter("untracked"), BadEstimators: counter("bad_estimators")}
}
