package metadatatest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/metric"
)

const fakeScope = "fake/scope"

// fakeReceiver is a receiver whose create registers a counter and an
// observable gauge in its scope, and, when stray is set, a counter in another
// scope of this module.
type fakeReceiver struct{ component.StartFunc }

func (fakeReceiver) Shutdown(context.Context) error { return nil }

func fakeFactory(stray bool) receiver.Factory {
	return receiver.NewFactory(component.MustNewType("fake"), func() component.Config { return &struct{}{} },
		receiver.WithLogs(func(_ context.Context, set receiver.Settings, _ component.Config, _ consumer.Logs) (receiver.Logs, error) {
			m := set.MeterProvider.Meter(fakeScope)
			if _, err := m.Int64Counter("fake_accepted", metric.WithDescription("Items taken."), metric.WithUnit("{item}")); err != nil {
				return nil, err
			}
			if _, err := m.Int64ObservableGauge("fake_held", metric.WithDescription("Items held."), metric.WithUnit("{item}"),
				metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(3); return nil })); err != nil {
				return nil, err
			}
			if stray {
				if _, err := set.MeterProvider.Meter("github.com/kubewarden/network-enforcer/elsewhere").Int64Counter("fake_stray"); err != nil {
					return nil, err
				}
			}
			return fakeReceiver{}, nil
		}, component.StabilityLevelDevelopment))
}

func TestAConsistentComponentPasses(t *testing.T) {
	got := problems(t, Component{Factory: fakeFactory(false), Type: component.MustNewType("fake"), ScopeName: fakeScope, Dir: "testdata/good",
		Published: []string{"fake_accepted"}})
	if len(got) != 0 {
		t.Fatalf("problems of a consistent component:\n%s", strings.Join(got, "\n"))
	}
}

// TestEachDifferenceIsReported: every way that metadata.yaml, the code and
// the README can disagree is a sentence of its own.
func TestEachDifferenceIsReported(t *testing.T) {
	got := problems(t, Component{Factory: fakeFactory(true), Type: component.MustNewType("fake"), ScopeName: fakeScope, Dir: "testdata/bad",
		Published: []string{"fake_accepted", "fake_typo"}})
	want := []string{
		`metadata.yaml: type "fakes", the code's is "fake"`,
		"README.md: Type `fake`, want `fakes`",
		`metadata.yaml: class "processor", the factory is a receiver's`,
		"signal logs: metadata.yaml says alpha, the factory development",
		"signal traces: metadata.yaml says alpha, the factory nothing",
		`README.md: Stability ["beta: logs"], want ["alpha: logs, traces"]`,
		`meters registered under the scope "github.com/kubewarden/network-enforcer/elsewhere": the component's scope is "fake/scope"`,
		`metric fake_accepted: description "Items taken.", metadata.yaml: "Items accepted."`,
		`metric fake_accepted: unit "{item}", metadata.yaml: "{items}"`,
		"metric fake_accepted: monotonic true, metadata.yaml: false",
		"metric fake_gone: in metadata.yaml, never registered",
		"metric fake_held: observable true, metadata.yaml: async false",
		"the published name fake_typo is none of the metrics of metadata.yaml",
		"README.md: the metric fake_accepted reads {kind:counter unit:{items} description:Items taken.}, metadata.yaml {kind:up-down counter unit:{items} description:Items accepted.}",
		"README.md: the metric fake_gone is missing from the table under ## Telemetry",
		"README.md: the metric fake_held is missing from the table under ## Telemetry",
		"README.md lists the metric fake_other, which metadata.yaml does not",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestASharedMetricIsDescribedAlike: a metric that two components register
// must read the same in both metadata.yaml files.
func TestASharedMetricIsDescribedAlike(t *testing.T) {
	md := &file{}
	md.Telemetry.Metrics = map[string]metricSpec{
		"network_enforcer_receiver_flows_accepted": {Enabled: true, Description: "Flows.", Unit: "{flow}", Sum: &dataSpec{ValueType: "int", Monotonic: true}},
	}
	got := sameEverywhere(t, "testdata/good", md)
	if len(got) < 3 {
		t.Fatalf("got %q, want the three flow receivers' metadata.yaml to disagree with this description", got)
	}
	for _, p := range got {
		if !strings.Contains(p, `"Flows turned into flow records."`) {
			t.Errorf("%s: does not quote the other description", p)
		}
	}
}
