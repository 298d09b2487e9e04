package ztunnelreceiver

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// testWindow is the join window of the tests: short, so that unjoined decisions
// and lone denials come out quickly.
const testWindow = 300 * time.Millisecond

// loadFixture reads the shared ztunnel fixture.
func loadFixture(tb testing.TB) []string {
	tb.Helper()
	out, err := dataplanetest.LoadZtunnel(filepath.Join("..", "..", dataplanetest.ZtunnelFixture))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fixtureRecords are the records the fixture gives, as Describe writes them,
// sorted: the access lines (the outbound twin, the sources without identity or
// from another trust domain dropped), the dry-run decision joined with its access
// line, the enforced denial merged with its decision, and the dry-run decision
// that no access line joins (port 0).
var fixtureRecords = []string{
	// From outside the mesh: no identity; the learning processor decides.
	"allowed ingress destination tcp /(/) -> store/orders-5d8f7c9b4-qw7lm(/):8080 policy=",
	"allowed ingress destination tcp analytics/reports-55c6d7b8f9-lm2xp(/) -> store/orders-5d8f7c9b4-qw7lm(/):8080 policy=",
	"allowed ingress destination tcp shop/checkout-6b7f9c8d4-zt5hn(/) -> pay/payments-0(/):9090 policy=",
	"allowed ingress destination tcp store/web-7c9d8b6f5-x2k9p(/) -> store/db-0(/):5432 policy=",
	"allowed ingress destination tcp store/web-7c9d8b6f5-x2k9p(/) -> store/orders-5d8f7c9b4-qw7lm(/):8080 policy=",
	"allowed ingress destination tcp web/frontend-84c9d6b7f-9zq1w(/) -> store/orders-5d8f7c9b4-qw7lm(/):8080 policy=",
	"denied ingress destination tcp shop/legacy-7d9f8b6c5-p4q2r(/) -> pay/payments-0(/):9090 policy=AuthorizationPolicy/pay/deployment-payments-ingress",
	"denied ingress destination tcp store/batch-28391760-k8x2q(/) -> store/orders-5d8f7c9b4-qw7lm(/):8080 policy=AuthorizationPolicy/store/deny-batch",
	"dry_run_denied ingress destination tcp /(/) -> /(/):0 policy=AuthorizationPolicy/pay/deny-unknown",
	"dry_run_denied ingress destination tcp analytics/reports-55c6d7b8f9-lm2xp(/) -> store/orders-5d8f7c9b4-qw7lm(/):8080 policy=AuthorizationPolicy/store/deployment-orders-ingress",
}

// fixtureDrops are the fixture's dropped lines by reason.
var fixtureDrops = map[string]int64{
	"outbound": 1, "foreign_trust_domain": 1, "allow_decision": 1,
	"connection_opened": 1, "unknown_message": 1, "malformed": 1,
}

// startBare starts a receiver without inputs, to be fed lines directly.
func startBare(t *testing.T) (*ztunnelReceiver, *flowsourcetest.Harness) {
	t.Helper()
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	cfg := createDefaultConfig().(*Config)
	cfg.JoinWindow = testWindow
	r, err := newZtunnelReceiver(set, cfg, h.Sink)
	if err != nil {
		t.Fatal(err)
	}
	flowsourcetest.Start(t, r)
	return r, h
}

// checkFixtureOutput waits for the fixture's records and drops, and checks them
// and the count of unjoined decisions.
func checkFixtureOutput(t *testing.T, h *flowsourcetest.Harness) {
	t.Helper()
	got := h.WaitRecords(t, len(fixtureRecords))
	slices.Sort(got)
	if !slices.Equal(got, fixtureRecords) {
		t.Fatalf("records:\n%s\nwant:\n%s", lines(got), lines(fixtureRecords))
	}
	h.WaitDrops(t, fixtureDrops)
	if c := flowsourcetest.Read(h.Tel); c.Accepted != int64(len(fixtureRecords)) {
		t.Fatalf("accepted %d, want %d", c.Accepted, len(fixtureRecords))
	}
	if n := unjoinedCount(t, h); n != 1 {
		t.Fatalf("unjoined decisions %d, want 1", n)
	}
}

func TestFixtureAsCRIFileLines(t *testing.T) {
	r, h := startBare(t)
	cri := dataplanetest.CRI(loadFixture(t), time.Now(), 200)
	var tokens [][]byte
	for _, l := range splitLines(cri) {
		tokens = append(tokens, []byte(l))
	}
	if err := r.consumeFileLines(context.Background(), tokens, map[string]any{"log.file.path": "/var/log/pods/x/istio-proxy/0.log"}, 0, nil); err != nil {
		t.Fatal(err)
	}
	checkFixtureOutput(t, h)
	// The file input has no transport in the standard receiver telemetry.
	h.WaitStandard(t, r.set.ID, "", flowsourcetest.Standard{Accepted: int64(len(fixtureRecords))})
}
