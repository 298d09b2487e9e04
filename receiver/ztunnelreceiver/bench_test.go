package ztunnelreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// benchLines is the number of lines in the CRI file each path reads per
// iteration.
const benchLines = 20000

// BenchmarkFileVsFilelog reads one CRI file of ztunnel lines (every seventh
// split into partial lines) to the end with two paths in the same run: this
// receiver's file input, and contrib's filelog receiver with the container (CRI)
// and json_parser operators as the baseline. It reports lines/s and allocations
// per line for each, and the speedup. The file holds access lines only (ztunnel's
// default), or each access line after an allow decision line (ztunnel with
// AUTHZ_POLICY_INFO_LOGGING, where the receiver joins the two).
func BenchmarkFileVsFilelog(b *testing.B) {
	b.Run("access-lines", func(b *testing.B) { benchFileVsFilelog(b, criLines(0, benchLines), benchLines, benchLines) })
	b.Run("with-decisions", func(b *testing.B) {
		benchFileVsFilelog(b, criLinesWithDecisions(0, benchLines/2), benchLines, benchLines/2)
	})
}

func benchFileVsFilelog(b *testing.B, content string, lines, records int) {
	path := filepath.Join(b.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
	ours, contrib := pathCost{wantRecords: records}, pathCost{wantRecords: lines}
	for b.Loop() {
		ours.add(b, lines, func() receiver.Logs { return ztunnelFileReceiver(b, path) })
		contrib.add(b, lines, func() receiver.Logs { return filelogReceiver(b, path) })
	}
	b.ReportMetric(ours.linesPerSecond(), "ztunnel-lines/s")
	b.ReportMetric(contrib.linesPerSecond(), "filelog-lines/s")
	b.ReportMetric(ours.linesPerSecond()/contrib.linesPerSecond(), "speedup")
	b.ReportMetric(ours.allocsPerLine(), "ztunnel-allocs/line")
	b.ReportMetric(contrib.allocsPerLine(), "filelog-allocs/line")
}

// pathCost sums the time and allocations of reading the file with one path.
type pathCost struct {
	wantRecords int
	elapsed     time.Duration
	allocs      uint64
	lines       int
}

// sink is where both paths deliver, so that each can be waited for.
var sink = &consumertest.LogsSink{}

func (p *pathCost) add(b *testing.B, lines int, start func() receiver.Logs) {
	sink.Reset()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	r := start()
	for sink.LogRecordCount() < p.wantRecords {
		// The poll's own interval, short so that it adds little to the measured
		// time.
		time.Sleep(time.Millisecond)
	}
	p.elapsed += time.Since(t0)
	runtime.ReadMemStats(&after)
	if err := r.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if n := sink.LogRecordCount(); n != p.wantRecords {
		b.Fatalf("%d records, want %d", n, p.wantRecords)
	}
	p.allocs += after.Mallocs - before.Mallocs
	p.lines += lines
}

func (p *pathCost) linesPerSecond() float64 { return float64(p.lines) / p.elapsed.Seconds() }

func (p *pathCost) allocsPerLine() float64 { return float64(p.allocs) / float64(p.lines) }

func ztunnelFileReceiver(b *testing.B, path string) receiver.Logs {
	cfg := createDefaultConfig().(*Config)
	fc := cfg.File.GetOrInsertDefault()
	fc.Include = []string{path}
	fc.StartAt = "beginning"
	fc.PollInterval = 10 * time.Millisecond
	return startBench(b, NewFactory(), cfg)
}

func filelogReceiver(b *testing.B, path string) receiver.Logs {
	f := filelogreceiver.NewFactory()
	cfg := f.CreateDefaultConfig()
	conf := confmap.NewFromStringMap(map[string]any{
		"include": []any{path}, "start_at": "beginning", "poll_interval": "10ms",
		"operators": []any{
			map[string]any{"type": "container", "format": "containerd", "add_metadata_from_filepath": false},
			map[string]any{"type": "json_parser"},
		},
	})
	if err := conf.Unmarshal(cfg); err != nil {
		b.Fatal(err)
	}
	return startBench(b, f, cfg)
}

func startBench(b *testing.B, f receiver.Factory, cfg component.Config) receiver.Logs {
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	return r
}

// criLinesWithDecisions writes, for each of lines from..to-1, an allow decision
// line and then the access line of the same connection.
func criLinesWithDecisions(from, to int) string {
	var s strings.Builder
	for n := from; n < to; n++ {
		ts := time.Now().UTC().Format(time.RFC3339Nano)
		fmt.Fprintf(&s, `%s stdout F {"level":"info","time":"%s","scope":"ztunnel::state","message":"allow policy match","policy":"store/allow-web","inbound":{"id":"%032x","peer":"10.0.0.1:%d"}}`+"\n",
			ts, ts, n, 10000+n)
		s.WriteString(criLines(n, n+1))
	}
	return s.String()
}
