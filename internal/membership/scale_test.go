package membership

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// nodeNames are n node names as a cloud names them (about 40 characters).
func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ip-10-%d-%d-%d.eu-west-1.compute.internal", i/65536, i/256%256, i%256)
	}
	return out
}

// TestEveryNodeIsHandedOver: at 6,000 nodes, every node's checkpoint that a
// reader publishes and every count that the leader publishes reach the other
// members, and stay there after the reader is killed (its Lease expires) and
// after the leader leaves (its Lease and shards' last word is kept): a new
// owner of any of the nodes counts from where the leader took its records.
func TestEveryNodeIsHandedOver(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "every-" + suffix
	ms := joinMembers(t, lease, "reader-"+suffix, "leader-"+suffix, "next-"+suffix)
	reader, leader, next := ms[0], ms[1], ms[2]
	waitMembers(t, "three members", reader, leader, next)
	setLeader(leader.cfg.Identity, reader, leader, next)

	nodes := nodeNames(6000)
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for i, k := range nodes {
		reader.Checkpoint(k, t0.Add(time.Duration(i)*time.Millisecond))
		leader.Counted(k, t0.Add(time.Hour+time.Duration(i)*time.Millisecond))
	}
	leader.renewSoon()
	everyNode := func(what string, want func(i int) time.Time, got func(k string) (time.Time, bool)) {
		t.Helper()
		waitFor(t, what, memberWait, func() bool {
			for i, k := range nodes {
				if g, ok := got(k); !ok || !g.Equal(want(i)) {
					return false
				}
			}
			return true
		})
	}
	everyNode("every checkpoint to reach the next member", func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) },
		next.CheckpointOf)
	counted := func(i int) time.Time { return t0.Add(time.Hour + time.Duration(i)*time.Millisecond) }
	everyNode("every count to reach the next member", counted, next.CountFrom)
	var list coordinationv1.LeaseList
	if err := env.Client.List(context.Background(), &list, client.InNamespace("default"),
		client.MatchingLabels{v1alpha1.MemberOfLabel: lease}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Leases in the group: 3 membership Leases and their checkpoint shards", len(list.Items))

	// The reader is killed: the leader's counts say where its nodes resume.
	reader.Stop(context.Background(), false)
	waitMembers(t, "the reader's Lease to expire", leader, next)
	everyNode("the counts after the reader's kill", counted, next.CountFrom)

	// The leader leaves: what its Lease and shards said last is kept.
	leader.leave()
	waitMembers(t, "the leader to leave", next)
	everyNode("the counts after the leader left", counted, next.CountFrom)
}

// wireCount counts the bytes of a member's requests that write (their
// bodies) and of its watches' responses.
type wireCount struct {
	writes, written, watched atomic.Int64
}

