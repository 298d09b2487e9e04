package flowsource

import (
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// TestBatchSlicesServeOnce: each delivered batch gives its slice back once,
// a batch of gaps alone included: a slice given back twice would be filled by
// two batches at once.
func TestBatchSlicesServeOnce(t *testing.T) {
	set := receivertest.NewNopSettings(component.MustNewType("test"))
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{ReceiverID: set.ID, Transport: TransportGRPC, ReceiverCreateSettings: set})
	if err != nil {
		t.Fatal(err)
	}
	b := newBatcher(NewDefaultBatchConfig(), &consumertest.LogsSink{}, NewTelemetry(set.ID, Counters{Accepted: noop.Int64Counter{}, Dropped: noop.Int64Counter{}}), operation{obs: obs, format: "test"}, zap.NewNop())
	t.Cleanup(b.stop)
	rec := flow.Record{Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Transport: flow.TransportTCP}
	b.add(&rec)
	b.flush()
	b.addGap(&flow.Gap{Provider: flow.ProviderCilium, Cause: flow.GapLostEvents})
	b.flush()
	b.addMarked(nil, "node-a", rec.Time)
	b.flush()
	seen := map[*flow.Record]bool{}
	for len(b.free) > 0 {
		s := <-b.free
		first := &s[:1][0]
		if seen[first] {
			t.Fatal("a batch's slice was given back twice")
		}
		seen[first] = true
	}
}
