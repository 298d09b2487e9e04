package k8swriterexporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// errRateLimited is the test gate's answer past its budget.
var errRateLimited = errors.New("rate limited")

// gate is a rate limit that admits the writes it is given, then none: the
// writes it admits are counted, not timed.
type gate struct{ left int }

func (g *gate) Wait(context.Context) error {
	if g.left == 0 {
		return errRateLimited
	}
	g.left--
	return nil
}

// TestWritesComeInOrderUnderTheRateLimit: when the rate limit admits fewer
// writes than wait, a workload's first proposal goes first, then new edges
// of a proposal that exists, then evidence refreshes, the one whose status
// lacks an observed edge first, then by how much the counts changed; a
// refresh that more flows make larger moves up. What the limit held back is
// written, in that order, once it admits more.
func TestWritesComeInOrderUnderTheRateLimit(t *testing.T) {
	g := &gate{left: 1 << 30}
	w, fake := startWriter(t, func(c *Config) { c.ObservedInterval = time.Nanosecond })
	w.limiter = g
	var writes []string
	fake.Refuse = func(op string, obj metav1.Object) error {
		writes = append(writes, op+" "+obj.GetName())
		return nil
	}
	ref := func(name string) workload.Ref {
		return workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: name}
	}
	for _, name := range []string{"a-small", "b-big", "c-fresh", "d-grows", "e-newcomer"} {
		fake.AddWorkload(ref(name), enforcerextensiontest.WorkloadInfo{UID: types.UID(name + "-uid"),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}})
	}
	t0 := time.Now()
	// send sends a learned edge of frontend to name's port, with flows
	// observed on it (none: learned alone).
	send := func(name string, port uint32, flows int64) {
		t.Helper()
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: ref(name), Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Protocol: "tcp", Port: port}
		e.AppendTo(sl)
		if flows > 0 {
			learning.SetObserved(sl.LogRecords().At(0), v1alpha1.PeerClassWorkload, flows, t0)
		}
		must(t, w.ConsumeLogs(context.Background(), ld))
	}
	// drain runs what is due within a minute (not the Stable window's
	// look, a day later) until nothing is, and returns the writes it made.
	drain := func() []string {
		t.Helper()
		writes = nil
		for range 10 {
			if errs := fake.DrainWithin(time.Minute); len(errs) != 0 {
				for _, err := range errs {
					if !errors.Is(err, errRateLimited) {
						t.Fatal(err)
					}
				}
				return writes
			}
			if len(queuedWrites(fake)) == 0 {
				return writes
			}
		}
		t.Fatalf("still queued: %v", queuedWrites(fake))
		return nil
	}
	name := func(w string) string { return fmt.Sprintf("deployment-%s-ingress", w) }
	fake.Lead()
	for _, w := range []string{"a-small", "b-big", "c-fresh", "d-grows"} {
		send(w, 80, 100)
	}
	if got := drain(); len(got) != 8 {
		t.Fatalf("first writes %v, want a create and a status of each of 4 proposals", got)
	}

	send("a-small", 80, 10) // +10%
	send("b-big", 80, 10)   // +10% so far: as much as a-small, which comes first by name
	priorities := fake.Priorities()
	small, big := types.NamespacedName{Namespace: "shop", Name: name("a-small")}, types.NamespacedName{Namespace: "shop", Name: name("b-big")}
	if priorities[small] != priorities[big] {
		t.Fatalf("priorities %d and %d of refreshes that changed as much", priorities[small], priorities[big])
	}
	send("b-big", 80, 990) // now +1,000%: its refresh moves up
	if p := fake.Priorities(); p[big] <= p[small] {
		t.Fatalf("priority %d of the refresh that changed most, not above %d", p[big], p[small])
	}
	// An edge that c-fresh's status does not list: observed, not learned (an
	// address outside the workloads).
	ld := plog.NewLogs()
	o := learning.Observation{Edge: learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: ref("c-fresh"),
		Direction: v1alpha1.DirectionIngress, Protocol: "tcp", Port: 9000},
		Class: v1alpha1.PeerClassExternal, PeerAddress: "203.0.113.7", Flows: 1, Time: t0}
	o.AppendTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	must(t, w.ConsumeLogs(context.Background(), ld))
	send("d-grows", 443, 5)   // a new edge of a proposal that exists
	send("e-newcomer", 80, 5) // a workload's first proposal

	// The limit admits 5 of the 7 writes that wait.
	g.left = 5
	want := []string{
		"create " + name("e-newcomer"), "status " + name("e-newcomer"),
		"update " + name("d-grows"), "status " + name("d-grows"),
		"status " + name("c-fresh"),
	}
	if got := drain(); !slices.Equal(got, want) {
		t.Fatalf("under the limit, wrote\n%v\nwant\n%v", got, want)
	}
	g.left = 1 << 30
	want = []string{"status " + name("b-big"), "status " + name("a-small")}
	if got := drain(); !slices.Equal(got, want) {
		t.Fatalf("once the limit admits them, wrote %v, want %v", got, want)
	}
}