func (c *wireCount) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			c.writes.Add(1)
			c.written.Add(r.ContentLength)
		}
		resp, err := rt.RoundTrip(r)
		if err == nil && strings.Contains(r.URL.RawQuery, "watch=true") {
			resp.Body = countingBody{resp.Body, &c.watched}
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// BenchmarkPublishAtFiveThousandNodes measures what the membership writes
// and watches at 5,000 nodes with 4 readers and a leader, when every node
// has flows in every period, on the test control plane: a renewal of every
// member that publishes nothing new (the membership Leases alone); each
// iteration, one that carries the leader's counts of all 5,000 nodes; and
// once, the readers' refresh of their checkpoints of 1,250 nodes each. It
// reports each, the bytes per second at the defaults that they make while
// every member renews on time and while one is overdue (countsDueLocked), and
// the bytes that one replica's watch receives per iteration.
//
//	go test ./internal/membership/ -run '^$' -bench PublishAtFiveThousandNodes -benchtime 10x
func BenchmarkPublishAtFiveThousandNodes(b *testing.B) {
	if env == nil {
		b.Skip("no control plane")
	}
	const readers, nodeCount = 4, 5000
	suffix := rand.String(5)
	lease := "bench-" + suffix
	counts := make([]*wireCount, readers+1)
	ms := make([]*Membership, readers+1)
	for i := range ms {
		counts[i] = &wireCount{}
		rc := rest.CopyConfig(env.Config)
		rc.WrapTransport = counts[i].wrap
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			b.Fatal(err)
		}
		cfg := testConfig(lease, fmt.Sprintf("replica-%d-%s", i, suffix))
		// Renewals come when the benchmark asks, once per publish.
		cfg.RetryPeriod, cfg.LeaseDuration, cfg.RenewDeadline = time.Hour, 2*time.Hour, time.Minute
		m := New(nil, cfg, nil)
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(func() {
			m.Stop(context.Background(), false)
			cancel()
		})
		m.Attach(ctx, cs, podUID)
		m.OnMembersChanged(func() {})
		ms[i] = m
	}
	leader := ms[readers]
	for _, m := range ms {
		m.SetLeader(leader.cfg.Identity)
	}
	nodes := nodeNames(nodeCount)
	t0 := time.Now()
	// renew renews every member once; with advance, the readers' checkpoints
	// and the leader's counts of every node move on first.
	renew := func(round int, advance bool) {
		if advance {
			at := t0.Add(time.Duration(round) * time.Second)
			for i, k := range nodes {
				ms[i%readers].Checkpoint(k, at)
				leader.Counted(k, at)
			}
		}
		before := make([]time.Time, len(ms))
		for i, m := range ms {
			m.mu.Lock()
			before[i] = m.renewed
			m.mu.Unlock()
			m.renewSoon()
		}
		for i, m := range ms {
			testwait.For(b, "a member's renewal", time.Minute, func() bool {
				m.mu.Lock()
				defer m.mu.Unlock()
				return m.renewed.After(before[i])
			})
		}
	}
	// written measures the bytes that the members write in f, once the
	// watches have received them: a watch event's arrival marks no end, and
	// a second is many times the control plane's delivery on this scale.
	written := func(f func()) (bytes, writes, watched int64) {
		for _, c := range counts {
			bytes, writes, watched = bytes-c.written.Load(), writes-c.writes.Load(), watched-c.watched.Load()
		}
		f()
		// The watches must receive the writes' events before the counters
		// are read, and no event marks that end.
		time.Sleep(time.Second)
		for _, c := range counts {
			bytes, writes, watched = bytes+c.written.Load(), writes+c.writes.Load(), watched+c.watched.Load()
		}
		return bytes, writes, watched
	}
	renew(0, true) // the first publish creates the shards
	// Renewals that publish nothing new: the membership Leases alone.
	liveness, _, _ := written(func() { renew(1, false) })
	// The leader's counts go at every renewal here (the lease is less than
	// six renewals: countsDueLocked), the readers' advanced checkpoints not.
	b.ResetTimer()
	bytes, writes, watched := written(func() {
		for i := range b.N {
			renew(i+2, true)
		}
	})
	b.StopTimer()
	counted := float64(bytes)/float64(b.N) - float64(liveness)
	// The readers' checkpoints that only advanced go a lease duration after
	// their last write: one such round, measured apart.
	for _, m := range ms[:readers] {
		m.mu.Lock()
		m.shardsWritten = time.Time{}
		m.mu.Unlock()
	}
	refresh, _, _ := written(func() { renew(b.N+2, true) })
	refreshReaders := float64(refresh) - float64(liveness) - counted
	b.ReportMetric(float64(liveness), "B/renewal")
	b.ReportMetric(counted, "B/leader-counts")
	b.ReportMetric(refreshReaders, "B/readers-refresh")
	// At the defaults (renewals every 2 s, a 15 s lease): the shards go
	// every 15 s while every member renews on time, the leader's counts
	// every 2 s while one is overdue.
	b.ReportMetric(float64(liveness)/2+(counted+refreshReaders)/15, "B/s@defaults")
	b.ReportMetric(float64(liveness)/2+counted/2+refreshReaders/15, "B/s@overdue")
	b.ReportMetric(float64(writes)/float64(b.N), "writes/publish")
	b.ReportMetric(float64(watched)/float64(len(ms))/float64(b.N), "watchB/replica/publish")
}
