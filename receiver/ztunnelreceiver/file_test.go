package ztunnelreceiver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// storageHost is a collector host with one file_storage extension.
type storageHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h.exts }

var storageID = component.MustNewIDWithName("file_storage", "ztunnel")

// startAgent starts a file_storage extension on dir and a receiver tailing the
// ztunnel logs under root, as the node agent runs; both stop when the returned
// function is called (or the test ends).
func startAgent(t *testing.T, root, dir string) (*flowsourcetest.Harness, func()) {
	t.Helper()
	ctx := context.Background()
	sf := filestorage.NewFactory()
	scfg := sf.CreateDefaultConfig().(*filestorage.Config)
	scfg.Directory = dir
	ext, err := sf.Create(ctx, extension.Settings{
		ID: storageID, TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo(),
	}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	host := storageHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: ext}}
	if err := ext.Start(ctx, host); err != nil {
		t.Fatal(err)
	}

	cfg := createDefaultConfig().(*Config)
	cfg.JoinWindow = testWindow
	fc := cfg.File.GetOrInsertDefault()
	fc.Include = []string{filepath.Join(root, "istio-system_ztunnel-*", "istio-proxy", "*.log")}
	fc.StartAt = "beginning"
	fc.PollInterval = 20 * time.Millisecond
	fc.Storage = &storageID
	cfg.File = configoptional.Some(*fc)
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	set.ID = component.NewIDWithName(metadata.Type, "agent") // the checkpoints are kept per receiver ID
	r, err := NewFactory().CreateLogs(ctx, set, cfg, h.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if err := r.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := ext.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return h, stop
}

// numberedLine is an inbound access line whose source port is 10000+n, so that
// each record says which line it came from. Every seventh line is padded past
// 2 KiB, long enough for the runtime to split it into partial lines.
func numberedLine(n int) string {
	m := map[string]any{
		"level": "info", "time": time.Now().UTC().Format(time.RFC3339Nano), "scope": "access",
		"message": "connection complete", "direction": "inbound", "duration": "1ms",
		"src.addr": fmt.Sprintf("10.0.0.1:%d", 10000+n), "src.workload": "web-1", "src.namespace": "store",
		"src.identity": "spiffe://cluster.local/ns/store/sa/web",
		"dst.addr":     "10.0.0.2:15008", "dst.hbone_addr": "10.0.0.2:8080", "dst.workload": "orders-1", "dst.namespace": "store",
	}
	if n%7 == 0 {
		m["dst.service"] = fmt.Sprintf("%02048d", n)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// criLines writes lines from..to-1 in CRI format, long ones as 1 KiB partial
// parts followed by the final part.
func criLines(from, to int) string {
	var s strings.Builder
	for n := from; n < to; n++ {
		l := numberedLine(n)
		ts := time.Now().UTC().Format(time.RFC3339Nano)
		for len(l) > 1024 {
			s.WriteString(ts + " stdout P " + l[:1024] + "\n")
			l = l[1024:]
		}
		s.WriteString(ts + " stdout F " + l + "\n")
	}
	return s.String()
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// lineNumbers returns the line numbers of the records received, in order.
func lineNumbers(h *flowsourcetest.Harness) []int {
	var out []int
	for _, ld := range h.Sink.AllLogs() {
		sls := ld.ResourceLogs().At(0).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				var r flow.Record
				r.ReadFrom(lrs.At(k))
				out = append(out, int(r.Source.Port)-10000)
			}
		}
	}
	return out
}

// markerLines are numbered from markerBase on: lines of another file that
// mark a poll, which waitLines leaves out.
const markerBase = 1000

// awaitTwoPolls writes a marker line into path, waits for its record, and does
// so again. The second marker's poll began after the first's ended, so after
// anything written before this call: every file was read since. Polls come one
// after the other, and each reads every file.
func awaitTwoPolls(t *testing.T, h *flowsourcetest.Harness, path string) {
	t.Helper()
	for range 2 {
		n := markerBase
		for _, got := range lineNumbers(h) {
			n = max(n, got+1)
		}
		appendFile(t, path, criLines(n, n+1))
		testwait.For(t, fmt.Sprintf("the marker line %d of %s to be read", n, path), 20*time.Second, func() bool {
			return slices.Contains(lineNumbers(h), n)
		})
	}
}

// waitLines waits until the records are exactly the lines numbered 0..n-1, each
// once; the marker lines apart, each at most once.
func waitLines(t *testing.T, hs []*flowsourcetest.Harness, n int) {
	t.Helper()
	var got []int
	// Until n lines came (or 20 s passed, an error): what came is checked.
	testwait.Try(t, fmt.Sprintf("%d lines", n), 20*time.Second, func() bool {
		got = nil
		markers := map[int]bool{}
		for _, h := range hs {
			for _, l := range lineNumbers(h) {
				if l < markerBase {
					got = append(got, l)
					continue
				}
				if markers[l] {
					t.Fatalf("the marker line %d was received twice", l)
				}
				markers[l] = true
			}
		}
		return len(got) >= n
	})
	slices.Sort(got)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lines received (%d): %v\nwant 0..%d, each once", len(got), got, n-1)
	}
}

func TestFileTailsCRIWithPartialLinesRotationAndRestart(t *testing.T) {
	root, storage := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "istio-system_ztunnel-x7k2p_0b9e3c1a", "istio-proxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(dir, "0.log")
	appendFile(t, current, criLines(0, 100))

	h1, stop := startAgent(t, root, storage)
	waitLines(t, []*flowsourcetest.Harness{h1}, 100)

	// A long line whose partial parts are written before its final part, and
	// read so: its final part is written only once a poll read the file after
	// the partial parts (two polls of another ztunnel's file later).
	long := criLines(100, 101)
	cut := len(long) - 200
	appendFile(t, current, long[:cut])
	otherDir := filepath.Join(root, "istio-system_ztunnel-q4m8s_5d1f7e2b", "istio-proxy")
	if err := os.MkdirAll(otherDir, 0o755); err != nil {
		t.Fatal(err)
	}
	awaitTwoPolls(t, h1, filepath.Join(otherDir, "0.log"))
	appendFile(t, current, long[cut:]+criLines(101, 150))
	waitLines(t, []*flowsourcetest.Harness{h1}, 150)

	// The kubelet's rotation: the file is renamed and a new one started.
	appendFile(t, current, criLines(150, 200))
	if err := os.Rename(current, current+".20260302-101500"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, current, criLines(200, 250))
	waitLines(t, []*flowsourcetest.Harness{h1}, 250)

	// A restart: what was written while the agent was down is read once, from the
	// checkpoint, and nothing before it again.
	stop()
	appendFile(t, current, criLines(250, 300))
	h2, _ := startAgent(t, root, storage)
	waitLines(t, []*flowsourcetest.Harness{h1, h2}, 300)
	// Two more lines, one poll after the other: once the second arrives, the
	// poll that read the first (and every file beside it) is over, so a line
	// read twice would have arrived; waitLines counts exactly.
	appendFile(t, current, criLines(300, 301))
	waitLines(t, []*flowsourcetest.Harness{h1, h2}, 301)
	appendFile(t, current, criLines(301, 302))
	waitLines(t, []*flowsourcetest.Harness{h1, h2}, 302)
}
