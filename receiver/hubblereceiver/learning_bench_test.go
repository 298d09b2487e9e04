package hubblereceiver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// learningBatch is how many flows go through the learning path at once, as the
// batch processor would hand them on.
const learningBatch = 1000

// BenchmarkLearningPath measures end-to-end learning in memory: the fixture's
// wire messages decoded, converted to flow records, resolved to workloads by the
// learning processor against a real API server's cache, and aggregated into
// proposal state by the writer. The baseline, in the same run, is protobuf
// decoding of the same messages alone. It reports both rates and their ratio.
// It needs the test control plane (KUBEBUILDER_ASSETS, as make test sets it).
func BenchmarkLearningPath(b *testing.B) {
	controlplanetest.Require(b)
	env, err := controlplanetest.New(controlplanetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	if err := clustertest.Create(context.Background(), env.Client); err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		b.Fatal(err)
	}
	b.Setenv("KUBECONFIG", kubeconfig)
	l := pipelinetest.StartLearning(b)
	wire := flowsourcetest.Wire(b, loadFixtures(b))

	var decodeTime, learnTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for i := range learningBatch {
			if err := proto.Unmarshal(wire[i%len(wire)], &observer.GetFlowsResponse{}); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		for i := range learningBatch {
			resp := &observer.GetFlowsResponse{}
			if err := proto.Unmarshal(wire[i%len(wire)], resp); err != nil {
				b.Fatal(err)
			}
			var rec flow.Record
			if _, ok := convertFlow(resp.GetFlow(), &rec); ok {
				rec.AppendTo(sl)
			}
		}
		if err := l.Processor.ConsumeLogs(context.Background(), ld); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		decodeTime += t1.Sub(t0)
		learnTime += t2.Sub(t1)
	}
	n := float64(b.N * learningBatch)
	decodeRate, learnRate := n/decodeTime.Seconds(), n/learnTime.Seconds()
	b.ReportMetric(decodeRate, "decode-msgs/s")
	b.ReportMetric(learnRate, "learn-msgs/s")
	b.ReportMetric(learnRate/decodeRate, "ratio")
}
