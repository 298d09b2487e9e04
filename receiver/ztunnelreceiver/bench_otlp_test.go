package ztunnelreceiver

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// otlpBatch is the number of log records in one OTLP request of the benchmark,
// as the loadtest sends them.
const otlpBatch = 1000

// otlpBatches is the number of distinct requests the benchmark cycles through:
// enough connections that the joiner holds its most, as under a steady load.
const otlpBatches = 200

// BenchmarkOTLP takes OTLP requests of ztunnel lines, one log record a line with
// the line as its body, as a node agent sends them: the shared fixture repeated,
// each copy other connections (its peer ports moved), as the loadtest does. The
// receiver is not started, so that no join clock runs: what it holds stays until
// the joiner is full, as within one join window of a busy node. Records go to a
// consumer that drops them. It reports the cost per line: ns/line (wall),
// cpu-ns/line (the process's CPU time, the garbage collector's included) and
// allocs/line.
func BenchmarkOTLP(b *testing.B) {
	requests := otlpRequests(b, otlpBatches)
	r, err := newZtunnelReceiver(receivertest.NewNopSettings(metadata.Type), createDefaultConfig().(*Config), consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU(b)
	n, lines := 0, 0.0
	for b.Loop() {
		ld := requests[n%len(requests)]
		if err := r.consumeOTLP(ctx, inputOTLPGRPC, ld); err != nil {
			b.Fatal(err)
		}
		n++
		lines += float64(ld.LogRecordCount())
	}
	cpu := processCPU(b) - cpu0
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/lines, "ns/line")
	b.ReportMetric(float64(cpu.Nanoseconds())/lines, "cpu-ns/line")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/lines, "allocs/line")
}

// processCPU is the CPU time the process has used, on all its threads: on a
// shared machine the wall time per line says little, and the garbage
// collector's background work is part of a line's cost.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPeer is the source address of an access line, or the peer of a decision.
var benchPeer = regexp.MustCompile(`"(src\.addr|peer)":"([0-9.]+):(\d+)"`)

// otlpRequests builds n requests of otlpBatch records from the fixture.
func otlpRequests(tb testing.TB, n int) []plog.Logs {
	tb.Helper()
	fixture := loadFixture(tb)
	requests := make([]plog.Logs, 0, n)
	k := 0
	for range n {
		ld := plog.NewLogs()
		recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for recs.Len() < otlpBatch {
			recs.AppendEmpty().Body().SetStr(movePorts(fixture[k%len(fixture)], k/len(fixture)))
			k++
		}
		requests = append(requests, ld)
	}
	return requests
}

// movePorts moves the peer ports of a line of the k-th copy of the fixture, the
// same way in every line of one copy.
func movePorts(line string, k int) string {
	return benchPeer.ReplaceAllStringFunc(line, func(m string) string {
		sub := benchPeer.FindStringSubmatch(m)
		port, _ := strconv.Atoi(sub[3])
		return fmt.Sprintf(`%q:"%s:%d"`, sub[1], sub[2], 1024+(port+k)%64000)
	})
}

// BenchmarkScanJSON reads the fixture's lines with the scanner and, for
// comparison, with fastjson (decodeJSON): the parse's share of a line's cost.
func BenchmarkScanJSON(b *testing.B) {
	fixture := loadFixture(b)
	for _, bench := range []struct {
		name   string
		decode func(*line, string)
	}{
		{"scanner", func(l *line, s string) { _, _ = decodeJSONLine(s, l) }},
		{"fastjson", func(l *line, s string) { _ = l.decodeJSON(s) }},
	} {
		b.Run(bench.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				var l line
				bench.decode(&l, fixture[n%len(fixture)])
				n++
			}
		})
	}
}
