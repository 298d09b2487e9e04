package ztunnelreceiver

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

// outRecords reads back the records that out holds.
func outRecords(out *joined) []flow.Record {
	recs := make([]flow.Record, out.n)
	for i := range recs {
		recs[i].ReadFrom(out.records.At(i))
	}
	return recs
}

func lines(s []string) string { return strings.Join(s, "\n") }

func splitLines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// unjoinedCount reads the unjoined-decisions counter.
func unjoinedCount(t *testing.T, h *flowsourcetest.Harness) int64 {
	t.Helper()
	return counterSum(t, h, "network_enforcer_receiver_unjoined_decisions")
}

// counterSum sums a counter's series; one never incremented reads 0.
func counterSum(t *testing.T, h *flowsourcetest.Harness, name string) int64 {
	t.Helper()
	m, err := h.Tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}