// TestRefreshPriority: fresh edges weigh before the flows, the flows by
// their change relative to what was written, each by powers of two, within
// the refreshes' band below every other write.
func TestRefreshPriority(t *testing.T) {
	for _, tc := range []struct {
		name          string
		higher, lower [3]int64 // fresh, flows, written
	}{
		{"a fresh edge before any change of counts", [3]int64{1, 1, 1000}, [3]int64{0, 1 << 40, 1}},
		{"more fresh edges first", [3]int64{4, 0, 0}, [3]int64{2, 0, 0}},
		{"a larger relative change first", [3]int64{0, 100, 100}, [3]int64{0, 1000, 100000}},
		{"anything before nothing", [3]int64{0, 1, 1000}, [3]int64{0, 0, 5}},
	} {
		h := refreshPriority(int(tc.higher[0]), tc.higher[1], tc.higher[2])
		l := refreshPriority(int(tc.lower[0]), tc.lower[1], tc.lower[2])
		if h <= l {
			t.Errorf("%s: %d not above %d", tc.name, h, l)
		}
	}
	for _, c := range [][3]int64{{0, 0, 0}, {1 << 40, 1 << 62, 1}, {-1, -1, -1}} {
		if p := refreshPriority(int(c[0]), c[1], c[2]); p < priorityRefresh || p > priorityRefreshMax {
			t.Errorf("priority %d of %v outside [%d, %d]", p, c, priorityRefresh, priorityRefreshMax)
		}
	}
	if priorityRefreshMax >= -100 {
		t.Errorf("refreshes reach %d: not below the cache's first list (-100)", priorityRefreshMax)
	}
}

// TestASilentReadersEvidenceIsWrittenAtOnce: a reader's counts that the
// leader took and has not written wait for the proposal's observed_interval;
// once that reader goes silent (it died: the leader alone holds them), the
// proposal's evidence is asked for at once, above the other refreshes, and
// written with them.
func TestASilentReadersEvidenceIsWrittenAtOnce(t *testing.T) {
	w, fake := startWriter(t, func(c *Config) { c.ObservedInterval = time.Hour })
	fake.Lead()
	t0 := time.Now()
	send := func(seq int64, flows int64) {
		t.Helper()
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Protocol: "tcp", Port: 8080}
		e.AppendTo(sl)
		learning.SetObserved(sl.LogRecords().At(0), v1alpha1.PeerClassWorkload, flows, t0)
		flowsource.StampBatch(ld, "reader-b", seq)
		must(t, w.ConsumeLogs(context.Background(), ld))
	}
	flows := func() int64 {
		t.Helper()
		p, ok := fake.Proposal(cartIngress)
		if !ok || len(p.Status.Observed) != 1 {
			t.Fatalf("proposal %v (%v): want one observed edge", p, ok)
		}
		return p.Status.Observed[0].Flows
	}
	send(1, 5)
	if errs := fake.DrainWithin(time.Minute); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := flows(); got != 5 {
		t.Fatalf("first status: %d flows, want 5", got)
	}

	send(2, 7)
	if errs := fake.DrainWithin(time.Minute); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := flows(); got != 5 {
		t.Fatalf("written before its observed_interval: %d flows", got)
	}
	w.writeSilent(time.Now().Add(observed.SenderSilence / 2))
	if d := fake.Queued()[cartIngress]; d < 30*time.Minute {
		t.Fatalf("asked again after %s while its reader is not silent yet", d)
	}

	w.writeSilent(time.Now().Add(observed.SenderSilence + time.Second))
	if d, p := fake.Queued()[cartIngress], fake.Priorities()[cartIngress]; d != 0 || p != prioritySilent {
		t.Fatalf("after its reader went silent: asked after %s at priority %d, want at once at %d", d, p, prioritySilent)
	}
	if errs := fake.DrainWithin(time.Minute); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := flows(); got != 12 {
		t.Fatalf("after its reader went silent: %d flows written, want 12", got)
	}
}
