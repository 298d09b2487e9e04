package flow

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/pdata/plog"
)

// benchRecord is a record as the Hubble receiver writes one: both ends pods with
// workloads, identities and labels, the allowing policy named.
func benchRecord() Record {
	return Record{
		Time: time.Date(2026, 3, 2, 10, 15, 7, 0, time.UTC), Provider: ProviderCilium, Outcome: OutcomeAllowed,
		Reporter: ReporterDestination, Direction: DirectionIngress, Transport: TransportTCP,
		Source: Endpoint{Address: "10.244.1.12", Port: 43718, Namespace: "store", Pod: "web-7c9d8b6f5-x2k9p",
			WorkloadKind: "Deployment", WorkloadName: "web", Identity: "31245", Labels: []string{"app=web", "tier=frontend", "version=v2"}},
		Destination: Endpoint{Address: "10.244.2.7", Port: 8080, Namespace: "store", Pod: "orders-5d8f7c9b4-qw7lm",
			WorkloadKind: "Deployment", WorkloadName: "orders", Identity: "50211", Labels: []string{"app=orders", "tier=backend"}},
		Policy: PolicyRef{Kind: "CiliumNetworkPolicy", Namespace: "store", Name: "orders-ingress"},
		Count:  1,
	}
}

// poolingGate is the collector's gate that has pdata take its values from
// pools, which only pays where batches are released back to them.
const poolingGate = "pdata.useProtoPooling"

// BenchmarkWriteTo writes a batch of records into fresh log records, as a
// receiver's batch does: WriteTo ("template") against writing each attribute
// with Put ("put"), each with pdata's pooling gate off and on, in one run.
// Each batch is released once written, as the collector's pipeline releases
// a receiver's batch when its first consumer returns: with the gate on, that
// returns the batch's values to pdata's pools for the next batch.
func BenchmarkWriteTo(b *testing.B) {
	const batch = 1024
	rec := benchRecord()
	for _, pooling := range []bool{false, true} {
		for _, w := range []struct {
			name  string
			write func(*Record, plog.LogRecord)
		}{{"template", (*Record).WriteTo}, {"put", (*Record).writeByPut}} {
			name := w.name + "/pooling=off"
			if pooling {
				name = w.name + "/pooling=on"
			}
			b.Run(name, func(b *testing.B) {
				setGate(b, poolingGate, pooling)
				writeBatch := func() {
					ld := plog.NewLogs()
					lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
					lrs.EnsureCapacity(batch)
					for range batch {
						w.write(&rec, lrs.AppendEmpty())
					}
					release(ld)
				}
				b.ReportAllocs()
				for b.Loop() {
					writeBatch()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
				b.ReportMetric(testing.AllocsPerRun(3, writeBatch)/batch, "allocs/record")
			})
		}
	}
}

// release empties ld as the collector's pipeline does once done with it:
// moving an empty batch over it deletes its content, into pdata's pools when
// the pooling gate is on.
func release(ld plog.Logs) { plog.NewLogs().MoveTo(ld) }

// setGate sets a feature gate for the benchmark, and back after it.
func setGate(b *testing.B, id string, on bool) {
	b.Helper()
	if err := featuregate.GlobalRegistry().Set(id, on); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = featuregate.GlobalRegistry().Set(id, false) })
}

// BenchmarkReadFrom reads a record back, as each processor does.
func BenchmarkReadFrom(b *testing.B) {
	rec := benchRecord()
	lr := plog.NewLogRecord()
	rec.WriteTo(lr)
	var back Record
	b.ReportAllocs()
	for b.Loop() {
		back.ReadFrom(lr)
	}
}

// BenchmarkReadSkippingLabels reads a record back without its labels, as the
// learning processor does.
func BenchmarkReadSkippingLabels(b *testing.B) {
	rec := benchRecord()
	lr := plog.NewLogRecord()
	rec.WriteTo(lr)
	var back Record
	b.ReportAllocs()
	for b.Loop() {
		back.ReadSkippingLabels(lr)
	}
}
